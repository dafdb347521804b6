/**
 * Operation occurrences as stored, changed one writer at a time (Store.update, the row locked): a transition
 * of the SOL003 state machine that only one of several replicas asked at once makes, the claim moving with it,
 * and the notification and log line of each, sent by the replica that made it (so once).
 */
import { EventEmitter } from "node:events";
import { opOccHref } from "./links";
import { Notifier } from "./notifications";
import { OPERATION_LOG_EVENT } from "./operationLog";
import { OperationState, RUNNING } from "./operationStates";
import { conflict, notFound } from "./problem";
import { HOLDING_STATES, Replica, Store } from "./store";

type Body = Record<string, any>;

/** A change of an occurrence this replica no longer runs: another took its claim over. */
export class LostClaim extends Error {}

export interface TransitionOptions {
    /** The states it may move from (a task's default: FAILED_TEMP); refused with 409 otherwise. */
    from?: string[];
    /** The task asking (retry, rollback, fail), for the refusal's words. */
    task?: string;
    /** Only while this replica holds the claim (LostClaim otherwise). */
    owned?: boolean;
    /** This replica takes the claim (a task that runs it again). */
    claim?: Replica;
    error?: Body;
    /** A further check of the occurrence as stored; what it throws refuses the change. */
    check?: (op: Body) => void;
    /** Fields that go. */
    forget?: string[];
    /** Said in the log line. */
    note?: string;
}

export class Occurrences {
    constructor(
        private readonly store: Store,
        private readonly notifier: Notifier,
        private readonly events: EventEmitter,
        private readonly replica: Replica,
    ) {}

    async find(opId: string): Promise<Body> {
        const op = await this.store.get("op_occs", opId);
        if (!op) throw notFound("VNF LCM operation occurrence", opId);
        return op;
    }

    /** Changes an occurrence this replica runs; LostClaim when another replica has taken it over. */
    async changeOwned(opId: string, change: (op: Body) => Body): Promise<Body> {
        return (await this.store.update("op_occs", opId, (op, claim) => {
            if (!op) throw notFound("VNF LCM operation occurrence", opId);
            if (claim.owner?.id !== this.replica.id) throw new LostClaim(`operation ${opId} is run by replica ${claim.owner?.hostname ?? "none"} now`);
            return change(op);
        })) as Body;
    }

    /**
     * Moves an occurrence to `state` with its row locked: refused (409) unless it is in one of `from` (a task's:
     * FAILED_TEMP), or, `owned`, unless this replica holds its claim (LostClaim). The claim goes with the state:
     * `claim` takes it; a state no replica runs in gives it up. Notified and logged once it is stored.
     */
    async transition(opId: string, state: OperationState, how: TransitionOptions = {}): Promise<Body> {
        const from = how.from ?? (how.task ? ["FAILED_TEMP"] : undefined);
        const next = (await this.store.update(
            "op_occs",
            opId,
            (op, claim) => {
                if (!op) throw notFound("VNF LCM operation occurrence", opId);
                if (how.owned && claim.owner?.id !== this.replica.id) throw new LostClaim(`operation ${opId} is run by replica ${claim.owner?.hostname ?? "none"} now`);
                if (from && !from.includes(String(op.operationState))) throw conflict(`operation ${opId} is ${op.operationState}; ${how.task ?? state.toLowerCase()} needs ${from.join(" or ")}`);
                how.check?.(op);
                // SOL003 v2.6.1 table 5.5.2.13-1: isCancelPending is true only while a cancel is under way.
                const cancelPending = RUNNING.has(state) && op.isCancelPending === true;
                const changed: Body = { ...op, operationState: state, stateEnteredTime: new Date().toISOString(), isCancelPending: cancelPending, ...(how.error ? { error: how.error } : {}) };
                if (!how.error && (state === "PROCESSING" || state === "COMPLETED")) delete changed.error;
                // Its cancelMode is shown only while a cancel is pending.
                if (!cancelPending) delete changed.cancelMode;
                for (const key of how.forget ?? []) delete changed[key];
                return changed;
            },
            how.claim ?? (RUNNING.has(state) ? undefined : null),
        )) as Body;
        if (state !== "PROCESSING" && state !== "ROLLING_BACK") this.notify(next, "RESULT");
        this.events.emit(opId, { operationState: state });
        this.events.emit(OPERATION_LOG_EVENT, { op: next, ...(how.note ? { note: how.note } : {}) });
        return next;
    }

    notify(op: Body, status: "START" | "RESULT"): void {
        this.notifier.publish(
            {
                notificationType: "VnfLcmOperationOccurrenceNotification",
                vnfInstanceId: String(op.vnfInstanceId),
                notificationStatus: status,
                operationState: op.operationState,
                operation: op.operation,
                vnfLcmOpOccId: op.id,
                isAutomaticInvocation: false,
                verbosity: "FULL",
                ...(op.error ? { error: op.error } : {}),
                ...(status === "RESULT" && op.resourceChanges ? { affectedVnfcs: op.resourceChanges.affectedVnfcs } : {}),
            },
            String(op.__baseUrl ?? ""),
            { vnfLcmOpOcc: { href: opOccHref(op.__baseUrl ?? "", op.id) } },
        );
    }
}

const HOLDING: ReadonlySet<string> = new Set(HOLDING_STATES);

/** Refuses (409) when one of an instance's `occurrences` holds it. */
export function assertNoneHolding(instanceId: string, occurrences: Body[]): void {
    const holding = occurrences.find((o) => HOLDING.has(String(o.operationState)));
    if (holding) throw conflict(`operation ${holding.id} (${holding.operation}) of VNF instance ${instanceId} is ${holding.operationState}; one operation at a time`);
}
