/**
 * A stack of this project driven by the real Pulumi CLI, engine and plugins (tools/build.sh), as a user
 * drives it: config set the way the LCM service sets it (service/stackConfig applyStackConfig: `config
 * set-all --json`, secrets one by one on standard input), then `pulumi up`, `preview`, `refresh` or
 * `destroy`. State goes to the file:// backend of Pulumi.yaml in a project folder of the test's own
 * (serviceProject), its secrets encrypted with a passphrase; PULUMI_HOME is the test's own too. What ran is
 * read from the CLI's `--event-log` while it runs. The surface is LabStack's (the test engine's), so a suite
 * moves from one engine to the other by its constructor.
 *
 * A CLI still running when the test ends (`stopRunning`, `dispose`) gets SIGINT, Pulumi's graceful cancel,
 * then SIGKILL, and so does every process it started, by the PIDs read from /proc before it was signalled:
 * the CLI starts each plugin in a process group of its own (sdk/go/common/resource/plugin/plugin.go,
 * cmdutil.RegisterProcessGroup), so its own group does not hold them.
 */
import { ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { applyStackConfig } from "../../service/stackConfig";
import { EngineEventJson, RunResult, StepOp } from "./engine/api";
import { replaceConfig, setConfigPath, StepRecord } from "./labStack";
import { serviceProject, ServiceProject } from "./serviceProject";
import { alive } from "./processAlive";
import { descendants } from "../../service/pulumiProcess";
import { PROJECT_DIR } from "./program";
import { builtTools, realPulumiEnv } from "./tools";

export { alive };

/** A failed CLI run: `message` is what the engine reported (its error diagnostics), else the CLI's last lines. */
export class PulumiRunError extends Error {
    constructor(
        message: string,
        readonly code: number | null,
    ) {
        super(message);
        this.name = "PulumiRunError";
    }
}

export interface RealUpOptions {
    /** URNs to replace whatever their diff says (`--replace`). */
    replace?: string[];
    /** `--parallel`. */
    parallel?: number;
}

/** The value of a secret as `pulumi stack export --show-secrets` writes it (apitype secret sig, plaintext JSON). */
const SECRET_SIG = "4dabf18193072939515e22adb298388d";

function isExportedSecret(v: unknown): v is { plaintext: string } {
    return !!v && typeof v === "object" && (v as Record<string, unknown>)[SECRET_SIG] === "1b47061264138c4ac30d75fd1eb44270";
}

/** An exported value with its secrets unwrapped. */
export function unwrapExported(v: unknown): unknown {
    if (isExportedSecret(v)) return unwrapExported(JSON.parse(v.plaintext));
    if (Array.isArray(v)) return v.map(unwrapExported);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, unwrapExported(x)]));
    return v;
}

export class RealStack {
    readonly config: Record<string, unknown>;
    /** Steps of every run so far, in the order they started. */
    readonly steps: StepRecord[] = [];
    /** What the program and the providers printed (the engine's diagnostics), a message each. */
    readonly output: string[] = [];
    /** Everything the CLI printed (its progress, diagnostics again, errors), for secret scans. */
    readonly printed: string[] = [];
    readonly env: Record<string, string>;
    private readonly home: string;
    private readonly running = new Set<ChildProcess>();
    private appliedConfig?: string;
    /** The stack's config is another command's (`configuredElsewhere`): runs apply none of `config`. */
    private readonly configuredElsewhere: boolean;
    private runs = 0;

    private constructor(
        readonly project: ServiceProject,
        readonly name: string,
        config: Record<string, unknown> | undefined,
        env: Record<string, string>,
    ) {
        this.configuredElsewhere = config === undefined;
        this.config = structuredClone(config ?? {});
        this.home = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-pulumi-home-"));
        this.env = { ...realPulumiEnv(this.home, `lab-passphrase-${randomBytes(6).toString("hex")}`), ...env };
    }

    /** `pulumi stack init NAME` in a new project folder. */
    static async create(name: string, config: Record<string, unknown>, options: { env?: Record<string, string> } = {}): Promise<RealStack> {
        const stack = new RealStack(serviceProject(), name, config, options.env ?? {});
        try {
            await stack.cli(["stack", "init", name]);
        } catch (e) {
            await stack.dispose();
            throw e;
        }
        return stack;
    }

