/**
 * One deployment of the test engine (`pulumi up`, `destroy` or `refresh`): the program's registrations
 * become steps by Pulumi's rules (stepRules.ts); dynamic resources run their real provider code (the
 * `__provider` each registration carries) in the real dynamic-provider host; OpenStack resources are
 * answered by the lab (labCloud.ts). The checkpoint is written after every step, as the CLI saves its
 * snapshot, so a failed run keeps what it did.
 */
import * as os from "node:os";
import { ProviderHost } from "../providerHost";
import { EngineEventJson, EngineRunError, RefreshOptions, RunResult, StackRun, StepOp, UpOptions } from "./api";
import { LabCloud } from "./labCloud";
import { ProgramRun } from "./program";
import { containsUnknown, decide, dependentReplacements, DiffAnswer, isSecretValue, plain, scheduleDeletes, secretValue, shouldTriggerReplace, urnOf } from "./stepRules";
import { Checkpoint, loadCheckpoint, ResourceState, saveCheckpoint } from "./state";

type Props = Record<string, unknown>;
const PROJECT = "k8s-vnf";
const isDynamic = (type: string) => type.startsWith("pulumi-nodejs:dynamic");

/** `--parallel`'s default: PULUMI_PARALLEL, else 4 × the CPU count (pkg/cmd/pulumi/operations/up.go). */
function defaultParallel(): number {
    return Number(process.env.PULUMI_PARALLEL) || os.cpus().length * 4;
}

/** Features the engine's monitor reports (sdk/nodejs/runtime/settings.ts awaitFeatureSupport asks these). */
const FEATURES = new Set(["secrets", "resourceReferences", "deletedWith", "aliasSpecs"]);

/** Resource options the engine would otherwise ignore silently: using one fails the registration. */
function unsupportedOptions(req: Record<string, any>): string[] {
    return [
        ...(req.ignoreChanges?.length ? ["ignoreChanges"] : []),
        ...(req.replaceOnChanges?.length ? ["replaceOnChanges"] : []),
        ...(req.protect ? ["protect"] : []),
        ...(req.deletedWith ? ["deletedWith"] : []),
        ...(req.provider ? ["explicit providers"] : []),
    ];
}

export class Deployment {
    private readonly olds: Checkpoint;
    /** Resources of this run's state, in the order their steps completed. */
    private readonly news: ResourceState[] = [];
    /** URNs with a step in this run (the engine's `isOperatedOn`). */
    private readonly operatedOn = new Set<string>();
    /** Old resources deleted so far (for a dependent's delete-before-replace or after the program). */
    private readonly deleted = new Set<ResourceState>();
    /** URNs deleted because something they depend on is replaced delete-first; re-created when registered. */
    private readonly recreating = new Set<string>();
    /** Old copies of resources replaced create-first, deleted after the program. */
    private readonly replaced: ResourceState[] = [];
    private readonly changes: Partial<Record<StepOp, number>> = {};
    private stackOutputs: Props = {};
    private failure?: string;
    private stepsInFlight = 0;
    private sequence = 0;
    private readonly started = Date.now();
    private host?: Promise<ProviderHost>;
    private readonly cloud: LabCloud;
    /** Steps waiting for a free slot under `--parallel`. */
    private readonly slots: { free: number; waiting: (() => void)[] } = { free: Infinity, waiting: [] };

    constructor(
        private readonly run: StackRun,
        cloud: LabCloud,
    ) {
        this.olds = loadCheckpoint(run.stateFile);
        this.cloud = cloud;
        run.signal?.addEventListener("abort", () => {
            this.fail("update canceled");
            this.emit({ cancelEvent: {} });
        });
    }

