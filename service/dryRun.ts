/**
 * The dry run of an LCM operation (`POST /k8s-vnf/v1/vnf_instances/{id}/plan`): the request is checked and
 * planned exactly as the operation would be (the same refusals, before anything runs), then its first stack
 * update is previewed with the config it would set (a terminate: the destroy). Nothing changes: the config
 * goes into a copy of the stack's file, a preview writes no state, no occurrence is made (an instantiate's
 * dry run creates the instance's stack, empty, when it has none: stackRunner.ts). Dry runs have a bounded pool
 * of their own, and one stops when its client goes or an operation starts on its instance (dryRunPool.ts).
 * An operation of several updates (a graceful stop, a port move, a flavour change) depends on each update's
 * result for the next, so only its first is previewed, and the answer says how many follow.
 */
import { redactText } from "../config/secrets";
import { ChangePlan, planFromEvents, printablePlan } from "./changePlan";
import { DryRunPool, DryRunSlot } from "./dryRunPool";
import { Lifecycle, Operation } from "./lifecycle";
import { ProblemError } from "./problem";
import { StackRunner } from "./stackRunner";

type Body = Record<string, any>;

/** The operations a dry run takes, by the name of their task resource (`/vnf_instances/{id}/scale`, ...). */
export const PLANNABLE: Record<string, Operation> = {
    instantiate: "INSTANTIATE",
    scale: "SCALE",
    scale_to_level: "SCALE_TO_LEVEL",
    heal: "HEAL",
    operate: "OPERATE",
    change_ext_conn: "CHANGE_EXT_CONN",
    change_flavour: "CHANGE_FLAVOUR",
    terminate: "TERMINATE",
};

/**
 * Which operation a body is for: the `operation` query parameter, else the member only that operation's
 * request has (SOL003: InstantiateVnfRequest.flavourId, ScaleVnfRequest.type and aspectId, ...). A heal
 * request may be empty, so a body that names nothing needs the parameter.
 */
export function operationOf(named: string | undefined, body: Body): Operation {
    if (named !== undefined) {
        const operation = Object.hasOwn(PLANNABLE, named) ? PLANNABLE[named] : undefined;
        if (!operation) throw new ProblemError(400, `operation: must be one of ${Object.keys(PLANNABLE).join(", ")} (got ${JSON.stringify(named).slice(0, 40)})`);
        return operation;
    }
    if ("newFlavourId" in body) return "CHANGE_FLAVOUR";
    if ("flavourId" in body) return "INSTANTIATE";
    if ("aspectId" in body || "numberOfSteps" in body) return "SCALE";
    if ("instantiationLevelId" in body || "scaleInfo" in body) return "SCALE_TO_LEVEL";
    if ("changeStateTo" in body) return "OPERATE";
    if ("terminationType" in body) return "TERMINATE";
    if ("extVirtualLinks" in body) return "CHANGE_EXT_CONN";
    if ("vnfcInstanceId" in body || "cause" in body) return "HEAL";
    throw new ProblemError(400, `operation: the body names no operation; give it as ?operation=${Object.keys(PLANNABLE).join("|")}`);
}

export interface DryRun extends ChangePlan {
    operation: Operation;
    vnfInstanceId: string;
    /** The stack updates the operation would run; the first is the one previewed (0: a destroy). */
    updates: number;
    /** The plan as text, as `k8s-vnf plan` prints it. */
    text: string;
}

/**
 * Checks and plans the request, then previews it in a slot of the pool (refused with 429 when it is full),
 * stopped when `clientGone` aborts or an operation starts on the instance.
 */
export async function dryRun(lifecycle: Lifecycle, runner: StackRunner, pool: DryRunPool, operation: Operation, instanceId: string, params: Body, clientGone: AbortSignal): Promise<DryRun> {
    const planned = await lifecycle.dryRunOf(operation, instanceId, params);
    return pool.run(instanceId, clientGone, async (slot) => {
        // Checked again once counted in the pool: an operation accepted before this is seen here, one accepted
        // after it stops the dry run before its first command.
        await lifecycle.assertNoOperation(instanceId);
        return preview(runner, slot, operation, instanceId, planned);
    });
}

async function preview(runner: StackRunner, slot: DryRunSlot, operation: Operation, instanceId: string, planned: Awaited<ReturnType<Lifecycle["dryRunOf"]>>): Promise<DryRun> {
    const { stackName, updates, env, secrets } = planned;
    const events: Body[] = [];
    try {
        await runner.preview(stackName, updates[0], { env, destroy: updates.length === 0, onEvent: (e) => void events.push(e as Body), signal: slot.signal, onProcess: slot.onProcess, scratchDir: slot.scratchDir });
    } catch (e) {
        if (slot.signal.aborted) throw slot.signal.reason;
        throw new ProblemError(422, `the preview failed: ${redactText((e as Error).message, secrets)}`);
    }
    if (slot.signal.aborted) throw slot.signal.reason;
    const plan = planFromEvents(events);
    const later = updates.length > 1 ? ` (the first of ${updates.length} updates; each later one depends on the one before: plan again after it)` : "";
    const text = printablePlan(plan, `Plan of ${operation.toLowerCase()} for VNF instance ${instanceId}${later}; nothing was changed:`);
    // Events show secrets blinded; a secret in anything else would be a bug, so it is redacted all the same.
    return redactStrings({ operation, vnfInstanceId: instanceId, updates: updates.length, ...plan, text }, secrets);
}

/** Every string in `value` redacted (its JSON text is not: a short secret such as `7` may be a number there). */
function redactStrings<T>(value: T, secrets: string[]): T {
    if (typeof value === "string") return redactText(value, secrets) as T;
    if (Array.isArray(value)) return value.map((v) => redactStrings(v, secrets)) as T;
    if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [redactText(k, secrets), redactStrings(v, secrets)])) as T;
    return value;
}