    /**
     * A stack that another command makes and configures in this object's project folder and environment
     * (`k8s-vnf import-request --stack … --project <project.dir>` with `env`): no `stack init` here, and its
     * runs apply no config of this object's (`pulumi config set` through `cli` changes it).
     */
    static configuredElsewhere(name: string, options: { env?: Record<string, string> } = {}): RealStack {
        return new RealStack(serviceProject(), name, undefined, options.env ?? {});
    }

    /** `pulumi config set --path <dotted path> <value>` (applied before the next run). */
    set(dotted: string, value: unknown): void {
        this.ownConfig();
        setConfigPath(this.config, dotted, value);
    }

    /** The stack's whole config replaced, as the LCM service sets it. */
    setAll(config: Record<string, unknown>): void {
        this.ownConfig();
        replaceConfig(this.config, config);
    }

    private ownConfig(): void {
        if (this.configuredElsewhere) throw new Error(`stack ${this.name} is configured by another command: set its config with \`pulumi config set\``);
    }

    up(options: RealUpOptions = {}): Promise<RunResult> {
        const args = ["up", "--yes", "--skip-preview"];
        for (const urn of options.replace ?? []) args.push("--replace", urn);
        if (options.parallel) args.push("--parallel", String(options.parallel));
        return this.operation(args);
    }

    /** `pulumi preview` with `extra` flags (e.g. `--diff`): what it printed. */
    async preview(extra: string[] = []): Promise<string> {
        await this.applyConfig();
        return (await this.cli(["preview", "--stack", this.name, "--color", "never", ...extra])).stdout;
    }

    /** `k8s-vnf plan --stack` with `flags` (the Automation API against the real CLI, config applied first): what it printed. */
    async plan(flags: string[] = []): Promise<string> {
        await this.applyConfig();
        const args = ["plan", "--stack", this.name, "--project", this.project.dir, ...flags];
        const env = { ...this.env, K8S_VNF_PULUMI_ROOT: builtTools().pulumiRoot };
        return new Promise((resolve, reject) =>
            execFile(path.join(PROJECT_DIR, "bin/k8s-vnf"), args, { env, cwd: this.project.dir, maxBuffer: 64 << 20 }, (e, stdout, stderr) => (e ? reject(new Error(`k8s-vnf plan exited: ${stderr || e.message}`)) : resolve(stdout))),
        );
    }

    /** `pulumi refresh`, of the resources named in `targets` only when given. */
    refresh(targets?: string[]): Promise<RunResult> {
        return this.operation(["refresh", "--yes", "--skip-preview", ...(targets ?? []).flatMap((n) => ["--target", this.urnOf(n)])]);
    }

    destroy(): Promise<RunResult> {
        return this.operation(["destroy", "--yes", "--skip-preview"]);
    }

    /** The URN of the resource named `name` in the state. */
    urnOf(name: string): string {
        const r = this.state().find((s) => s.urn.endsWith(`::${name}`));
        if (!r) throw new Error(`no resource ${name} in the state`);
        return r.urn;
    }

    /** Steps since run step index `since` whose resource name matches. */
    stepsOf(since: number, name: RegExp): StepRecord[] {
        return this.steps.slice(since).filter((s) => name.test(s.name));
    }

    /** The checkpoint's resources (`pulumi stack export --show-secrets`; secrets still wrapped). */
    state(): { urn: string; type: string; id: string; outputs: Record<string, any> }[] {
        const out = this.cliSync(["stack", "export", "--stack", this.name, "--show-secrets"]);
        return (JSON.parse(out).deployment?.resources ?? []).map((r: any) => ({ urn: r.urn, type: r.type, id: r.id ?? "", outputs: r.outputs ?? {} }));
    }

    /** The outputs of the resource named `name`, secrets unwrapped. */
    outputsOf(name: string): Record<string, any> {
        const urn = this.urnOf(name);
        return unwrapExported(this.state().find((s) => s.urn === urn)!.outputs) as Record<string, any>;
    }

