/**
 * ControlPlaneMember: one master's place in the control plane. The first master is a member by
 * `kubeadm init`; the others join with `--control-plane` and a certificate key fetched for the occasion.
 * Delete (a heal or fewer masters) takes the master out on its peers first: its Node object, its etcd
 * member (by exact name, 64-bit ID), its backend in every peer's HAProxy; then `kubeadm reset` on the
 * master when it answers (still the same machine). After a join, the master is back in every peer's HAProxy. A master that joined
 * once but whose Node the cluster no longer has is reset and joins again through a peer. Update drains it for a
 * graceful stop, or uncordons it at the start after one (nodeService.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, Hosts, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { ConnectError, RemoteCommandError, SshSession, SshTarget } from "../transport/ssh";
import {
    clusterJoinCredentials, ControlPlaneRef, hasJoined, isCaCertHash, isControlPlane, listsControlPlanes, kubeadmJoin, kubeadmReset, kubectl, NodeStatus, nodeStatus, onControlPlane, resetIfReachable, setBackendOnPeers,
} from "./kubeadm";
import { removeEtcdMember } from "./etcdMembership";
import { changeService, serviceAction, validateService } from "./nodeService";
import { StepPlan } from "../remoteActions";
import { loadNodeScript } from "./scripts";

const LOAD_BALANCER_SCRIPT = loadNodeScript("apiLoadBalancer.sh");

interface ControlPlaneMemberInputs {
    [key: string]: unknown;
    vmId: string;
    nodeName: string;
    address: string;
    apiServerPort: number;
    endpoint: string;
    /** The cluster's CA hash: joins are refused against another cluster. */
    caCertHash: string;
    /** The other masters. */
    peers: ControlPlaneRef[];
    /** Whether the masters run HAProxy (HA), whose backends follow membership. */
    loadBalanced: boolean;
    /** Cordoned and drained for a graceful stop (nodeService.ts). */
    drained?: boolean;
    /** Seconds that drain may take before the stop goes on. */
    stopDrainTimeoutSeconds?: number;
}

interface ControlPlaneMemberState {
    [key: string]: unknown;
    nodeStatus?: NodeStatus;
}

/** The node's status as the cluster sees it: asked of the node itself if it is a control-plane node, else of a peer. */
async function nodeStatusOnCluster(node: SshSession, name: string, peers: ControlPlaneRef[], hosts: Hosts): Promise<NodeStatus | undefined> {
    if (await isControlPlane(node)) return nodeStatus(node, name);
    return peers.length === 0 ? undefined : onControlPlane(hosts, peers, (cp) => nodeStatus(cp, name));
}

/**
 * Deletes a leaving master's Node and removes its etcd member, through the first peer that can. Peers take
 * turns: when several masters leave at once (an entire-cluster heal), a peer may have left etcd a moment
 * ago. When none can, the cluster's control plane is gone with them: there is nothing to take it out of.
 */
async function takeOut(hosts: Hosts, name: string, peers: ControlPlaneRef[]): Promise<void> {
    const failed: string[] = [];
    for (const peer of peers) {
        try {
            const etcd = await hosts.first([peer.connection], `control-plane node ${peer.name}`, async (cp) => {
                await kubectl(cp, ["delete", "node", name, "--ignore-not-found"]);
                return removeEtcdMember(cp, peer.name, name);
            }, isControlPlane);
            console.log(`[ControlPlaneMember ${name}] etcd member ${etcd === "removed" ? "removed" : "already gone"} (via ${peer.name})`);
            return;
        } catch (e) {
            if (!(e instanceof ConnectError || e instanceof RemoteCommandError)) throw e;
            failed.push(peer.name);
        }
    }
    console.log(`[ControlPlaneMember ${name}] no other control-plane node could take it out (${failed.join(", ")}); nothing to take out`);
}

