/**
 * KubernetesNode: a VM made ready for kubeadm (see nodePrep.sh). Replaced with its VM; its delete leaves
 * the VM as it is (the VM is about to go, or stays for something else). Its Kubernetes version is fixed
 * while the VM stays (versionPin.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, StepDefinition } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { StepPlan } from "../remoteActions";
import { isImageRepository } from "./kubeadm";
import { CONTAINERD_LOGINS_LIBRARY, loadNodeScript, parseReport } from "./scripts";
import { VersionPinnedProvider } from "./versionPin";

const SCRIPT = loadNodeScript("nodePrep.sh", __dirname, CONTAINERD_LOGINS_LIBRARY);

export interface HostsEntry {
    address: string;
    name: string;
}

export interface NodeProxy {
    httpProxy: string;
    httpsProxy: string;
    /** Comma-separated, as the tools read it. */
    noProxy: string;
}

/** The proxy as the variables curl, apt's helpers and kubectl read: for a script's environment, never its arguments. */
export function proxyEnvironment(p: NodeProxy): Record<string, string> {
    return { http_proxy: p.httpProxy, https_proxy: p.httpsProxy, no_proxy: p.noProxy };
}

interface KubernetesNodeInputs {
    [key: string]: unknown;
    /** The VM's id: a new VM is a new node. */
    vmId: string;
    nodeName: string;
    kubernetesVersion: string;
    packageRepository: string;
    imageRepository?: string;
    proxy: NodeProxy;
    hostsEntries: HostsEntry[];
}

const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function apply(s: SshSession, i: KubernetesNodeInputs) {
    const entries = i.hostsEntries.flatMap((e) => [e.address, e.name]);
    return s.runScript(SCRIPT, ["apply", i.nodeName, i.kubernetesVersion, i.packageRepository, i.imageRepository ?? "", ...entries], { sudo: true, env: proxyEnvironment(i.proxy) });
}

export const kubernetesNodeStep: StepDefinition<KubernetesNodeInputs> = {
    kind: "KubernetesNode",
    // 3: containerd's sandbox image is kubeadm's; a node made before gets it at its next update (containerd
    // restarts, its containers keep running).
    version: "3",
    outputs: [],
    replaceOn: ["vmId"],
    deleteBeforeReplace: false,
    deleteSucceedsWhenUnreachable: true,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (typeof i.nodeName !== "string" || !NAME_RE.test(i.nodeName)) failures.push({ property: "nodeName", reason: "must be a DNS label (lower-case letters, digits, '-')" });
        if (typeof i.kubernetesVersion !== "string" || !/^\d+\.\d+\.\d+$/.test(i.kubernetesVersion)) failures.push({ property: "kubernetesVersion", reason: "must be a version such as 1.31.4" });
        if (typeof i.packageRepository !== "string" || !/^https?:\/\/[^\s'"]+$/.test(i.packageRepository)) failures.push({ property: "packageRepository", reason: "must be an http(s) URL" });
        if (i.imageRepository !== undefined && !isImageRepository(i.imageRepository)) failures.push({ property: "imageRepository", reason: "must be a registry host[:port] with an optional path" });
        if (!Array.isArray(i.hostsEntries) || i.hostsEntries.some((e) => !/^[0-9a-fA-F.:]+$/.test(e?.address ?? "") || !NAME_RE.test(e?.name ?? ""))) {
            failures.push({ property: "hostsEntries", reason: "must be a list of {address, name} with IP addresses and node names" });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:${i.nodeName}`,
    async create(s, i) {
        await apply(s, i);
        return {};
    },
    async update(s, _olds, news) {
        await apply(s, news);
        return {};
    },
    async delete(s, outs) {
        console.log(`[KubernetesNode ${outs.nodeName}] nothing to undo on the VM`);
    },
    async read(s, outs) {
        const found = parseReport((await s.runScript(SCRIPT, ["report"], { sudo: true })).stdout);
        const versions = new Set([found.kubeadm, found.kubelet, found.kubectl]);
        return {
            nodeName: found.hostname,
            kubernetesVersion: versions.size === 1 ? found.kubeadm.replace(/^v/, "") : `mixed: kubeadm ${found.kubeadm}, kubelet ${found.kubelet}, kubectl ${found.kubectl}`,
            hostsEntries: (found.hosts ?? "")
                .split("|")
                .filter(Boolean)
                .map((line) => {
                    const [address, name] = line.split(" ");
                    return { address, name };
                }),
        };
    },
};

export const kubernetesNodeProvider = new VersionPinnedProvider(kubernetesNodeStep);

export interface KubernetesNodeArgs {
    /** How to log into the VM. */
    connection: pulumi.Input<SshTarget>;
    /** The VM's id; a new VM replaces this step. */
    vmId: pulumi.Input<string>;
    /** Hostname and Kubernetes node name. */
    nodeName: pulumi.Input<string>;
    /** kubelet/kubeadm/kubectl version, e.g. 1.31.4. */
    kubernetesVersion: pulumi.Input<string>;
    /** Base URL of the package repository (pkgs.k8s.io or a mirror with its layout). */
    packageRepository: pulumi.Input<string>;
    /** Registry (and path) of kubeadm's images, containerd's sandbox image among them; left out, registry.k8s.io. */
    imageRepository?: pulumi.Input<string>;
    /** Proxy settings for apt, containerd and kubelet (empty strings: none). */
    proxy: pulumi.Input<NodeProxy>;
    /** /etc/hosts entries the node needs (exact lines). */
    hostsEntries: pulumi.Input<pulumi.Input<HostsEntry>[]>;
}

// The proxy (its URLs may hold a password) stays out of the digest: its change shows as the proxy input's.
const kubernetesNodePlan: StepPlan<KubernetesNodeArgs> = (a, node) => [
    {
        when: ["create", "update"],
        action: `prepare ${node} for kubeadm: hostname, /etc/hosts, swap off, kernel settings, proxy, containerd (its sandbox image kubeadm's), kubelet/kubeadm/kubectl held at the cluster's version`,
        script: SCRIPT,
        rendered: { nodeName: a.nodeName, kubernetesVersion: a.kubernetesVersion, packageRepository: a.packageRepository, imageRepository: a.imageRepository, hostsEntries: a.hostsEntries },
    },
];

export class KubernetesNode extends StepResource {
    declare readonly vmId: pulumi.Output<string>;
    declare readonly nodeName: pulumi.Output<string>;

    constructor(name: string, args: KubernetesNodeArgs, opts?: pulumi.CustomResourceOptions) {
        super(kubernetesNodeProvider, kubernetesNodeStep, kubernetesNodePlan, name, args, opts, { inputs: ["proxy"] });
    }
}