    /**
     * The stack's admin kubeconfig as an operator gets it (`pulumi stack output kubeconfig --show-secrets`),
     * not kept in `printed`: it holds the admin's client key.
     */
    async adminKubeconfig(): Promise<string> {
        const r = spawnSync("pulumi", ["stack", "output", "kubeconfig", "--show-secrets", "--stack", this.name, "--non-interactive"], { cwd: this.project.dir, env: this.env, encoding: "utf8", maxBuffer: 16 << 20, timeout: 120_000, killSignal: "SIGKILL" });
        if (r.status !== 0) throw new PulumiRunError(`pulumi stack output exited ${r.status}: ${lastLines(r.stderr || r.stdout)}`, r.status);
        return r.stdout;
    }

    /** `pulumi stack output --json --show-secrets`. */
    outputs(): Record<string, any> {
        return JSON.parse(this.cliSync(["stack", "output", "--stack", this.name, "--json", "--show-secrets"]) || "{}");
    }

    /** Whether the stack holds an output as a secret (`pulumi stack output --json` masks it). */
    isSecretOutput(key: string): boolean {
        const masked = JSON.parse(this.cliSync(["stack", "output", "--stack", this.name, "--json"]) || "{}");
        return masked[key] === "[secret]";
    }

    /**
     * Ends every CLI still running and what it started: SIGINT, up to `graceMs` to finish, then SIGKILL to each
     * PID of its tree. Returns those PIDs.
     */
    async stopRunning(graceMs = 5_000): Promise<number[]> {
        const ended: number[] = [];
        await Promise.all(
            [...this.running].map(async (child) => {
                const tree = [child.pid!, ...descendants(child.pid!)];
                ended.push(...tree);
                signal(child.pid!, "SIGINT");
                const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
                await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, graceMs).unref())]);
                const all = [...new Set([...tree, ...descendants(child.pid!)])];
                ended.push(...all.filter((pid) => !tree.includes(pid)));
                for (const pid of all) signal(pid, "SIGKILL");
                for (let waited = 0; waited < 5_000 && all.some(alive); waited += 50) await new Promise((r) => setTimeout(r, 50));
            }),
        );
        return ended;
    }

    /** Ends any CLI still running (`stopRunning`), removes the project folder and PULUMI_HOME. */
    async dispose(): Promise<void> {
        await this.stopRunning();
        this.project.remove();
        fs.rmSync(this.home, { recursive: true, force: true });
    }

    /** One `pulumi` command in the project folder; fails with its last lines unless it exits 0. */
    async cli(args: string[], input?: string): Promise<{ stdout: string; stderr: string }> {
        const child = spawn("pulumi", [...args, "--non-interactive"], { cwd: this.project.dir, env: this.env, stdio: ["pipe", "pipe", "pipe"] });
        this.running.add(child);
        let stdout = "";
        let stderr = "";
        child.stdout!.on("data", (d) => (stdout += d));
        child.stderr!.on("data", (d) => (stderr += d));
        // A CLI that exits before reading its input (a bad flag, a held lock) must not crash the test with EPIPE.
        child.stdin!.on("error", () => undefined);
        child.stdin!.end(input ?? "");
        const code = await new Promise<number | null>((resolve, reject) => {
            child.once("error", reject);
            child.once("close", resolve);
        }).finally(() => this.running.delete(child));
        this.printed.push(stdout, stderr);
        if (code !== 0) throw new PulumiRunError(`pulumi ${args.slice(0, 2).join(" ")} exited ${code}: ${lastLines(stderr || stdout)}`, code);
        return { stdout, stderr };
    }

    private cliSync(args: string[]): string {
        const r = spawnSync("pulumi", [...args, "--non-interactive"], { cwd: this.project.dir, env: this.env, encoding: "utf8", maxBuffer: 256 << 20, timeout: 120_000, killSignal: "SIGKILL" });
        if (r.status !== 0) throw new PulumiRunError(`pulumi ${args.slice(0, 2).join(" ")} exited ${r.status}: ${lastLines(r.stderr || r.stdout)}`, r.status);
        return r.stdout;
    }

    /** Sets the stack's config as `config` holds it (each run does this first). */
    async applyConfig(): Promise<void> {
        if (this.configuredElsewhere) return;
        const wanted = JSON.stringify(this.config);
        if (wanted === this.appliedConfig) return;
        await applyStackConfig(this.name, this.config, (args, input) => this.cli(args, input));
        this.appliedConfig = wanted;
    }

    /** An update, refresh or destroy: its events read as the CLI writes them, its result from the summary. */
    private async operation(args: string[]): Promise<RunResult> {
        await this.applyConfig();
        const eventLog = path.join(this.home, `events-${++this.runs}.jsonl`);
        const reader = new EventLogReader(eventLog, (e) => this.record(e));
        let failed: unknown;
        try {
            await this.cli([...args, "--stack", this.name, "--color", "never", "--event-log", eventLog]);
        } catch (e) {
            failed = e;
        } finally {
            reader.close();
        }
        if (reader.failure) throw reader.failure;
        const errors = reader.events.flatMap((e) => {
            const d = e.diagnosticEvent as { severity?: string; message?: string; urn?: string } | undefined;
            return d?.severity === "error" && d.message ? [`${d.urn ? `${d.urn.split("::").pop()}: ` : ""}${d.message.trim()}`] : [];
        });
        if (failed) throw new PulumiRunError(errors.length ? errors.join("\n") : (failed as Error).message, (failed as PulumiRunError).code ?? null);
        const summary = reader.events.find((e) => e.summaryEvent)?.summaryEvent as { resourceChanges?: Partial<Record<StepOp, number>> } | undefined;
        const outputs = this.outputs();
        const masked = JSON.parse(this.cliSync(["stack", "output", "--stack", this.name, "--json"]) || "{}");
        return {
            changes: summary?.resourceChanges ?? {},
            outputs: Object.fromEntries(Object.entries(outputs).map(([k, value]) => [k, { value, secret: masked[k] === "[secret]" }])),
        };
    }

    private record(e: EngineEventJson): void {
        const diagnostic = e.diagnosticEvent as { message?: string } | undefined;
        if (diagnostic?.message) {
            this.output.push(diagnostic.message);
            if (process.env.K8S_VNF_LAB_OUTPUT) process.stderr.write(diagnostic.message);
        }
        const pre = e.resourcePreEvent as { metadata: { op: string; urn: string } } | undefined;
        if (pre) this.steps.push({ op: pre.metadata.op, urn: pre.metadata.urn, name: pre.metadata.urn.split("::").pop()!, started: Date.now() });
        const done = (e.resOutputsEvent ?? e.resOpFailedEvent) as { metadata: { op: string; urn: string } } | undefined;
        if (e.resOutputsEvent && done) {
            const step = [...this.steps].reverse().find((s) => s.urn === done.metadata.urn && s.op === done.metadata.op && s.ended === undefined);
            if (step) step.ended = Date.now();
        }
    }
}

