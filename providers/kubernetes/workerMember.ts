/**
 * WorkerMember: one worker's membership of the cluster. Create joins it (a bootstrap token fetched from a
 * control-plane node for the occasion); a worker that joined once but whose Node the cluster no longer has
 * is reset first and joins again. Delete drains it on a control-plane node with a real timeout (a
 * failed drain fails the delete, so the engine keeps the VM under running pods), deletes its Node object,
 * then runs `kubeadm reset` on the worker when it answers. Update drains it for a graceful stop, or
 * uncordons it at the start after one (nodeService.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { RemoteCommandError, SshTarget } from "../transport/ssh";
import { StepPlan } from "../remoteActions";
import { changeService, serviceAction, validateService } from "./nodeService";
import { clusterJoinCredentials, ControlPlaneRef, drainNode, hasJoined, isCaCertHash, kubeadmJoin, kubeadmReset, kubectl, NodeStatus, nodeStatus, onControlPlane, resetIfReachable } from "./kubeadm";
import { onControlPlaneWhileThere } from "./leavingCluster";

interface WorkerMemberInputs {
    [key: string]: unknown;
    vmId: string;
    nodeName: string;
    endpoint: string;
    caCertHash: string;
    /** Where kubectl/kubeadm run for this worker, tried in order. */
    controlPlanes: ControlPlaneRef[];
    /** Seconds a drain may take before the delete fails. */
    drainTimeoutSeconds: number;
    /** Cordoned and drained for a graceful stop (nodeService.ts). */
    drained?: boolean;
    /** Seconds that drain may take before the stop goes on. */
    stopDrainTimeoutSeconds?: number;
}

interface WorkerMemberState {
    [key: string]: unknown;
    nodeStatus?: NodeStatus;
}

export const workerMemberStep: StepDefinition<WorkerMemberInputs, WorkerMemberState> = {
    kind: "WorkerMember",
    // 4: leaving a cluster that an entire heal resets meanwhile is no failure (stored code runs the delete).
    // 5: ... also while the reset has stopped the API server but not yet removed the admin kubeconfig.
    // 6: ... also when every master was reset before the delete started (and kubectl's narrower retries, README (16)).
    version: "7",
    outputs: ["nodeStatus"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: true,
    deleteSucceedsWhenUnreachable: true,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (!isCaCertHash(i.caCertHash)) failures.push({ property: "caCertHash", reason: "must be sha256:<64 hex digits>" });
        if (!Array.isArray(i.controlPlanes) || i.controlPlanes.length === 0) failures.push({ property: "controlPlanes", reason: "must list at least one master as {name, connection}" });
        if (!Number.isInteger(i.drainTimeoutSeconds) || (i.drainTimeoutSeconds as number) < 1) failures.push({ property: "drainTimeoutSeconds", reason: "must be a whole number of seconds ≥ 1" });
        return [...failures, ...validateService(i)];
    },
    id: (i) => `${i.connection.host}:${i.nodeName}`,
    async create(node, i, hosts) {
        const joined = await hasJoined(node);
        const credentials = await onControlPlane(hosts, i.controlPlanes, async (cp) => {
            const status = await nodeStatus(cp, i.nodeName);
            if (joined && status !== undefined) return undefined;
            // This host has not joined, so a Node of its name is what its old VM left.
            if (status !== undefined) {
                await kubectl(cp, ["delete", "node", i.nodeName, "--ignore-not-found"]);
                console.log(`[WorkerMember ${i.nodeName}] removed the Node a previous VM of this name left`);
            }
            return clusterJoinCredentials(cp, false, i.caCertHash);
        });
        if (!credentials) {
            console.log(`[WorkerMember ${i.nodeName}] already joined`);
            return { nodeStatus: "Ready" };
        }
        if (joined) {
            // Its Node was deleted: kubeadm's preflight refuses a join over the files of the previous one.
            console.log(`[WorkerMember ${i.nodeName}] joined once, but the cluster has no Node of it: resetting it to join again`);
            await kubeadmReset(node);
        }
        await kubeadmJoin(node, { nodeName: i.nodeName, endpoint: i.endpoint }, credentials);
        return { nodeStatus: "Ready" };
    },
    async update(_node, olds, news, hosts) {
        await changeService(hosts, news.controlPlanes, "WorkerMember", news.nodeName, olds, news);
        return {};
    },
    async delete() {
        // deleteAcross does the work.
    },
    async deleteAcross(hosts, outs) {
        const timeout = outs.drainTimeoutSeconds;
        await onControlPlaneWhileThere(hosts, outs.controlPlanes, async (cp) => {
            if ((await nodeStatus(cp, outs.nodeName)) === undefined) return;
            try {
                await drainNode(cp, outs.nodeName, timeout);
            } catch (e) {
                if (!(e instanceof RemoteCommandError)) throw e;
                throw new Error(
                    `drain of ${outs.nodeName} failed, so the node and its VM stay (fix what blocks the eviction, or raise kubernetes.drainTimeout, and run again):\n${e.message}`,
                );
            }
            await kubectl(cp, ["delete", "node", outs.nodeName, "--ignore-not-found"]);
            console.log(`[WorkerMember ${outs.nodeName}] drained and removed from the cluster`);
        });
        await resetIfReachable(hosts, "WorkerMember", outs);
    },
    async read(_node, outs, hosts) {
        const status = await onControlPlane(hosts, outs.controlPlanes, (cp) => nodeStatus(cp, outs.nodeName));
        return status === undefined ? undefined : { nodeStatus: status };
    },
};

export const workerMemberProvider = new StepProvider(workerMemberStep);

export interface WorkerMemberArgs {
    /** How to log into the worker. */
    connection: pulumi.Input<SshTarget>;
    /** The worker's VM id (through its node step): a new VM is a new member. */
    vmId: pulumi.Input<string>;
    /** Kubernetes node name. */
    nodeName: pulumi.Input<string>;
    /** The control-plane endpoint. */
    endpoint: pulumi.Input<string>;
    /** The cluster's CA hash (from KubeadmInit). */
    caCertHash: pulumi.Input<string>;
    /** The masters (secret: their connections), tried in order. */
    controlPlanes: pulumi.Input<pulumi.Input<ControlPlaneRef>[]>;
    /** Drain deadline in seconds. */
    drainTimeoutSeconds: pulumi.Input<number>;
    /** Cordon and drain the node (a graceful stop's first update); back to false uncordons it once Ready. */
    drained?: pulumi.Input<boolean>;
    /** Seconds that drain may take before the stop goes on. */
    stopDrainTimeoutSeconds?: pulumi.Input<number>;
}

const workerMemberPlan: StepPlan<WorkerMemberArgs> = (a, node) => [
    { when: ["create"], action: `kubeadm join ${node} (a bootstrap token fetched from a control-plane node)`, rendered: { nodeName: a.nodeName, endpoint: a.endpoint, caCertHash: a.caCertHash } },
    serviceAction(node, a),
    { when: ["delete"], action: `drain ${node} on a control-plane node, delete its Node, kubeadm reset ${node}`, rendered: { nodeName: a.nodeName, drainTimeoutSeconds: a.drainTimeoutSeconds } },
];

export class WorkerMember extends StepResource {
    declare readonly vmId: pulumi.Output<string>;
    declare readonly nodeName: pulumi.Output<string>;

    constructor(name: string, args: WorkerMemberArgs, opts?: pulumi.CustomResourceOptions) {
        super(workerMemberProvider, workerMemberStep, workerMemberPlan, name, args, opts, { inputs: ["controlPlanes"] });
    }
}
