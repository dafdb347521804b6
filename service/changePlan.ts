/**
 * A preview's engine events as a plan an operator can approve: every resource change in the order the engine
 * would make it, and under each step resource the remote actions that change runs (its `remoteActions`
 * input, providers/remoteActions.ts): a new worker's join, a leaving one's drain, HAProxy re-rendered on a
 * master. Pure: the events come from `pulumi preview` (stackRunner.ts) through the Automation API.
 */
import type { Phase } from "../providers/remoteActions";

type Body = Record<string, any>;

/** The engine's placeholder for a value a preview cannot know yet (sdk/go/common/resource/stack). */
const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

export type { Phase };

export interface PlannedRemoteAction {
    phase: Phase;
    action: string;
    /** `sha256:…` of what is sent; "[secret]" or "(known after the change)" when the preview cannot show it. */
    digest: string;
    /** An update's action whose digest differs from the last run's: what it sends has changed. */
    changed?: boolean;
    /**
     * A delete action that will not run: the step is deleted with another resource (`deletedWith`) that this
     * run deletes too, so the engine calls no delete of it (pkg/resource/deploy/step.go, DeleteStep.Apply).
     */
    skipped?: string;
}

export interface PlannedChange {
    /** The engine's step: create, update, delete, create-replacement, delete-replaced, replace, ... */
    op: string;
    urn: string;
    type: string;
    /** The resource's name (the URN's last part). */
    name: string;
    /** The remote actions this step runs, in order (none for cloud resources and components). */
    actions: PlannedRemoteAction[];
    /** A step whose state was made before steps recorded their plans: what it runs is not known here. */
    unrecorded?: true;
}

export interface ChangePlan {
    /** Every change, in the engine's order; resources left as they are are not listed. */
    changes: PlannedChange[];
    /** Resources by what happens to them (the preview's summary: create, update, replace, delete, same). */
    resourceChanges: Record<string, number>;
}

/** Which phase of a step's actions an engine step runs; a logical `replace` runs nothing itself. */
const PHASE_OF: Record<string, Phase | undefined> = {
    create: "create",
    "create-replacement": "create",
    update: "update",
    delete: "delete",
    "delete-replaced": "delete",
    discard: "delete",
    "discard-replaced": "delete",
};

/** The type of every step resource (providers/stepResource.ts: module k8s-vnf of the dynamic provider). */
const STEP_TYPE = "pulumi-nodejs:dynamic/k8s-vnf:";

const NOT_A_CHANGE = new Set(["same", "read", "refresh", "remove-pending-replace"]);

function shownDigest(digest: unknown): string {
    if (digest === UNKNOWN) return "(known after the change)";
    if (typeof digest === "string") return digest;
    return "[secret]";
}

function actionsOf(inputs: Body | undefined): { when: string; action: string; digest: unknown; deletedWith?: unknown; onChange?: unknown }[] {
    const actions = inputs?.remoteActions;
    return Array.isArray(actions) ? actions.filter((a) => a && typeof a.when === "string" && typeof a.action === "string") : [];
}

function stepActions(op: string, metadata: Body, deleted: ReadonlySet<string>): PlannedRemoteAction[] {
    const phase = PHASE_OF[op];
    if (!phase) return [];
    const state = phase === "delete" ? metadata.old : metadata.new;
    const before = actionsOf(metadata.old?.inputs);
    return actionsOf(state?.inputs)
        .filter((a) => a.when.split(", ").includes(phase))
        .map((a) => ({ a, changed: !before.some((b) => b.action === a.action && b.digest === a.digest) }))
        // An action that runs at an update only when its digest changes does not run when it did not.
        .filter(({ a, changed }) => phase !== "update" || !a.onChange || changed)
        .map(({ a, changed }) => {
            const planned: PlannedRemoteAction = { phase, action: a.action, digest: shownDigest(a.digest) };
            if (phase === "update") planned.changed = changed;
            if (phase === "delete" && typeof a.deletedWith === "string" && deleted.has(a.deletedWith)) planned.skipped = `deleted with ${nameOf(a.deletedWith)}`;
            return planned;
        });
}

/** The plan of a preview, from its engine events (resourcePreEvent and summaryEvent). */
export function planFromEvents(events: Body[]): ChangePlan {
    let resourceChanges: Record<string, number> = {};
    const steps: Body[] = [];
    for (const event of events) {
        if (event.summaryEvent) resourceChanges = { ...event.summaryEvent.resourceChanges };
        const metadata = event.resourcePreEvent?.metadata as Body | undefined;
        if (metadata && !NOT_A_CHANGE.has(metadata.op)) steps.push(metadata);
    }
    const deleted = new Set(steps.filter((m) => PHASE_OF[m.op] === "delete").map((m) => String(m.urn)));
    const changes = steps.map((m) => {
        const change: PlannedChange = { op: String(m.op), urn: String(m.urn), type: String(m.type), name: nameOf(String(m.urn)), actions: stepActions(m.op, m, deleted) };
        const state = PHASE_OF[m.op] === "delete" ? m.old : m.new;
        if (String(m.type).startsWith(STEP_TYPE) && state?.inputs && !Array.isArray(state.inputs.remoteActions)) change.unrecorded = true;
        return change;
    });
    return { changes, resourceChanges };
}

/** A URN's resource name (its last part). */
function nameOf(urn: string): string {
    return urn.slice(urn.lastIndexOf("::") + 2);
}

const SYMBOL: Record<string, string> = { create: "+", update: "~", delete: "-", replace: "+-", "create-replacement": "++", "delete-replaced": "--" };

/** The plan as text: one line per change, its remote actions below it, then the totals. */
export function printablePlan(plan: ChangePlan, title: string): string {
    const lines = [title];
    if (plan.changes.length === 0) lines.push("  no changes: nothing would run");
    for (const c of plan.changes) {
        const kind = c.type.slice(c.type.lastIndexOf(":") + 1);
        lines.push(`  ${(SYMBOL[c.op] ?? "?").padEnd(2)} ${c.op.padEnd(18)} ${c.name} (${kind})`);
        if (c.unrecorded) lines.push("        (its remote actions are not recorded: its state predates plans; they run all the same)");
        for (const a of c.actions) lines.push(`        ${a.phase}: ${a.action} [${a.digest}${a.changed ? ", changed" : ""}]${a.skipped ? ` (not run: ${a.skipped})` : ""}`);
    }
    const totals = Object.entries(plan.resourceChanges)
        .filter(([op]) => op !== "same")
        .map(([op, n]) => `${n} to ${op}`);
    const actions = plan.changes.reduce((n, c) => n + c.actions.filter((a) => !a.skipped).length, 0);
    lines.push(`Resources: ${totals.length ? totals.join(", ") : "no changes"}${plan.resourceChanges.same ? `, ${plan.resourceChanges.same} unchanged` : ""}`);
    lines.push(`Remote actions: ${actions}`);
    return `${lines.join("\n")}\n`;
}