    /** `pulumi up`: the program runs; its registrations are steps; what it no longer registers is deleted. */
    async up(options: UpOptions): Promise<RunResult> {
        if (options.preview) throw new EngineRunError("the test engine does not preview yet");
        this.slots.free = options.parallel ?? defaultParallel();
        this.emit({ preludeEvent: { config: this.blindedConfig() } });
        if (this.run.signal?.aborted) this.fail("update canceled");
        const replace = new Set(options.replace ?? []);
        let program: ProgramRun | undefined;
        if (!this.failure) {
            program = new ProgramRun(
                { projectDir: this.run.projectDir, stack: this.run.stack, preview: false, config: this.run.config, secretKeys: this.run.secretKeys, env: this.run.env ?? {} },
                {
                    supportsFeature: (id) => FEATURES.has(id),
                    registerResource: (request) => this.register(request, replace),
                    registerResourceOutputs: (urn, outputs) => this.registerOutputs(urn, outputs),
                    output: (line, stream) => this.programOutput(line, stream),
                },
            );
            const stopWhenFailed = setInterval(() => this.failure && this.stepsInFlight === 0 && program!.kill(), 50);
            const programFailure = await program.finished;
            clearInterval(stopWhenFailed);
            if (programFailure && !this.failure) this.fail(programFailure);
        }
        if (!this.failure) await this.deleteUnregistered();
        return this.finish();
    }

    /** `pulumi destroy`: every resource deleted, dependents first. */
    async destroy(): Promise<RunResult> {
        this.emit({ preludeEvent: { config: this.blindedConfig() } });
        await this.deleteAll(this.olds.resources.filter((r) => !this.deleted.has(r)));
        this.stackOutputs = {};
        return this.finish();
    }

    /**
     * `pulumi refresh`: every custom resource read back at once (refresh steps are generated up front and
     * run in parallel); one that is gone leaves the state, one that cannot be read keeps its old state and
     * fails the refresh.
     */
    async refresh(options: RefreshOptions = {}): Promise<RunResult> {
        this.emit({ preludeEvent: { config: this.blindedConfig() } });
        const targeted = (r: ResourceState) => r.custom && (!options.targets || options.targets.includes(r.urn));
        const read = await Promise.all(this.olds.resources.map((r) => (targeted(r) ? this.step("refresh", r, () => this.read(r)).catch(() => r) : r)));
        for (const r of read) if (r) this.news.push(r);
        this.stackOutputs = this.olds.outputs;
        return this.finish();
    }

    // ---- registrations ---------------------------------------------------------------------------

