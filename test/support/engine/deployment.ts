/**
 * One deployment of the test engine (`pulumi up`, `destroy` or `refresh`): the program's registrations
 * become steps by Pulumi's rules (stepRules.ts; the engine's step_generator.go and step_executor.go at
 * v3.248.0), run through the providers (resourceProviders.ts) and recorded in the checkpoint after every
 * step (state.ts). The first failure stops the run as the engine's step executor does without
 * `--continue-on-error`: no new step starts, the steps under way finish, the program is stopped.
 */
import * as os from "node:os";
import { EngineRunError, RefreshOptions, RunResult, StackRun, StepOp, UpOptions } from "./api";
import { EngineEvents, EventOp, StepDiff } from "./events";
import { LabCloud } from "./labCloud";
import { ProgramRun } from "./program";
import { DYNAMIC_PROVIDER, isDynamic, ResourceProviders } from "./resourceProviders";
import { KUBERNETES_PROVIDER, KubernetesStandIn } from "./kubernetesStandIn";
import { containsUnknown, decide, dependentReplacements, DiffAnswer, ignoringChanges, inputDiff, isSecretValue, plain, providerUrn, scheduleDeletes, secretValue, shouldTriggerReplace, typeOfUrn, urnOf } from "./stepRules";
import { ResourceState, RunState } from "./state";

type Props = Record<string, unknown>;
const PROJECT = "k8s-vnf";

/** `--parallel`'s default: PULUMI_PARALLEL, else 4 × the CPU count; anything below 1 is 1 (up.go, deployment.go). */
function parallelism(requested: number | undefined): number {
    return Math.max(1, requested ?? (Number(process.env.PULUMI_PARALLEL) || os.cpus().length * 4));
}

/** Features the engine's monitor reports (sdk/nodejs/runtime/settings.ts awaitFeatureSupport asks these). */
const FEATURES = new Set(["secrets", "resourceReferences", "deletedWith", "aliasSpecs"]);

const isState = (v: unknown): v is ResourceState => !!v && typeof v === "object" && "urn" in v && "outputs" in v;

/** Resource options the engine would otherwise ignore silently: using one fails the registration. */
function unsupportedOptions(req: Record<string, any>): string[] {
    return [
        ...((req.ignoreChanges ?? []).some((p: string) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(p)) ? ["ignoreChanges below the top level"] : []),
        ...(req.replaceOnChanges?.length ? ["replaceOnChanges"] : []),
        ...(req.protect ? ["protect"] : []),
        ...(req.provider && ![KUBERNETES_PROVIDER, DYNAMIC_PROVIDER].includes(typeOfUrn(providerUrn(req.provider))) ? ["explicit providers other than Kubernetes' and pulumi-nodejs'"] : []),
    ];
}

/** What the monitor answers a registration after the run failed: the SDK ignores UNAVAILABLE (resource.ts). */
export class RunStopped extends Error {
    readonly code = 14;
}

export class Deployment {
    private readonly state: RunState;
    private readonly providers: ResourceProviders;
    private readonly events: EngineEvents;
    /** URNs with a step in this run (the step generator's operation maps). */
    private readonly operatedOn = new Set<string>();
    /** URNs whose deletion this run has decided (`sg.deletes`): a resource deleted with one of them is not deleted itself. */
    private readonly deleting = new Set<string>();
    /** URNs deleted in this run for a dependency's delete-first replacement; re-created when registered. */
    private readonly recreating = new Set<string>();
    /** `sg.dependentReplaceKeys`: the keys that made a dependent of a delete-first replacement go with it. */
    private readonly dependentKeys = new Map<string, string[]>();
    private readonly changes: Partial<Record<StepOp, number>> = {};
    private failure?: string;
    /** Whether a provider failed (its outcome unknown: the summary says the state may be corrupt). */
    private providerFailed = false;
    private readonly running = new Set<Promise<unknown>>();
    private readonly slots: { free: number; waiting: (() => void)[] } = { free: 1, waiting: [] };

    /** Previews are not modelled: the suites that run them use the real CLI. */
    constructor(
        private readonly run: StackRun,
        cloud: LabCloud,
    ) {
        this.state = new RunState(run.stateFile);
        this.events = new EngineEvents(run);
        this.providers = new ResourceProviders(cloud, new KubernetesStandIn(cloud.lab), run.env ?? {}, (line) => this.events.diagnostic("info", line), (reference) => this.providerInputs(reference));
    }

