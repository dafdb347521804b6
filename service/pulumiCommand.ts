/**
 * The Pulumi CLI as one operation runs it. It stands in for the SDK's `PulumiCommand` (LocalWorkspace calls
 * only its `run`, `command` and `version`) and differs from the SDK's own exec (automation/cmd.ts) where an
 * operation needs it to:
 * - every command runs as the leader of a process group of its own, reported through `onProcess`, so a
 *   restarted service can stop what a dead one started;
 * - once the operation is cancelled no further command starts (the SDK adds its abort listener per command,
 *   and not at all to `stack select` or `config`, so a cancel between commands was lost), and a running
 *   command gets SIGINT, Pulumi's graceful cancel;
 * - a command can be given standard input (secret config values, never on a command line);
 * - its standard output and error go to files, not pipes: the CLI writes its progress as it goes, and a
 *   write to a pipe whose reader has died kills a Go program (SIGPIPE on fd 1 or 2), so a service crash
 *   would kill a running `pulumi up` mid-step, leaving creates cut off in its checkpoint, instead of leaving
 *   it for the restarted service to cancel gracefully. A command that prints secrets keeps pipes;
 * - it has a private folder of its own as its temporary folder (TMPDIR), removed when it has ended (or, after
 *   a crash, when the restarted service has stopped it): the real Kubernetes plugin writes the cluster's
 *   admin kubeconfig to a temporary file each time it is configured and never removes it (pulumi-kubernetes
 *   v4.25.0 provider/pkg/provider/util.go `writeKubeconfigToFile`, still so at v4.32.0), and the language host
 *   leaves its `pulumi-node-pipes` folders when it is killed.
 * Results and errors are the SDK's own (`CommandResult`, `createCommandError`), so LocalWorkspace treats them
 * as it treats its own: a missing stack is a StackNotFoundError, a locked one a ConcurrentUpdateError.
 */
import { ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describeProcess, OUTPUT_DIR_PREFIX, PulumiProcess, stopPulumiProcess } from "./pulumiProcess";

/** How long a FORCEFUL cancel lets Pulumi's own cancel try before it kills the command. */
export const FORCEFUL_GRACE_MS = 5_000;

/** What the SDK's exec returns (automation/cmd.ts `CommandResult`). */
export interface CommandResult {
    stdout: string;
    stderr: string;
    code: number;
}

// Internal to the pinned SDK (3.248.0) and so without published types: the result class and the error
// factory its own exec uses (automation/cmd.js, automation/errors.js).
// Loaded with the first command, as the rest of the Automation API is (stackRunner.ts).
const sdkCmd = () => require("@pulumi/pulumi/automation/cmd") as { CommandResult: new (stdout: string, stderr: string, code: number, err?: Error) => CommandResult };
const sdkErrors = () => require("@pulumi/pulumi/automation/errors") as { createCommandError(result: CommandResult): Error };

export class OperationCancelledError extends Error {
    constructor() {
        super("the operation was cancelled before its next Pulumi command");
        this.message = "the operation was cancelled before its next Pulumi command";
        this.name = "OperationCancelledError";
    }
}

export interface OperationCommandOptions {
    /** The operation's cancel (SIGINT, Pulumi's graceful cancel). */
    signal?: AbortSignal;
    /** Its FORCEFUL cancel: the running command and its plugins killed after FORCEFUL_GRACE_MS. */
    force?: AbortSignal;
    /** Told of each Pulumi process when it starts, and (undefined) when it has ended. */
    onProcess?: (process: PulumiProcess | undefined) => void;
}

export class OperationCommand {
    constructor(
        /** The CLI's path. */
        readonly command: string,
        /** Its version, as the SDK's PulumiCommand holds it (LocalWorkspace reads it to pick the event log). */
        readonly version: unknown,
        /** Environment of every command (what LocalWorkspace adds comes on top). */
        private readonly baseEnv: Record<string, string>,
        private readonly options: OperationCommandOptions,
    ) {}

    /** The SDK's `PulumiCommand.run` signature; its own signal is ignored in favour of the operation's. */
    run(args: string[], cwd: string, additionalEnv: Record<string, string>, onOutput?: (data: string) => void, onError?: (data: string) => void): Promise<CommandResult> {
        return this.exec(args, cwd, additionalEnv, undefined, onOutput, onError);
    }

    /** A command reading `input` on its standard input. */
    runWithInput(args: string[], cwd: string, additionalEnv: Record<string, string>, input: string): Promise<CommandResult> {
        return this.exec(args, cwd, additionalEnv, input);
    }