    private async register(req: Record<string, any>, replaceUrns: Set<string>): Promise<{ urn: string; id: string; object: Props }> {
        const urn = urnOf(this.run.stack, PROJECT, req.type, req.name, req.parent);
        if (this.failure) throw new Error(this.failure);
        const unsupported = unsupportedOptions(req);
        if (unsupported.length) throw new Error(`${urn}: the test engine does not implement ${unsupported.join(", ")}; add it to test/support/engine before using it`);
        if (this.operatedOn.has(urn)) throw new Error(`Duplicate resource URN '${urn}'; try giving it a unique name`);
        this.operatedOn.add(urn);
        const old = this.recreating.has(urn) ? undefined : this.olds.resources.find((r) => r.urn === urn && !this.deleted.has(r));
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
        };
        if (!goal.custom) {
            const op = old && JSON.stringify(old.inputs) === JSON.stringify(goal.inputs) ? "same" : "create";
            this.emitStep(op, goal);
            this.record({ ...goal, outputs: old?.outputs ?? {} }, op);
            return { urn, id: "", object: {} };
        }
        const state = await this.customSteps(goal, old, replaceUrns.has(urn));
        return { urn, id: state.id, object: this.withSecrets(state, state.outputs) };
    }

    private registerOutputs(urn: string, outputs: Props): void {
        const r = this.news.find((n) => n.urn === urn);
        if (r) r.outputs = outputs;
        if (r?.type === "pulumi:pulumi:Stack") this.stackOutputs = outputs;
        this.save();
    }

    /** `continueStepsFromImport` → `generateStepsFromDiff` → `continueStepsFromDiff` for a custom resource. */
    private async customSteps(goal: ResourceState, old: ResourceState | undefined, targetedReplace: boolean): Promise<ResourceState> {
        const recreating = this.recreating.has(goal.urn);
        const checked = await this.check(goal, recreating || !old ? undefined : old);
        if (!old && recreating) {
            // `continueStepsFromImport`: a resource deleted for a dependency's delete-first replacement.
            this.emitStep("replace", checked);
            return this.step("create-replacement", checked, () => this.create(checked)).then((s) => this.record(s, "replace"));
        }
        if (!old) return this.step("create", checked, () => this.create(checked)).then((s) => this.record(s, "create"));
        if (containsUnknown(goal.replacementTrigger)) throw new Error(`replacement trigger contains unknowns for ${goal.urn}`);
        const triggered = shouldTriggerReplace(goal.replacementTrigger, old.replacementTrigger);
        const diff: DiffAnswer = targetedReplace ? { changes: "some", replaces: ["id"], deleteBeforeReplace: false } : triggered ? { changes: "some", replaces: [], deleteBeforeReplace: false } : await this.diff(old, checked.inputs);
        const decision = decide(diff, triggered, goal.deleteBeforeReplace, JSON.stringify(plain(old.inputs)) !== JSON.stringify(plain(checked.inputs)));
        if (decision.op === "same") {
            this.emitStep("same", checked);
            return this.record({ ...checked, id: old.id, outputs: old.outputs }, "same");
        }
        if (decision.op === "update") {
            return this.step("update", checked, async () => ({ ...checked, id: old.id, outputs: await this.update(old, checked) })).then((s) => this.record(s, "update"));
        }
        if (decision.deleteBeforeReplace) {
            const dependents = await dependentReplacements(this.olds.resources, old, this.operatedOn, (r, inputs) => this.diff(r, inputs));
            for (const d of [...dependents].reverse()) {
                if (this.deleted.has(d)) continue;
                await this.step("delete-replaced", d, () => this.delete(d));
                this.recreating.add(d.urn);
            }
            await this.step("delete-replaced", old, () => this.delete(old));
            this.emitStep("replace", checked);
            return this.step("create-replacement", checked, () => this.create(checked)).then((s) => this.record(s, "replace"));
        }
        const created = await this.step("create-replacement", checked, () => this.create(checked));
        this.emitStep("replace", checked);
        this.replaced.push(old);
        return this.record(created, "replace");
    }

    /** Check: a new resource's inputs alone; an existing one's with its old inputs (`continueStepsFromImport`). */
    private async check(goal: ResourceState, old: ResourceState | undefined): Promise<ResourceState> {
        if (!isDynamic(goal.type)) return goal;
        const host = await this.providerHost();
        const { inputs, failures } = await host.check(old ? (plain(old.inputs) as Props) : {}, plain(goal.inputs) as Props);
        if (failures.length) {
            for (const f of failures) this.diagnostic("error", `${f.property}: ${f.reason}`, goal.urn);
            throw new Error(`resource ${goal.urn} is invalid: ${failures.map((f) => `${f.property}: ${f.reason}`).join("; ")}`);
        }
        return { ...goal, inputs: this.rewrap(goal.inputs, inputs) };
    }

    private async diff(old: ResourceState, inputs: Props): Promise<DiffAnswer> {
        if (!isDynamic(old.type)) return this.cloud.diff(old.type, old.inputs, inputs);
        const host = await this.providerHost();
        return host.diff(old.id, plain(old.outputs) as Props, plain(inputs) as Props);
    }

    private async create(goal: ResourceState): Promise<ResourceState> {
        if (!isDynamic(goal.type)) {
            const { id, outputs } = await this.cloud.create(goal.type, goal.urn, plain(goal.inputs) as Props);
            return { ...goal, id, outputs: this.rewrap(goal.inputs, outputs) };
        }
        const { id, outs } = await (await this.providerHost()).create(plain(goal.inputs) as Props);
        return { ...goal, id, outputs: this.rewrap(goal.inputs, outs) };
    }

    private async update(old: ResourceState, goal: ResourceState): Promise<Props> {
        const outputs = isDynamic(goal.type)
            ? await (await this.providerHost()).update(old.id, plain(old.outputs) as Props, plain(goal.inputs) as Props)
            : await this.cloud.update(goal.type, old.id, plain(old.outputs) as Props, plain(goal.inputs) as Props);
        return this.rewrap(goal.inputs, outputs);
    }

    private async delete(r: ResourceState): Promise<ResourceState> {
        if (r.custom && !r.retainOnDelete) {
            if (isDynamic(r.type)) await (await this.providerHost()).delete(r.id, plain(r.outputs) as Props);
            else await this.cloud.delete(r.type, r.id, plain(r.outputs) as Props);
        }
        this.deleted.add(r);
        this.save();
        return r;
    }

    private async read(r: ResourceState): Promise<ResourceState | undefined> {
        const found = isDynamic(r.type) ? await (await this.providerHost()).read(r.id, plain(r.outputs) as Props) : await this.cloud.read(r.type, r.id, plain(r.outputs) as Props).then((x) => ({ id: x.id, props: x.outputs }));
        if (!found.id) {
            this.deleted.add(r);
            return undefined;
        }
        return { ...r, outputs: this.rewrap(r.outputs, found.props) };
    }

    // ---- deletes after the program ---------------------------------------------------------------

    /** `GenerateDeletes` + `ScheduleDeletes`: what the program no longer registers, and old copies replaced create-first. */
    private async deleteUnregistered(): Promise<void> {
        const condemned = [...this.replaced, ...this.olds.resources.filter((r) => !this.operatedOn.has(r.urn) && !this.deleted.has(r))];
        await this.deleteAll(condemned);
    }

    /** Antichains in parallel; a resource whose dependent failed to delete is kept (`erroredDeps`). */
    private async deleteAll(condemned: ResourceState[]): Promise<void> {
        const graph = [...this.olds.resources, ...this.news];
        const failed = new Set<string>();
        for (const chain of scheduleDeletes(graph, condemned)) {
            await Promise.all(
                chain.map(async (r) => {
                    const blocked = condemned.some((d) => failed.has(d.urn) && (d.dependencies.includes(r.urn) || d.parent === r.urn || Object.values(d.propertyDependencies).flat().includes(r.urn)));
                    if (blocked) {
                        failed.add(r.urn);
                        return;
                    }
                    const op = this.replaced.includes(r) ? "delete-replaced" : "delete";
                    await this.step(op, r, () => this.delete(r)).catch(() => failed.add(r.urn));
                }),
            );
        }
    }

    // ---- steps, state and events -----------------------------------------------------------------

    private async step<T>(op: StepOp | "create-replacement" | "delete-replaced", r: ResourceState, fn: () => Promise<T>): Promise<T> {
        if (this.failure && op !== "delete" && op !== "delete-replaced" && op !== "refresh") throw new Error(this.failure);
        this.stepsInFlight++;
        if (this.slots.free > 0) this.slots.free--;
        else await new Promise<void>((resolve) => this.slots.waiting.push(resolve));
        this.emit({ resourcePreEvent: { metadata: this.metadata(op, r) } });
        try {
            const result = await fn();
            this.emit({ resOutputsEvent: { metadata: this.metadata(op, r) } });
            // Creates, updates and replaces are counted when their resource is recorded.
            if (op === "delete" || op === "refresh") this.changes[op] = (this.changes[op] ?? 0) + 1;
            return result;
        } catch (e) {
            const message = (e as Error).message;
            this.diagnostic("error", message, r.urn);
            this.emit({ resOpFailedEvent: { metadata: this.metadata(op, r), status: 0, steps: 0 } });
            this.fail(message);
            throw e;
        } finally {
            this.stepsInFlight--;
            const next = this.slots.waiting.shift();
            if (next) next();
            else this.slots.free++;
        }
    }

    private emitStep(op: "same" | "create" | "replace", r: ResourceState): void {
        this.emit({ resourcePreEvent: { metadata: this.metadata(op, r) } });
        this.emit({ resOutputsEvent: { metadata: this.metadata(op, r) } });
    }

    /** Puts a resource into this run's state; counts its change. */
    private record(r: ResourceState, change: StepOp): ResourceState {
        this.changes[change] = (this.changes[change] ?? 0) + 1;
        this.news.push(r);
        this.save();
        return r;
    }

    private fail(message: string): void {
        this.failure ??= message;
    }

    private save(): void {
        const kept = this.olds.resources.filter((r) => !this.deleted.has(r) && !this.news.some((n) => n.urn === r.urn) && !this.replaced.includes(r));
        saveCheckpoint(this.run.stateFile, { resources: [...this.news.filter((r) => !this.deleted.has(r)), ...kept, ...this.replaced.filter((r) => !this.deleted.has(r))], outputs: this.stackOutputs });
    }

    private async finish(): Promise<RunResult> {
        this.save();
        if (this.host) (await this.host).stop();
        const result = this.run.signal?.aborted ? "canceled" : this.failure ? "failed" : "succeeded";
        this.emit({ summaryEvent: { maybeCorrupt: false, durationSeconds: Math.ceil((Date.now() - this.started) / 1000), resourceChanges: this.changes, PolicyPacks: {}, isPreview: false, result } });
        if (this.failure) throw new EngineRunError(this.failure);
        const outputs = Object.fromEntries(Object.entries(this.stackOutputs).map(([k, v]) => [k, { value: plain(v), secret: isSecretValue(v) }]));
        return { outputs, changes: this.changes };
    }

    /**
     * Secretness of a provider's answer: by property name only (`annotateSecrets`,
     * sdk/go/common/resource/plugin/provider_plugin.go): a key secret among the inputs stays secret.
     */
    private rewrap(inputs: Props, answer: Props): Props {
        return Object.fromEntries(Object.entries(answer).map(([k, v]) => [k, isSecretValue(inputs[k]) ? secretValue(plain(v)) : v]));
    }

    /** Outputs as the program gets them: also secret when listed in `additionalSecretOutputs`. */
    private withSecrets(r: ResourceState, outputs: Props): Props {
        return Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, r.additionalSecretOutputs.includes(k) && !isSecretValue(v) ? secretValue(v) : v]));
    }

    private providerHost(): Promise<ProviderHost> {
        this.host ??= ProviderHost.forEngine(this.run.config, { ...process.env, ...this.run.env }).then((h) => {
            let buffered = "";
            h.onOutput = (text) => {
                buffered += text;
                const lines = buffered.split("\n");
                buffered = lines.pop()!;
                for (const line of lines) this.diagnostic("info", line);
            };
            return h;
        });
        return this.host;
    }

    private programOutput(line: string, stream: "stdout" | "stderr"): void {
        // Mock mode has no engine to log to: `pulumi.log` writes "warning: [runtime] …" (sdk/nodejs/log/index.ts).
        const m = /^(warning|error): \[runtime\] (.*)$/.exec(line);
        if (m) this.diagnostic(m[1] as "warning" | "error", m[2]);
        else this.diagnostic(stream === "stdout" ? "info" : "info#err", line);
    }

    private diagnostic(severity: "info" | "info#err" | "warning" | "error", message: string, urn?: string): void {
        this.run.onOutput?.(`${severity === "info" || severity === "info#err" ? "" : `${severity}: `}${message}`);
        this.emit({ diagnosticEvent: { ...(urn ? { urn } : {}), message: `${message}\n`, color: "never", severity } });
    }

    /** The prelude's config: secrets blinded (pkg/engine/events.go). */
    private blindedConfig(): Record<string, string> {
        return Object.fromEntries(Object.entries(this.run.config).map(([k, v]) => [k, this.run.secretKeys.includes(k) ? "[secret]" : v]));
    }

    private metadata(op: string, r: ResourceState) {
        const shown = (props: Props) => Object.fromEntries(Object.entries(props).filter(([k]) => k !== "__provider").map(([k, v]) => [k, isSecretValue(v) ? "[secret]" : v]));
        const state = { type: r.type, urn: r.urn, custom: r.custom, id: r.id, parent: r.parent, inputs: shown(r.inputs), outputs: shown(r.outputs) };
        return { op, urn: r.urn, type: r.type, provider: "", old: null, new: state, detailedDiff: null };
    }

    private emit(event: Record<string, unknown>): void {
        const full = { sequence: this.sequence++, timestamp: Math.floor(Date.now() / 1000), ...event } as EngineEventJson;
        this.run.onEvent?.(full);
    }
}