    /** `pulumi up`: the program runs; its registrations are steps; then what it no longer registers is deleted. */
    async up(options: UpOptions): Promise<RunResult> {
        this.slots.free = parallelism(options.parallel);
        this.events.prelude();
        this.checkTargets(options.replace ?? []);
        if (!this.failure) {
            const replace = new Set(options.replace ?? []);
            const program = new ProgramRun(
                { projectDir: this.run.projectDir, stack: this.run.stack, config: this.run.config, secretKeys: this.run.secretKeys, env: this.run.env ?? {} },
                {
                    supportsFeature: (id) => FEATURES.has(id),
                    registerResource: (request) => this.register(request, replace),
                    registerResourceOutputs: (urn, outputs) => this.registerOutputs(urn, outputs),
                    output: (line, stream) => this.programOutput(line, stream),
                },
            );
            // After a failure the registrations left wait forever (UNAVAILABLE): the engine stops the program.
            const stopWhenFailed = setInterval(() => this.failure && this.running.size === 0 && program.kill(), 50);
            const programFailure = await program.finished;
            clearInterval(stopWhenFailed);
            await this.settle();
            if (programFailure && !this.failure) this.fail(programFailure);
        }
        if (!this.failure) await this.deleteAll([...this.state.pendingDeletes(), ...this.state.untouched(this.operatedOn)]);
        return this.finish();
    }

    /** `pulumi destroy`: every resource deleted, dependents first. */
    async destroy(options: { parallel?: number } = {}): Promise<RunResult> {
        this.slots.free = parallelism(options.parallel);
        this.events.prelude();
        await this.deleteAll(this.state.olds.resources.filter((r) => !this.state.isRemoved(r)));
        if (!this.failure) this.state.outputs = {};
        return this.finish();
    }

    /**
     * `pulumi refresh`: every resource read back in parallel (refresh steps are generated up front); one that
     * is gone leaves the state, one that cannot be read keeps its old state and fails the refresh. Outputs
     * are updated in place; counted as `same`, `update` or `delete` (the step's result op, update.go).
     */
    async refresh(options: RefreshOptions & { parallel?: number } = {}): Promise<RunResult> {
        this.slots.free = parallelism(options.parallel);
        this.events.prelude();
        this.checkTargets(options.targets ?? []);
        if (!this.failure) {
            const targeted = (r: ResourceState) => !options.targets || options.targets.includes(r.urn);
            await Promise.all(this.state.olds.resources.filter(targeted).map((r) => this.refreshOne(r).catch(() => undefined)));
        }
        return this.finish();
    }

    // ---- registrations ---------------------------------------------------------------------------

    private async register(req: Record<string, any>, replaceUrns: Set<string>): Promise<{ urn: string; id: string; object: Props }> {
        const urn = urnOf(this.run.stack, PROJECT, req.type, req.name, req.parent);
        if (this.failure) throw new RunStopped(this.failure);
        try {
            const unsupported = unsupportedOptions(req);
            if (unsupported.length) throw new Error(`${urn}: the test engine does not implement ${unsupported.join(", ")}; add it to test/support/engine before using it`);
            if (this.operatedOn.has(urn)) throw new Error(`Duplicate resource URN '${urn}'; try giving it a unique name`);
            this.operatedOn.add(urn);
            const goal: ResourceState = {
                urn,
                type: req.type,
                custom: req.custom,
                id: "",
                parent: req.parent,
                inputs: req.object,
                outputs: {},
                dependencies: req.dependencies,
                propertyDependencies: req.propertyDependencies,
                deleteBeforeReplace: req.deleteBeforeReplace,
                replacementTrigger: req.replacementTrigger,
                additionalSecretOutputs: req.additionalSecretOutputs,
                deletedWith: req.deletedWith,
                retainOnDelete: req.retainOnDelete,
                ...(req.provider ? { provider: req.provider } : {}),
            };
            const old = this.state.old(urn);
            if (old && req.ignoreChanges?.length) goal.inputs = ignoringChanges(goal.inputs, old.inputs, req.ignoreChanges);
            if (!goal.custom) return { urn, id: "", object: {}, ...this.component(goal, old) };
            const recorded = await this.customSteps(goal, old, replaceUrns.has(urn));
            return { urn, id: recorded.id, object: recorded.outputs };
        } catch (e) {
            // A failed step has reported itself and stopped the run; anything else is reported here.
            if (e instanceof RunStopped) throw e;
            this.events.diagnostic("error", (e as Error).message, urn);
            this.fail((e as Error).message);
            throw new RunStopped((e as Error).message);
        }
    }

