import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { main } from "../cli/main";
import { configurationReference, tackerReference } from "../cli/reference";
import { REQUESTS_DIR } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";

const STAND_IN_DIR = path.join(__dirname, "support/stand-ins");

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

/** A scratch project: Pulumi.yaml, the example package, and a request with recognisable secrets. */
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
    return { dir, request: path.join(dir, "request.json"), log: path.join(dir, "pulumi.log"), cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
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

    it("import-request --stack writes the stack file and hands secrets to the Pulumi CLI on stdin only", async () => {
        const p = scratchProject();
        try {
            const env = { PATH: `${STAND_IN_DIR}:/usr/bin:/bin`, PULUMI_STANDIN_LOG: p.log };
            const run = await cli(["import-request", p.request, "--stack", "edge", "--package-dir", path.join(p.dir, "package"), "--project", p.dir], env);
            assert.equal(run.code, 0, run.err);
            const written = fs.readFileSync(path.join(p.dir, "stacks/Pulumi.edge.yaml"), "utf8");
            assert.doesNotMatch(written, SECRETS);
            assert.equal(YAML.parse(written).config["k8s-vnf:storageServer"].volumes[0].mountTo, "/volume");

            const lines = fs.readFileSync(p.log, "utf8").trim().split("\n");
            const args = lines.filter((l) => l.startsWith("ARGS "));
            assert.equal(args[0], "ARGS stack select --create edge --non-interactive");
            const sets = args.slice(1).map((a) => a.split(" ").at(-2));
            assert.deepEqual(sets.sort(), ["masters.password", "proxy.httpProxy", "proxy.httpsProxy", "storageServer.password", "workers.password"]);
            assert.doesNotMatch(args.join("\n"), SECRETS, "no secret on a command line");
            assert.ok(lines.includes("STDIN master-Secret-1") && lines.includes("STDIN worker-Secret-2"));
        } finally {
            p.cleanup();
        }
    });

    it("a failing Pulumi CLI leaves the stack file as it was", async () => {
        const p = scratchProject();
        try {
            const file = path.join(p.dir, "stacks/Pulumi.edge.yaml");
            const before = "encryptionsalt: v1:abc\nconfig:\n  openstack:cloud: mycloud\n  k8s-vnf:image: golden-image\n";
            fs.writeFileSync(file, before);
            const env = { PATH: `${STAND_IN_DIR}:/usr/bin:/bin`, PULUMI_STANDIN_LOG: p.log, PULUMI_STANDIN_FAIL_ON: "workers.password" };
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], env);
            assert.equal(run.code, 1);
            assert.match(run.err, /pulumi config set exited 1/);
            assert.doesNotMatch(run.err, SECRETS);
            assert.equal(fs.readFileSync(file, "utf8"), before);
        } finally {
            p.cleanup();
        }
    });

    it("an existing stack file is the base: its image, other namespaces and encryption salt survive", async () => {
        const p = scratchProject();
        try {
            const file = path.join(p.dir, "stacks/Pulumi.edge.yaml");
            fs.writeFileSync(file, "encryptionsalt: v1:abc\nconfig:\n  openstack:cloud: mycloud\n  k8s-vnf:image: golden-image\n  k8s-vnf:masters:\n    password:\n      secure: v1:old\n");
            const env = { PATH: `${STAND_IN_DIR}:/usr/bin:/bin`, PULUMI_STANDIN_LOG: p.log };
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], env);
            assert.equal(run.code, 0, run.err);
            const doc = YAML.parse(fs.readFileSync(file, "utf8"));
            assert.equal(doc.encryptionsalt, "v1:abc");
            assert.equal(doc.config["openstack:cloud"], "mycloud");
            assert.equal(doc.config["k8s-vnf:image"], "golden-image");
            assert.equal(doc.config["k8s-vnf:masters"].password, undefined, "the request's password is set again through the CLI");
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
