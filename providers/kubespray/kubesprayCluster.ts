/**
 * KubesprayCluster: a cluster installed by kubespray from the Ansible server, its inventory generated from the
 * stack. Create runs cluster.yml. An update rewrites the inventory and runs what the change needs: new or
 * re-created workers get the facts playbook (every host: kubespray's `--limit` needs their facts cached,
 * docs/operations/nodes.md) then `scale.yml --limit=<those workers>`, so a scale-out costs the new nodes
 * only; changed cluster variables (or the operator's kubespray.vars) run cluster.yml again. Workers leave
 * through their KubesprayWorker steps. A new heal generation (an entire heal: every VM new) is a new cluster.
 * Other changes of the masters, and a new Kubernetes version, are refused before anything runs: kubespray has
 * no playbook here that replaces a control-plane node, and cluster.yml is no upgrade (upgrade-cluster.yml is).
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, StepDefinition } from "../step";
import { StepResource } from "../stepResource";
import { StepPlan } from "../remoteActions";
import { sh } from "../transport/shell";
import { SshSession, SshTarget } from "../transport/ssh";
import { Hosts } from "../step";
import { versionChangeRefusal, VersionPinnedProvider } from "../kubernetes/versionPin";
import { AnsibleLogins, claimInventory, forgetHostKeys, InventoryFile, loginFiles, nodeNetworkMtu, PlaybookPlace, PlaybookPlaceArgs, releaseInventory, runPlaybook, writeInventory } from "./playbooks";

/** A node as the inventory lists it. */
export interface KubesprayNode {
    name: string;
    address: string;
    vmId: string;
}

interface KubesprayClusterInputs extends PlaybookPlace {
    [key: string]: unknown;
    masters: KubesprayNode[];
    workers: KubesprayNode[];
    /** The entire-heal generation: a new one is a new cluster. */
    generation: number;
    /** The inventory's hosts.yaml (no credentials in it). */
    hostsYaml: string;
    /** group_vars/k8s_cluster: CIDRs, the external load balancer. */
    clusterVarsYaml: string;
    /** group_vars/all: the proxy (secret). */
    proxyVarsYaml?: string;
    /** kubernetes.version as given (its kube_version is in clusterVarsYaml); undefined: the release's default. */
    kubernetesVersion?: string;
    /** The operator's kubespray.vars as a diff and the plan show them: secrets masked. */
    vars?: Record<string, unknown>;
    /** group_vars/all/k8s-vnf-vars.yml: kubespray.vars as YAML, and the secrets in them to keep out of logs (secret). */
    varsFile?: VarsFile;
    /** How the Ansible server logs into the nodes (secret). */
    logins: AnsibleLogins;
    /** How this machine logs into the first master, for the node network's MTU and the admin kubeconfig (secret). */
    firstMaster: SshTarget;
    /** The release's facts playbook, e.g. `playbooks/facts.yml`. */
    factsPlaybook: string;
}

interface KubesprayClusterState {
    [key: string]: unknown;
    /** The workers in the cluster after the last run: a worker not here (or with another VM) gets scale.yml. */
    installedWorkers?: KubesprayNode[];
    /** /etc/kubernetes/admin.conf of the first master (secret). */
    adminKubeconfig?: string;
    /** The node network's MTU the CNI was given. */
    nodeMtu?: number;
}

/** The operator's group_vars file: its text, and the values in it to redact from what the playbooks print. */
export interface VarsFile {
    yaml: string;
    secrets: string[];
}

/** What an unset version is: the one the release installs by default. */
const DEFAULT_VERSION = "the kubespray release's default (kubernetes.version not set)";

const NAME_RE = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/;
const IP_RE = /^[0-9a-fA-F.:]+$/;
const PATH_RE = /^\/[A-Za-z0-9._/+@-]+$/;

