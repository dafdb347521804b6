/**
 * STAND-IN for the Pulumi CLI (the real one cannot be installed here), behaving as v3.248.0 does for every
 * command this project and the Node SDK's Automation API run: `version`, `stack init|select|output|history`,
 * `config [get|set|set-all|rm|rm-all]`, `up`, `destroy`, `refresh`, `cancel`. What the real CLI refuses, it
 * refuses, with the real message; each rule is cited where it is implemented (commandLine.ts, project.ts,
 * stackConfig.ts, passphrase.ts, backend.ts, update.ts, eventLog.ts). It runs non-interactively and keeps
 * no "current stack": every command names its stack. Test knobs: knobs.ts.
 * Previews (`preview`, `destroy --preview-only`) are no longer modelled: the suites that run them use the real
 * CLI (realPulumi, realKubelet and realLcm .lab.spec.ts); here they fail, saying so.
 */
import * as path from "node:path";
import { DiyBackend } from "./backend";
import { CommandLine, CommandSpec, FlagSpec, parseCommandLine } from "./commandLine";
import { delayFor, recordCall, versionOverride } from "./knobs";
import { loadOutputs } from "./outputs";
import { findProject, Project } from "./project";
import { coerce, parseConfigKey, StackConfigFile } from "./stackConfig";
import { runUpdate } from "./update";

/** The version the stand-in follows; the Node SDK picks the gRPC event log for anything newer than 3.205. */
const VERSION = "v3.248.0";

const stack: FlagSpec = { name: "stack", short: "s", kind: "string" };
const json: FlagSpec = { name: "json", short: "j", kind: "bool" };
const showSecrets: FlagSpec = { name: "show-secrets", kind: "bool" };
const pathFlag: FlagSpec = { name: "path", kind: "bool" };
const yes: FlagSpec = { name: "yes", short: "y", kind: "bool" };
/** A persistent flag of `pulumi config` (pkg/cmd/pulumi/config/config.go `newConfigCmd`): every subcommand takes it. */
const configFile: FlagSpec = { name: "config-file", kind: "string" };
const updateFlags: FlagSpec[] = [
    stack,
    yes,
    { name: "skip-preview", short: "f", kind: "bool" },
    { name: "exec-kind", kind: "string" },
    { name: "message", short: "m", kind: "string" },
    // Registered only when PULUMI_DEBUG_COMMANDS is set (operations/up.go, destroy.go, refresh.go); the SDK sets it.
    ...(process.env.PULUMI_DEBUG_COMMANDS ? [{ name: "event-log", kind: "string" as const }] : []),
];

const COMMANDS: CommandSpec[] = [
    { names: ["version"], flags: [], args: { min: 0, max: 0 } },
    { names: ["stack init"], flags: [stack, { name: "secrets-provider", kind: "string" }, { name: "no-select", kind: "bool" }], args: { min: 0, max: 1 } },
    { names: ["stack select"], flags: [stack, { name: "create", short: "c", kind: "bool" }, { name: "secrets-provider", kind: "string" }], args: { min: 0, max: 1 } },
    { names: ["stack output"], flags: [stack, json, showSecrets], args: { min: 0, max: 1 } },
    { names: ["stack history"], flags: [stack, json, showSecrets, { name: "page-size", kind: "string" }, { name: "page", kind: "string" }], args: { min: 0, max: 0 } },
    { names: ["config"], flags: [stack, configFile, json, showSecrets], args: { min: 0, max: 0 } },
    { names: ["config get"], flags: [stack, configFile, json, pathFlag], args: { min: 1, max: 1 } },
    {
        names: ["config set"],
        flags: [stack, configFile, pathFlag, { name: "plaintext", kind: "bool" }, { name: "secret", kind: "bool" }, { name: "type", kind: "string" }, { name: "raw", kind: "bool" }],
        args: { min: 1, max: 2 },
        // pkg/cmd/pulumi/config/config.go, newConfigSetCmd: setCmd.MarkFlagsMutuallyExclusive("secret", "plaintext", "type")
        exclusive: ["secret", "plaintext", "type"],
    },
    {
        names: ["config set-all"],
        flags: [stack, configFile, pathFlag, { name: "plaintext", kind: "strings" }, { name: "secret", kind: "strings" }, { name: "json", kind: "string" }],
        args: { min: 0, max: 0 },
    },
    { names: ["config rm", "config remove"], flags: [stack, configFile, pathFlag], args: { min: 1, max: 1 } },
    { names: ["config rm-all", "config remove-all"], flags: [stack, configFile, pathFlag], args: { min: 1, max: Infinity } },
    { names: ["up", "update"], flags: [...updateFlags, { name: "replace", kind: "strings" }], args: { min: 0, max: 0 } },
    { names: ["destroy"], flags: updateFlags, args: { min: 0, max: 0 } },
    { names: ["refresh"], flags: updateFlags, args: { min: 0, max: 0 } },
    { names: ["cancel"], flags: [stack, yes], args: { min: 0, max: 1 } },
];

