/**
 * `k8s-vnf`: the project's own commands.
 *
 *   k8s-vnf import-request FILE [--stack NAME] [--package-dir DIR]   Tacker request → stack config
 *   k8s-vnf validate --stack NAME                                      check a stack file offline
 *   k8s-vnf config-reference                                           print the configuration reference
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { findSecrets, parseVnfConfig, PROJECT } from "../config/load";
import { parseRequestText } from "../config/requestText";
import { ConfigError, ConfigProblem } from "../config/spec";
import { convertInstantiateRequest } from "../config/tacker";
import { MIB, readAtMost, sizeText } from "../config/untrustedFile";
import { findPulumi, PulumiCliError, selectOrCreateStack, setSecretConfig } from "./pulumiCli";
import { printable, PRINTABLE_LIMIT } from "./printable";
import { configurationReference } from "./reference";
import { API_PREFIX, createService, ServiceAuth } from "../service/app";
import { withoutLeaves } from "../service/stackConfig";
import { keysWithSecrets, mapSecureLeaves, readStackFile, renderStackFile, writeAtomically } from "./stackFile";

const USAGE = `usage:
  k8s-vnf import-request FILE [--stack NAME] [--package-dir DIR] [--project DIR]
      Convert a Tacker InstantiateVnfRequest body (JSON; Tacker's '#' comments are allowed) into stack
      config. Without --stack it prints the stack file (secrets left out, listed in its header); with
      --stack it writes stacks/Pulumi.NAME.yaml and sets the secrets with the Pulumi CLI (on stdin).
      --package-dir: the VNF package folder the request's file paths are relative to; files are checked
      (regular files only; manifests and certificates up to 1 MiB, of an image archive only its header).
      FILE: up to 4 MiB. Text from the request is shown with control characters escaped (\\x1b), cut at 200.
  k8s-vnf validate --stack NAME [--project DIR]
      Check stacks/Pulumi.NAME.yaml as the program would, without Pulumi (encrypted values stand in as set).
  k8s-vnf config-reference [--project DIR]
      Print the configuration reference (Tacker parameter → config key).
  k8s-vnf serve [--port PORT] [--listen ADDRESS] [--data-dir DIR] [--max-parallel N] [--project DIR]
                [--public-url URL] [--allow-loopback-callbacks]
      Run the SOL003 LCM service (/vnflcm/v1) on ADDRESS:PORT (default 127.0.0.1:9890), its SQLite database
      in DIR (default ./lcm-data). --public-url: the base of the URLs it hands out (Location, _links,
      notifications; default the address a request arrived at). Subscriptions never call link-local or
      metadata addresses, nor loopback unless --allow-loopback-callbacks. K8S_VNF_LCM_TOKEN set: clients must send "Authorization: Bearer <it>";
      K8S_VNF_LCM_BASIC_AUTH=user:password: HTTP basic authentication. At most N operations (default 4) run
      at once, across instances.
      Each operation runs the Pulumi CLI (v3.208 or newer) on PATH (or K8S_VNF_PULUMI_ROOT/bin/pulumi) in
      the project (--project, default this one) with the service's environment; its OpenStack credentials
      are its VIM's, or the service's OS_* variables for an instance without a registered VIM.`;

export interface Io {
    out: (text: string) => void;
    err: (text: string) => void;
    env: NodeJS.ProcessEnv;
    cwd: string;
}

const DEFAULT_IO: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), env: process.env, cwd: process.cwd() };

class UsageError extends Error {}

interface Args {
    command?: string;
    positional: string[];
    options: Map<string, string>;
}

const OPTIONS_WITH_VALUES = new Set(["--stack", "--package-dir", "--project", "--port", "--listen", "--data-dir", "--max-parallel", "--public-url"]);
const FLAGS = new Set(["--allow-loopback-callbacks"]);

function parseArgs(argv: string[]): Args {
    const args: Args = { positional: [], options: new Map() };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === "-h" || a === "--help") args.options.set("--help", "");
        else if (FLAGS.has(a)) args.options.set(a, "");
        else if (OPTIONS_WITH_VALUES.has(a)) {
            if (i + 1 >= argv.length) throw new UsageError(`${a} needs a value`);
            args.options.set(a, argv[++i]);
        } else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
        else if (!args.command) args.command = a;
        else args.positional.push(a);
    }
    return args;
}

/** Runs a command; resolves to the exit code (0 ok, 1 refused or failed, 2 usage). */
export async function main(argv: string[], io: Io = DEFAULT_IO): Promise<number> {
    let args: Args;
    try {
        args = parseArgs(argv);
    } catch (e) {
        io.err(`${(e as Error).message}\n${USAGE}\n`);
        return 2;
    }
    if (args.options.has("--help") || !args.command) {
        io.out(`${USAGE}\n`);
        return args.command || args.options.has("--help") ? 0 : 2;
    }
    const projectDir = path.resolve(io.cwd, args.options.get("--project") ?? path.resolve(__dirname, ".."));
    try {
        switch (args.command) {
            case "import-request":
                return importRequest(args, projectDir, io);
            case "validate":
                return validate(args, projectDir, io);
            case "config-reference":
                io.out(configurationReference(projectDir));
                return 0;
            case "serve":
                return await serve(args, projectDir, io);
            default:
                throw new UsageError(`unknown command ${args.command}`);
        }
    } catch (e) {
        if (e instanceof UsageError) {
            io.err(`${e.message}\n${USAGE}\n`);
            return 2;
        }
        if (e instanceof ConfigError) {
            io.err(`${printableError(e).message}\n`);
            return 1;
        }
        if (e instanceof PulumiCliError) {
            io.err(`${e.message}\n`);
            return 1;
        }
        throw e;
    }
}