    private exec(args: string[], cwd: string, additionalEnv: Record<string, string>, input?: string, onOutput?: (data: string) => void, onError?: (data: string) => void): Promise<CommandResult> {
        if (this.options.signal?.aborted) return Promise.reject(new OperationCancelledError());
        const fullArgs = args.includes("--non-interactive") ? args : [...args, "--non-interactive"];
        // As the SDK does: the CLI's own folder first on PATH (its bundled plugins), and the Automation API marker.
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), OUTPUT_DIR_PREFIX));
        const temporary = path.join(dir, "tmp");
        fs.mkdirSync(temporary);
        const inheritedPath = additionalEnv.PATH ?? this.baseEnv.PATH ?? "";
        const env = { ...this.baseEnv, ...additionalEnv, PATH: path.isAbsolute(this.command) ? `${path.dirname(this.command)}${path.delimiter}${inheritedPath}` : inheritedPath, PULUMI_AUTOMATION_API: "true", TMPDIR: temporary };
        // A command that prints secrets (`stack output --show-secrets`, `config --show-secrets`) changes nothing
        // and may die with the service: its output stays in memory, never on disk.
        const output: CommandOutput = fullArgs.includes("--show-secrets") ? new PipedOutput(onOutput, onError) : new OutputFiles(dir, onOutput, onError);
        const finish = () => {
            const printed = output.finish();
            fs.rmSync(dir, { recursive: true, force: true });
            return printed;
        };
        let child: ChildProcess;
        try {
            child = spawn(this.command, fullArgs, { cwd, env, detached: true, stdio: [input === undefined ? "ignore" : "pipe", ...output.stdio] });
            output.attach(child);
        } catch (e) {
            output.closeOwnCopies();
            finish();
            return Promise.reject(sdkErrors().createCommandError(new (sdkCmd().CommandResult)("", (e as Error).message, -2, e as Error)));
        }
        output.closeOwnCopies();
        const started = child.pid === undefined ? undefined : describeProcess(child.pid);
        if (started) this.options.onProcess?.({ ...started, outputDir: dir });
        // Pulumi's own cancel (SIGINT) waits for the steps under way; a FORCEFUL one, then, kills the command and
        // its plugins (the stack's lock is then the caller's to clear).
        const cancel = () => child.kill("SIGINT");
        const force = () => started && void stopPulumiProcess(started, FORCEFUL_GRACE_MS).catch(() => undefined);
        this.options.signal?.addEventListener("abort", cancel);
        this.options.force?.addEventListener("abort", force);
        if (this.options.force?.aborted) force();
        if (input !== undefined) {
            // A CLI that exits before reading its input (a bad flag) must not crash the service with EPIPE.
            child.stdin!.on("error", () => undefined);
            child.stdin!.end(input);
        }
        let spawnError = "";
        return new Promise((resolve, reject) => {
            child.once("error", (e) => (spawnError += e.message));
            child.once("close", (code, signal) => {
                this.options.signal?.removeEventListener("abort", cancel);
                this.options.force?.removeEventListener("abort", force);
                if (started) this.options.onProcess?.(undefined);
                const { stdout, stderr } = finish();
                const result = new (sdkCmd().CommandResult)(stdout, stderr + spawnError, code ?? (signal ? 128 : -2));
                if (code === 0) resolve(result);
                else reject(sdkErrors().createCommandError(result));
            });
        });
    }
}

/** Where a command's standard output and error go, and what they held once it has ended. */
interface CommandOutput {
    readonly stdio: ["pipe", "pipe"] | [number, number];
    attach(child: ChildProcess): void;
    closeOwnCopies(): void;
    finish(): { stdout: string; stderr: string };
}

/** A command's standard output and error through pipes, kept in memory, passed on as they come when asked. */
class PipedOutput implements CommandOutput {
    readonly stdio = ["pipe", "pipe"] as ["pipe", "pipe"];
    private stdout = "";
    private stderr = "";

    constructor(
        private readonly onOutput?: (data: string) => void,
        private readonly onError?: (data: string) => void,
    ) {}

    attach(child: ChildProcess): void {
        child.stdout!.on("data", (d) => {
            this.stdout += d;
            this.onOutput?.(String(d));
        });
        child.stderr!.on("data", (d) => {
            this.stderr += d;
            this.onError?.(String(d));
        });
    }

    closeOwnCopies(): void {}

    finish(): { stdout: string; stderr: string } {
        return { stdout: this.stdout, stderr: this.stderr };
    }
}

/** A command's standard output and error as files in its private folder, passed on as they grow when asked. */
class OutputFiles implements CommandOutput {
    readonly stdio: [number, number];
    private readonly stdoutFd: number;
    private readonly stderrFd: number;
    private readonly read = { stdout: 0, stderr: 0 };
    private readonly timer?: NodeJS.Timeout;

    constructor(
        private readonly dir: string,
        private readonly onOutput?: (data: string) => void,
        private readonly onError?: (data: string) => void,
    ) {
        this.stdoutFd = fs.openSync(path.join(this.dir, "stdout"), "w", 0o600);
        this.stderrFd = fs.openSync(path.join(this.dir, "stderr"), "w", 0o600);
        this.stdio = [this.stdoutFd, this.stderrFd];
        if (onOutput || onError) this.timer = setInterval(() => this.passOn(), 250);
    }

    attach(): void {}

    /** The child has its own copies once spawned. */
    closeOwnCopies(): void {
        fs.closeSync(this.stdoutFd);
        fs.closeSync(this.stderrFd);
    }

    /** Everything written, passed on to the end. */
    finish(): { stdout: string; stderr: string } {
        clearInterval(this.timer);
        this.passOn();
        const text = (name: string) => fs.readFileSync(path.join(this.dir, name), "utf8");
        return { stdout: text("stdout"), stderr: text("stderr") };
    }

    private passOn(): void {
        for (const [name, callback] of [["stdout", this.onOutput], ["stderr", this.onError]] as const) {
            if (!callback) continue;
            const buffer = fs.readFileSync(path.join(this.dir, name));
            if (buffer.length > this.read[name]) callback(buffer.subarray(this.read[name]).toString("utf8"));
            this.read[name] = buffer.length;
        }
    }
}