function validNodes(nodes: unknown): boolean {
    return Array.isArray(nodes) && nodes.every((n) => NAME_RE.test(n?.name ?? "") && IP_RE.test(n?.address ?? "") && typeof n?.vmId === "string");
}

/** VXLAN, kubespray's default Calico encapsulation, takes 50 bytes of each packet (docs/CNI/calico.md). */
const mtuVars = (mtu: number) => `# Written by k8s-vnf: the node network's MTU.\ncalico_mtu: ${mtu}\ncalico_veth_mtu: ${mtu - 50}\n`;

function inventoryFiles(i: KubesprayClusterInputs, mtu: number): InventoryFile[] {
    return [
        { path: "hosts.yaml", mode: "0644", content: i.hostsYaml },
        { path: "group_vars/k8s_cluster/k8s-vnf.yml", mode: "0644", content: i.clusterVarsYaml },
        { path: "group_vars/k8s_cluster/k8s-vnf-mtu.yml", mode: "0644", content: mtuVars(mtu) },
        { path: "group_vars/all/k8s-vnf-proxy.yml", mode: "0600", content: i.proxyVarsYaml ?? "# no proxy\n" },
        { path: "group_vars/all/k8s-vnf-vars.yml", mode: "0600", content: i.varsFile?.yaml ?? "# no kubespray.vars\n" },
        { path: "group_vars/all/k8s-vnf-ssh.yml", mode: "0644", content: knownHostsVars(i) },
        ...loginFiles(i, i.logins, [...i.masters, ...i.workers].map((n) => n.name)),
    ];
}

/**
 * The nodes' host keys in a file of the inventory's own, not the login user's: a healed node is a new VM with a
 * new key at the old address, whose entry the update forgets before Ansible meets it. (OpenSSH refuses password
 * logins to a host whose key changed even with StrictHostKeyChecking=no, kubespray's host_key_checking=False.)
 */
const knownHostsVars = (i: KubesprayClusterInputs) => `ansible_ssh_common_args: ${JSON.stringify(`-o UserKnownHostsFile=${i.inventoryPath}/known_hosts`)}\n`;

const secretsOf = (i: KubesprayClusterInputs) => [i.logins.privateKey ?? "", ...Object.values(i.logins.passwords ?? {}), i.proxyVarsYaml ?? "", ...(i.varsFile?.secrets ?? [])].filter(Boolean);

async function adminKubeconfig(hosts: Hosts, i: KubesprayClusterInputs): Promise<string> {
    return hosts.on(i.firstMaster, async (m) => (await m.exec(sh`cat /etc/kubernetes/admin.conf`, { sudo: true, quiet: true })).stdout);
}

async function writeAll(s: SshSession, i: KubesprayClusterInputs, mtu: number): Promise<void> {
    await claimInventory(s, i);
    await writeInventory(s, i, inventoryFiles(i, mtu), secretsOf(i));
}

const key = (n: KubesprayNode) => `${n.name} ${n.vmId}`;

