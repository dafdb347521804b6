/**
 * The Pulumi CLI as one operation runs it. It stands in for the SDK's `PulumiCommand` (LocalWorkspace calls
 * only its `run`, `command` and `version`) and differs from the SDK's own exec (automation/cmd.ts) where an
 * operation needs it to:
 * - every command runs as the leader of a process group of its own, reported through `onProcess`, so a
 *   restarted service can stop what a dead one started;
 * - once the operation is cancelled no further command starts (the SDK adds its abort listener per command,
 *   and not at all to `stack select` or `config`, so a cancel between commands was lost), and a running
 *   command gets SIGINT, Pulumi's graceful cancel;
 * - a command can be given standard input (secret config values, never on a command line).
 * Results and errors are the SDK's own (`CommandResult`, `createCommandError`), so LocalWorkspace treats them
 * as it treats its own: a missing stack is a StackNotFoundError, a locked one a ConcurrentUpdateError.
 */
import { ChildProcess, spawn } from "node:child_process";
import * as path from "node:path";
import { describeProcess, PulumiProcess } from "./pulumiProcess";

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
    /** The operation's cancel. */
    signal?: AbortSignal;
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
        const env = { ...this.baseEnv, ...additionalEnv, PATH: `${path.dirname(this.command)}${path.delimiter}${additionalEnv.PATH ?? this.baseEnv.PATH ?? ""}`, PULUMI_AUTOMATION_API: "true" };
        let child: ChildProcess;
        try {
            child = spawn(this.command, fullArgs, { cwd, env, detached: true, stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"] });
        } catch (e) {
            return Promise.reject(sdkErrors().createCommandError(new (sdkCmd().CommandResult)("", (e as Error).message, -2, e as Error)));
        }
        const started = child.pid === undefined ? undefined : describeProcess(child.pid);
        if (started) this.options.onProcess?.(started);
        const cancel = () => child.kill("SIGINT");
        this.options.signal?.addEventListener("abort", cancel);
        let stdout = "";
        let stderr = "";
        child.stdout!.on("data", (d) => {
            stdout += d;
            onOutput?.(String(d));
        });
        child.stderr!.on("data", (d) => {
            stderr += d;
            onError?.(String(d));
        });
        if (input !== undefined) child.stdin!.end(input);
        return new Promise((resolve, reject) => {
            child.once("error", (e) => stderr += e.message);
            child.once("close", (code, signal) => {
                this.options.signal?.removeEventListener("abort", cancel);
                if (started) this.options.onProcess?.(undefined);
                const result = new (sdkCmd().CommandResult)(stdout, stderr, code ?? (signal ? 128 : -2));
                if (code === 0) resolve(result);
                else reject(sdkErrors().createCommandError(result));
            });
        });
    }
}