    /** The inputs of the provider resource a `<urn>::<id>` reference names (this run's copy, else the old one). */
    private providerInputs(reference: string): Props {
        const urn = providerUrn(reference);
        const id = reference.slice(urn.length + 2);
        const found = this.state.resources().find((r) => r.urn === urn && r.id === id) ?? this.state.olds.resources.find((r) => r.urn === urn && r.id === id);
        if (!found) throw new Error(`no provider ${reference} in the state`);
        return found.inputs;
    }

    /** A component: no provider; same when its inputs are, else an update (`sg.diff` with no provider). */
    private component(goal: ResourceState, old: ResourceState | undefined): Record<string, never> {
        const op = !old ? "create" : JSON.stringify(old.inputs) === JSON.stringify(goal.inputs) ? "same" : "update";
        this.events.pre(op, old, goal);
        this.record({ ...goal, outputs: old?.outputs ?? {} }, op);
        return {};
    }

    private registerOutputs(urn: string, outputs: Props): void {
        const r = this.state.resources().find((n) => n.urn === urn);
        if (!r) return;
        r.outputs = outputs;
        this.events.outputs("same", undefined, r);
        if (r.type === "pulumi:pulumi:Stack") this.state.outputs = outputs;
        this.state.save();
    }

    /** `continueStepsFromImport` → `generateStepsFromDiff` → `continueStepsFromDiff`, for a custom resource. */
    private async customSteps(goal: ResourceState, old: ResourceState | undefined, targetedReplace: boolean): Promise<ResourceState> {
        const recreating = this.recreating.has(goal.urn);
        let checked = await this.check(goal, recreating || !old || targetedReplace || old.pendingReplacement ? undefined : old);
        if (old && recreating) {
            // `sg.deletes[urn]`: a replace with no keys, a create-replacement with the dependent's replace keys.
            this.logical("replace", old, checked);
            return this.createReplacement(old, checked, { keys: this.dependentKeys.get(goal.urn) });
        }
        if (!old) return this.step("create", undefined, checked, () => this.created(checked)).then((c) => this.record(c, "create"));

        if (containsUnknown(goal.replacementTrigger)) throw new Error(`replacement trigger contains unknowns for ${goal.urn}`);
        const triggered = shouldTriggerReplace(goal.replacementTrigger, old.replacementTrigger);
        // `providerChanged`: a resource whose explicit provider is another one (a replaced provider has a new id) is replaced.
        const providerChanged = (old.provider ?? "") !== (goal.provider ?? "");
        const diff: DiffAnswer = targetedReplace
            ? { changes: "some", replaces: ["id"], deleteBeforeReplace: false }
            : providerChanged
              ? { changes: "some", replaces: ["provider"], deleteBeforeReplace: false }
              : triggered
                ? { changes: "some", replaces: [], deleteBeforeReplace: false }
                : await this.providers.diff(old, checked.inputs);
        const decision = old.pendingReplacement
            ? { op: "replace" as const, deleteBeforeReplace: goal.deleteBeforeReplace ?? diff.deleteBeforeReplace }
            : decide(diff, triggered, goal.deleteBeforeReplace, JSON.stringify(plain(old.inputs)) !== JSON.stringify(plain(checked.inputs)));
        if (decision.op === "same") {
            this.logical("same", old, checked);
            return this.record({ ...checked, id: old.id, outputs: old.outputs }, "same");
        }
        const stepDiff = this.stepDiff(diff, old, checked);
        if (decision.op === "update") {
            const updated = async () => ({ ...checked, id: old.id, outputs: await this.providers.update(old, checked.inputs) });
            return this.step("update", old, checked, updated, { diffs: stepDiff.diffs, detailedDiff: stepDiff.detailedDiff }).then((u) => this.record(u, "update"));
        }
        // A replacement checks the new inputs again, without the old ones (continueStepsFromDiff).
        if (!targetedReplace && !old.pendingReplacement) checked = await this.check(goal, undefined);
        if (decision.deleteBeforeReplace) {
            await this.deleteDependents(old);
            if (!old.pendingReplacement) {
                this.deleting.add(old.urn);
                await this.step("delete-replaced", old, undefined, () => this.delete(old));
                this.state.mark(old, "pendingReplacement");
            }
            this.logical("replace", old, checked, stepDiff);
            return this.createReplacement(old, checked, stepDiff);
        }
        const created = await this.createReplacement(old, checked, stepDiff);
        this.logical("replace", old, checked, stepDiff);
        if (!old.pendingReplacement) this.state.mark(old, "delete");
        return created;
    }