function stackName(args: Args): string | undefined {
    const stack = args.options.get("--stack");
    if (stack !== undefined && !/^[A-Za-z0-9_.-]{1,100}$/.test(stack)) throw new UsageError("--stack: letters, digits, '-', '_' and '.' only");
    return stack;
}

/**
 * Longest problem message shown: room for the project's own wording around a value from the request
 * (`<value> is not a flavour of …`), the value itself cut like any request-derived text.
 */
const MESSAGE_LIMIT = 2 * PRINTABLE_LIMIT;

/** A problem as shown: its path and message (both may carry request text) one line each, escaped and cut. */
function printableProblem(p: ConfigProblem): ConfigProblem {
    return { path: printable(p.path), message: printable(p.message, MESSAGE_LIMIT) };
}

function printableError(e: ConfigError): ConfigError {
    return new ConfigError(e.problems.map(printableProblem), printable(e.source));
}

function report(io: Io, title: string, items: ConfigProblem[]): void {
    if (!items.length) return;
    io.err(`${title}:\n${items.map(printableProblem).map((i) => `  - ${i.path}: ${i.message}`).join("\n")}\n`);
}

/**
 * Largest request file read. Tacker's API takes bodies up to 112 KiB (oslo.middleware's default
 * max_request_body_size); this leaves room for comments and long inline values, and refuses a file that
 * is no request at all (an archive, a disk image, /dev/zero) before it fills memory.
 */
export const REQUEST_FILE_LIMIT = 4 * MIB;

/**
 * Reads the request file: any file that can be read, pipes included (`<(curl …)`), up to
 * {@link REQUEST_FILE_LIMIT}.
 */
function readRequestFile(file: string, shown: string): string {
    const refuse = (message: string) => new ConfigError([{ path: "", message }], "request file");
    let fd: number;
    try {
        fd = fs.openSync(file, "r");
    } catch (e) {
        throw refuse(`cannot read ${shown}: ${(e as NodeJS.ErrnoException).code}`);
    }
    try {
        const bytes = readAtMost(fd, REQUEST_FILE_LIMIT + 1);
        if (bytes.length > REQUEST_FILE_LIMIT) throw refuse(`${shown} is larger than ${sizeText(REQUEST_FILE_LIMIT)}: not a request body`);
        return bytes.toString("utf8");
    } catch (e) {
        if (e instanceof ConfigError) throw e;
        throw refuse(`cannot read ${shown}: ${(e as NodeJS.ErrnoException).code}`);
    } finally {
        fs.closeSync(fd);
    }
}

function importRequest(args: Args, projectDir: string, io: Io): number {
    if (args.positional.length !== 1) throw new UsageError("import-request takes one request file");
    const file = path.resolve(io.cwd, args.positional[0]);
    const stack = stackName(args);
    const packageDirOption = args.options.get("--package-dir");
    const packageDir = packageDirOption === undefined ? undefined : path.resolve(io.cwd, packageDirOption);

    const body = parseRequestText(readRequestFile(file, args.positional[0]), path.basename(file));
    const existing = stack ? readStackFile(projectDir, stack) : undefined;
    const base = existing ? (mapSecureLeaves(existing.config, "remove") as Record<string, unknown>) : undefined;
    // In the stack file, packageDir is relative to the project so the stack works from any checkout.
    const packageDirSetting = packageDir === undefined ? undefined : path.relative(projectDir, packageDir) || ".";
    const result = convertInstantiateRequest(body, { base, packageDir: packageDirSetting, baseDir: projectDir, stackName: stack ?? path.basename(file, path.extname(file)) });

    report(io, "warnings", result.warnings);
    report(io, "taken from Tacker's sample VNFD (the request does not carry them)", result.defaulted);
    report(io, "accepted and ignored", result.ignored);
    if (packageDir === undefined && hasPackageFiles(result.config)) io.err("package files were not checked: give --package-dir\n");

    const secretPaths = result.secrets.map((s) => s.path);
    const plain = withoutLeaves(result.config, secretPaths);
    const header = [
        `Converted from ${path.basename(file)} by k8s-vnf import-request.`,
        ...(secretPaths.length
            ? ["Secrets (set each with: pulumi config set --secret --path <path>):", ...secretPaths.map((p) => `  ${p}`)]
            : []),
    ];

    if (!stack || !existing) {
        io.out(renderStackFile({ path: "", rest: {}, foreign: {}, config: {} }, plain, header));
        return 0;
    }

    const pulumi = secretPaths.length ? findPulumi(io.env) : undefined;
    if (secretPaths.length && !pulumi) {
        throw new PulumiCliError(
            `writing stack ${stack} needs the Pulumi CLI to encrypt ${secretPaths.length} secret(s) (${secretPaths.join(", ")}); ` +
                "nothing was written. Install it, or run without --stack to print the config.",
        );
    }
    const rendered = renderStackFile(existing, plain, header.slice(0, 1));
    writeAtomically(existing.path, rendered);
    try {
        if (pulumi) {
            const cli = { path: pulumi, projectDir, env: io.env };
            selectOrCreateStack(cli, stack);
            for (const s of result.secrets) setSecretConfig(cli, stack, s.path, s.value);
        }
    } catch (e) {
        // Leave the stack as it was: its secrets and its config belong together.
        if (existing.original === undefined) fs.rmSync(existing.path, { force: true });
        else writeAtomically(existing.path, existing.original);
        throw e;
    }
    io.err(`wrote ${path.relative(io.cwd, existing.path)}${secretPaths.length ? ` and set ${secretPaths.length} secret(s)` : ""}\n`);
    return 0;
}

