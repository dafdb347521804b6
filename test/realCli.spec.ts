/**
 * The project's own commands against the real Pulumi CLI (tools/build.sh): `k8s-vnf import-request --stack`
 * makes the stack and hands every secret to `pulumi config set --secret` on standard input; the real CLI
 * encrypts them in the stack file with the passphrase and decrypts them again; `k8s-vnf validate --stack`
 * reads that file offline. (`k8s-vnf plan` against the real CLI: test/realPulumi.lab.spec.ts.)
 */
import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { main } from "../cli/main";
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
});
