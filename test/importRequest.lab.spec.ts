/**
 * Seed bodies end to end as a Pulumi CLI user runs them: `k8s-vnf import-request --stack` with the VNF
 * package, then `pulumi up` (seed 000: a storage heal by config; seed 001: kubespray from the release the
 * package carries), and `pulumi destroy` with the (stand-in)
 * Pulumi CLI, which runs the real program through the test engine on lab hosts.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { main } from "../cli/main";
import { REQUESTS_DIR } from "./support/fixtures";
import { useLab } from "./support/labSuite";
import { PROJECT_DIR } from "./support/program";
import { packKubesprayRelease, parsePlaybookRuns } from "./support/kubesprayRelease";
import { registryImage } from "./support/registryImage";
import { ServiceProject, serviceProject } from "./support/serviceProject";
import { pathWithStandIn, runStandIn } from "./support/stand-ins/pulumi-cli/client";

describe("seeds 000, 001 and 002 through import-request and the Pulumi CLI, on lab hosts", function () {
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

    /** `k8s-vnf import-request` of a seed body (the lab's login password in place of the seed's) into `stack`. */
    const importRequest = async (seed: string, stack: string) => {
        const request = path.join(project.dir, `${stack}.json`);
        fs.writeFileSync(request, fs.readFileSync(path.join(REQUESTS_DIR, seed), "utf8").replace(/("(?:ssh_)?password"\s*:\s*)"ubuntu"/g, (_m, key) => `${key}${JSON.stringify(suite.lab.password)}`));
        let err = "";
        const code = await main(["import-request", request, "--stack", stack, "--package-dir", path.join(project.dir, "package"), "--project", project.dir], {
            out: () => undefined,
            err: (t) => (err += t),
            env: { PATH: pathWithStandIn(), ...env },
            cwd: project.dir,
        });
        assert.equal(code, 0, err);
    };

    it("import-request --stack with the package, then pulumi up: the storage server serves the exports and the package's PVs are on its address", async () => {
        await importRequest("storage-instantiate.json", "edge");
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

    it("seed 001's body as it is, with the package's kubespray release: import-request --stack, pulumi up installs from the Ansible VM it creates, behind the external LB; pulumi destroy leaves nothing (scale and heal: test/kubespray.lab.spec.ts)", async () => {
        packKubesprayRelease(path.join(project.dir, "package"));
        await importRequest("kubespray-instantiate.json", "edge-kubespray");
        pulumi("up", "--yes", "--stack", "edge-kubespray");
        const hosts = suite.lab.hostNames();
        const ansible = hosts.find((n) => n.endsWith("-ansible"))!;
        const lb = hosts.find((n) => n.endsWith("-external-lb"))!;
        const runs = async () => parsePlaybookRuns(await suite.lab.inside(ansible, "cat /opt/kubespray/.standin/runs.log"));
        assert.deepEqual((await runs()).map((r) => r.playbook), ["cluster.yml"]);
        const [install] = await runs();
        const workers = hosts.filter((n) => /-worker-\d+$/.test(n)).sort();
        assert.deepEqual(install.groups.kube_node, workers);
        assert.match(await suite.lab.inside(ansible, "id -un ansible"), /^ansible$/m, "the seed's Ansible login, made by cloud-init");
        assert.deepEqual(install.vars.loadbalancer_apiserver && (install.vars.loadbalancer_apiserver as { port: number }).port, 8383);
        assert.match(await suite.lab.inside(lb, "cat /etc/haproxy/haproxy.cfg"), /^frontend kube-apiserver$/m);

        pulumi("destroy", "--yes", "--stack", "edge-kubespray");
        assert.deepEqual(suite.lab.hostNames(), []);
    });

    it("seed 002's cluster body as it is: import-request --stack, pulumi up: every node has both registry connections (HTTP; HTTPS with the package's CA, the hosts line and the kubelet login)", async () => {
        await importRequest("registry-connection-instantiate.json", "edge-registries");
        pulumi("up", "--yes", "--stack", "edge-registries");
        const nodes = suite.lab.hostNames();
        assert.equal(nodes.length, 3, nodes.join(", "));
        const ca = fs.readFileSync(path.join(PROJECT_DIR, "examples/package/Files/registries/ca.crt"), "utf8");
        for (const node of nodes) {
            assert.equal(await suite.lab.inside(node, "ls /etc/containerd/certs.d"), "192.168.0.10:5000\nregistry.example.com\n");
            assert.match(await suite.lab.inside(node, "cat /etc/containerd/certs.d/192.168.0.10:5000/hosts.toml"), /^server = "http:\/\/192\.168\.0\.10:5000"$/m);
            assert.equal(await suite.lab.inside(node, "cat /etc/containerd/certs.d/registry.example.com/ca.crt"), ca);
            assert.match(await suite.lab.inside(node, "cat /etc/hosts"), /^192\.168\.0\.20 registry\.example\.com$/m);
            const credentials = JSON.parse(await suite.lab.inside(node, "cat /var/lib/kubelet/config.json"));
            assert.deepEqual(Object.keys(credentials.auths), ["registry.example.com"]);
        }
        pulumi("destroy", "--yes", "--stack", "edge-registries");
        assert.deepEqual(suite.lab.hostNames(), []);
    });

    it("seed 002's registry body as it is, with the package's registry image (OCI): import-request --stack, pulumi up serves the registry from containerd; pulumi destroy leaves no host or volume", async () => {
        fs.mkdirSync(path.join(project.dir, "package/Files/images"), { recursive: true });
        await registryImage(path.join(project.dir, "package/Files/images/private_registry.tar"), "oci-archive");
        await importRequest("registry-vnf-instantiate.json", "edge-registry");
        pulumi("up", "--yes", "--stack", "edge-registry");
        const [registry] = suite.lab.hostNames();
        assert.match(registry, /-registry$/);
        const address = suite.lab.host(registry).address;
        assert.equal(await suite.lab.inside(registry, `curl -s -o /dev/null -w '%{http_code}' http://${address}:5000/v2/`), "200");
        assert.match(await suite.lab.inside(registry, "ctr -n k8s-vnf-registry tasks ls"), /^registry\s+\d+\s+RUNNING$/m);
        assert.equal((await suite.lab.inside(registry, "findmnt -rn -o TARGET --target /var/lib/docker-registry")).trim(), "/var/lib/docker-registry");
        pulumi("destroy", "--yes", "--stack", "edge-registry");
        assert.deepEqual(suite.lab.hostNames(), []);
        assert.deepEqual(suite.lab.volumeIds(), []);
    });
});
