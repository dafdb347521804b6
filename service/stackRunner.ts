/**
 * How the service runs a VNF instance's stack: the Pulumi Automation API over this project (a local
 * program, so `pulumi up` here is what a user's `pulumi up` is), each command through an OperationCommand
 * (its own process group, recorded; no command after a cancel; secrets on standard input). The stack's
 * config is made exactly the operation's (stackConfig.ts); OpenStack credentials of the instance's VIM go to
 * the CLI as OS_* variables. The CLI must be at least MINIMUM_PULUMI_VERSION.
 */
import { MINIMUM_PULUMI_VERSION } from "../config/pulumiVersion";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { EngineEvent, PulumiCommand } from "@pulumi/pulumi/automation";
import * as semver from "semver";
import { CommandResult, OperationCommand } from "./pulumiCommand";
import { onThisHost, PulumiProcess, removeOutputDir, stopPulumiProcess } from "./pulumiProcess";

/** The Automation API, loaded with the first operation: it is most of what the service would load at start. */
const automation = () => require("@pulumi/pulumi/automation") as typeof import("@pulumi/pulumi/automation");

/** How the stack's config is set: it brings the configuration model, needed only once an operation runs. */
const stackConfig = () => require("./stackConfig") as typeof import("./stackConfig");

export { MINIMUM_PULUMI_VERSION };

/** How long a Pulumi command left running by a dead service gets to cancel before it is killed. */
const STOP_GRACE_MS = 15_000;

export interface RunOptions {
    /** OS_* variables of the VIM. */
    env: Record<string, string>;
    /** URNs to replace (heal). */
    replace?: string[];
    onEvent?: (event: EngineEvent) => void;
    /** A cancel: Pulumi's own (SIGINT), which waits for the steps under way. */
    signal?: AbortSignal;
    /** A FORCEFUL cancel: the command and its plugins killed after FORCEFUL_GRACE_MS. */
    force?: AbortSignal;
    /** Told of each Pulumi process the run starts, and (undefined) when it has ended. */
    onProcess?: (process: PulumiProcess | undefined) => void;
    /**
     * For a destroy: the stack's config as the service last set it, set again first. A replica on another host
     * has no stack file of its own, or an old one (stack files live in each replica's project folder; the
     * state is shared).
     */
    config?: Record<string, unknown>;
}

export interface PreviewOptions extends RunOptions {
    /** A preview of the stack's destroy. */
    destroy?: boolean;
    /** Where the copy of the stack's config file goes (the caller removes it); default a temporary folder, removed after. */
    scratchDir?: string;
}

export interface StackRunner {
    up(stackName: string, config: Record<string, unknown>, options: RunOptions): Promise<Record<string, unknown>>;
    destroy(stackName: string, options: RunOptions): Promise<void>;
    /**
     * A dry run: `pulumi preview` of the stack with `config` in place of its own (its own when undefined), or
     * of its destroy; its engine events go to `onEvent`. The config is set in a copy of the stack's file
     * (`--config-file`), and a preview writes no state. A stack that does not exist is refused, but for a
     * config's preview (an instantiate's), which creates it empty, as the instantiate would.
     */
    preview(stackName: string, config: Record<string, unknown> | undefined, options: PreviewOptions): Promise<void>;
    /**
     * After a crash, before anything else runs on the stack: stops the Pulumi command a dead service left
     * running (when it is still that process) and clears the stack's stale lock as the CLI documents
     * (`pulumi cancel`). Says what it did.
     */
    recover(stackName: string, leftRunning: PulumiProcess | undefined, env: Record<string, string>): Promise<string>;
    /**
     * Loads now what its first run would load, so that no request waits for that later; what it checks meanwhile
     * (the CLI) settles later, a failure saying what the first run would meet.
     */
    warmUp?(): Promise<void>;
}

export class PulumiCliMissingError extends Error {
    constructor(detail: string) {
        super(`the Pulumi CLI is not installed where the service looks for it (${detail}); install it (https://www.pulumi.com/docs/install/) or set K8S_VNF_PULUMI_ROOT to the directory holding bin/pulumi`);
        this.name = "PulumiCliMissingError";
    }
}

/** The CLI found, and its version as the SDK's PulumiCommand holds it (LocalWorkspace reads it). */
interface PulumiCli {
    command: string;
    version: semver.SemVer;
}

export class PulumiCliTooOldError extends Error {
    constructor(where: string, version: string) {
        super(
            `the Pulumi CLI ${where} is v${version}; this service needs v${MINIMUM_PULUMI_VERSION} or newer (heal replaces VMs through replacementTrigger, which older engines ignore, so a heal would report success having done nothing): update it (https://www.pulumi.com/docs/install/)`,
        );
        this.name = "PulumiCliTooOldError";
    }
}

