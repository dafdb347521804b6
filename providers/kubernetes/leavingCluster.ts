/**
 * Leaving a cluster that may be going away itself: an entire heal resets the masters and replaces their VMs
 * while the workers' memberships and labels go, so "no control-plane node answers" can mean "no cluster left".
 */
import { Hosts } from "../step";
import { ConnectError, HostKeyMismatchError, SshSession } from "../transport/ssh";
import { ControlPlaneRef, isControlPlane, onControlPlane, wasReset } from "./kubeadm";

/**
 * As {@link onControlPlane}, for a step leaving a cluster that may be going away itself (an entire heal resets
 * the masters and replaces their VMs while the workers' memberships go): when `fn` fails on a host that has
 * stopped being a control-plane node meanwhile, another machine already answers at a master's address, or
 * every master has been reset already, there is no cluster left to leave, and the answer is undefined.
 */
export async function onControlPlaneWhileThere<T>(hosts: Hosts, candidates: ControlPlaneRef[], fn: (cp: SshSession, ref: ControlPlaneRef) => Promise<T>): Promise<T | undefined> {
    try {
        return await onControlPlane(hosts, candidates, async (cp, ref) => {
            try {
                return await fn(cp, ref);
            } catch (e) {
                if (await stillControlPlane(hosts, cp, ref)) throw e;
                console.log(`${ref.name} stopped being a control-plane node meanwhile: the cluster is going away`);
                return undefined;
            }
        });
    } catch (e) {
        // Another machine at a control-plane node's address (its VM replaced: an entire heal) holds none of this cluster.
        if (e instanceof HostKeyMismatchError) {
            console.log(`another machine answers at a control-plane node's address (a new VM): the cluster is going away`);
            return undefined;
        }
        if (e instanceof ConnectError && (await allReset(hosts, candidates))) {
            console.log(`every master (${candidates.map((c) => c.name).join(", ")}) has been reset by kubeadm: the cluster is going away`);
            return undefined;
        }
        throw e;
    }
}

/** Whether every one of `candidates` answers and has been reset (a replaced VM is no master of this cluster either). */
async function allReset(hosts: Hosts, candidates: ControlPlaneRef[]): Promise<boolean> {
    for (const candidate of candidates) {
        try {
            if (!(await hosts.on(candidate.connection, wasReset))) return false;
        } catch (e) {
            if (e instanceof HostKeyMismatchError) continue;
            if (e instanceof ConnectError) return false;
            throw e;
        }
    }
    return true;
}

/**
 * Whether `ref` is still a control-plane node. When the session to it went meanwhile (an entire heal
 * replacing its VM), a new one asks again: another machine at its address (another host key), or none
 * answering within the connection policy, is no control-plane node of this cluster any more.
 */
async function stillControlPlane(hosts: Hosts, cp: SshSession, ref: ControlPlaneRef): Promise<boolean> {
    try {
        return await isControlPlane(cp);
    } catch {
        try {
            return await hosts.on(ref.connection, isControlPlane);
        } catch (e) {
            if (e instanceof ConnectError || e instanceof HostKeyMismatchError) return false;
            throw e;
        }
    }
}