interface Context {
    line: CommandLine;
    project: Project;
    backend: DiyBackend;
    stack: string;
}

function stackName(line: CommandLine, positional: boolean): string {
    const fromArg = positional ? line.args[0] : undefined;
    if (fromArg && line.string("stack")) throw new Error("only one of --stack or argument stack name may be specified, not both");
    const name = fromArg ?? line.string("stack");
    if (!name) throw new Error("the stand-in Pulumi CLI keeps no current stack: name it with --stack");
    if (!/^[A-Za-z0-9_.-]{1,100}$/.test(name)) throw new Error("a stack name may only contain alphanumeric, hyphens, underscores, or periods");
    return name;
}

function context(line: CommandLine, positionalStack = false): Context {
    const project = findProject(process.cwd());
    const backend = DiyBackend.open(project, process.env, process.cwd());
    return { line, project, backend, stack: stackName(line, positionalStack) };
}

/** `CreateStack`: the secrets manager first (its salt into the stack file), then the stack in the backend. */
function createStack(ctx: Context): void {
    const file = stackConfigFile(ctx);
    try {
        file.crypter(process.env);
    } catch (e) {
        throw new Error(`could not create secrets manager for new stack: ${(e as Error).message}`);
    }
    ctx.backend.createStack(ctx.stack);
    file.save();
}

/** The stack's config file, or the one `--config-file` names (read against the working directory). */
function stackConfigFile(ctx: Context): StackConfigFile {
    const named = ctx.line.string("config-file");
    return named === undefined ? StackConfigFile.load(ctx.project, ctx.stack) : StackConfigFile.loadFile(path.resolve(named));
}

async function readStdin(): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
}

/** `configSetCmd.Run`: the value from the argument or, when standard input is not a terminal, from it. */
async function configSet(ctx: Context): Promise<void> {
    const { line } = ctx;
    const usePath = line.bool("path");
    const { key, path } = parseConfigKey(ctx.project, line.args[0], usePath);
    let value: string;
    if (line.args.length === 2) value = line.args[1];
    else if (!process.stdin.isTTY) value = line.bool("raw") ? await readStdin() : (await readStdin()).replace(/\r?\n$/, "");
    else throw new Error("config value must be specified in non-interactive mode");
    ctx.backend.requireStack(ctx.stack);
    const file = stackConfigFile(ctx);
    let leaf: unknown;
    if (line.bool("secret")) leaf = { secure: file.crypter(process.env).encrypt(value) };
    else {
        const type = line.string("type");
        if (type === undefined) leaf = usePath ? coerce(value) : value;
        else if (type === "string") leaf = value;
        else if (type === "int" && /^[+-]?\d+$/.test(value)) leaf = Number(value);
        else if (type === "bool" && /^(1|t|T|TRUE|true|True|0|f|F|FALSE|false|False)$/.test(value)) leaf = /^(1|t|T|TRUE|true|True)$/.test(value);
        else if (type === "float" && value.trim() !== "" && !Number.isNaN(Number(value))) leaf = Number(value);
        else if (!["string", "int", "bool", "float"].includes(type)) throw new Error(`invalid type "${type}"; must be one of string, int, bool, or float`);
        else throw new Error(`could not set config: ${JSON.stringify(value)} is not a valid ${type}`);
        // config.go `looksLikeSecret` judges the value's entropy (zxcvbn) when the key looks like a secret's; the
        // stand-in cannot, so it refuses whenever the real CLI might.
        if (!line.bool("plaintext") && /passwd|pass|password|pwd|secret|token/i.test(key.slice(key.indexOf(":") + 1) + path.join("."))) {
            throw new Error(`config value for '${line.args[0]}' looks like a secret; rerun with --secret to encrypt it, or --plaintext if you meant to store in plaintext`);
        }
    }
    try {
        file.set(key, path, leaf);
    } catch (e) {
        throw new Error(`could not set config: ${(e as Error).message}`);
    }
    file.save();
}

