/**
 * Leaving a cluster that may be going away itself: an entire heal resets the masters and replaces their VMs
 * while the workers' memberships and labels go, so "no control-plane node answers" can mean "no cluster left".
 */
import { Hosts } from "../step";
import { ConnectError, HostKeyMismatchError, RemoteCommandError, SshSession } from "../transport/ssh";
import { ControlPlaneRef, isControlPlane, wasReset } from "./kubeadm";

/**
 * As {@link onControlPlane}, for a step leaving a cluster that may be going away itself (an entire heal resets
 * the masters and replaces their VMs while the workers' memberships go). Each master is tried in turn: one
 * that has been reset (before, or while `fn` ran on it) or replaced by another machine (another host key) is
 * no master of this cluster, and the next is tried; the first working one answers. When every master is gone
 * so, there is no cluster left to leave, and the answer is undefined. When one could not tell (unreachable, or
 * with its API server but no admin kubeconfig), the leave fails as any step that reaches no master does.
 */
export async function onControlPlaneWhileThere<T>(hosts: Hosts, candidates: ControlPlaneRef[], fn: (cp: SshSession, ref: ControlPlaneRef) => Promise<T>): Promise<T | undefined> {
    const undecided: string[] = [];
    for (const ref of candidates) {
        let outcome: { value: T } | "gone" | "undecided";
        try {
            outcome = await hosts.first([ref.connection], `control-plane node ${ref.name}`, async (cp) => {
                const state = await askAgainIfDropped(hosts, cp, ref, masterState, "gone");
                if (state !== "control-plane") return state;
                try {
                    return { value: await fn(cp, ref) };
                } catch (e) {
                    if (await stillControlPlane(hosts, cp, ref)) throw e;
                    return "gone";
                }
            });
        } catch (e) {
            if (e instanceof HostKeyMismatchError) outcome = "gone";
            else if (e instanceof ConnectError) outcome = "undecided";
            else throw e;
        }
        if (typeof outcome === "object") return outcome.value;
        if (outcome === "gone") console.log(`${ref.name} is no control-plane node of this cluster any more (reset, or another machine at its address)`);
        else undecided.push(ref.name);
    }
    if (undecided.length) throw new ConnectError(`none of the control-plane nodes (${candidates.map((c) => c.name).join(", ")}) answered as one: ${undecided.join(", ")} could not tell (unreachable, or no admin kubeconfig beside a running API server), and no other is a master of this cluster any more`);
    console.log(`every master (${candidates.map((c) => c.name).join(", ")}) is gone: the cluster is going away`);
    return undefined;
}

/** What a master is now: a control-plane node, reset (gone), or neither for sure (with its API server but no admin kubeconfig). */
async function masterState(s: SshSession): Promise<"control-plane" | "gone" | "undecided"> {
    if (await isControlPlane(s)) return "control-plane";
    return (await wasReset(s)) ? "gone" : "undecided";
}

/** Whether `ref` is still a control-plane node, asked on `cp` or again (askAgainIfDropped). */
function stillControlPlane(hosts: Hosts, cp: SshSession, ref: ControlPlaneRef): Promise<boolean> {
    return askAgainIfDropped(hosts, cp, ref, isControlPlane, false);
}

/**
 * `ask` on `cp`. When that session went meanwhile (an entire heal replacing the master's VM: ssh2's "Not
 * connected"), a new one asks again, and another machine at its address, or none answering within the
 * connection policy, is `gone`. A command that ran and failed is no session gone, and fails as it is.
 */
async function askAgainIfDropped<T>(hosts: Hosts, cp: SshSession, ref: ControlPlaneRef, ask: (s: SshSession) => Promise<T>, gone: T): Promise<T> {
    try {
        return await ask(cp);
    } catch (e) {
        if (e instanceof RemoteCommandError) throw e;
        try {
            return await hosts.on(ref.connection, ask);
        } catch (again) {
            if (again instanceof ConnectError || again instanceof HostKeyMismatchError) return gone;
            throw again;
        }
    }
}
