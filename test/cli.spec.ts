import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { main } from "../cli/main";
import { configurationReference, tackerReference } from "../cli/reference";
import { REQUESTS_DIR } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";
import { pathWithStandIn, runStandIn, STAND_IN_PULUMI_ROOT } from "./support/stand-ins/pulumi-cli/client";

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
 * request with recognisable secrets. `env`: the stand-in Pulumi CLI on PATH, recording its command lines.
 */
function scratchProject() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-cli-"));
    fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
    fs.mkdirSync(path.join(dir, "stacks"));
    fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(dir, "package"), { recursive: true });
    const text = fs
        .readFileSync(path.join(REQUESTS_DIR, "storage-instantiate.json"), "utf8")
        .replace(/"password": "ubuntu"/, '"password": "master-Secret-1"')
        .replace(/"password": "ubuntu"/, '"password": "worker-Secret-2"')
        .replace("password1@", "proxySecret3@");
    fs.writeFileSync(path.join(dir, "request.json"), text);
    const standIn = path.join(dir, "stand-in");
    fs.mkdirSync(standIn);
    const env = { PATH: pathWithStandIn(), PULUMI_CONFIG_PASSPHRASE: PASSPHRASE, PULUMI_STANDIN_STATE: standIn };
    return {
        dir,
        env,
        request: path.join(dir, "request.json"),
        stackFile: path.join(dir, "stacks/Pulumi.edge.yaml"),
        /** Every Pulumi command line the stand-in ran, without its PID. */
        calls: () => (fs.existsSync(path.join(standIn, "calls")) ? fs.readFileSync(path.join(standIn, "calls"), "utf8").trim().split("\n").map((l) => l.slice(l.indexOf(" ") + 1)) : []),
        pulumi: (args: string[], extraEnv: Record<string, string> = {}, input?: string) => runStandIn(args, { cwd: dir, env: { ...env, ...extraEnv }, input }),
        cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
    };
}