/** `config set-all`: `--plaintext`/`--secret` pairs, or `--json` in the shape `pulumi config --json` prints. */
function configSetAll(ctx: Context): void {
    const { line } = ctx;
    const pairs = [...line.strings("plaintext").map((p) => ({ p, secret: false })), ...line.strings("secret").map((p) => ({ p, secret: true }))];
    const jsonArg = line.string("json");
    if (jsonArg !== undefined && (pairs.length || line.bool("path"))) throw new Error("the --json option cannot be used with the --plaintext, --secret or --path options");
    ctx.backend.requireStack(ctx.stack);
    const file = stackConfigFile(ctx);
    for (const { p, secret } of pairs) {
        // io.go `parseKeyValuePair`: split at the first `=`, or after a quoted key at `<quote>=`.
        const quote = p[0] === '"' || p[0] === "'" ? p[0] : "";
        const eq = quote ? p.indexOf(`${quote}=`, 1) + 1 : p.indexOf("=");
        if (eq <= 0) throw new Error("config value must be in the form [key]=[value]");
        const { key, path } = parseConfigKey(ctx.project, quote ? p.slice(1, eq - 1) : p.slice(0, eq), line.bool("path"));
        const text = p.slice(eq + 1);
        // config.NewValue: a plaintext value is text; below a path it is coerced to a boolean or number.
        file.set(key, path, secret ? { secure: file.crypter(process.env).encrypt(text) } : path.length ? coerce(text) : text);
    }
    if (jsonArg !== undefined) {
        let entries: Record<string, { value?: string; objectValue?: unknown; secret?: boolean }>;
        try {
            entries = JSON.parse(jsonArg);
        } catch (e) {
            throw new Error(`could not parse --json argument: ${(e as Error).message}`);
        }
        for (const [jsonKey, entry] of Object.entries(entries)) {
            if (entry.value === undefined || entry.value === null) throw new Error(`value for --json object key "${jsonKey}" is nil`);
            const { key } = parseConfigKey(ctx.project, jsonKey, false);
            if (entry.objectValue !== undefined && entry.objectValue !== null) {
                if (entry.secret) throw new Error("the stand-in Pulumi CLI does not store secret objects (config.NewSecureObjectValue)");
                file.set(key, [], JSON.parse(entry.value));
            } else file.set(key, [], entry.secret ? { secure: file.crypter(process.env).encrypt(entry.value) } : entry.value);
        }
    }
    file.save();
}

function configRemove(ctx: Context, keys: string[]): void {
    ctx.backend.requireStack(ctx.stack);
    const file = stackConfigFile(ctx);
    for (const text of keys) {
        const { key, path } = parseConfigKey(ctx.project, text, ctx.line.bool("path"));
        file.remove(key, path);
    }
    file.save();
}

function configGet(ctx: Context): void {
    ctx.backend.requireStack(ctx.stack);
    const file = stackConfigFile(ctx);
    const { key, path } = parseConfigKey(ctx.project, ctx.line.args[0], ctx.line.bool("path"));
    const decrypted = file.values(file.hasSecrets() ? file.crypter(process.env) : undefined).get(key);
    let value = decrypted?.value;
    for (const segment of path) value = value !== null && typeof value === "object" ? (value as Record<string | number, unknown>)[segment] : undefined;
    if (value === undefined) throw new Error(`configuration key '${ctx.line.args[0]}' not found for stack '${ctx.stack}'`);
    process.stdout.write(`${ctx.line.bool("json") || typeof value !== "string" ? JSON.stringify(value) : value}\n`);
}

