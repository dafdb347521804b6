/** The k8s-vnf CLI in process: import-request, validate, help and usage, and the docs it generates kept current. */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { configurationReference, tackerReference } from "../cli/reference";
import { parseRequestText } from "../config/requestText";
import { CONFIG_KEYS } from "../config/schema";
import { configHasPath } from "../config/schemaPaths";
import { TACKER_FIELDS } from "../config/tackerMap";
import { REQUESTS_DIR } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";
import { cli, scratchProject, SECRETS } from "./support/cliRun";

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