const SECRETS = /master-Secret-1|worker-Secret-2|proxySecret3/;

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

    it("import-request --stack writes the stack file and hands secrets to the Pulumi CLI on stdin only, encrypted in the stack file", async () => {
        const p = scratchProject();
        try {
            const run = await cli(["import-request", p.request, "--stack", "edge", "--package-dir", path.join(p.dir, "package"), "--project", p.dir], p.env);
            assert.equal(run.code, 0, run.err);
            const written = fs.readFileSync(p.stackFile, "utf8");
            assert.doesNotMatch(written, SECRETS);
            const doc = YAML.parse(written);
            assert.match(doc.encryptionsalt, /^v1:/);
            assert.match(doc.config["k8s-vnf:masters"].password.secure, /^v1:/);
            assert.equal(doc.config["k8s-vnf:storageServer"].volumes[0].mountTo, "/volume");

            const calls = p.calls();
            assert.equal(calls[0], "stack select --create edge --non-interactive");
            const sets = calls.slice(1);
            assert.ok(sets.every((c) => /^config set --stack edge --secret --raw --path \S+ --non-interactive$/.test(c)), sets.join("\n"));
            assert.deepEqual(sets.map((c) => c.split(" ").at(-2)).sort(), ["masters.password", "proxy.httpProxy", "proxy.httpsProxy", "storageServer.password", "workers.password"]);
            assert.doesNotMatch(calls.join("\n"), SECRETS, "no secret on a command line");
            const get = (leaf: string) => p.pulumi(["config", "get", "--stack", "edge", "--path", leaf]).stdout.trim();
            assert.equal(get("masters.password"), "master-Secret-1", "the CLI decrypts what it was given on stdin");
            assert.match(get("proxy.httpProxy"), /proxySecret3@/);
        } finally {
            p.cleanup();
        }
    });

    it("the Pulumi CLI refuses --secret with --type (cobra mutually exclusive flags), as import-request once passed them", () => {
        const p = scratchProject();
        try {
            assert.equal(p.pulumi(["stack", "init", "edge"]).status, 0);
            const r = p.pulumi(["config", "set", "--stack", "edge", "--secret", "--path", "--type", "string", "masters.password"], {}, "x");
            assert.equal(r.status, 1);
            assert.match(r.stderr, /^error: if any flags in the group \[secret plaintext type\] are set none of the others can be; \[secret type\] were all set$/m);
        } finally {
            p.cleanup();
        }
    });

    it("a fresh clone opens its state: Pulumi.yaml's backend folder is created on first use, in the directory the CLI runs in", () => {
        const p = scratchProject();
        try {
            assert.equal(fs.existsSync(path.join(p.dir, ".pulumi-state")), false);
            const created = p.pulumi(["stack", "init", "edge"]);
            assert.equal(created.status, 0, created.stderr);
            assert.ok(fs.existsSync(path.join(p.dir, ".pulumi-state/.pulumi/stacks/k8s-vnf/edge.json")));

            // What the CLI does with a relative file:// URL without create_dir (diy backend.go massageBlobPath, fileblob).
            const bare = fs.readFileSync(path.join(p.dir, "Pulumi.yaml"), "utf8").replace("file://./.pulumi-state?create_dir=true", "file://./.state-elsewhere");
            fs.writeFileSync(path.join(p.dir, "Pulumi.yaml"), bare);
            const refused = p.pulumi(["stack", "init", "other"]);
            assert.equal(refused.status, 1);
            assert.match(refused.stderr, new RegExp(`error: unable to open bucket file://${p.dir}/\\.state-elsewhere\\?no_tmp_dir=true: stat ${p.dir}/\\.state-elsewhere: no such file or directory`));
        } finally {
            p.cleanup();
        }
    });

    it("the Pulumi CLI's stack lock: a second update is refused while one runs, a killed one leaves its lock, pulumi cancel clears it", async () => {
        const p = scratchProject();
        try {
            assert.equal(p.pulumi(["stack", "init", "edge"]).status, 0);
            fs.writeFileSync(path.join(p.env.PULUMI_STANDIN_STATE, "delays.json"), JSON.stringify({ up: 60_000 }));
            const first = spawn(path.join(STAND_IN_PULUMI_ROOT, "bin/pulumi"), ["up", "--yes", "--stack", "edge", "--non-interactive"], { cwd: p.dir, env: p.env, detached: true, stdio: "ignore" });
            try {
                const locks = path.join(p.dir, ".pulumi-state/.pulumi/locks/organization/k8s-vnf/edge");
                for (let i = 0; i < 200 && !(fs.existsSync(locks) && fs.readdirSync(locks).length); i++) await new Promise((r) => setTimeout(r, 50));
                const locked = /^error: the stack is currently locked by 1 lock\(s\)\. Either wait for the other process\(es\) to end or delete the lock file with `pulumi cancel`\.\n {2}file:\/\/.*\.json\?create_dir=true&no_tmp_dir=true: created by \S+@\S+ \(pid \d+\) at /;
                assert.match(p.pulumi(["up", "--yes", "--stack", "edge"]).stderr, locked);
                process.kill(-first.pid!, "SIGKILL");
                await new Promise((r) => first.once("exit", r));
                assert.match(p.pulumi(["up", "--yes", "--stack", "edge"]).stderr, locked, "a killed update leaves its lock");
                assert.equal(p.pulumi(["cancel", "--yes", "--stack", "edge"]).status, 0);
                fs.rmSync(path.join(p.env.PULUMI_STANDIN_STATE, "delays.json"));
                assert.match(p.pulumi(["up", "--yes", "--stack", "edge"]).stderr, /set K8S_VNF_LAB/, "past the lock (this test runs no program)");
            } finally {
                if (first.exitCode === null && first.signalCode === null) process.kill(-first.pid!, "SIGKILL");
            }
        } finally {
            p.cleanup();
        }
    });

    it("a failing Pulumi CLI leaves the stack file as it was", async () => {
        const p = scratchProject();
        try {
            // The stack's secrets were set up with another passphrase: the CLI refuses to encrypt with this one.
            assert.equal(p.pulumi(["stack", "init", "edge"], { PULUMI_CONFIG_PASSPHRASE: "another-passphrase" }).status, 0);
            fs.appendFileSync(p.stackFile, "config:\n  openstack:cloud: mycloud\n  k8s-vnf:image: golden-image\n");
            const before = fs.readFileSync(p.stackFile, "utf8");
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], p.env);
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
            assert.equal(p.pulumi(["stack", "init", "edge"]).status, 0);
            assert.equal(p.pulumi(["config", "set", "--stack", "edge", "--secret", "--path", "masters.password"], {}, "old-Secret-0").status, 0);
            const salt = YAML.parse(fs.readFileSync(p.stackFile, "utf8")).encryptionsalt;
            fs.appendFileSync(p.stackFile, "  openstack:cloud: mycloud\n  k8s-vnf:image: golden-image\n");
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], p.env);
            assert.equal(run.code, 0, run.err);
            const doc = YAML.parse(fs.readFileSync(p.stackFile, "utf8"));
            assert.equal(doc.encryptionsalt, salt);
            assert.equal(doc.config["openstack:cloud"], "mycloud");
            assert.equal(doc.config["k8s-vnf:image"], "golden-image");
            assert.equal(p.pulumi(["config", "get", "--stack", "edge", "--path", "masters.password"]).stdout.trim(), "master-Secret-1");
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

    it("usage errors exit 2", async () => {
        assert.equal((await cli([])).code, 2);
        assert.equal((await cli(["frobnicate"])).code, 2);
        assert.equal((await cli(["import-request"])).code, 2);
        assert.equal((await cli(["import-request", "x.json", "--stack"])).code, 2);
        assert.equal((await cli(["import-request", "x.json", "--stack", "a b"])).code, 2);
        assert.equal((await cli(["--help"])).code, 0);
    });

    it("the configuration reference in docs/ and README is current", () => {
        assert.equal(fs.readFileSync(path.join(PROJECT_DIR, "docs/configuration.md"), "utf8"), configurationReference(PROJECT_DIR), "run `npm run docs`");
        assert.ok(fs.readFileSync(path.join(PROJECT_DIR, "README.md"), "utf8").includes(tackerReference()), "README's Tacker table is stale: paste `k8s-vnf config-reference`'s table");
    });
});
