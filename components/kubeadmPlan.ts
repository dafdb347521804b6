/**
 * What each kubeadm step is given, as plain functions of the cluster spec and the nodes' names and
 * addresses. The component wires these to resource outputs; the lab tests and the bench call them with
 * lab addresses, so both run the same plan.
 */
import * as YAML from "yaml";
import { ClusterSpec } from "../config/spec";
import { HostsEntry, NodeProxy } from "../providers/kubernetes/nodePrep";

export interface PlannedNode {
    /** VM name, hostname and Kubernetes node name. */
    name: string;
    /** Fixed address on the cluster network. */
    address: string;
}

const ALWAYS_DIRECT = ["127.0.0.1", "localhost", ".svc", ".cluster.local"];

/**
 * Proxy settings for apt, containerd and kubelet. `no_proxy` holds CIDRs (never one entry per address of
 * a CIDR): the user's entries, the node, pod and service CIDRs, the masters and the VIP.
 */
export function nodeProxy(spec: ClusterSpec, masters: PlannedNode[], vip?: string): NodeProxy {
    const p = spec.proxy;
    if (!p || (!p.httpProxy && !p.httpsProxy)) return { httpProxy: "", httpsProxy: "", noProxy: "" };
    const entries = [...p.noProxy, ...ALWAYS_DIRECT, spec.kubernetes.podCidr, spec.kubernetes.serviceCidr, ...(p.k8sNodeCidr ? [p.k8sNodeCidr] : []), ...masters.map((m) => m.address), ...(vip ? [vip] : [])];
    return { httpProxy: p.httpProxy ?? "", httpsProxy: p.httpsProxy ?? "", noProxy: [...new Set(entries)].join(",") };
}

/**
 * A node's /etc/hosts entries: itself and the masters. Workers need no entries on other nodes (kubelet
 * registers with its InternalIP and the API server reaches kubelets by it), so scaling workers leaves
 * every other node as it is.
 */
export function hostsEntries(node: PlannedNode, masters: PlannedNode[]): HostsEntry[] {
    const all = [node, ...masters.filter((m) => m.name !== node.name)];
    return all.map((n) => ({ address: n.address, name: n.name }));
}

/** The control-plane endpoint: HAProxy on the VIP (HA), else the single master's API server. */
export function controlPlaneEndpoint(spec: ClusterSpec, masters: PlannedNode[], vip?: string): string {
    return spec.ha ? `${vip}:${spec.controlPlane.haproxyPort}` : `${masters[0].address}:${spec.controlPlane.apiServerPort}`;
}

/** What `kubeadm init` is given from the cluster's configuration alone. */
export function clusterSettings(spec: ClusterSpec) {
    return {
        apiServerPort: spec.controlPlane.apiServerPort,
        podCidr: spec.kubernetes.podCidr,
        serviceCidr: spec.kubernetes.serviceCidr,
        kubernetesVersion: spec.kubernetes.version,
        imageRepository: spec.kubernetes.imageRepository,
        clusterGeneration: spec.heal.generation,
    };
}

/** VRRP router id from the VIP's last byte, so clusters sharing a network keep to their own (1–255). */
export function vrrpRouterId(vip: string): number {
    const last = vip.includes(":") ? parseInt(vip.split(":").pop() || "0", 16) % 256 : Number(vip.split(".").pop());
    return last === 0 ? 1 : last;
}

/** The first master holds the VIP while its HAProxy runs; the others follow by index. */
export function vrrpPriority(index: number): number {
    return 150 - index;
}

/** Labels every worker gets: the availability zone (both keys, Tacker's too) and, with pod affinity, its compute host. */
export function workerLabels(spec: ClusterSpec): { labels: Record<string, string>; computeHostLabel: string } | undefined {
    const zone = spec.workers.server.availabilityZone;
    const computeHostLabel = spec.flavour === "podaffinity" ? "CIS-node" : "";
    if (!zone && !computeHostLabel) return undefined;
    return { labels: zone ? { "topology.kubernetes.io/zone": zone, "kubernetes.io/zone": zone } : {}, computeHostLabel };
}

/**
 * Names the API server certificate carries besides what kubeadm puts there itself (the node's advertise
 * address, `controlPlaneEndpoint`'s host, the service IP, the node names): the VIP and the masters'
 * floating IPs, so clients reaching the API by any of them verify it (kubeadm v1beta4 `apiServer.certSANs`).
 */
export function apiCertSans(masters: { address: string; sshAddress: string }[], vip?: string): string[] {
    const extra = [...(vip ? [vip] : []), ...masters.filter((m) => m.sshAddress !== m.address).map((m) => m.sshAddress)];
    return [...new Set(extra)];
}

/**
 * Where the machine running Pulumi reaches the API: where it reaches the masters. Through floating IPs, the
 * first master's (its API server port; the VIP has none); else the control-plane endpoint (the VIP with
 * HAProxy's port in HA, the master's address in simple).
 */
export function apiAccessEndpoint(spec: ClusterSpec, firstMaster: { address: string; sshAddress: string }, endpoint: string): string {
    if (firstMaster.sshAddress === firstMaster.address) return endpoint;
    return hostPort(firstMaster.sshAddress, spec.controlPlane.apiServerPort);
}

/** `host:port`, an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
    return `${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/** The admin kubeconfig with every cluster's server set to `https://<endpoint>` (credentials and CA kept). */
export function kubeconfigAt(adminKubeconfig: string, endpoint: string): string {
    const doc = YAML.parse(adminKubeconfig) as { clusters?: { cluster?: { server?: string } }[] } | null;
    if (!doc?.clusters?.length) throw new Error("the cluster's admin kubeconfig lists no cluster");
    for (const c of doc.clusters) if (c.cluster) c.cluster.server = `https://${endpoint}`;
    return YAML.stringify(doc);
}

/** The cluster CA (PEM) of a kubeconfig kubeadm wrote: its first cluster's `certificate-authority-data`. */
export function caCertificateOf(kubeconfig: string): string {
    const doc = YAML.parse(kubeconfig) as { clusters?: { cluster?: Record<string, string> }[] } | null;
    const data = doc?.clusters?.[0]?.cluster?.["certificate-authority-data"];
    if (!data) throw new Error("the cluster's admin kubeconfig has no certificate-authority-data");
    return Buffer.from(data, "base64").toString("utf8");
}
