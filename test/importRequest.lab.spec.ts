/**
 * Seed 000's body end to end as a Pulumi CLI user runs it: `k8s-vnf import-request --stack` with the VNF
 * package, then `pulumi up`, a storage heal by config and `pulumi destroy` with the (stand-in) Pulumi CLI,
 * which runs the real program through the test engine on lab hosts.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { main } from "../cli/main";
import { REQUESTS_DIR } from "./support/fixtures";
import { useLab } from "./support/labSuite";
import { PROJECT_DIR } from "./support/program";
import { ServiceProject, serviceProject } from "./support/serviceProject";
import { pathWithStandIn, runStandIn } from "./support/stand-ins/pulumi-cli/client";

describe("seed 000 through import-request and the Pulumi CLI, on lab hosts", function () {
    this.timeout(300_000);
    const suite = useLab([]);
    let project: ServiceProject;
    let env: Record<string, string>;
    const pulumi = (...args: string[]) => {
        const r = runStandIn(args, { cwd: project.dir, env });
        suite.captured.push(r.stdout, r.stderr);
        assert.equal(r.status, 0, `pulumi ${args.join(" ")}:\n${r.stderr || r.stdout}`);
        return r.stdout;
    };
    const pvsDir = () => path.join(suite.lab.clusterState, "edge", "pvs");

    before(function () {
        if (!suite.lab) this.skip();
        project = serviceProject();
        fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(project.dir, "package"), { recursive: true });
        const standIn = path.join(project.dir, ".stand-in");
        fs.mkdirSync(standIn);
        env = { PULUMI_CONFIG_PASSPHRASE: "import-request-lab", PULUMI_STANDIN_STATE: standIn, K8S_VNF_LAB: suite.lab.descriptorFile };
    });
    after(() => project?.remove());

    it("import-request --stack with the package, then pulumi up: the storage server serves the exports and the package's PVs are on its address", async () => {
        const request = path.join(project.dir, "request.json");
        fs.writeFileSync(request, fs.readFileSync(path.join(REQUESTS_DIR, "storage-instantiate.json"), "utf8").replace(/("(?:ssh_)?password"\s*:\s*)"ubuntu"/g, (_m, key) => `${key}${JSON.stringify(suite.lab.password)}`));
        let err = "";
        const code = await main(["import-request", request, "--stack", "edge", "--package-dir", path.join(project.dir, "package"), "--project", project.dir], {
            out: () => undefined,
            err: (t) => (err += t),
            env: { PATH: pathWithStandIn(), ...env },
            cwd: project.dir,
        });
        assert.equal(code, 0, err);
        assert.match(pulumi("up", "--yes", "--stack", "edge"), /was blank: formatted ext4/);
        const storage = suite.lab.hostNames().find((n) => n.endsWith("-storage"))!;
        assert.equal(await suite.lab.inside(storage, "exportfs -s | awk '{ print $1 }' | sort"), "/volume/nfs/pv1\n/volume/nfs/pv2\n/volume/nfs/pv3\n");
        assert.deepEqual(fs.readdirSync(pvsDir()).sort(), ["nfs-pv1", "nfs-pv2", "nfs-pv3"]);
        for (const pv of fs.readdirSync(pvsDir())) {
            assert.equal(JSON.parse(fs.readFileSync(path.join(pvsDir(), pv, "object.json"), "utf8")).spec.nfs.server, suite.lab.host(storage).address);
        }
    });

    it("pulumi config set heal.nodes.storage, pulumi up: the storage VM is replaced, the volume mounted again unformatted; pulumi destroy leaves nothing", async () => {
        const storage = suite.lab.hostNames().find((n) => n.endsWith("-storage"))!;
        await suite.lab.inside(storage, "echo kept >/volume/nfs/pv1/marker");
        pulumi("config", "set", "--stack", "edge", "--path", "heal.nodes.storage", "1");
        const out = pulumi("up", "--yes", "--stack", "edge");
        assert.doesNotMatch(out, /formatted ext4/);
        assert.equal(await suite.lab.inside(storage, "cat /volume/nfs/pv1/marker"), "kept\n");
        pulumi("destroy", "--yes", "--stack", "edge");
        assert.deepEqual(suite.lab.hostNames(), []);
        assert.deepEqual(suite.lab.volumeIds(), [], "the Cinder volume goes with the stack");
    });
});
