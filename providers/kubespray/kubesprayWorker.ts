/**
 * KubesprayWorker: one worker's membership of a kubespray cluster. KubesprayCluster's scale.yml joins it;
 * create confirms the cluster has its Node. Delete drains it on a control-plane node with a real timeout (a
 * failed drain fails the delete, so the VM stays under running pods: kubespray's own drain would go on,
 * kubespray#7137), then runs the release's remove-node.yml for exactly this node from the Ansible server,
 * with a leaving inventory of its own (the cluster's inventory may no longer list it). A node that does not
 * answer is removed without its reset (`reset_nodes=false allow_ungraceful_removal=true`, nodes.md).
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, Hosts, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { StepPlan } from "../remoteActions";
import { ConnectError, RemoteCommandError, SshTarget } from "../transport/ssh";
import { ControlPlaneRef, drainNode, kubectl, listsControlPlanes, NodeStatus, nodeStatus, onControlPlane } from "../kubernetes/kubeadm";
import { onControlPlaneWhileThere } from "../kubernetes/leavingCluster";
import { AnsibleLogins, forgetNode, loginFiles, PlaybookPlace, PlaybookPlaceArgs, runPlaybook, writeInventory } from "./playbooks";

interface KubesprayWorkerInputs extends PlaybookPlace {
    [key: string]: unknown;
    vmId: string;
    nodeName: string;
    address: string;
    /** Its login user. */
    user: string;
    /** How the Ansible server logs into it (secret). */
    login: AnsibleLogins;
    /** How this machine logs into it, to tell whether it still answers (secret). */
    nodeConnection: SshTarget;
    /** Where kubectl runs, tried in order (secret). */
    controlPlanes: ControlPlaneRef[];
    drainTimeoutSeconds: number;
    /** The release's remove-node.yml variables besides `node` (its confirmation). */
    removeNodeVars: string[];
}

interface KubesprayWorkerState {
    [key: string]: unknown;
    nodeStatus?: NodeStatus;
}

const NAME_RE = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/;
/** Ansible's implicit groups and kubespray's (docs/ansible/inventory.md), which `-e node=` would expand. */
const ANSIBLE_GROUPS = ["all", "ungrouped", "kube_control_plane", "kube_node", "etcd", "k8s_cluster", "calico_rr", "bastion"];
const VAR_RE = /^[a-z_]+=[A-Za-z0-9_.-]+$/;

/** An inventory of the leaving node alone, in kube_node (remove-node.yml runs its reset on it). */
function leavingInventory(i: KubesprayWorkerInputs): string {
    const host = { ansible_host: i.address, ip: i.address, access_ip: i.address, ansible_user: i.user };
    return JSON.stringify({ all: { hosts: { [i.nodeName]: host }, children: { kube_node: { hosts: { [i.nodeName]: {} } } } } }, null, 2) + "\n";
}

async function answers(hosts: Hosts, target: SshTarget): Promise<boolean> {
    try {
        await hosts.on(target, async () => undefined, { connectAttempts: 2, connectIntervalMs: 2_000, connectDeadlineMs: 20_000, handshakeTimeoutMs: 10_000 });
        return true;
    } catch (e) {
        if (e instanceof ConnectError) return false;
        throw e;
    }
}

