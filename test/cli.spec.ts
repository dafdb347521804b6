import { strict as assert } from "node:assert";
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { main } from "../cli/main";
import { configurationReference, tackerReference } from "../cli/reference";
import { parseRequestText } from "../config/requestText";
import { CONFIG_KEYS } from "../config/schema";
import { configHasPath } from "../config/schemaPaths";
import { TACKER_FIELDS } from "../config/tackerMap";
import { processTree, stillRunning } from "../service/pulumiProcess";
import { makePackageDir, REQUEST_SECRETS, REQUESTS_DIR, requestWithSecrets } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";
import { serviceProject } from "./support/serviceProject";
import { builtTools, realPulumiEnv, useBuiltTools } from "./support/tools";
import { silentEndpoint } from "./support/silentEndpoint";

const PASSPHRASE = "cli-test-passphrase";

interface Run {
    code: number;
    out: string;
    err: string;
}

async function cli(argv: string[], env: NodeJS.ProcessEnv = {}, cwd = PROJECT_DIR): Promise<Run> {
    let out = "";
    let err = "";
    const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t), env: { PATH: "/usr/bin:/bin", ...env }, cwd });
    return { code, out, err };
}

/**
 * A scratch project as a fresh clone has it (Pulumi.yaml, no state folder), the example package, and a
 * request with recognisable secrets.
 */