export const kubesprayClusterStep: StepDefinition<KubesprayClusterInputs, KubesprayClusterState> = {
    kind: "KubesprayCluster",
    version: "1",
    outputs: ["installedWorkers", "adminKubeconfig", "nodeMtu"],
    replaceOn: ["generation", "inventoryPath"],
    deleteBeforeReplace: true,
    deleteSucceedsWhenUnreachable: true,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        for (const k of ["kubesprayRoot", "ansiblePlaybook", "inventoryPath"] as const) {
            if (typeof i[k] !== "string" || !PATH_RE.test(i[k] as string) || (i[k] as string).split("/").includes("..")) failures.push({ property: k, reason: "must be an absolute path" });
        }
        if (typeof i.cluster !== "string" || !/^[A-Za-z0-9._/-]+$/.test(i.cluster)) failures.push({ property: "cluster", reason: "must name the cluster (letters, digits, . _ / -)" });
        if (!validNodes(i.masters) || (i.masters as KubesprayNode[]).length === 0) failures.push({ property: "masters", reason: "must list at least one {name, address, vmId}" });
        if (!validNodes(i.workers) || (i.workers as KubesprayNode[]).length === 0) failures.push({ property: "workers", reason: "must list at least one {name, address, vmId} (kubespray needs a kube_node)" });
        if (typeof i.factsPlaybook !== "string" || !/^[A-Za-z0-9._/-]+\.yml$/.test(i.factsPlaybook)) failures.push({ property: "factsPlaybook", reason: "must be a playbook path in the release" });
        if (!Number.isInteger(i.timeoutMinutes) || (i.timeoutMinutes as number) < 1) failures.push({ property: "timeoutMinutes", reason: "must be a whole number of minutes" });
        if (i.kubernetesVersion !== undefined && !(typeof i.kubernetesVersion === "string" && /^\d+\.\d+\.\d+$/.test(i.kubernetesVersion))) failures.push({ property: "kubernetesVersion", reason: "must be a version such as 1.31.4" });
        const file = i.varsFile as Partial<VarsFile> | undefined;
        if (file !== undefined && !(typeof file?.yaml === "string" && Array.isArray(file.secrets) && file.secrets.every((v) => typeof v === "string"))) {
            failures.push({ property: "varsFile", reason: "must be {yaml, secrets: [...]}" });
        }
        // By passwords, each node needs its own: the login files are written before any playbook runs.
        const names = [i.masters, i.workers].flatMap((nodes) => (validNodes(nodes) ? (nodes as KubesprayNode[]).map((n) => n.name) : []));
        if (!i.logins || (!i.logins.privateKey && !(i.logins.passwords && typeof i.logins.passwords === "object" && names.every((n) => typeof i.logins!.passwords![n] === "string")))) {
            failures.push({ property: "logins", reason: "needs the stack's SSH key or every node's password" });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:${i.inventoryPath}`,
    async create(s, i, hosts) {
        const mtu = await hosts.on(i.firstMaster, (m) => nodeNetworkMtu(m, i.masters[0].address));
        await writeAll(s, i, mtu);
        await runPlaybook(s, i, "cluster.yml", [], secretsOf(i));
        return { installedWorkers: i.workers, adminKubeconfig: await adminKubeconfig(hosts, i), nodeMtu: mtu };
    },
    async update(s, olds, news, hosts) {
        if (olds.masters.map(key).join() !== news.masters.map(key).join()) {
            throw new Error("the masters of a kubespray cluster change only with an entire heal (heal.generation): kubespray has no playbook that adds or replaces a control-plane node here");
        }
        // Check refuses this first (versionPin.ts); kept for a check that was skipped.
        if (olds.kubernetesVersion !== news.kubernetesVersion) throw new Error(versionChangeRefusal(olds.kubernetesVersion ?? DEFAULT_VERSION, news.kubernetesVersion ?? DEFAULT_VERSION));
        const mtu = olds.nodeMtu ?? (await hosts.on(news.firstMaster, (m) => nodeNetworkMtu(m, news.masters[0].address)));
        await writeAll(s, news, mtu);
        const reconfigured = olds.clusterVarsYaml !== news.clusterVarsYaml || olds.proxyVarsYaml !== news.proxyVarsYaml || olds.varsFile?.yaml !== news.varsFile?.yaml;
        const installed = new Set((olds.installedWorkers ?? []).map(key));
        const joining = news.workers.filter((w) => !installed.has(key(w)));
        if (joining.length) await forgetHostKeys(s, news, joining.map((w) => w.address));
        if (reconfigured) {
            await runPlaybook(s, news, "cluster.yml", [], secretsOf(news));
        } else if (joining.length) {
            await runPlaybook(s, news, news.factsPlaybook, [], secretsOf(news));
            await runPlaybook(s, news, "scale.yml", [`--limit=${joining.map((w) => w.name).join(",")}`], secretsOf(news));
        }
        return { installedWorkers: news.workers, adminKubeconfig: olds.adminKubeconfig ?? (await adminKubeconfig(hosts, news)), nodeMtu: mtu };
    },
    async delete(s, outs) {
        // The nodes go with the cluster (destroy, entire heal): only the inventory is left to remove.
        await releaseInventory(s, outs);
    },
    async read(s, outs) {
        const found = await s.exec(sh`cat ${`${outs.inventoryPath}/.k8s-vnf-cluster`}`, { allowFailure: true, quiet: true });
        return found.code === 0 && found.stdout.trim() === outs.cluster ? {} : undefined;
    },
};

export const kubesprayClusterProvider = new VersionPinnedProvider(kubesprayClusterStep, { unsetVersion: DEFAULT_VERSION });

export interface KubesprayClusterArgs extends PlaybookPlaceArgs {
    /** The masters: they change only with the generation. */
    masters: pulumi.Input<pulumi.Input<KubesprayNode>[]>;
    /** The entire-heal generation. */
    generation: pulumi.Input<number>;
    /** The workers. */
    workers: pulumi.Input<pulumi.Input<KubesprayNode>[]>;
    /** hosts.yaml. */
    hostsYaml: pulumi.Input<string>;
    /** group_vars/k8s_cluster. */
    clusterVarsYaml: pulumi.Input<string>;
    /** group_vars/all with the proxy (secret). */
    proxyVarsYaml?: pulumi.Input<string>;
    /** kubernetes.version as given; undefined: the release's default. A running cluster keeps it. */
    kubernetesVersion?: pulumi.Input<string>;
    /** kubespray.vars with secrets masked, for the diff and the plan. */
    vars?: pulumi.Input<Record<string, unknown>>;
    /** kubespray.vars as YAML, with their secrets (secret). */
    varsFile?: pulumi.Input<VarsFile>;
    /** The nodes' logins (secret). */
    logins: pulumi.Input<AnsibleLogins>;
    /** The first master's login (secret). */
    firstMaster: pulumi.Input<SshTarget>;
    /** The release's facts playbook. */
    factsPlaybook: pulumi.Input<string>;
}

// Logins, proxy settings and the vars file stay out of the digests (the vars as masked do not): their change
// shows as those inputs'.
const kubesprayClusterPlan: StepPlan<KubesprayClusterArgs> = (a) => [
    { when: ["create"], action: "write the inventory (hosts.yaml, group vars, logins) on the Ansible server and run cluster.yml", rendered: { hostsYaml: a.hostsYaml, clusterVarsYaml: a.clusterVarsYaml, vars: a.vars, masters: a.masters } },
    { when: ["update"], action: "rewrite the inventory; facts.yml, then scale.yml limited to the workers not installed yet", rendered: { hostsYaml: a.hostsYaml, workers: a.workers } },
    // Also when the proxy settings or a secret of the vars change (secret inputs, left out of the digest).
    { when: ["update"], action: "cluster.yml again, when the cluster variables changed", rendered: { clusterVarsYaml: a.clusterVarsYaml, vars: a.vars }, onChange: true },
    { when: ["delete"], action: "remove the cluster's inventory from the Ansible server (the nodes go with the cluster)", rendered: { inventoryPath: a.inventoryPath } },
];

export class KubesprayCluster extends StepResource {
    declare readonly installedWorkers: pulumi.Output<KubesprayNode[]>;
    declare readonly adminKubeconfig: pulumi.Output<string>;
    declare readonly inventoryPath: pulumi.Output<string>;
    declare readonly cluster: pulumi.Output<string>;

    constructor(name: string, args: KubesprayClusterArgs, opts?: pulumi.CustomResourceOptions) {
        super(kubesprayClusterProvider, kubesprayClusterStep, kubesprayClusterPlan, name, args, opts, { inputs: ["proxyVarsYaml", "varsFile", "logins", "firstMaster"], outputs: ["adminKubeconfig"] });
    }
}
