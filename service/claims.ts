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

/**
 * Renews this replica's claims, and looks for others' to take over, until stopped. The two on timers of their
 * own: a takeover may take a while (a command left running gets its grace), and must not hold up the renewal
 * of what this replica runs.
 */
export class ClaimKeeper {
    private renewal: NodeJS.Timeout | undefined;
    private watch: NodeJS.Timeout | undefined;
    private renewing: Promise<void> = Promise.resolve();
    private watching: Promise<void> = Promise.resolve();

    constructor(
        private readonly store: Store,
        private readonly replica: Replica,
        /** The occurrences whose claims this replica keeps: those it runs, or is taking over. */
        private readonly held: () => string[],
        /** Each tick of the watch: what to do about claims (take over, see cancels). */
        private readonly onTick: () => Promise<void>,
        /** Where a failed renewal or tick is reported (the store unreachable a moment); the next one tries again. */
        private readonly onError: (what: string, e: Error) => void,
    ) {}

    start(): void {
        // Often enough that a cancel another replica accepted reaches the one running the occurrence in a second.
        const every = Math.min(1_000, Math.max(50, Math.floor(this.store.leaseMs / 3)));
        const serially = (chain: "renewing" | "watching", work: () => Promise<void>, what: string) => {
            this[chain] = this[chain].then(work).catch((e) => this.onError(what, e as Error));
        };
        this.renewal = setInterval(() => serially("renewing", () => this.store.renewClaims(this.replica.id, this.held()), "claims not renewed this time"), every);
        this.watch = setInterval(() => serially("watching", this.onTick, "claims not looked after this time"), every);
        this.renewal.unref();
        this.watch.unref();
    }

    async stop(): Promise<void> {
        clearInterval(this.renewal);
        clearInterval(this.watch);
        await Promise.all([this.renewing, this.watching]);
    }
}
