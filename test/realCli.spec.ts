/**
 * The project's own commands against the real Pulumi CLI (tools/build.sh): `k8s-vnf import-request --stack`
 * makes the stack and hands every secret to `pulumi config set --secret` on standard input; the real CLI
 * encrypts them in the stack file with the passphrase and decrypts them again; `k8s-vnf validate --stack`
 * reads that file offline. (`k8s-vnf plan` against the real CLI: test/realPulumi.lab.spec.ts.)
 */
import { strict as assert } from "node:assert";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { main } from "../cli/main";
import { PULUMI_VERSION_RANGE } from "../config/pulumiVersion";
import { REQUEST_SECRETS, requestWithSecrets } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";
import { realPulumiEnv, useBuiltTools } from "./support/tools";

const SECRETS = REQUEST_SECRETS;

describe("k8s-vnf import-request and validate against the real Pulumi CLI", function () {
    useBuiltTools();
    this.timeout(120_000);
    let dir: string;
    let env: Record<string, string>;

    before(() => {
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-real-cli-"));
        fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
        fs.mkdirSync(path.join(dir, "stacks"));
        fs.mkdirSync(path.join(dir, "home"));
        fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(dir, "package"), { recursive: true });
        const text = requestWithSecrets();
        fs.writeFileSync(path.join(dir, "request.json"), text);
        env = realPulumiEnv(path.join(dir, "home"), "real-cli-passphrase");
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    const cli = async (argv: string[]) => {
        let out = "";
        let err = "";
        const code = await main(argv, { out: (t) => (out += t), err: (t) => (err += t), env, cwd: dir });
        return { code, out, err };
    };
    const pulumi = (...args: string[]) => execFileSync("pulumi", [...args, "--non-interactive"], { cwd: dir, env, encoding: "utf8" }).trim();

    it("import-request --stack: the real CLI holds each secret encrypted in the stack file and gives it back", async () => {
        const run = await cli(["import-request", path.join(dir, "request.json"), "--stack", "edge", "--package-dir", path.join(dir, "package"), "--project", dir]);
        assert.equal(run.code, 0, run.err);
        assert.doesNotMatch(run.out + run.err, SECRETS);
        const written = fs.readFileSync(path.join(dir, "stacks/Pulumi.edge.yaml"), "utf8");
        assert.doesNotMatch(written, SECRETS);
        const doc = YAML.parse(written);
        assert.match(doc.encryptionsalt, /^v1:/);
        assert.match(doc.config["k8s-vnf:masters"].password.secure, /^v1:/);
        assert.equal(pulumi("config", "get", "--stack", "edge", "--path", "masters.password"), "master-Secret-1");
        assert.match(pulumi("config", "get", "--stack", "edge", "--path", "proxy.httpProxy"), /proxySecret3@/);
        assert.equal(pulumi("config", "get", "--stack", "edge", "--path", "storageServer.volumes[0].mountTo"), "/volume");
        assert.deepEqual(JSON.parse(pulumi("stack", "ls", "--json")).map((s: { name: string }) => s.name), ["edge"]);
    });

    it("validate --stack reads the file the real CLI wrote: encrypted values count as set and as secret", async () => {
        const ok = await cli(["validate", "--stack", "edge", "--project", dir]);
        assert.equal(ok.code, 0, ok.err);
        assert.match(ok.out, /stack edge: valid/);
        // The real CLI refuses a value that looks like a secret unless told it is plain text.
        pulumi("config", "set", "--stack", "edge", "--plaintext", "--path", "workers.password", "plain-text-pw");
        const bad = await cli(["validate", "--stack", "edge", "--project", dir]);
        assert.equal(bad.code, 1, `${bad.out}${bad.err}\n${fs.readFileSync(path.join(dir, "stacks/Pulumi.edge.yaml"), "utf8")}`);
        assert.match(bad.err, /workers\.password: must be a Pulumi secret/);
        assert.doesNotMatch(bad.err, /plain-text-pw/);
    });

    it("the README's deploy steps, as written: the stack made, the sample values replaced, the secrets set (stdin), validate passes (all but `npm ci` and `pulumi up`)", async () => {
        const readme = fs.readFileSync(path.join(PROJECT_DIR, "README.md"), "utf8");
        const block = /\*\*Deploy an environment\*\*[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1];
        assert.ok(block, "the README's deploy block");
        const project = fs.mkdtempSync(path.join(dir, "readme-"));
        fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(project, "Pulumi.yaml"));
        fs.mkdirSync(path.join(project, "stacks"));
        fs.copyFileSync(path.join(PROJECT_DIR, "stacks/Pulumi.simple.yaml"), path.join(project, "stacks/Pulumi.simple.yaml"));
        const values: Record<string, string> = { "<a passphrase you keep>": "readme-passphrase", "<your network id>": "0d5ac0cf-3a21-4e34-9e0c-5f1a2b3c4d5e", "<your image name>": "debian-12", "<your flavor name>": "m1.small" };
        const stepEnv: Record<string, string> = { ...env };
        delete stepEnv.PULUMI_CONFIG_PASSPHRASE;
        const ran: string[] = [];
        for (const raw of block.split("\n")) {
            const line = raw.replace(/\s+#.*$/, "").trim();
            if (!line || line.startsWith("#") || line === "npm ci" || line.startsWith("pulumi up")) continue;
            // Shell words: a quoted part stays whole wherever it is in a word (NAME='a b'), its quotes removed.
            const words = (line.match(/(?:[^\s']+|'[^']*')+/g) ?? []).map((w) => w.replace(/'([^']*)'/g, "$1").replace(/<[^>]*>/g, (v) => values[v] ?? v));
            assert.ok(!words.some((w) => /<[^>]*>/.test(w)), `${line}: a value the test does not fill`);
            ran.push(words[0] === "export" ? "export" : words.slice(0, 3).join(" "));
            if (words[0] === "export") {
                const [name, value] = words[1].split(/=(.*)/s);
                stepEnv[name] = value;
            } else if (words[0] === "pulumi") {
                const input = words.includes("--secret") ? `readme-secret-${ran.length}\n` : undefined;
                try {
                    execFileSync("pulumi", [...words.slice(1), "--non-interactive"], { cwd: project, env: stepEnv, encoding: "utf8", input });
                } catch (e) {
                    assert.fail(`${line}: ${(e as { stderr?: string }).stderr ?? (e as Error).message}`);
                }
            } else if (words[0] === "bin/k8s-vnf") {
                let out = "";
                let err = "";
                const code = await main([...words.slice(1), "--project", project], { out: (t) => (out += t), err: (t) => (err += t), env: stepEnv, cwd: project });
                assert.equal(code, 0, `${line}: ${out}${err}`);
            } else assert.fail(`${line}: a step the test does not know`);
        }
        assert.ok(ran.includes("pulumi stack init") && ran.includes("bin/k8s-vnf validate --stack"), ran.join("; "));
        assert.equal(stepEnv.PULUMI_CONFIG_PASSPHRASE, "readme-passphrase", "the exported passphrase, as the README quotes it");
        const doc = YAML.parse(fs.readFileSync(path.join(project, "stacks/Pulumi.simple.yaml"), "utf8"));
        assert.deepEqual([doc.config["k8s-vnf:network"].networkId, doc.config["k8s-vnf:image"], doc.config["k8s-vnf:flavor"]], [values["<your network id>"], "debian-12", "m1.small"]);
        assert.match(doc.config["k8s-vnf:masters"].password.secure, /^v1:/);
    });

    it("a CLI older than the program needs refuses to run it: Pulumi.yaml's requiredPulumiVersion is config/pulumiVersion.ts's range, and the real CLI enforces it before the program runs (shown with the range raised past the built CLI)", () => {
        const projectFile = fs.readFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), "utf8");
        assert.equal(YAML.parse(projectFile).requiredPulumiVersion, PULUMI_VERSION_RANGE);
        const project = fs.mkdtempSync(path.join(dir, "old-cli-"));
        fs.writeFileSync(path.join(project, "Pulumi.yaml"), projectFile.replace(`requiredPulumiVersion: "${PULUMI_VERSION_RANGE}"`, 'requiredPulumiVersion: ">=3.249.0"'));
        fs.mkdirSync(path.join(project, "stacks"));
        execFileSync("pulumi", ["stack", "init", "old", "--non-interactive"], { cwd: project, env, encoding: "utf8" });
        const preview = spawnSync("pulumi", ["preview", "--stack", "old", "--non-interactive"], { cwd: project, env, encoding: "utf8" });
        assert.notEqual(preview.status, 0);
        assert.match(preview.stdout + preview.stderr, /Pulumi CLI version 3\.248\.0 does not satisfy the version range ">=3\.249\.0"/);
    });
});