export interface AutomationRunnerOptions {
    /** The project directory (Pulumi.yaml). */
    projectDir: string;
    /** Directory holding `bin/pulumi`; default: `pulumi` on PATH. */
    pulumiRoot?: string;
    /** Environment of every Pulumi command (PULUMI_CONFIG_PASSPHRASE, PULUMI_BACKEND_URL, PATH, HOME, ...). */
    env: Record<string, string>;
}

export class AutomationStackRunner implements StackRunner {
    private cli?: Promise<PulumiCli>;

    constructor(private readonly options: AutomationRunnerOptions) {}

    async up(stackName: string, config: Record<string, unknown>, run: RunOptions): Promise<Record<string, unknown>> {
        const command = await this.command(run);
        const errors = new EngineErrors(run.onEvent);
        try {
            const stack = await this.stack(stackName, command, run.env);
            await this.setConfig(stackName, config, command, run.env);
            const result = await stack.up({ onEvent: errors.onEvent, replace: run.replace });
            return Object.fromEntries(Object.entries(result.outputs).map(([k, v]) => [k, v.value]));
        } catch (e) {
            throw cliFailure(e, errors.messages);
        }
    }

    async destroy(stackName: string, run: RunOptions): Promise<void> {
        const command = await this.command(run);
        const errors = new EngineErrors(run.onEvent);
        try {
            const stack = await this.stack(stackName, command, run.env);
            if (run.config) await this.setConfig(stackName, run.config, command, run.env);
            await stack.destroy({ onEvent: errors.onEvent });
        } catch (e) {
            throw cliFailure(e, errors.messages);
        }
    }