/** Reads an `--event-log` file as the CLI appends to it (every 50 ms), a JSON event per line. */
class EventLogReader {
    readonly events: EngineEventJson[] = [];
    /** A line that was no JSON event: the run fails with it. */
    failure?: Error;
    private offset = 0;
    private partial = "";
    private readonly decoder = new StringDecoder("utf8");
    private readonly timer: NodeJS.Timeout;

    constructor(
        private readonly file: string,
        private readonly onEvent: (e: EngineEventJson) => void,
    ) {
        this.timer = setInterval(() => this.poll(), 50);
    }

    close(): void {
        clearInterval(this.timer);
        this.poll();
    }

    private poll(): void {
        let fd: number;
        try {
            fd = fs.openSync(this.file, "r");
        } catch {
            return;
        }
        try {
            const size = fs.fstatSync(fd).size;
            if (size <= this.offset) return;
            const buffer = Buffer.alloc(size - this.offset);
            fs.readSync(fd, buffer, 0, buffer.length, this.offset);
            this.offset = size;
            const lines = (this.partial + this.decoder.write(buffer)).split("\n");
            this.partial = lines.pop()!;
            for (const line of lines.filter((l) => l.trim())) {
                try {
                    const event = JSON.parse(line) as EngineEventJson;
                    this.events.push(event);
                    this.onEvent(event);
                } catch (e) {
                    this.failure ??= new Error(`${this.file}: not an engine event (${(e as Error).message})`);
                }
            }
        } finally {
            fs.closeSync(fd);
        }
    }
}

function signal(pid: number, name: NodeJS.Signals): void {
    try {
        process.kill(pid, name);
    } catch {
        // already gone
    }
}

function lastLines(text: string): string {
    return text.trim().split("\n").slice(-6).join(" / ");
}
