/**
 * A stack of this project on lab hosts, as a user drives it: set config (`pulumi config set --path`), then
 * `up`, `refresh` or `destroy`, each a run of the real program through the test engine. The VMs the program
 * creates become lab hosts; what ran is read back from the engine's events.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { findSecrets } from "../../config/load";
import { Lab } from "../lab/lab";
import { destroy, EngineEventJson, refresh, RunResult, StackRun, up, UpOptions } from "./engine";
import { isSecretValue, plain } from "./engine/stepRules";
import { PROJECT_DIR } from "./program";

export interface StepRecord {
    op: string;
    urn: string;
    /** The resource's name (the URN's last part). */
    name: string;
    /** When the step started and ended (ms since the epoch; `ended` unset while it runs or when it failed). */
    started: number;
    ended?: number;
}

/** `pulumi config set --path`: the value at a dotted path of a stack's config, objects made on the way. */
export function setConfigPath(config: Record<string, unknown>, dotted: string, value: unknown): void {
    const keys = dotted.split(".");
    let at = config as Record<string, any>;
    for (const k of keys.slice(0, -1)) at = at[k] = at[k] && typeof at[k] === "object" ? at[k] : {};
    at[keys.at(-1)!] = value;
}

/** A stack's whole config replaced by a copy of `next`. */
export function replaceConfig(config: Record<string, unknown>, next: Record<string, unknown>): void {
    for (const key of Object.keys(config)) delete config[key];
    Object.assign(config, structuredClone(next));
}

export class LabStack {
    /** The stack's `k8s-vnf:` config, by top-level key. */
    readonly config: Record<string, unknown>;
    /** Steps of every run so far, in the order they started. */
    readonly steps: StepRecord[] = [];
    /** Everything the runs printed (provider and program output), for secret scans. */
    readonly output: string[] = [];

    constructor(
        private readonly lab: Lab,
        readonly name: string,
        config: Record<string, unknown>,
        private readonly options: { env?: Record<string, string>; onServer?: StackRun["onServer"] } = {},
    ) {
        this.config = structuredClone(config);
    }

    /** `pulumi config set --path <dotted path> <value>`. */
    set(dotted: string, value: unknown): void {
        setConfigPath(this.config, dotted, value);
    }

    /** The stack's whole config replaced (`pulumi config rm-all`, then `set-all`), as the LCM service sets it. */
    setAll(config: Record<string, unknown>): void {
        replaceConfig(this.config, config);
    }

    up(options: UpOptions = {}): Promise<RunResult> {
        return this.track((run) => up(run, options));
    }

    /** `pulumi refresh`, of the resources named in `targets` only when given. */
    refresh(targets?: string[]): Promise<RunResult> {
        return this.track((run) => refresh(run, { targets: targets?.map((name) => this.urnOf(name)) }));
    }

    /** The URN of the resource named `name` in the state. */
    urnOf(name: string): string {
        const r = this.state().find((s) => s.urn.endsWith(`::${name}`));
        if (!r) throw new Error(`no resource ${name} in the state`);
        return r.urn;
    }

    destroy(): Promise<RunResult> {
        return this.track(destroy);
    }

    /** Steps of the last run whose resource name matches. */
    stepsOf(since: number, name: RegExp): StepRecord[] {
        return this.steps.slice(since).filter((s) => name.test(s.name));
    }

    /** The checkpoint's resources (outputs with secrets still wrapped). */
    state(): { urn: string; type: string; id: string; outputs: Record<string, any> }[] {
        const file = this.stateFile;
        return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")).resources : [];
    }

    /** The outputs of the resource named `name`, secrets unwrapped. */
    outputsOf(name: string): Record<string, any> {
        const r = this.state().find((s) => s.urn === this.urnOf(name))!;
        return plain(r.outputs) as Record<string, any>;
    }

    /** The stack's outputs, secrets unwrapped (`pulumi stack output --show-secrets`); {} before the first run. */
    outputs(): Record<string, any> {
        return plain(this.stackResource()?.outputs ?? {}) as Record<string, any>;
    }

    /** Whether the stack holds an output as a secret. */
    isSecretOutput(key: string): boolean {
        return isSecretValue(this.stackResource()?.outputs[key]);
    }

    private stackResource() {
        return this.state().find((r) => r.type === "pulumi:pulumi:Stack");
    }

    private get stateFile(): string {
        return path.join(this.lab.dir, "states", `${this.name}.json`);
    }

    private async track(fn: (run: StackRun) => Promise<RunResult>): Promise<RunResult> {
        const run: StackRun = {
            projectDir: PROJECT_DIR,
            stack: this.name,
            stateFile: this.stateFile,
            config: Object.fromEntries(Object.entries(this.config).map(([k, v]) => [`k8s-vnf:${k}`, typeof v === "string" ? v : JSON.stringify(v)])),
            secretKeys: this.secretKeys(),
            env: this.options.env,
            labDescriptor: this.lab.descriptorFile,
            onServer: this.options.onServer,
            onEvent: (e) => this.record(e),
            onOutput: (line) => {
                this.output.push(line);
                // K8S_VNF_LAB_OUTPUT=1 shows what the steps print as they run (a lab test being debugged).
                if (process.env.K8S_VNF_LAB_OUTPUT) process.stderr.write(`${line}\n`);
            },
        };
        return fn(run);
    }

    /** Keys holding a credential (the project's one rule) are set as secrets, as a user does (`config set --secret`). */
    private secretKeys(): string[] {
        return [...new Set(findSecrets(this.config).map((s) => `k8s-vnf:${s.key}`))];
    }

    private record(e: EngineEventJson): void {
        const pre = e.resourcePreEvent as { metadata: { op: string; urn: string } } | undefined;
        if (pre) this.steps.push({ op: pre.metadata.op, urn: pre.metadata.urn, name: pre.metadata.urn.split("::").pop()!, started: Date.now() });
        const done = e.resOutputsEvent as { metadata: { op: string; urn: string } } | undefined;
        if (done) {
            const step = [...this.steps].reverse().find((s) => s.urn === done.metadata.urn && s.op === done.metadata.op && s.ended === undefined);
            if (step) step.ended = Date.now();
        }
    }
}