export const kubesprayWorkerStep: StepDefinition<KubesprayWorkerInputs, KubesprayWorkerState> = {
    kind: "KubesprayWorker",
    // 2: leaving a cluster whose every master was reset before the delete started is no failure (stored code runs the delete).
    version: "3",
    outputs: ["nodeStatus"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: true,
    deleteSucceedsWhenUnreachable: false,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        // remove-node.yml without `node` removes every worker up to v2.27 (its reset play defaults to kube_node).
        if (typeof i.nodeName !== "string" || !NAME_RE.test(i.nodeName)) failures.push({ property: "nodeName", reason: "must be the node's name (never empty: remove-node.yml would take every node)" });
        // `-e node=` is a host pattern: a group's name there would remove that whole group.
        else if (ANSIBLE_GROUPS.includes(i.nodeName)) failures.push({ property: "nodeName", reason: `${i.nodeName} is an inventory group's name: remove-node.yml would take the whole group` });
        if (!listsControlPlanes(i.controlPlanes) || i.controlPlanes.length === 0) failures.push({ property: "controlPlanes", reason: "must list at least one master as {name, connection}" });
        if (!Number.isInteger(i.drainTimeoutSeconds) || (i.drainTimeoutSeconds as number) < 1) failures.push({ property: "drainTimeoutSeconds", reason: "must be a whole number of seconds ≥ 1" });
        // Its delete drains first, then writes this login for remove-node.yml: a bad one would fail after the drain.
        const passwords = i.login?.passwords;
        const named = typeof i.nodeName === "string" && NAME_RE.test(i.nodeName) && !ANSIBLE_GROUPS.includes(i.nodeName);
        if (!i.login || (!i.login.privateKey && !(passwords && typeof passwords === "object" && (!named || typeof passwords[i.nodeName as string] === "string")))) failures.push({ property: "login", reason: "needs the stack's SSH key or this node's password" });
        if (!Array.isArray(i.removeNodeVars) || i.removeNodeVars.some((v) => !VAR_RE.test(v) || v.startsWith("node="))) failures.push({ property: "removeNodeVars", reason: "must be name=value pairs other than node" });
        return failures;
    },
    id: (i) => `${i.connection.host}:${i.inventoryPath}:${i.nodeName}`,
    async create(_s, i, hosts) {
        const status = await onControlPlane(hosts, i.controlPlanes, (cp) => nodeStatus(cp, i.nodeName));
        if (status === undefined) throw new Error(`${i.nodeName} is no node of the cluster after kubespray's scale.yml: see its run's output above`);
        return { nodeStatus: status };
    },
    async update() {
        return {};
    },
    async delete(s, outs, hosts) {
        const inCluster = await onControlPlaneWhileThere(hosts, outs.controlPlanes, async (cp) => {
            if ((await nodeStatus(cp, outs.nodeName)) === undefined) return false;
            try {
                await drainNode(cp, outs.nodeName, outs.drainTimeoutSeconds);
            } catch (e) {
                if (!(e instanceof RemoteCommandError)) throw e;
                throw new Error(`drain of ${outs.nodeName} failed, so the node and its VM stay (fix what blocks the eviction, or raise kubernetes.drainTimeout, and run again):\n${e.message}`);
            }
            return true;
        });
        if (!inCluster) {
            console.log(`[KubesprayWorker ${outs.nodeName}] not in the cluster; nothing to remove`);
            await forgetNode(s, outs, outs.nodeName);
            return;
        }
        const offline = !(await answers(hosts, outs.nodeConnection));
        const leaving = `leaving/${outs.nodeName}.yaml`;
        const secrets = [outs.login.privateKey ?? "", ...Object.values(outs.login.passwords ?? {})].filter(Boolean);
        await writeInventory(s, outs, [{ path: leaving, mode: "0600", content: leavingInventory(outs) }, ...loginFiles(outs, outs.login, [outs.nodeName])], secrets, false);
        const unreachable = offline ? ["-e", "reset_nodes=false", "-e", "allow_ungraceful_removal=true"] : [];
        await runPlaybook(s, outs, "remove-node.yml", ["-i", `${outs.inventoryPath}/${leaving}`, "-e", `node=${outs.nodeName}`, ...outs.removeNodeVars.flatMap((v) => ["-e", v]), ...unreachable], secrets);
        // kubespray's post-remove deletes the Node; make sure, as the next join of this name needs it gone.
        await onControlPlane(hosts, outs.controlPlanes, (cp) => kubectl(cp, ["delete", "node", outs.nodeName, "--ignore-not-found"]));
        await forgetNode(s, outs, outs.nodeName);
        console.log(`[KubesprayWorker ${outs.nodeName}] drained and removed by remove-node.yml${offline ? " (it did not answer: not reset)" : ""}`);
    },
    async read(_s, outs, hosts) {
        const status = await onControlPlane(hosts, outs.controlPlanes, (cp) => nodeStatus(cp, outs.nodeName));
        return status === undefined ? undefined : { nodeStatus: status };
    },
};

export const kubesprayWorkerProvider = new StepProvider(kubesprayWorkerStep);

/** `inventoryPath` and `cluster` from KubesprayCluster: the worker follows its runs. */
export interface KubesprayWorkerArgs extends PlaybookPlaceArgs {
    /** The worker's VM: a new VM is a new member. */
    vmId: pulumi.Input<string>;
    /** Kubernetes node name. */
    nodeName: pulumi.Input<string>;
    /** Its address on the cluster network. */
    address: pulumi.Input<string>;
    /** Its login user. */
    user: pulumi.Input<string>;
    /** The Ansible server's login to it (secret). */
    login: pulumi.Input<AnsibleLogins>;
    /** This machine's login to it (secret). */
    nodeConnection: pulumi.Input<SshTarget>;
    /** The masters, tried in order for kubectl (secret). */
    controlPlanes: pulumi.Input<pulumi.Input<ControlPlaneRef>[]>;
    /** Drain deadline in seconds. */
    drainTimeoutSeconds: pulumi.Input<number>;
    /** remove-node.yml's confirmation variables for the release. */
    removeNodeVars: pulumi.Input<string[]>;
}

const kubesprayWorkerPlan: StepPlan<KubesprayWorkerArgs> = (a, node) => [
    { when: ["create"], action: `confirm the cluster has ${node}'s Node (the cluster's scale.yml joined it)`, rendered: { nodeName: a.nodeName } },
    {
        when: ["delete"],
        action: `drain ${node} on a control-plane node, then remove-node.yml for ${node} alone from the Ansible server`,
        rendered: { nodeName: a.nodeName, drainTimeoutSeconds: a.drainTimeoutSeconds, removeNodeVars: a.removeNodeVars },
    },
];

export class KubesprayWorker extends StepResource {
    declare readonly nodeStatus: pulumi.Output<NodeStatus>;

    constructor(name: string, args: KubesprayWorkerArgs, opts?: pulumi.CustomResourceOptions) {
        super(kubesprayWorkerProvider, kubesprayWorkerStep, kubesprayWorkerPlan, name, args, opts, { inputs: ["login", "nodeConnection", "controlPlanes"] });
    }
}
