/**
 * The k8s-vnf CLI as the CLI suites run it (cli.spec.ts, cliRealPulumi.spec.ts, cliHostileInput.spec.ts): in
 * process, as a process, and with the real Pulumi CLI beside it.
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { main } from "../../cli/main";
import { processTree, stillRunning } from "../../service/pulumiProcess";
import { REQUEST_SECRETS, requestWithSecrets } from "./fixtures";
import { PROJECT_DIR } from "./program";
import { builtTools, realPulumiEnv, useBuiltTools } from "./tools";

export const PASSPHRASE = "cli-test-passphrase";

export interface Run {
    code: number;
    out: string;
    err: string;
}

export async function cli(argv: string[], env: NodeJS.ProcessEnv = {}, cwd = PROJECT_DIR): Promise<Run> {
    let out = "";
    let err = "";
    const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t), env: { PATH: "/usr/bin:/bin", ...env }, cwd });
    return { code, out, err };
}

/**
 * A scratch project as a fresh clone has it (Pulumi.yaml, no state folder), the example package, and a
 * request with recognisable secrets.
 */
export function scratchProject() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-cli-"));
    fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
    fs.mkdirSync(path.join(dir, "stacks"));
    fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(dir, "package"), { recursive: true });
    const text = requestWithSecrets();
    fs.writeFileSync(path.join(dir, "request.json"), text);
    return {
        dir,
        request: path.join(dir, "request.json"),
        stackFile: path.join(dir, "stacks/Pulumi.edge.yaml"),
        cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
    };
}

/** The real Pulumi CLI for one project folder. */
export interface RealPulumi {
    /** What import-request and the tests run `pulumi` with: the built tools, the suite's PULUMI_HOME, the passphrase. */
    env: Record<string, string>;
    /** The arguments of every `pulumi` run with `env` so far, in order, each as one line (what `ps` showed). */
    calls(): string[];
    /** `pulumi <args> --non-interactive` in the project folder, `input` on its standard input. */
    pulumi(args: string[], extraEnv?: Record<string, string>, input?: string): { status: number | null; stdout: string; stderr: string };
}

/**
 * Call inside `describe`: the real Pulumi CLI (tools/build.sh) for its tests, with a PULUMI_HOME of the
 * suite's own. First on PATH is a `pulumi` script that appends its arguments to the project's
 * `pulumi-calls` and execs the real CLI: each Pulumi process's command line is recorded, not modelled.
 */
export function useRealPulumi(): (projectDir: string) => RealPulumi {
    useBuiltTools();
    const suite = { dir: "", env: {} as Record<string, string> };
    before(() => {
        suite.dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-cli-pulumi-"));
        const bin = path.join(suite.dir, "bin");
        fs.mkdirSync(bin);
        const real = path.join(builtTools().pulumiRoot, "bin", "pulumi");
        fs.writeFileSync(path.join(bin, "pulumi"), `#!/bin/sh\nprintf '%s\\n' "$*" >> "$K8S_VNF_TEST_PULUMI_CALLS"\nexec '${real}' "$@"\n`, { mode: 0o755 });
        const env = realPulumiEnv(path.join(suite.dir, "home"), PASSPHRASE);
        suite.env = { ...env, PATH: [bin, env.PATH].join(path.delimiter) };
    });
    after(() => fs.rmSync(suite.dir, { recursive: true, force: true }));
    return (projectDir) => {
        const callsFile = path.join(projectDir, "pulumi-calls");
        const env = { ...suite.env, K8S_VNF_TEST_PULUMI_CALLS: callsFile };
        return {
            env,
            calls: () => (fs.existsSync(callsFile) ? fs.readFileSync(callsFile, "utf8").trim().split("\n") : []),
            pulumi: (args, extraEnv = {}, input = "") => {
                const r = spawnSync("pulumi", [...args, "--non-interactive"], { cwd: projectDir, env: { ...env, ...extraEnv }, input, encoding: "utf8", timeout: 120_000, killSignal: "SIGKILL" });
                return { status: r.status, stdout: r.stdout, stderr: r.stderr };
            },
        };
    };
}

/** A `pulumi` command a test started and does not wait on at once. */
export interface StartedCli {
    child: ChildProcess;
    /** What it printed so far, standard output and error together. */
    printed: () => string;
    /** Its exit code once it has exited. */
    exited: Promise<number | null>;
}

export function startCli(args: string[], cwd: string, env: Record<string, string>): StartedCli {
    const child = spawn("pulumi", [...args, "--non-interactive"], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let printed = "";
    child.stdout!.on("data", (d) => (printed += d));
    child.stderr!.on("data", (d) => (printed += d));
    const exited = new Promise<number | null>((resolve, reject) => {
        child.once("error", reject);
        child.once("close", (code) => resolve(code));
    });
    return { child, printed: () => printed, exited };
}

/** Its exit code, or undefined while it still runs after `ms`. */
export function exitWithin(started: StartedCli, ms: number): Promise<number | null | undefined> {
    return Promise.race([started.exited, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref())]);
}

/**
 * Kills a started CLI that still runs and every process below it, each by PID and start time, read from /proc
 * before the first signal: the CLI starts each plugin in a process group of its own, so its group does not
 * hold them, and a process whose parent is gone is found no more. Waits until they are gone.
 */
export async function killCli(started: StartedCli): Promise<void> {
    // Not reaped yet: its PID is still its own.
    if (started.child.exitCode === null && started.child.signalCode === null) {
        const tree = processTree(started.child.pid!);
        for (const p of tree.filter(stillRunning)) {
            try {
                process.kill(p.pid, "SIGKILL");
            } catch {
                // ended in between
            }
        }
        while (tree.some(stillRunning)) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await started.exited.catch(() => undefined);
}

export const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export const SECRETS = REQUEST_SECRETS;

/**
 * Runs bin/k8s-vnf as a process: what reaches the terminal, and a time limit for a command that could block
 * (on a FIFO) without blocking the tests.
 */
export function binary(argv: string[]): Run & { signal: NodeJS.Signals | null } {
    const r = spawnSync(path.join(PROJECT_DIR, "bin/k8s-vnf"), argv, {
        cwd: PROJECT_DIR,
        env: { PATH: [path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter) },
        encoding: "utf8",
        timeout: 30_000,
        maxBuffer: 64 * 1024 * 1024,
    });
    return { code: r.status ?? -1, out: r.stdout, err: r.stderr, signal: r.signal };
}