    /** The new copy of a replaced resource; a pending-replacement old entry leaves the state with it. */
    private createReplacement(old: ResourceState, next: ResourceState, diff: StepDiff = {}): Promise<ResourceState> {
        return this.step("create-replacement", old, next, () => this.created(next), diff).then((c) => this.record(c, "replace"));
    }

    /** A CreateStep's result (step.go `CreateStep.Apply`). */
    private async created(next: ResourceState): Promise<ResourceState> {
        return { ...next, ...(await this.providers.create(next)) };
    }

    /**
     * The diff a step carries (`NewUpdateStep`/`NewReplaceStep`/`NewCreateReplacementStep` get `diff.ReplaceKeys`,
     * `diff.ChangedKeys`, `diff.DetailedDiff`). A provider answering "unknown" gets the engine's own input diff
     * (`diffResource`: `oldInputs.Diff(new)`, `NewDetailedDiffFromObjectDiff(tmp, true)`).
     */
    private stepDiff(diff: DiffAnswer, old: ResourceState, checked: ResourceState): StepDiff {
        if (diff.changes === "unknown") {
            const computed = inputDiff(old.inputs, checked.inputs);
            if (computed.changedKeys.length) return { keys: diff.replaces, diffs: computed.changedKeys, detailedDiff: computed.detailedDiff };
        }
        return { keys: diff.replaces, diffs: diff.changedKeys, detailedDiff: diff.detailedDiff ?? null };
    }

    /**
     * Delete-before-replace: the dependents whose Diff, with their property from a replaced resource unknown,
     * answers replace are deleted first, in reverse dependency order (calculateDependentReplacements).
     */
    private async deleteDependents(root: ResourceState): Promise<void> {
        const ignore = new Set([...this.operatedOn, ...this.recreating]);
        const keys = new Map<string, string[]>();
        const dependents = await dependentReplacements(this.state.olds.resources, root, ignore, async (r, inputs) => {
            const answer = await this.providers.diff(r, inputs);
            keys.set(r.urn, answer.replaces);
            return answer;
        });
        for (const d of dependents) {
            this.deleting.add(d.urn);
            this.dependentKeys.set(d.urn, keys.get(d.urn) ?? []);
        }
        for (const d of dependents.reverse()) {
            await this.step("delete-replaced", d, undefined, () => this.delete(d));
            this.state.mark(d, "pendingReplacement");
            this.recreating.add(d.urn);
        }
    }

    /** `DeleteStep.Apply` (step.go): no provider call for a resource deleted with another one this run deletes. */
    private async delete(r: ResourceState): Promise<void> {
        if (r.deletedWith && this.deleting.has(r.deletedWith)) return;
        await this.providers.delete(r);
    }

    private async check(goal: ResourceState, old: ResourceState | undefined): Promise<ResourceState> {
        const { inputs, failures } = await this.providers.check(goal, old?.inputs);
        if (failures.length) {
            for (const f of failures) this.events.diagnostic("error", `${f.property}: ${f.reason}`, goal.urn);
            throw new Error(`resource ${goal.urn} is invalid: ${failures.map((f) => `${f.property}: ${f.reason}`).join("; ")}`);
        }
        return { ...goal, inputs };
    }

    // ---- deletes and refresh -----------------------------------------------------------------------

    /**
     * `ScheduleDeletes`: antichains in order, each in parallel; after a failure no further antichain starts.
     * An entry pending replacement has nothing left to delete (`RemovePendingReplaceStep`).
     */
    private async deleteAll(condemned: ResourceState[]): Promise<void> {
        for (const r of condemned) this.deleting.add(r.urn);
        for (const chain of scheduleDeletes(this.state.olds.resources, condemned)) {
            if (this.failure) return;
            await Promise.all(
                chain.map(async (r) => {
                    if (r.pendingReplacement) {
                        this.logical("remove-pending-replace", r, undefined);
                        this.state.remove(r);
                        return;
                    }
                    const deleted = await this.step(r.delete ? "delete-replaced" : "delete", r, undefined, () => this.delete(r)).then(
                        () => true,
                        () => false,
                    );
                    if (deleted) this.state.remove(r);
                }),
            );
        }
    }