function scratchProject() {
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
interface RealPulumi {
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
function useRealPulumi(): (projectDir: string) => RealPulumi {
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
interface StartedCli {
    child: ChildProcess;
    /** What it printed so far, standard output and error together. */
    printed: () => string;
    /** Its exit code once it has exited. */
    exited: Promise<number | null>;
}

function startCli(args: string[], cwd: string, env: Record<string, string>): StartedCli {
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
function exitWithin(started: StartedCli, ms: number): Promise<number | null | undefined> {
    return Promise.race([started.exited, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms).unref())]);
}

/**
 * Kills a started CLI that still runs and every process below it, each by PID and start time, read from /proc
 * before the first signal: the CLI starts each plugin in a process group of its own, so its group does not
 * hold them, and a process whose parent is gone is found no more. Waits until they are gone.
 */
async function killCli(started: StartedCli): Promise<void> {
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

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

const SECRETS = REQUEST_SECRETS;

describe("k8s-vnf CLI", () => {
    it("import-request prints the stack config without secrets and lists where they go", async () => {
        const p = scratchProject();
        try {
            const run = await cli(["import-request", p.request, "--package-dir", path.join(p.dir, "package"), "--project", p.dir]);
            assert.equal(run.code, 0, run.err);
            assert.doesNotMatch(run.out + run.err, SECRETS);
            const doc = YAML.parse(run.out);
            assert.equal(doc.config["k8s-vnf:masters"].count, 1);
            assert.equal(doc.config["k8s-vnf:masters"].password, undefined);
            assert.equal(doc.config["k8s-vnf:packageDir"], "package");
            assert.equal(doc.config["k8s-vnf:kubernetes"].podCidr, "192.168.0.0/16", "written normalized");
            assert.match(run.out, /^# {3}masters\.password$/m);
            assert.match(run.out, /^# {3}storageServer\.password$/m);
            assert.match(run.err, /accepted and ignored:\n.*lcm-operation-user-data/);
        } finally {
            p.cleanup();
        }
    });

    it("without a Pulumi CLI, --stack refuses and writes nothing", async () => {
        const p = scratchProject();
        try {
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], { PATH: "/nonexistent" });
            assert.equal(run.code, 1);
            assert.match(run.err, /needs the Pulumi CLI to encrypt 5 secret\(s\).*nothing was written/);
            assert.equal(fs.existsSync(path.join(p.dir, "stacks/Pulumi.edge.yaml")), false);
        } finally {
            p.cleanup();
        }
    });

    it("missing package files are reported by request field when --package-dir is given", async () => {
        const p = scratchProject();
        try {
            fs.rmSync(path.join(p.dir, "package/Files/kubernetes/nfs-pv3.yaml"));
            const run = await cli(["import-request", p.request, "--package-dir", path.join(p.dir, "package"), "--project", p.dir]);
            assert.equal(run.code, 1);
            assert.match(run.err, /pv_registration_params\[2\]\.pv_manifest_file_path: Files\/kubernetes\/nfs-pv3\.yaml does not exist/);
            assert.equal(run.out, "");
        } finally {
            p.cleanup();
        }
    });

    it("a body that is not JSON is refused with its position", async () => {
        const p = scratchProject();
        try {
            fs.writeFileSync(p.request, '{\n  "flavourId": "simple",\n  oops\n}');
            const run = await cli(["import-request", p.request, "--project", p.dir]);
            assert.equal(run.code, 1);
            assert.match(run.err, /not valid JSON at line 3/);
        } finally {
            p.cleanup();
        }
    });

    it("validate checks a stack file offline; encrypted values count as set and as secret", async () => {
        const p = scratchProject();
        try {
            const stack = fs.readFileSync(path.join(PROJECT_DIR, "stacks/Pulumi.complex.yaml"), "utf8")
                .replace("  k8s-vnf:masters:\n", "  k8s-vnf:masters:\n    password:\n      secure: v1:AAAA\n")
                .replace("  k8s-vnf:workers:\n", "  k8s-vnf:workers:\n    password:\n      secure: v1:BBBB\n");
            fs.writeFileSync(path.join(p.dir, "stacks/Pulumi.complex.yaml"), stack);
            const ok = await cli(["validate", "--stack", "complex", "--project", p.dir]);
            assert.equal(ok.code, 0, ok.err);
            assert.match(ok.out, /stack complex: valid cluster \(complex, 3 master\(s\), 2 worker\(s\)\)/);

            fs.writeFileSync(path.join(p.dir, "stacks/Pulumi.complex.yaml"), stack.replace("      secure: v1:BBBB", "      plain-text-pw").replace("    password:\n      plain-text-pw", "    password: plain-text-pw"));
            const bad = await cli(["validate", "--stack", "complex", "--project", p.dir]);
            assert.equal(bad.code, 1);
            assert.match(bad.err, /workers\.password: must be a Pulumi secret/);
            assert.doesNotMatch(bad.err, /plain-text-pw/);
        } finally {
            p.cleanup();
        }
    });

    it("validate reports every problem at once, each once, a missing secret with how to set it: the example stacks as they come", async () => {
        const p = scratchProject();
        try {
            for (const name of ["registry", "simple"]) fs.copyFileSync(path.join(PROJECT_DIR, `stacks/Pulumi.${name}.yaml`), path.join(p.dir, `stacks/Pulumi.${name}.yaml`));
            fs.cpSync(path.join(PROJECT_DIR, "examples"), path.join(p.dir, "examples"), { recursive: true });
            const registry = await cli(["validate", "--stack", "registry", "--project", p.dir]);
            assert.equal(registry.code, 1);
            const problems = registry.err.split("\n").filter((l) => l.startsWith("  - "));
            assert.deepEqual(problems.map((l) => l.split(":")[0].slice(4)).sort(), ["registry.password", "registry.tls.privateKey", "registry.users[0].password"]);
            assert.match(registry.err, /registry\.users\[0\]\.password: missing: set it as a secret \(pulumi config set --secret --path 'registry\.users\[0\]\.password'\)/);
            assert.match(registry.err, /registry\.password: no way to log in: set a password as a secret \(pulumi config set --secret --path 'registry\.password'\) or `ssh\.privateKey`/);
            assert.doesNotMatch(registry.err, /Invalid input|expected string/);
            const simple = await cli(["validate", "--stack", "simple", "--project", p.dir]);
            assert.deepEqual(simple.err.split("\n").filter((l) => l.startsWith("  - ")).map((l) => l.split(":")[0].slice(4)), ["masters.password", "workers.password"], "one problem per missing password");
        } finally {
            p.cleanup();
        }
    });

    it("usage errors exit 2", async () => {
        assert.equal((await cli([])).code, 2);
        assert.equal((await cli(["frobnicate"])).code, 2);
        assert.equal((await cli(["import-request"])).code, 2);
        assert.equal((await cli(["import-request", "x.json", "--stack"])).code, 2);
        assert.equal((await cli(["import-request", "x.json", "--stack", "a b"])).code, 2);
        assert.equal((await cli(["--help"])).code, 0);
    });

    it("help: `help` and `--help` the whole usage, `help COMMAND` and `COMMAND --help` that command's only; --version names k8s-vnf's and the Pulumi packages' versions", async () => {
        const all = await cli(["help"]);
        assert.equal(all.code, 0);
        for (const command of ["import-request", "validate", "config-reference", "plan", "serve"]) assert.match(all.out, new RegExp(`^  k8s-vnf ${command}\\b`, "m"), command);
        assert.equal((await cli(["--help"])).out, all.out);
        const plan = await cli(["plan", "--help"]);
        assert.equal(plan.code, 0);
        assert.match(plan.out, /^usage:\n  k8s-vnf plan --stack NAME/);
        assert.doesNotMatch(plan.out, /k8s-vnf (serve|validate|import-request)/);
        assert.deepEqual(await cli(["help", "plan"]), plan);
        const unknown = await cli(["help", "frobnicate"]);
        assert.equal(unknown.code, 2);
        assert.match(unknown.err, /^unknown command frobnicate/);
        const pkg = JSON.parse(fs.readFileSync(path.join(PROJECT_DIR, "package.json"), "utf8"));
        const version = await cli(["--version"]);
        assert.deepEqual(version, { code: 0, out: `k8s-vnf ${pkg.version} (@pulumi/pulumi ${pkg.dependencies["@pulumi/pulumi"]}, @pulumi/openstack ${pkg.dependencies["@pulumi/openstack"]}, @pulumi/kubernetes ${pkg.dependencies["@pulumi/kubernetes"]})\n`, err: "" });
    });

    it("import-request of another SOL003 request (scale, heal, terminate, ...) says which it is and what it takes", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-cli-kind-"));
        try {
            const bodies: [string, object][] = [
                ["ScaleVnfRequest", { type: "SCALE_OUT", aspectId: "worker_instance", numberOfSteps: 1 }],
                ["HealVnfRequest", { vnfcInstanceId: ["a"], cause: "broken" }],
                ["TerminateVnfRequest", { terminationType: "GRACEFUL" }],
                ["ChangeExtVnfConnectivityRequest", { extVirtualLinks: [] }],
                ["CreateVnfRequest", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177" }],
                ["ChangeVnfFlavourRequest", { newFlavourId: "complex", instantiationLevelId: "instantiation_level_1" }],
            ];
            for (const [kind, body] of bodies) {
                fs.writeFileSync(path.join(dir, "body.json"), JSON.stringify(body));
                const run = await cli(["import-request", path.join(dir, "body.json")]);
                assert.equal(run.code, 1, kind);
                assert.match(run.err, new RegExp(`this is a ${kind}; import-request takes an InstantiateVnfRequest`), kind);
                assert.doesNotMatch(run.err, /flavourId: Invalid input/, kind);
            }
            // An instantiate body that only lacks its flavourId is told so, not taken for another request.
            const instantiate = parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8"), "simple") as Record<string, unknown>;
            delete instantiate.flavourId;
            fs.writeFileSync(path.join(dir, "body.json"), JSON.stringify({ ...instantiate, instantiationLevelId: "instantiation_level_1" }));
            const missing = await cli(["import-request", path.join(dir, "body.json")]);
            assert.equal(missing.code, 1);
            assert.match(missing.err, /flavourId: missing/);
            assert.doesNotMatch(missing.err, /this is a/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("every stack config key the docs name is one the program takes: the reference's targets and notes, and each key in code in README.md and docs/", () => {
        const configKeys = new Set<string>(CONFIG_KEYS as readonly string[]);
        const namesAKey = (path: string) => configKeys.has(path.split(/[.[]/)[0]) && !/\.(go|ts|js|sh|ya?ml|json|md|py|toml|conf|txt)$/.test(path);
        const unknown: string[] = [];
        for (const m of TACKER_FIELDS) {
            if (m.config && !configHasPath(m.config)) unknown.push(`${m.tacker} → ${m.config}`);
            for (const [token] of (m.note ?? "").matchAll(/\b[a-z][A-Za-z]*(?:\[\d*\])?(?:\.[a-z][A-Za-z]*(?:\[\d*\])?)+/g)) if (namesAKey(token) && !configHasPath(token)) unknown.push(`${m.tacker} (note): ${token}`);
        }
        for (const file of ["README.md", ...fs.readdirSync(path.join(PROJECT_DIR, "docs")).map((f) => `docs/${f}`)]) {
            const text = fs.readFileSync(path.join(PROJECT_DIR, file), "utf8");
            for (const [, token] of text.matchAll(/`([a-zA-Z][A-Za-z0-9]*(?:\[\d*\])?(?:\.[A-Za-z][A-Za-z0-9]*(?:\[\d*\])?)+)`/g)) if (namesAKey(token) && !configHasPath(token)) unknown.push(`${file}: ${token}`);
        }
        assert.deepEqual(unknown, []);
        assert.equal(configHasPath("externalLoadBalancer.externalNetworkId"), false, "the check can fail");
    });

    it("the configuration reference and the Tacker table in docs/ are current", () => {
        assert.equal(fs.readFileSync(path.join(PROJECT_DIR, "docs/configuration.md"), "utf8"), configurationReference(PROJECT_DIR), "run `npm run docs`");
        assert.ok(fs.readFileSync(path.join(PROJECT_DIR, "docs/tacker-requests.md"), "utf8").includes(tackerReference()), "docs/tacker-requests.md's Tacker table is stale: paste `k8s-vnf config-reference`'s table");
    });
});

describe("k8s-vnf import-request --stack with the real Pulumi CLI", function () {
    this.timeout(120_000);
    const realPulumi = useRealPulumi();

    it("import-request --stack writes the stack file and hands secrets to the Pulumi CLI on stdin only, encrypted in the stack file", async () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            const run = await cli(["import-request", p.request, "--stack", "edge", "--package-dir", path.join(p.dir, "package"), "--project", p.dir], real.env);
            assert.equal(run.code, 0, run.err);
            const written = fs.readFileSync(p.stackFile, "utf8");
            assert.doesNotMatch(written, SECRETS);
            const doc = YAML.parse(written);
            assert.match(doc.encryptionsalt, /^v1:/);
            assert.match(doc.config["k8s-vnf:masters"].password.secure, /^v1:/);
            assert.equal(doc.config["k8s-vnf:storageServer"].volumes[0].mountTo, "/volume");

            const calls = real.calls();
            assert.equal(calls[0], "stack select --create edge --non-interactive");
            const sets = calls.slice(1);
            assert.ok(sets.every((c) => /^config set --stack edge --secret --raw --path \S+ --non-interactive$/.test(c)), sets.join("\n"));
            assert.deepEqual(sets.map((c) => c.split(" ").at(-2)).sort(), ["masters.password", "proxy.httpProxy", "proxy.httpsProxy", "storageServer.password", "workers.password"]);
            assert.doesNotMatch(calls.join("\n"), SECRETS, "no secret on a command line");
            const get = (leaf: string) => real.pulumi(["config", "get", "--stack", "edge", "--path", leaf]).stdout.trim();
            assert.equal(get("masters.password"), "master-Secret-1", "the CLI decrypts what it was given on stdin");
            assert.match(get("proxy.httpProxy"), /proxySecret3@/);
        } finally {
            p.cleanup();
        }
    });

    it("secrets reach the stack exactly as given, as text: one that looks like a number, one with spaces and a line break at its end (--secret --raw, no --type)", async () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            const odd = { masters: "0123", workers: " worker Secret 2 \n" };
            fs.writeFileSync(p.request, requestWithSecrets().replace('"master-Secret-1"', JSON.stringify(odd.masters)).replace('"worker-Secret-2"', JSON.stringify(odd.workers)));
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], real.env);
            assert.equal(run.code, 0, run.err);
            // What the program gets: the config as the CLI hands it over, each secret decrypted.
            const shown = real.pulumi(["config", "--json", "--show-secrets", "--stack", "edge"]);
            assert.equal(shown.status, 0, shown.stderr);
            const config = JSON.parse(shown.stdout);
            assert.deepEqual({ masters: config["k8s-vnf:masters"].objectValue.password, workers: config["k8s-vnf:workers"].objectValue.password }, odd);
            assert.equal(config["k8s-vnf:masters"].secret, true);
        } finally {
            p.cleanup();
        }
    });

    it("a fresh clone opens its state: Pulumi.yaml's backend folder is created on first use, in the directory the CLI runs in", () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            assert.equal(fs.existsSync(path.join(p.dir, ".pulumi-state")), false);
            const created = real.pulumi(["stack", "init", "edge"]);
            assert.equal(created.status, 0, created.stderr);
            assert.ok(fs.existsSync(path.join(p.dir, ".pulumi-state/.pulumi/stacks/k8s-vnf/edge.json")));

            // What the CLI does with a relative file:// URL without create_dir (diy backend.go massageBlobPath, fileblob).
            const bare = fs.readFileSync(path.join(p.dir, "Pulumi.yaml"), "utf8").replace("file://./.pulumi-state?create_dir=true", "file://./.state-elsewhere");
            fs.writeFileSync(path.join(p.dir, "Pulumi.yaml"), bare);
            const refused = real.pulumi(["stack", "init", "other"]);
            assert.equal(refused.status, 1);
            assert.match(refused.stderr, new RegExp(`error: unable to open bucket file://${escapeRegExp(p.dir)}/\\.state-elsewhere\\?no_tmp_dir=true: stat ${escapeRegExp(p.dir)}/\\.state-elsewhere: no such file or directory`));
        } finally {
            p.cleanup();
        }
    });

    it("the Pulumi CLI's stack lock: a second update is refused while one runs, a killed one leaves its lock, pulumi cancel clears it", async function () {
        this.timeout(300_000);
        // The program runs (its project folder links this one's), against an OpenStack endpoint that never answers.
        const project = serviceProject();
        const endpoint = await silentEndpoint();
        const started: StartedCli[] = [];
        try {
            const packageDir = path.join(project.dir, "package");
            fs.cpSync(path.join(PROJECT_DIR, "examples/package"), packageDir, { recursive: true });
            fs.writeFileSync(path.join(project.dir, "request.json"), requestWithSecrets());
            const real = realPulumi(project.dir);
            const env = { ...real.env, ...endpoint.env };
            const imported = await cli(["import-request", path.join(project.dir, "request.json"), "--stack", "edge", "--package-dir", packageDir, "--project", project.dir], env);
            assert.equal(imported.code, 0, imported.err);
            const up = () => {
                const one = startCli(["up", "--yes", "--skip-preview", "--stack", "edge"], project.dir, env);
                started.push(one);
                return one;
            };
            /** Until the endpoint has had more than `seen` connections: the update's provider sent its first request. */
            const reached = async (update: StartedCli, seen: number) => {
                for (const deadline = Date.now() + 180_000; endpoint.connections() <= seen; await new Promise((resolve) => setTimeout(resolve, 100))) {
                    assert.ok(update.child.exitCode === null && update.child.signalCode === null, `the update ended before its provider reached OpenStack:\n${update.printed()}`);
                    assert.ok(Date.now() < deadline, `the update's provider reached no OpenStack in 3 minutes:\n${update.printed()}`);
                }
            };
            const lockDir = path.join(project.dir, ".pulumi-state/.pulumi/locks/organization/k8s-vnf/edge");
            // The blob store (gocloud.dev fileblob) writes each lock's attributes beside it, `<lock>.attrs`.
            const locks = () => (fs.existsSync(lockDir) ? fs.readdirSync(lockDir).filter((f) => f.endsWith(".json")) : []);

            const first = up();
            await reached(first, 0);
            const held = locks();
            assert.equal(held.length, 1, "the update holds the stack's lock");
            const locked = new RegExp(
                `^error: the stack is currently locked by 1 lock\\(s\\)\\. Either wait for the other process\\(es\\) to end or delete the lock file with \`pulumi cancel\`\\.\\n {2}file://${escapeRegExp(path.join(lockDir, held[0]))}\\?create_dir=true&no_tmp_dir=true: created by \\S+@\\S+ \\(pid ${first.child.pid}\\) at `,
                "m",
            );
            const refused = async (when: string) => {
                const second = up();
                const code = await exitWithin(second, 60_000);
                assert.notEqual(code, undefined, `${when}: a second update was not refused (still running after a minute):\n${second.printed()}`);
                assert.equal(code, 1, second.printed());
                assert.match(second.printed(), locked, when);
            };
            await refused("while the first runs");
            await killCli(first);
            assert.deepEqual(locks(), held, "a killed update leaves its lock");
            await refused("after the first was killed");
            const cancel = real.pulumi(["cancel", "--yes", "--stack", "edge"]);
            assert.equal(cancel.status, 0, cancel.stderr);
            assert.match(cancel.stdout, /^The currently running update for 'edge' has been canceled!$/m);
            assert.deepEqual(locks(), [], "pulumi cancel removed the lock");
            // Past the lock: the next update runs the program, and its provider reaches the endpoint again.
            const seen = endpoint.connections();
            const next = up();
            await reached(next, seen);
            assert.equal(locks().length, 1, "under a lock of its own");
            assert.notDeepEqual(locks(), held);
        } finally {
            for (const one of started) await killCli(one);
            await endpoint.close();
            project.remove();
        }
    });

    it("a failing Pulumi CLI leaves the stack file as it was", async () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            // The stack's secrets were set up with another passphrase: the CLI refuses to encrypt with this one.
            assert.equal(real.pulumi(["stack", "init", "edge"], { PULUMI_CONFIG_PASSPHRASE: "another-passphrase" }).status, 0);
            fs.appendFileSync(p.stackFile, "config:\n  openstack:cloud: mycloud\n  k8s-vnf:image: golden-image\n");
            const before = fs.readFileSync(p.stackFile, "utf8");
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], real.env);
            assert.equal(run.code, 1);
            assert.match(run.err, /pulumi config set exited 1: error: incorrect passphrase/);
            assert.doesNotMatch(run.err, SECRETS);
            assert.equal(fs.readFileSync(p.stackFile, "utf8"), before);
        } finally {
            p.cleanup();
        }
    });

    it("an existing stack file is the base: its image, other namespaces and encryption salt survive; its secrets are set again", async () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            assert.equal(real.pulumi(["stack", "init", "edge"]).status, 0);
            assert.equal(real.pulumi(["config", "set", "--stack", "edge", "--secret", "--path", "masters.password"], {}, "old-Secret-0").status, 0);
            const salt = YAML.parse(fs.readFileSync(p.stackFile, "utf8")).encryptionsalt;
            fs.appendFileSync(p.stackFile, "  openstack:cloud: mycloud\n  k8s-vnf:image: golden-image\n");
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], real.env);
            assert.equal(run.code, 0, run.err);
            const doc = YAML.parse(fs.readFileSync(p.stackFile, "utf8"));
            assert.equal(doc.encryptionsalt, salt);
            assert.equal(doc.config["openstack:cloud"], "mycloud");
            assert.equal(doc.config["k8s-vnf:image"], "golden-image");
            assert.equal(real.pulumi(["config", "get", "--stack", "edge", "--path", "masters.password"]).stdout.trim(), "master-Secret-1");
        } finally {
            p.cleanup();
        }
    });
});

