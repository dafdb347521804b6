/**
 * Who runs an occurrence. The replica that starts running one claims it in the store, in the same write that
 * moves its state; it renews the leases of its claims every third of a lease, and gives a claim up when the
 * occurrence leaves the states in which it runs. A claim another replica may take over is one whose lease has
 * run out (by the database's clock), or one held by a process of this host and boot that no longer runs (a
 * restart after a crash need not wait for the lease), or any claim of an embedded store, which only one
 * process uses at a time.
 */
import { randomUUID } from "node:crypto";
import * as os from "node:os";
import { describeProcess, stillRunning, thisBoot } from "./pulumiProcess";
import { Claim, Replica, Store } from "./store";

/** This process as a replica (a new id each start). */
export function thisReplica(): Replica {
    return { id: randomUUID(), bootId: thisBoot(), hostname: os.hostname(), pid: process.pid, startTime: describeProcess(process.pid)?.startTime ?? "" };
}

/** Whether a claim may be taken from its holder by `replica`. */
export function mayTakeOver(store: Store, replica: Replica, claim: Claim): boolean {
    const owner = claim.owner;
    if (!owner || claim.lapsed || !store.shared) return owner?.id !== replica.id;
    return owner.id !== replica.id && owner.bootId === thisBoot() && !stillRunning({ pid: owner.pid, startTime: owner.startTime, bootId: owner.bootId });
}

/** Renews this replica's claims and looks for others' to take over, until stopped. */
export class ClaimKeeper {
    private timer: NodeJS.Timeout | undefined;
    private ticking: Promise<void> = Promise.resolve();

    constructor(
        private readonly store: Store,
        private readonly replica: Replica,
        /** Each tick, after the renewal: what to do about claims (take over, see cancels). */
        private readonly onTick: () => Promise<void>,
        /** Where a failed tick is reported (the store unreachable a moment); the next tick tries again. */
        private readonly onError: (e: Error) => void,
    ) {}

    start(): void {
        // Often enough that a cancel another replica accepted reaches the one running the occurrence in a second.
        const every = Math.min(1_000, Math.max(50, Math.floor(this.store.leaseMs / 3)));
        this.timer = setInterval(() => {
            this.ticking = this.ticking.then(() => this.tick()).catch((e) => this.onError(e as Error));
        }, every);
        this.timer.unref();
    }

    async stop(): Promise<void> {
        clearInterval(this.timer);
        await this.ticking;
    }

    private async tick(): Promise<void> {
        await this.store.renewClaims(this.replica.id);
        await this.onTick();
    }
}
