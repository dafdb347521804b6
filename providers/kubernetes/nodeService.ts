/**
 * A node's part in the VNF's operational state (SOL003 operate), shared by both membership kinds: a graceful
 * stop first cordons and drains every node with its VM still running, within the stop's timeout; a start
 * waits for each node to be Ready again (its VM was just powered on) and then uncordons it. A forceful stop
 * and its start leave the nodes as they are: the kubelet comes back by itself.
 * Serialized with the providers: node built-ins, the transport and kubeadm.ts only.
 */
import type { PlannedAction } from "../remoteActions";
import type { Hosts } from "../step";
import { RemoteCommandError } from "../transport/ssh";
import { ControlPlaneRef, drainNode, kubectl, NodeStatus, nodeStatus, onControlPlane } from "./kubeadm";

/** The inputs a membership carries for it. */
export interface ServiceInputs {
    /** Cordoned and drained (the first half of a graceful stop). */
    drained?: boolean;
    /** Seconds that drain may take before the stop goes on without it. */
    stopDrainTimeoutSeconds?: number;
}

/** How long a node may take to be Ready after its VM is powered on: a boot, the kubelet, the API server. */
const READY_DEADLINE_MS = 10 * 60_000;
const READY_POLL_MS = 5_000;

export function validateService(i: ServiceInputs): { property: string; reason: string }[] {
    const failures = [];
    if (i.drained !== undefined && typeof i.drained !== "boolean") failures.push({ property: "drained", reason: "must be true or false" });
    const t = i.stopDrainTimeoutSeconds;
    if (t !== undefined && !(Number.isInteger(t) && t >= 1)) failures.push({ property: "stopDrainTimeoutSeconds", reason: "must be a whole number of seconds ≥ 1" });
    return failures;
}

/** The plan's action for it: what an update of `drained` runs (program side). */
export function serviceAction(subject: string, args: { drained?: unknown; stopDrainTimeoutSeconds?: unknown }): PlannedAction {
    return {
        when: ["update"],
        action: `cordon and drain ${subject} for a graceful stop, or uncordon it once Ready at the start (kubectl on a control-plane node)`,
        rendered: { drained: args.drained },
        onChange: true,
    };
}

/** Brings the node from the old `drained` to the new one: drain for a stop, or return to service. */
export async function changeService(hosts: Hosts, controlPlanes: ControlPlaneRef[], label: string, nodeName: string, olds: ServiceInputs, news: ServiceInputs): Promise<void> {
    const was = olds.drained === true;
    const now = news.drained === true;
    if (now && !was) await drainForStop(hosts, controlPlanes, label, nodeName, news.stopDrainTimeoutSeconds ?? 60);
    if (was && !now) await returnToService(hosts, controlPlanes, label, nodeName);
}

/**
 * Cordons and drains the node. A drain that does not finish in time (a disruption budget, a pod that will
 * not stop) is reported and the stop goes on, as SOL003 gracefulStopTimeout says: the wait is bounded, the
 * stop is not refused.
 */
async function drainForStop(hosts: Hosts, controlPlanes: ControlPlaneRef[], label: string, nodeName: string, timeoutSeconds: number): Promise<void> {
    await onControlPlane(hosts, controlPlanes, async (cp) => {
        try {
            await drainNode(cp, nodeName, timeoutSeconds);
            console.log(`[${label} ${nodeName}] cordoned and drained for the stop`);
        } catch (e) {
            // kubectl's own deadline (drain.go: "global timeout reached") is the graceful stop timeout running
            // out; anything else (no cordon, pods no controller manages, no API server) stops the stop.
            if (!(e instanceof RemoteCommandError) || !/global timeout reached/.test(e.message)) {
                throw new Error(`${nodeName} could not be drained for the stop, so its VM keeps running (fix the cause and run the stop again):\n${(e as Error).message}`);
            }
            console.log(`[${label} ${nodeName}] cordoned; its drain did not finish within ${timeoutSeconds} s (the graceful stop timeout), so the stop goes on:\n${e.message}`);
        }
    });
}

/** Waits until the node is Ready (the control plane may still be booting), then uncordons it. */
async function returnToService(hosts: Hosts, controlPlanes: ControlPlaneRef[], label: string, nodeName: string): Promise<void> {
    const deadline = Date.now() + READY_DEADLINE_MS;
    let last = "";
    for (;;) {
        let status: NodeStatus | undefined | "unknown" = "unknown";
        try {
            status = await onControlPlane(hosts, controlPlanes, (cp) => nodeStatus(cp, nodeName));
        } catch (e) {
            last = (e as Error).message;
        }
        if (status === undefined) throw new Error(`${nodeName} is no longer a node of the cluster, so it cannot be uncordoned; heal it`);
        if (status === "Ready") {
            await onControlPlane(hosts, controlPlanes, (cp) => kubectl(cp, ["uncordon", nodeName]));
            console.log(`[${label} ${nodeName}] Ready again and uncordoned`);
            return;
        }
        if (status === "NotReady") last = "its node is NotReady";
        if (Date.now() > deadline) throw new Error(`${nodeName} was not Ready within ${READY_DEADLINE_MS / 60_000} min of its start, so it stays cordoned (last: ${last}); run the start again`);
        await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
    }
}
