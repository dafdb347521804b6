/**
 * Occurrences whose replica is gone (claims.ts says which may be taken): each claimed by this replica if still
 * so (another may be quicker); what had not started is rolled back; what was running failed temporarily, once
 * the Pulumi command that replica left running is stopped (on this host) and its stack's stale lock cleared,
 * so that a retry is the only update of that stack.
 */
import { mayTakeOver } from "./claims";
import { LostClaim, Occurrences } from "./occurrences";
import { OperationStacks } from "./operationStacks";
import { RUNNING } from "./operationStates";
import { problemBody } from "./problem";
import { PulumiProcess } from "./pulumiProcess";
import { Claim, Replica, Store } from "./store";

export class Takeover {
    constructor(
        private readonly store: Store,
        private readonly replica: Replica,
        private readonly occurrences: Occurrences,
        private readonly stacks: OperationStacks,
        /** Whether this replica runs the occurrence now (its claim is its own). */
        private readonly runsHere: (opId: string) => boolean,
    ) {}

    /** The occurrences this replica is taking over now: it keeps their claims meanwhile. */
    readonly underWay = new Set<string>();

    /** Takes over every occurrence whose claim may be taken. */
    async takeOverLapsed(): Promise<void> {
        for (const { id, claim } of await this.store.claimed()) {
            if (!this.runsHere(id) && mayTakeOver(this.store, this.replica, claim)) await this.takeOver(id, claim);
        }
    }

    /**
     * An occurrence whose replica is gone: claimed here if still so (another replica may be quicker); what had
     * not started is rolled back; what was running failed temporarily, once the Pulumi command that replica
     * left running is stopped and its stack's stale lock cleared (so a retry is the only update of that stack).
     */
    private async takeOver(opId: string, seen: Claim): Promise<void> {
        // The start-up's takeover and the watch's may meet on one occurrence: the first goes on alone.
        if (this.underWay.has(opId)) return;
        this.underWay.add(opId);
        try {
            const op = await this.store.update("op_occs", opId, (current, claim) => (current && RUNNING.has(String(current.operationState)) && claim.owner?.id === seen.owner?.id && mayTakeOver(this.store, this.replica, claim) ? current : undefined), this.replica);
            if (!op) return;
            try {
                await this.finish(op, seen);
            } catch (e) {
                // Given up again (the store away a moment, a replica quicker): unclaimed, it is taken over anew.
                await this.store.update("op_occs", opId, (current, claim) => (claim.owner?.id === this.replica.id ? current : undefined), null).catch(() => undefined);
                if (!(e instanceof LostClaim)) throw e;
            }
        } finally {
            this.underWay.delete(opId);
        }
    }

    private async finish(op: Record<string, any>, seen: Claim): Promise<void> {
        const opId = String(op.id);
        const gone = seen.owner ? `the service (${seen.owner.hostname}, pid ${seen.owner.pid}) stopped` : "the service stopped";
        if (op.operationState === "STARTING") {
            await this.occurrences.transition(opId, "ROLLED_BACK", { from: ["STARTING"], owned: true, note: `had not started when ${gone}: ROLLED_BACK` });
            return;
        }
        const cleanup = await this.stacks.clearLock(op, await this.stacks.secretsOf(op), op.__pulumi as PulumiProcess | undefined);
        const error = problemBody(500, `${gone} while the operation was running: ${cleanup}; retry, roll back or fail it`);
        await this.occurrences.transition(opId, "FAILED_TEMP", { from: ["PROCESSING", "ROLLING_BACK"], owned: true, error, forget: ["__pulumi"] });
    }
}