export const controlPlaneMemberStep: StepDefinition<ControlPlaneMemberInputs, ControlPlaneMemberState> = {
    kind: "ControlPlaneMember",
    version: "4",
    outputs: ["nodeStatus"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: true,
    deleteSucceedsWhenUnreachable: true,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (!isCaCertHash(i.caCertHash)) failures.push({ property: "caCertHash", reason: "must be sha256:<64 hex digits>" });
        if (!listsControlPlanes(i.peers)) failures.push({ property: "peers", reason: "must list the other masters as {name, connection}" });
        return [...failures, ...validateService(i)];
    },
    id: (i) => `${i.connection.host}:${i.nodeName}`,
    async create(node, i, hosts) {
        const joined = await hasJoined(node);
        // Asked of the node itself when it runs a control plane (the first master, right after init), else of a peer.
        const inCluster = joined && (await nodeStatusOnCluster(node, i.nodeName, i.peers, hosts)) !== undefined;
        if (inCluster) {
            console.log(`[ControlPlaneMember ${i.nodeName}] already a control-plane node`);
        } else {
            if (i.peers.length === 0 && joined) {
                throw new Error(
                    `${i.nodeName} joined once, but the cluster has no Node of it, and there is no other master to join again through: ` +
                        "restart its kubelet (it registers its Node again), or heal the entire cluster (heal.generation)",
                );
            }
            if (i.peers.length === 0) {
                throw new Error(
                    `${i.nodeName} is not a control-plane node and there is no other master to join through: ` +
                        "a single-master cluster cannot heal its master node by node (the only etcd member went with it); heal the entire cluster (heal.generation)",
                );
            }
            if (joined) {
                // Its Node was deleted: kubeadm's preflight refuses a control-plane join over the previous one's
                // manifests and etcd data, and reset also takes its etcd member out while etcd answers.
                console.log(`[ControlPlaneMember ${i.nodeName}] joined once, but the cluster has no Node of it: resetting it to join again`);
                await kubeadmReset(node);
            }
            const credentials = await onControlPlane(hosts, i.peers, async (cp, via) => {
                // This host is no member, so a Node or etcd member of its name is what a previous one left.
                if ((await nodeStatus(cp, i.nodeName)) !== undefined) await kubectl(cp, ["delete", "node", i.nodeName, "--ignore-not-found"]);
                if ((await removeEtcdMember(cp, via.name, i.nodeName)) === "removed") {
                    console.log(`[ControlPlaneMember ${i.nodeName}] removed what a previous member of this name left in the cluster`);
                }
                return clusterJoinCredentials(cp, true, i.caCertHash);
            });
            await kubeadmJoin(node, { nodeName: i.nodeName, endpoint: i.endpoint, controlPlane: { address: i.address, apiServerPort: i.apiServerPort } }, credentials);
            console.log(`[ControlPlaneMember ${i.nodeName}] joined the control plane`);
        }
        if (i.loadBalanced) {
            const missed = await setBackendOnPeers(hosts, i.peers, LOAD_BALANCER_SCRIPT, i.nodeName, "ready");
            if (missed.length) console.log(`[ControlPlaneMember ${i.nodeName}] warning: not re-enabled in the HAProxy of ${missed.join("; ")}`);
        }
        return { nodeStatus: "Ready" };
    },
    async update(_node, olds, news, hosts) {
        // kubectl on this master itself first: at a start its peers may still be booting.
        const controlPlanes = [{ name: news.nodeName, connection: { ...news.connection, hostKeyFingerprint: olds.hostKeyFingerprint } }, ...news.peers];
        await changeService(hosts, controlPlanes, "ControlPlaneMember", news.nodeName, olds, news);
        return {};
    },
    async delete() {
        // deleteAcross does the work.
    },
    async deleteAcross(hosts, outs) {
        if (outs.peers.length > 0) {
            await takeOut(hosts, outs.nodeName, outs.peers);
            if (outs.loadBalanced) {
                const missed = await setBackendOnPeers(hosts, outs.peers, LOAD_BALANCER_SCRIPT, outs.nodeName, "maint");
                if (missed.length) console.log(`[ControlPlaneMember ${outs.nodeName}] not disabled in the HAProxy of ${missed.join("; ")} (its health check takes it out)`);
            }
        }
        await resetIfReachable(hosts, "ControlPlaneMember", outs);
    },
    async read(node, outs, hosts) {
        const status = await onControlPlane(hosts, [{ name: outs.nodeName, connection: outs.connection }, ...outs.peers], (cp) => nodeStatus(cp, outs.nodeName));
        return status === undefined ? undefined : { nodeStatus: status };
    },
};

export const controlPlaneMemberProvider = new StepProvider(controlPlaneMemberStep);

export interface ControlPlaneMemberArgs {
    /** How to log into this master. */
    connection: pulumi.Input<SshTarget>;
    /** The master's VM id (through its earlier steps): a new VM is a new member. */
    vmId: pulumi.Input<string>;
    /** Kubernetes node name. */
    nodeName: pulumi.Input<string>;
    /** The master's address (its API server's advertise address). */
    address: pulumi.Input<string>;
    /** kube-apiserver's port. */
    apiServerPort: pulumi.Input<number>;
    /** The control-plane endpoint. */
    endpoint: pulumi.Input<string>;
    /** The cluster's CA hash (from KubeadmInit). */
    caCertHash: pulumi.Input<string>;
    /** The other masters (secret: their connections). */
    peers: pulumi.Input<pulumi.Input<ControlPlaneRef>[]>;
    /** Whether the masters' HAProxy backends follow membership (HA). */
    loadBalanced: pulumi.Input<boolean>;
    /** Cordon and drain the node (a graceful stop's first update); back to false uncordons it once Ready. */
    drained?: pulumi.Input<boolean>;
    /** Seconds that drain may take before the stop goes on. */
    stopDrainTimeoutSeconds?: pulumi.Input<number>;
}

const controlPlaneMemberPlan: StepPlan<ControlPlaneMemberArgs> = (a, node) => [
    {
        when: ["create"],
        action: `kubeadm join ${node} --control-plane through a peer (a certificate key fetched fresh), then enable it in every peer's HAProxy when load-balanced`,
        rendered: { nodeName: a.nodeName, address: a.address, apiServerPort: a.apiServerPort, endpoint: a.endpoint, caCertHash: a.caCertHash, loadBalanced: a.loadBalanced },
    },
    serviceAction(node, a),
    {
        when: ["delete"],
        action: `take ${node} out of the control plane on a peer (its Node, its etcd member, its backend in every peer's HAProxy), kubeadm reset ${node}`,
        script: LOAD_BALANCER_SCRIPT,
        rendered: { nodeName: a.nodeName, loadBalanced: a.loadBalanced },
    },
];

export class ControlPlaneMember extends StepResource {
    declare readonly vmId: pulumi.Output<string>;
    declare readonly nodeName: pulumi.Output<string>;

    constructor(name: string, args: ControlPlaneMemberArgs, opts?: pulumi.CustomResourceOptions) {
        super(controlPlaneMemberProvider, controlPlaneMemberStep, controlPlaneMemberPlan, name, args, opts, { inputs: ["peers"] });
    }
}