function configList(ctx: Context): void {
    ctx.backend.requireStack(ctx.stack);
    const file = stackConfigFile(ctx);
    const show = ctx.line.bool("show-secrets");
    const values = file.values(show && file.hasSecrets() ? file.crypter(process.env) : undefined);
    const out: Record<string, { value?: string; objectValue?: unknown; secret: boolean }> = {};
    // `listConfig`: a value holding a secret anywhere is secret, and shown only with --show-secrets.
    for (const [key, v] of [...values].sort(([a], [b]) => a.localeCompare(b))) {
        const text = typeof v.value === "string" ? v.value : JSON.stringify(v.value);
        out[key] = v.secret && !show ? { secret: true } : { value: text, ...(v.object ? { objectValue: v.value } : {}), secret: v.secret };
    }
    if (!ctx.line.bool("json")) throw new Error("the stand-in Pulumi CLI lists config as --json only");
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
}

function stackOutput(ctx: Context): void {
    ctx.backend.requireStack(ctx.stack);
    const crypter = ctx.line.bool("show-secrets") ? StackConfigFile.load(ctx.project, ctx.stack).crypter(process.env) : undefined;
    const shown = loadOutputs(ctx.backend.outputsFile(ctx.stack), crypter);
    const name = ctx.line.args[0];
    if (name !== undefined && !(name in shown)) throw new Error(`current stack does not have output property '${name}'`);
    process.stdout.write(`${JSON.stringify(name === undefined ? shown : shown[name], null, 2)}\n`);
}

function stackHistory(ctx: Context): void {
    ctx.backend.requireStack(ctx.stack);
    const size = Number(ctx.line.string("page-size") ?? 0);
    const page = Math.max(1, Number(ctx.line.string("page") ?? 1));
    const all = ctx.backend.history(ctx.stack);
    process.stdout.write(`${JSON.stringify(size ? all.slice((page - 1) * size, page * size) : all, null, 2)}\n`);
}

async function dispatch(line: CommandLine): Promise<void> {
    const name = line.command.names[0];
    switch (name) {
        case "version":
            process.stdout.write(`${versionOverride() ?? VERSION}\n`);
            return;
        case "stack init":
            return createStack(context(line, true));
        case "stack select": {
            const ctx = context(line, true);
            if (!ctx.backend.stackExists(ctx.stack) && line.bool("create")) return createStack(ctx);
            return ctx.backend.requireStack(ctx.stack);
        }
        case "stack output":
            return stackOutput(context(line));
        case "stack history":
            return stackHistory(context(line));
        case "config":
            return configList(context(line));
        case "config get":
            return configGet(context(line));
        case "config set":
            return configSet(context(line));
        case "config set-all":
            return configSetAll(context(line));
        case "config rm":
            return configRemove(context(line), line.args);
        case "config rm-all":
            return configRemove(context(line), line.args);
        case "cancel": {
            const ctx = context(line, true);
            ctx.backend.requireStack(ctx.stack);
            ctx.backend.cancel(ctx.stack);
            process.stdout.write(`The currently running update for '${ctx.stack}' has been canceled!\n`);
            return;
        }
        case "up":
        case "destroy":
        case "refresh": {
            if (!line.bool("yes") && !line.bool("skip-preview")) throw new Error("--yes or --skip-preview or --preview-only must be passed in to proceed when running in non-interactive mode");
            const ctx = context(line);
            return runUpdate({ kind: name === "up" ? "update" : name, project: ctx.project, backend: ctx.backend, stack: ctx.stack, replace: line.strings("replace"), eventLog: line.string("event-log") });
        }
    }
}

/** pkg/cmd/pulumi/cmd/exit_codes.go `ExitCodeFor`. */
function exitCode(message: string): number {
    if (/^no stack named '.*' found$/.test(message)) return 6;
    if (message.startsWith("--yes or --skip-preview")) return 2;
    return 1;
}

export async function main(argv: string[]): Promise<number> {
    recordCall(argv);
    try {
        const line = parseCommandLine(argv, COMMANDS);
        if (!["up", "destroy", "refresh"].includes(line.command.names[0])) await delayFor(line.command.names[0]);
        await dispatch(line);
        return 0;
    } catch (e) {
        const message = (e as Error).message;
        process.stderr.write(`error: ${message}\n`);
        return exitCode(message);
    }
}