    async preview(stackName: string, config: Record<string, unknown> | undefined, run: PreviewOptions): Promise<void> {
        const command = await this.command(run);
        const errors = new EngineErrors(run.onEvent);
        const scratch = config === undefined || run.destroy ? undefined : (run.scratchDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-plan-")));
        try {
            // A stack is made only for an instantiate's dry run (it has none yet; it is the one its instantiate
            // will use, empty): planning a stack as it is configured needs the stack.
            const stack = config === undefined || run.destroy ? await this.existingStack(stackName, command, run.env) : await this.stack(stackName, command, run.env);
            if (run.destroy) return void (await stack.previewDestroy({ onEvent: errors.onEvent }));
            if (!scratch || config === undefined) return void (await stack.preview({ onEvent: errors.onEvent }));
            // The stack's file (its encryption salt with it) copied, then set as the operation would set it.
            const configFile = path.join(scratch, `Pulumi.${stackName}.yaml`);
            const own = path.join(this.options.projectDir, "stacks", `Pulumi.${stackName}.yaml`);
            fs.writeFileSync(configFile, fs.existsSync(own) ? fs.readFileSync(own) : "", { mode: 0o600 });
            const inFile = (args: string[]) => [...args, "--config-file", configFile];
            await stackConfig().applyStackConfig(stackName, config, (args, input) =>
                input === undefined ? command.run(inFile(args), this.options.projectDir, run.env) : command.runWithInput(inFile(args), this.options.projectDir, run.env, input),
            );
            await stack.preview({ onEvent: errors.onEvent, configFile });
        } catch (e) {
            throw cliFailure(e, errors.messages);
        } finally {
            if (scratch && scratch !== run.scratchDir) fs.rmSync(scratch, { recursive: true, force: true });
        }
    }

    async recover(stackName: string, leftRunning: PulumiProcess | undefined, env: Record<string, string>): Promise<string> {
        const stopped = leftRunning ? await stopPulumiProcess(leftRunning, STOP_GRACE_MS) : "no Pulumi command of it was left running";
        // Its lock is left to a command that may still run on another host: cancelling it would let two update the stack.
        if (leftRunning && !onThisHost(leftRunning)) return `${stopped}; its stack's lock was left: once that command has ended, \`pulumi cancel --stack ${stackName}\` clears it`;
        if (leftRunning) removeOutputDir(leftRunning);
        const command = await this.command({});
        try {
            await command.run(["cancel", "--yes", "--stack", stackName], this.options.projectDir, env);
            return `${stopped}; the stack's lock was cleared (pulumi cancel)`;
        } catch (e) {
            if (e instanceof automation().StackNotFoundError) return `${stopped}; its stack was never created`;
            throw cliFailure(e);
        }
    }

    /** The Automation API's modules (most of a second to load, synchronously), then the CLI's version check. */
    warmUp(): Promise<void> {
        automation();
        stackConfig();
        return this.pulumi().then(() => undefined);
    }

    /** Sets the stack's config in its file in the project folder (stackConfig.ts). */
    private setConfig(stackName: string, config: Record<string, unknown>, command: OperationCommand, env: Record<string, string>): Promise<void> {
        return stackConfig().applyStackConfig(stackName, config, (args, input) => (input === undefined ? command.run(args, this.options.projectDir, env) : command.runWithInput(args, this.options.projectDir, env, input)));
    }

    private existingStack(stackName: string, command: OperationCommand, env: Record<string, string>) {
        return automation().LocalWorkspace.selectStack({ stackName, workDir: this.options.projectDir }, { pulumiCommand: command as unknown as PulumiCommand, envVars: env });
    }

    private stack(stackName: string, command: OperationCommand, env: Record<string, string>) {
        // LocalWorkspace uses only run, command and version of the PulumiCommand it is given.
        return automation().LocalWorkspace.createOrSelectStack({ stackName, workDir: this.options.projectDir }, { pulumiCommand: command as unknown as PulumiCommand, envVars: env });
    }

    private async command(run: Pick<RunOptions, "signal" | "force" | "onProcess">): Promise<OperationCommand> {
        const cli = await this.pulumi();
        return new OperationCommand(cli.command, cli.version, this.options.env, { signal: run.signal, force: run.force, onProcess: run.onProcess });
    }

    /**
     * The CLI, found and its version checked once (again after a failure: it may be installed meanwhile).
     * `pulumi version` runs as every other command does, with the CLI's environment only (the SDK's
     * `PulumiCommand.get` would give it the service's whole environment, API credentials included).
     */
    private pulumi(): Promise<PulumiCli> {
        const command = this.options.pulumiRoot ? path.resolve(this.options.pulumiRoot, "bin", "pulumi") : "pulumi";
        const where = this.options.pulumiRoot ? `at ${command}` : "on PATH";
        this.cli ??= new OperationCommand(command, undefined, this.options.env, {})
            .run(["version"], this.options.projectDir, { PULUMI_SKIP_UPDATE_CHECK: "true" })
            .then(
                (result) => {
                    const version = semver.parse(result.stdout.trim());
                    if (!version) throw new Error(`\`pulumi version\` ${where} printed ${JSON.stringify(result.stdout.trim().slice(0, 80))}, not a version`);
                    if (version.compare(MINIMUM_PULUMI_VERSION) < 0) throw new PulumiCliTooOldError(where, version.version);
                    return { command, version };
                },
                (e: unknown) => {
                    throw versionFailure(e, where);
                },
            );
        this.cli.catch(() => (this.cli = undefined));
        return this.cli;
    }
}

/** What a failed `pulumi version` says: no CLI at all, or the CLI's own failure. */
function versionFailure(e: unknown, where: string): Error {
    const result = (e as { commandResult?: CommandResult }).commandResult;
    if (result?.code === -2 && /ENOENT/.test(result.stderr)) return new PulumiCliMissingError(where);
    const said = (result?.stderr.trim() || result?.stdout.trim() || (e as Error).message).split("\n").slice(-4).join("\n");
    return new Error(`\`pulumi version\` ${where} failed${result ? ` (exit ${result.code})` : ""}: ${said}`);
}

/**
 * The errors the engine reported while a command ran (its diagnostic events of severity error, each with its
 * resource's name), passing every event on. This is what the CLI shows under "Diagnostics"; when a step
 * fails, the CLI itself ends with no error line of its own: the engine's failure is a bail, already reported
 * (v3.248.0 pkg/resource/deploy/deployment_executor.go `result.BailError`; pkg/cmd/pulumi/cmd/cmd.go
 * `processCmdErrors` prints nothing for one).
 */
class EngineErrors {
    readonly messages: string[] = [];

    constructor(private readonly next?: (event: EngineEvent) => void) {}

    readonly onEvent = (event: EngineEvent): void => {
        const d = event.diagnosticEvent;
        if (d?.severity === "error" && d.message.trim()) {
            const text = d.message.replace(/<\{%[^%]*%\}>|\x1b\[[0-9;]*m/g, "").trim();
            this.messages.push(d.urn ? `${d.urn.split("::").pop()}: ${text}` : text);
        }
        this.next?.(event);
    };
}

/**
 * What a failed Pulumi command said: the engine's errors when it reported any, else its error (from the
 * first `error:` on), rather than the SDK's dump of its whole output.
 */
function cliFailure(e: unknown, engineErrors: string[] = []): Error {
    const result = (e as { commandResult?: CommandResult }).commandResult;
    if (!(e instanceof automation().CommandError) || !result) return e as Error;
    if (engineErrors.length) return new Error(engineErrors.join("\n"));
    const at = result.stderr.search(/^error: /m);
    if (at < 0) {
        // No error line (a crash): the end of what it printed, which the operation redacts like any error.
        const tail = (result.stderr.trim() || result.stdout.trim()).split("\n").slice(-8).join("\n");
        return new Error(`the Pulumi CLI exited with ${result.code}${tail ? `:\n${tail}` : ""}`);
    }
    return new Error(result.stderr.slice(at).trim().replace(/^error: /gm, ""));
}
