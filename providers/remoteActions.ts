/**
 * The plan a step resource carries as its `remoteActions` input: what it runs on which host when it is
 * created, updated or deleted, each action with a digest of what is sent there (the script and its
 * arguments, or the rendered config). Being an input, it is what `pulumi preview --diff` shows: a new
 * worker's `join`, a leaving one's `drain`, a HAProxy config whose digest changes on every master.
 *
 * Program-side only (the providers never read it back but to summarize a diff). Action texts are plain
 * strings the program builds from names. A digest never depends on a credential: what the project's one rule
 * for secrets (config/secrets.ts) finds in what is hashed is masked first. So a digest is never secret, even
 * over an input Pulumi marks secret (the CA hash the init outputs): were it secret, the engine would mark the
 * whole `remoteActions` input secret after the provider's check (a dynamic provider takes no secrets, and
 * `annotateSecrets` restores secretness per top-level property), and the plan would show as `[secret]`.
 */
import { createHash } from "node:crypto";
import * as pulumi from "@pulumi/pulumi";
import { maskSecrets } from "../config/secrets";
import type { HostScript } from "./transport/ssh";

/** When an action runs: at the step's create (a replacement's too), its update, its delete. */
export type Phase = "create" | "update" | "delete";

/** One action as the resource registers it. */
export interface RemoteAction {
    /** The phases it runs in, e.g. "create, update". */
    when: string;
    /** What runs where, e.g. "kubeadm join worker-4 through a control-plane node". */
    action: string;
    /** `sha256:` and 16 hex digits of what is sent to the host; unknown in a preview until its inputs are. */
    digest: pulumi.Output<string>;
    /** At an update, it runs only when its digest changed (else any update runs it). */
    onChange?: true;
    /**
     * A delete action's: the URN of the resource the step is deleted with (`deletedWith`). When that one is
     * deleted in the same run, the engine calls no delete of the step, so the action does not run.
     */
    deletedWith?: pulumi.Output<string>;
}

/** An action as a step's plan declares it. */
export interface PlannedAction {
    when: Phase[];
    action: string;
    /** The script sent to the host, when there is one. */
    script?: HostScript;
    /** Everything else that decides what runs there: arguments, rendered files, settings. */
    rendered: pulumi.Input<unknown>;
    /** At an update, the step runs it only when `rendered` changed (e.g. a drain only when `drained` does). */
    onChange?: true;
}

/** A step's plan: its actions, from its resource args and the name of what it acts on. */
export type StepPlan<A> = (args: A, subject: string) => PlannedAction[];

const scriptDigests = new WeakMap<HostScript, string>();

function hex(text: string): string {
    return createHash("sha256").update(text).digest("hex");
}

/** JSON with object keys sorted, so the same values always give the same digest. */
function canonical(value: unknown): string {
    if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
    if (value && typeof value === "object") {
        return `{${Object.keys(value)
            .sort()
            .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
            .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
            .join(",")}}`;
    }
    return JSON.stringify(value) ?? "null";
}

/** The digest of a script and what goes with it (a script's own digest is computed once). */
export function actionDigest(script: HostScript | undefined, rendered: unknown): string {
    let scriptDigest = "";
    if (script !== undefined) {
        scriptDigest = scriptDigests.get(script) ?? hex(script.text);
        scriptDigests.set(script, scriptDigest);
    }
    return `sha256:${hex(`${scriptDigest}\n${canonical(rendered)}`).slice(0, 16)}`;
}

export function registeredActions(planned: PlannedAction[], deletedWith: pulumi.Resource | undefined): RemoteAction[] {
    return planned.map((a) => ({
        when: a.when.join(", "),
        action: a.action,
        digest: pulumi.unsecret((pulumi.output(a.rendered) as pulumi.Output<unknown>).apply((rendered) => actionDigest(a.script, maskSecrets(rendered)))),
        ...(a.onChange ? { onChange: true as const } : {}),
        ...(deletedWith && a.when.includes("delete") ? { deletedWith: deletedWith.urn } : {}),
    }));
}