function hasPackageFiles(config: Record<string, unknown>): boolean {
    const registries = (config.privateRegistries as { caCertificateFile?: string }[] | undefined) ?? [];
    return !!(config.persistentVolumes as unknown[] | undefined)?.length || registries.some((r) => r.caCertificateFile) || !!(config.registry as { imageFile?: string } | undefined)?.imageFile;
}

function validate(args: Args, projectDir: string, io: Io): number {
    const stack = stackName(args);
    if (!stack) throw new UsageError("validate needs --stack NAME");
    const file = readStackFile(projectDir, stack);
    if (file.original === undefined) throw new ConfigError([{ path: "", message: `no stack file ${path.relative(io.cwd, file.path)}` }], "stack");
    const secretKeys = keysWithSecrets(file.config);
    const raw = mapSecureLeaves(file.config, () => "(encrypted)") as Record<string, unknown>;
    const loaded = parseVnfConfig(raw, { stackName: stack, baseDir: projectDir, isSecretKey: (k) => secretKeys.has(k.slice(PROJECT.length + 1)) }, `stack ${stack}`);
    report(io, "warnings", loaded.warnings);
    const unset = findSecrets(raw).length === 0 ? " (no secrets set yet)" : "";
    io.out(`stack ${stack}: valid ${loaded.spec.kind}${loaded.spec.kind === "cluster" ? ` (${loaded.spec.flavour}, ${loaded.spec.masters.count} master(s), ${loaded.spec.workers.count} worker(s))` : ""}${unset}\n`);
    return 0;
}


async function serve(args: Args, projectDir: string, io: Io): Promise<number> {
    const port = Number(args.options.get("--port") ?? 9890);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError("--port: a port number from 0 to 65535");
    const listen = args.options.get("--listen") ?? "127.0.0.1";
    const maxParallel = Number(args.options.get("--max-parallel") ?? 4);
    if (!Number.isInteger(maxParallel) || maxParallel < 1) throw new UsageError("--max-parallel: a whole number ≥ 1");
    const dataDir = path.resolve(io.cwd, args.options.get("--data-dir") ?? "lcm-data");
    const token = io.env.K8S_VNF_LCM_TOKEN;
    const basic = io.env.K8S_VNF_LCM_BASIC_AUTH;
    if (token && basic) throw new UsageError("set K8S_VNF_LCM_TOKEN or K8S_VNF_LCM_BASIC_AUTH, not both");
    if (basic !== undefined && !/^[^:]+:.+$/.test(basic)) throw new UsageError("K8S_VNF_LCM_BASIC_AUTH: user:password");
    const auth: ServiceAuth = token
        ? { type: "bearer", token }
        : basic
          ? { type: "basic", username: basic.slice(0, basic.indexOf(":")), password: basic.slice(basic.indexOf(":") + 1) }
          : { type: "none" };
    const publicUrl = args.options.get("--public-url");
    if (publicUrl !== undefined && !/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(publicUrl)) throw new UsageError("--public-url: an http or https URL such as https://lcm.example:9890");
    const service = await createService({
        dataDir,
        auth,
        maxParallel,
        projectDir,
        pulumiRoot: io.env.K8S_VNF_PULUMI_ROOT,
        env: io.env,
        publicUrl: publicUrl?.replace(/\/+$/, ""),
        allowLoopbackCallbacks: args.options.has("--allow-loopback-callbacks"),
    });
    const address = await service.app.listen({ port, host: listen });
    io.out(`k8s-vnf LCM service on ${address}${API_PREFIX} (data in ${dataDir})\n`);
    await new Promise<void>((resolve) => {
        for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve());
    });
    await service.close();
    return 0;
}