/**
 * Runs bin/k8s-vnf as a process: what reaches the terminal, and a time limit for a command that could block
 * (on a FIFO) without blocking the tests.
 */
function binary(argv: string[]): Run & { signal: NodeJS.Signals | null } {
    const r = spawnSync(path.join(PROJECT_DIR, "bin/k8s-vnf"), argv, {
        cwd: PROJECT_DIR,
        env: { PATH: [path.dirname(process.execPath), "/usr/bin", "/bin"].join(path.delimiter) },
        encoding: "utf8",
        timeout: 30_000,
        maxBuffer: 64 * 1024 * 1024,
    });
    return { code: r.status ?? -1, out: r.stdout, err: r.stderr, signal: r.signal };
}

const MIB = 1024 * 1024;

describe("k8s-vnf import-request with hostile files and text", () => {
    const PV3 = "Files/kubernetes/nfs-pv3.yaml";
    const PV3_FIELD = /pv_registration_params\[2\]\.pv_manifest_file_path: Files\/kubernetes\/nfs-pv3\.yaml/;

    it("a package file that is a directory is refused by its request field", async () => {
        const p = scratchProject();
        try {
            const manifest = path.join(p.dir, "package", PV3);
            fs.rmSync(manifest);
            fs.mkdirSync(manifest);
            const dir = await cli(["import-request", p.request, "--package-dir", path.join(p.dir, "package"), "--project", p.dir]);
            assert.equal(dir.code, 1);
            assert.match(dir.err, new RegExp(`${PV3_FIELD.source} is a directory, not a file`));
        } finally {
            p.cleanup();
        }
    });

    it("a package file that is a FIFO is refused by its request field, never opened (opening waits for a writer)", () => {
        const p = scratchProject();
        try {
            const manifest = path.join(p.dir, "package", PV3);
            fs.rmSync(manifest);
            assert.equal(spawnSync("mkfifo", [manifest]).status, 0);
            const fifo = binary(["import-request", p.request, "--package-dir", path.join(p.dir, "package"), "--project", p.dir]);
            assert.equal(fifo.signal, null, "killed after 30 s: it waited for a writer");
            assert.equal(fifo.code, 1, fifo.err);
            assert.match(fifo.err, new RegExp(`${PV3_FIELD.source} is a FIFO \\(named pipe\\), not a file`));
            assert.equal(fifo.out, "");
        } finally {
            p.cleanup();
        }
    });

    it("a package manifest over 1 MiB is refused from its size, unread (a sparse 600 MB file); one of 1 MiB is read", async () => {
        const p = scratchProject();
        try {
            const manifest = path.join(p.dir, "package", PV3);
            const args = ["import-request", p.request, "--package-dir", path.join(p.dir, "package"), "--project", p.dir];
            fs.truncateSync(manifest, 600 * MIB);
            const huge = await cli(args);
            assert.equal(huge.code, 1);
            assert.match(huge.err, new RegExp(`${PV3_FIELD.source} is 600 MiB, more than the 1 MiB such a file may have`));

            // A YAML comment fills the valid manifest up to the limit exactly.
            const text = fs.readFileSync(path.join(PROJECT_DIR, "examples/package", PV3), "utf8");
            fs.writeFileSync(manifest, `${text}#${"x".repeat(MIB - Buffer.byteLength(text) - 2)}\n`);
            assert.equal(fs.statSync(manifest).size, MIB);
            const full = await cli(args);
            assert.equal(full.code, 0, full.err);
            fs.appendFileSync(manifest, "\n");
            assert.match((await cli(args)).err, /is 1 MiB, more than the 1 MiB/);
        } finally {
            p.cleanup();
        }
    });

    it("a registry image archive is checked by its tar header alone, whatever its size (a sparse 600 MB docker save)", async () => {
        const pkg = makePackageDir();
        try {
            const archive = path.join(pkg.dir, "Files/images/private_registry.tar");
            fs.truncateSync(archive, 600 * MIB);
            const run = await cli(["import-request", path.join(REQUESTS_DIR, "registry-vnf-instantiate.json"), "--package-dir", pkg.dir]);
            assert.equal(run.code, 0, run.err);
            assert.equal(YAML.parse(run.out).config["k8s-vnf:registry"].imageFile, "Files/images/private_registry.tar");

            fs.writeFileSync(archive, Buffer.alloc(1024));
            const notTar = await cli(["import-request", path.join(REQUESTS_DIR, "registry-vnf-instantiate.json"), "--package-dir", pkg.dir]);
            assert.match(notTar.err, /private_registry_installation_param\.image_path: Files\/images\/private_registry\.tar: not a tar archive/);
        } finally {
            pkg.cleanup();
        }
    });

    it("a CA certificate file of 1 MiB of BEGIN lines is refused at once", async () => {
        const pkg = makePackageDir();
        try {
            const begin = "-----BEGIN CERTIFICATE-----\n";
            fs.writeFileSync(path.join(pkg.dir, "Files/registries/ca.crt"), begin.repeat(Math.floor(MIB / begin.length)));
            const started = Date.now();
            const run = await cli(["import-request", path.join(REQUESTS_DIR, "registry-connection-instantiate.json"), "--package-dir", pkg.dir]);
            assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
            assert.equal(run.code, 1);
            assert.match(run.err, /private_registry_connection_info\[1\]\.certificate_path: Files\/registries\/ca\.crt: not a PEM certificate/);
        } finally {
            pkg.cleanup();
        }
    });

    it("a request file over 4 MiB is refused unread; a directory is refused", async () => {
        const p = scratchProject();
        try {
            fs.truncateSync(p.request, 600 * MIB);
            const huge = await cli(["import-request", p.request, "--project", p.dir]);
            assert.equal(huge.code, 1);
            assert.match(huge.err, /request\.json is larger than 4 MiB: not a request body/);
            const dir = await cli(["import-request", p.dir, "--project", p.dir]);
            assert.equal(dir.code, 1);
            assert.match(dir.err, /cannot read .*: EISDIR/);
        } finally {
            p.cleanup();
        }
    });

    describe("stack files the real Pulumi CLI rewrites", function () {
        this.timeout(120_000);
        const realPulumi = useRealPulumi();

        it("a request file name with line breaks stays one comment line: the stack file gets no other keys", async () => {
            const p = scratchProject();
            try {
                const hostile = path.join(p.dir, "x.json\nconfig:\n  evil: 1\r\u2028evil2: 2\u0085evil3: 3\n");
                fs.renameSync(p.request, hostile);
                const header = "# Converted from x.json\\nconfig:\\n  evil: 1\\r\\u2028evil2: 2\\x85evil3: 3\\n by k8s-vnf import-request.";
                const rawControl = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/;

                const printed = await cli(["import-request", hostile, "--project", p.dir]);
                assert.equal(printed.code, 0, printed.err);
                assert.equal(printed.out.split("\n")[0], header);
                assert.doesNotMatch(printed.out, rawControl);
                assert.deepEqual(Object.keys(YAML.parse(printed.out)), ["config"]);

                const written = await cli(["import-request", hostile, "--stack", "edge", "--project", p.dir], realPulumi(p.dir).env);
                assert.equal(written.code, 0, written.err);
                const text = fs.readFileSync(p.stackFile, "utf8");
                assert.equal(text.split("\n")[0], header);
                assert.doesNotMatch(text, rawControl);
                const doc = YAML.parse(text);
                assert.deepEqual(Object.keys(doc).sort(), ["config", "encryptionsalt"]);
                assert.ok(Object.keys(doc.config).every((k) => k.startsWith("k8s-vnf:")), Object.keys(doc.config).join(", "));
            } finally {
                p.cleanup();
            }
        });

        it("control characters in values are written escaped (Pulumi's YAML reader refuses them raw) and read back as they were", async () => {
            const p = scratchProject();
            try {
                const vimName = "vim\u007f\u009b2J\u2028\u202eend\u001b[0m";
                const body = parseRequestText(fs.readFileSync(p.request, "utf8")) as any;
                body.additionalParams.k8s_cluster_installation_param.vim_name = vimName;
                fs.writeFileSync(p.request, JSON.stringify(body));
                const run = await cli(["import-request", p.request, "--project", p.dir]);
                assert.equal(run.code, 0, run.err);
                assert.match(run.out, /^ {4}vimName: "vim\\x7f\\x9b2J\\u2028\\u202eend\\e\[0m"$/m);
                assert.doesNotMatch(run.out, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202e]/);
                assert.equal(YAML.parse(run.out).config["k8s-vnf:tacker"].vimName, vimName);

                // With --stack the Pulumi CLI rewrites the file as it sets the secrets: it reads the value back as it was.
                const real = realPulumi(p.dir);
                const written = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], real.env);
                assert.equal(written.code, 0, written.err);
                // The CLI's YAML writer escapes what its reader refuses raw (it leaves U+202E, which YAML prints).
                assert.doesNotMatch(fs.readFileSync(p.stackFile, "utf8"), /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/);
                const read = real.pulumi(["config", "get", "--stack", "edge", "--path", "tacker.vimName"]);
                assert.equal(read.status, 0, read.stderr);
                assert.equal(read.stdout, `${vimName}\n`);
            } finally {
                p.cleanup();
            }
        });
    });

    describe("what reaches the terminal: no escape sequence, no control character, no line of a megabyte", () => {
        const CLEAR = "\u001b[2J";
        const long = (c: string) => CLEAR + c.repeat(MIB);
        const LINE_LIMIT = 1000;

        function assertTerminalSafe(run: Run): void {
            const all = run.out + run.err;
            assert.ok(!all.includes("\u001b"), "an ESC byte was printed");
            assert.doesNotMatch(all, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202e]/, "a control character was printed raw");
            const longest = Math.max(...all.split("\n").map((l) => l.length));
            assert.ok(longest <= LINE_LIMIT, `a line of ${longest} characters was printed`);
            assert.match(all, /\\x1b\[2J/, "escapes are shown");
            assert.doesNotMatch(all, SECRETS);
            assert.doesNotMatch(all, /^\s+at /m, "no stack trace");
        }

        function hostileRequest(p: ReturnType<typeof scratchProject>, name: string, change: (body: any) => void): string {
            const body = parseRequestText(fs.readFileSync(p.request, "utf8")) as any;
            change(body);
            const file = path.join(p.dir, name);
            fs.writeFileSync(file, JSON.stringify(body));
            return file;
        }

        it("unknown field names (refused by shape)", () => {
            const p = scratchProject();
            try {
                const file = hostileRequest(p, `req${CLEAR}.json`, (b) => {
                    b[long("k")] = 1;
                    b.additionalParams.k8s_cluster_installation_param[`${CLEAR}\u009b31m`] = 1;
                });
                const run = binary(["import-request", file, "--project", p.dir]);
                assert.equal(run.code, 1, run.err.slice(0, 2000));
                assertTerminalSafe(run);
                assert.match(run.err, /^ {2}- \\x1b\[2Jk{190,}… \[1048580 characters\]: unknown field$/m);
                assert.match(run.err, /k8s_cluster_installation_param\.\\x1b\[2J\\x9b31m: unknown field/);
            } finally {
                p.cleanup();
            }
        });

        it("values echoed in problems (refused by meaning), with the request file's name", () => {
            const p = scratchProject();
            try {
                const file = hostileRequest(p, `req${CLEAR}\n.json`, (b) => {
                    b.flavourId = long("f");
                    b.vimConnectionInfo[0].vimType = "\u001b]0;owned\u0007";
                });
                const run = binary(["import-request", file, "--project", p.dir]);
                assert.equal(run.code, 1, run.err.slice(0, 2000));
                assertTerminalSafe(run);
                assert.match(run.err, /^ {2}- flavourId: \\x1b\[2Jf{300,}… \[\d{7} characters\]$/m);
                assert.match(run.err, /vimConnectionInfo\[0\]\.vimType: \\x1b\]0;owned\\x07 is not an OpenStack VIM/);
            } finally {
                p.cleanup();
            }
        });

        it("a converted request: its reports, the printed config and its header", () => {
            const p = scratchProject();
            try {
                const file = hostileRequest(p, `req${CLEAR}.json`, (b) => {
                    b.additionalParams[long("p")] = "x";
                    b.additionalParams.k8s_cluster_installation_param.vim_name = `vim${CLEAR}\u009b2J`;
                });
                const run = binary(["import-request", file, "--project", p.dir]);
                assert.equal(run.code, 0, run.err.slice(0, 2000));
                assertTerminalSafe(run);
                assert.match(run.out, /^# Converted from req\\x1b\[2J\.json by k8s-vnf import-request\.$/m);
                assert.match(run.err, /^ {2}- additionalParams\.\\x1b\[2Jp{150,}… \[1048597 characters\]: not a parameter of this project$/m);
                assert.equal(YAML.parse(run.out).config["k8s-vnf:tacker"].vimName, `vim${CLEAR}\u009b2J`, "the printed config keeps the value, escaped");
            } finally {
                p.cleanup();
            }
        });
    });
});
