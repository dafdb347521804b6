/** `k8s-vnf import-request` and `k8s-vnf validate`: Tacker requests to stack files, and their offline check. */
import * as fs from "node:fs";
import * as path from "node:path";
import { findSecrets, parseVnfConfig, PROJECT } from "../config/load";
import { parseRequestText } from "../config/requestText";
import { ConfigError, ConfigProblem } from "../config/spec";
import { convertInstantiateRequest, namesPackageFiles } from "../config/tacker";
import { otherRequestKind } from "./requestKind";
import { MIB, readAtMost, sizeText } from "../config/untrustedFile";
import { findPulumi, PulumiCliError, selectOrCreateStack, setSecretConfig } from "./pulumiCli";
import { printable, PRINTABLE_LIMIT } from "./printable";
import { withoutLeaves } from "../service/stackConfig";
import { keysWithSecrets, mapSecureLeaves, readStackFile, renderStackFile, securePaths, writeAtomically } from "./stackFile";
import { Args, Io, UsageError } from "./args";

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

export function printableError(e: ConfigError): ConfigError {
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

export function importRequest(args: Args, projectDir: string, io: Io): number {
    if (args.positional.length !== 1) throw new UsageError("import-request takes one request file");
    const file = path.resolve(io.cwd, args.positional[0]);
    const stack = stackName(args);
    const packageDirOption = args.options.get("--package-dir");
    const packageDir = packageDirOption === undefined ? undefined : path.resolve(io.cwd, packageDirOption);

    const body = parseRequestText(readRequestFile(file, args.positional[0]), path.basename(file));
    const other = otherRequestKind(body);
    if (other) throw new ConfigError([{ path: "", message: `this is a ${other}; import-request takes an InstantiateVnfRequest (the body of instantiate, with flavourId)` }], "InstantiateVnfRequest");
    const existing = stack ? readStackFile(projectDir, stack) : undefined;
    const base = existing ? (mapSecureLeaves(existing.config, "remove") as Record<string, unknown>) : undefined;
    // In the stack file, packageDir is relative to the project so the stack works from any checkout.
    const packageDirSetting = packageDir === undefined ? undefined : path.relative(projectDir, packageDir) || ".";
    const result = convertInstantiateRequest(body, { base, packageDir: packageDirSetting, baseDir: projectDir, stackName: stack ?? path.basename(file, path.extname(file)) });

    report(io, "warnings", result.warnings);
    report(io, "taken from Tacker's sample VNFD (the request does not carry them)", result.defaulted);
    report(io, "accepted and ignored", result.ignored);
    if (packageDir === undefined && namesPackageFiles(result.config)) io.err("package files were not checked: give --package-dir\n");

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

/**
 * Parses a stack file's config offline, each encrypted leaf standing in as a value of the form its field
 * takes: the first of PLACEHOLDERS its field accepts (a password takes any text, a proxy URL a URL). The
 * encrypted value itself is checked when the program runs, where the CLI decrypts it.
 */
const PLACEHOLDERS = ["(encrypted)", "http://encrypted.invalid"];

function parseWithEncryptedLeaves<T>(config: Record<string, unknown>, parse: (raw: Record<string, unknown>) => T): T {
    const encrypted = new Set(securePaths(config));
    const choice = new Map<string, number>();
    for (;;) {
        try {
            return parse(mapSecureLeaves(config, (p) => PLACEHOLDERS[choice.get(p) ?? 0]) as Record<string, unknown>);
        } catch (e) {
            if (!(e instanceof ConfigError)) throw e;
            const next = e.problems.filter((p) => encrypted.has(p.path) && (choice.get(p.path) ?? 0) < PLACEHOLDERS.length - 1);
            if (!next.length) throw e;
            for (const p of next) choice.set(p.path, (choice.get(p.path) ?? 0) + 1);
        }
    }
}

export function validate(args: Args, projectDir: string, io: Io): number {
    const stack = stackName(args);
    if (!stack) throw new UsageError("validate needs --stack NAME");
    const file = readStackFile(projectDir, stack);
    if (file.original === undefined) throw new ConfigError([{ path: "", message: `no stack file ${path.relative(io.cwd, file.path)}` }], "stack");
    const secretKeys = keysWithSecrets(file.config);
    const loaded = parseWithEncryptedLeaves(file.config, (raw) => parseVnfConfig(raw, { stackName: stack, baseDir: projectDir, isSecretKey: (k) => secretKeys.has(k.slice(PROJECT.length + 1)) }, `stack ${stack}`));
    const unset = findSecrets(mapSecureLeaves(file.config, () => PLACEHOLDERS[0]) as Record<string, unknown>).length === 0 ? " (no secrets set yet)" : "";
    report(io, "warnings", loaded.warnings);
    io.out(`stack ${stack}: valid ${loaded.spec.kind}${loaded.spec.kind === "cluster" ? ` (${loaded.spec.flavour}, ${loaded.spec.masters.count} master(s), ${loaded.spec.workers.count} worker(s))` : ""}${unset}\n`);
    return 0;
}