    private async refreshOne(r: ResourceState): Promise<void> {
        if (!r.custom || r.pendingReplacement || r.delete) {
            this.count("same");
            return;
        }
        const found = await this.step("refresh", r, r, () => this.providers.read(r));
        if (!found) {
            this.state.remove(r);
            this.count("delete");
            return;
        }
        const changed = JSON.stringify(found) !== JSON.stringify(r.outputs);
        r.outputs = found;
        this.state.save();
        this.count(changed ? "update" : "same");
    }

    // ---- steps and their bookkeeping --------------------------------------------------------------

    /** Runs one step under `--parallel`; its failure fails the run. */
    private async step<T>(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined, fn: () => Promise<T>, diff: StepDiff = {}): Promise<T> {
        if (this.failure && op !== "refresh") throw new RunStopped(this.failure);
        const run = this.underSlot(op, async () => {
            this.events.pre(op, old, next, diff);
            try {
                const result = await fn();
                // The outputs event carries the state after the step (a new id and outputs).
                this.events.outputs(op, old, isState(result) ? result : next, diff);
                if (op === "delete") this.count("delete");
                return result;
            } catch (e) {
                const subject = (next ?? old)!;
                this.providerFailed ||= isDynamic(subject.type);
                this.events.diagnostic("error", (e as Error).message, subject.urn);
                this.events.failed(op, old, next);
                this.fail((e as Error).message);
                throw new RunStopped((e as Error).message);
            }
        });
        this.running.add(run);
        try {
            return await run;
        } finally {
            this.running.delete(run);
        }
    }

    private async underSlot<T>(op: EventOp, fn: () => Promise<T>): Promise<T> {
        if (this.slots.free > 0) this.slots.free--;
        else await new Promise<void>((resolve) => this.slots.waiting.push(resolve));
        try {
            if (this.failure && op !== "refresh") throw new RunStopped(this.failure);
            return await fn();
        } finally {
            const next = this.slots.waiting.shift();
            if (next) next();
            else this.slots.free++;
        }
    }

    /** A step with no provider call (same, a logical replace, dropping a pending replacement). */
    private logical(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined, diff: StepDiff = {}): void {
        this.events.pre(op, old, next, diff);
        this.events.outputs(op, old, next, diff);
    }

    /** A new copy into the state, its outputs secret as the engine marks them; the change counted. */
    private record(r: ResourceState, change: StepOp): ResourceState {
        // additionalSecretOutputs apply to the state as well as to what the program gets (step_executor.go).
        r.outputs = Object.fromEntries(Object.entries(r.outputs).map(([k, v]) => [k, r.additionalSecretOutputs.includes(k) && !isSecretValue(v) ? secretValue(v) : v]));
        this.count(change);
        this.state.record(r);
        return r;
    }

    private count(change: StepOp): void {
        this.changes[change] = (this.changes[change] ?? 0) + 1;
    }

    private fail(message: string): void {
        this.failure ??= message;
    }

    /** `--replace` and `--target` name resources of the stack (deployment_executor.go). */
    private checkTargets(urns: string[]): void {
        const missing = urns.filter((u) => !this.state.olds.resources.some((r) => r.urn === u));
        for (const u of missing) this.events.diagnostic("error", `Target '${u}' could not be found in the stack.`);
        if (missing.length) this.fail("one or more targets could not be found in the stack");
    }

    /** Waits for every step under way (`WaitForCompletion`). */
    private async settle(): Promise<void> {
        while (this.running.size) await Promise.allSettled([...this.running]);
    }

    private async finish(): Promise<RunResult> {
        await this.settle();
        this.state.save();
        await this.providers.stop();
        this.events.summary(this.changes, this.failure ? "failed" : "succeeded", this.providerFailed);
        if (this.failure) throw new EngineRunError(this.failure);
        const outputs = Object.fromEntries(Object.entries(this.state.outputs).map(([k, v]) => [k, { value: plain(v), secret: isSecretValue(v) }]));
        return { outputs, changes: this.changes };
    }

    private programOutput(line: string, stream: "stdout" | "stderr"): void {
        // Mock mode has no engine to log to: `pulumi.log` writes "warning: [runtime] …" (sdk/nodejs/log/index.ts).
        const m = /^(warning|error): \[runtime\] (.*)$/.exec(line);
        if (m) this.events.diagnostic(m[1] as "warning" | "error", m[2]);
        else this.events.diagnostic(stream === "stdout" ? "info" : "info#err", line);
    }
}
