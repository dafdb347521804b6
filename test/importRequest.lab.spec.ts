/**
 * Seed bodies as a Pulumi CLI user runs them: `k8s-vnf import-request --stack` with the VNF package makes
 * and configures the stack, then the real Pulumi CLI, engine and plugins preview or deploy it against the lab
 * OpenStack API (Tacker's sample image and flavor, the seeds' network), the first master running the real
 * control plane (docs/testing.md, "The lab's control plane").
 *
 * Every body gets the real engine's preview: the converted config is what the real CLI and providers accept,
 * and it plans the VNF's servers and steps. Seed 002's cluster body is deployed here too; the others are
 * deployed, healed and terminated on the real CLI through the LCM service, which converts them with the same
 * code (seeds 000 and 002's registry: realLcmSeeds.lab.spec.ts; seed 001: kubesprayLcm.lab.spec.ts).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { main } from "../cli/main";
import { packKubesprayRelease } from "./support/kubesprayRelease";
import { useLab } from "./support/labSuite";
import { seedText } from "./support/lcmClient";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { PROJECT_DIR } from "./support/program";
import { suiteApi, withSuite } from "./support/realCluster";
import { SAMPLE_FLAVOR, SAMPLE_IMAGE } from "./support/realLcmService";
import { RealStack } from "./support/realStack";
import { registryImage } from "./support/registryImage";
import { builtTools, useBuiltTools } from "./support/tools";

/** The network seeds 000 and 002 name. */
const SEED_NETWORK = "f0c82461-36b5-4d86-8322-b0bc19cda65f";

describe("seeds 000, 001 and 002 through import-request and the real Pulumi CLI, on lab hosts", function () {
    useBuiltTools();
    this.timeout(300_000);
    let api: LabOpenStackApi;
    const suite = useLab([], { secrets: () => [api?.credentials.password ?? ""] });

    before(async function () {
        if (!suite.lab) this.skip();
        const tools = builtTools();
        suite.lab.giveTools({ kube: tools.bins.kube, etcd: tools.bins.etcd });
        api = await suiteApi(suite, "edge", { networkId: SEED_NETWORK, imageName: SAMPLE_IMAGE, flavorNames: [SAMPLE_FLAVOR] });
    });

    /**
     * `k8s-vnf import-request <seed> --stack <stack>` (the lab's login password in place of the seed's) in a
     * project folder of its own with the seed's package, `prepare` adding to the package first.
     */
    const importRequest = async (seed: string, name: string, prepare?: (packageDir: string) => Promise<unknown>): Promise<RealStack> => {
        const stack = withSuite(suite, RealStack.configuredElsewhere(name, { env: api.env() }));
        const packageDir = path.join(stack.project.dir, "package");
        fs.cpSync(path.join(PROJECT_DIR, "examples/package"), packageDir, { recursive: true });
        await prepare?.(packageDir);
        const request = path.join(stack.project.dir, `${name}.json`);
        fs.writeFileSync(request, seedText(suite.lab, seed));
        let err = "";
        const code = await main(["import-request", request, "--stack", name, "--package-dir", packageDir, "--project", stack.project.dir], {
            out: () => undefined,
            err: (t) => (err += t),
            env: stack.env,
            cwd: stack.project.dir,
        });
        suite.captured.push(err);
        assert.equal(code, 0, err);
        return stack;
    };
    /** The resources the real engine's preview would create, by name. */
    const creates = async (stack: RealStack): Promise<string[]> => {
        const plan = JSON.parse(await stack.preview(["--json"])) as { steps: { op: string; urn: string }[] };
        assert.deepEqual([...new Set(plan.steps.map((s) => s.op))], ["create"]);
        return plan.steps.map((s) => s.urn.split("::").pop()!);
    };
    const including = (names: string[], pattern: RegExp) => names.filter((n) => pattern.test(n)).sort();

    it("seed 000 (storage): import-request --stack with the package, then the real preview plans the storage server with its Cinder volume, the NFS exports and the package's three PVs", async () => {
        const names = await creates(await importRequest("storage-instantiate.json", "edge-storage"));
        for (const one of [/-storage-server-vm$/, /-storage-volume-\w+$/, /-storage-nfs$/]) assert.equal(including(names, one).length, 1, `${one}: ${names.join(", ")}`);
        assert.deepEqual(including(names, /-pv-nfs-pv\d$/).map((n) => n.split("-pv-")[1]), ["nfs-pv1", "nfs-pv2", "nfs-pv3"], names.join(", "));
        assert.deepEqual(api.servers(), [], "a preview creates nothing");
    });

    it("seed 001 (kubespray): import-request --stack with the package's kubespray release, then the real preview plans the Ansible VM, the external LB and the install from the Ansible VM", async () => {
        const names = await creates(await importRequest("kubespray-instantiate.json", "edge-kubespray", async (dir) => packKubesprayRelease(dir)));
        for (const suffix of [/-ansible-vm$/, /-external-lb-vm$/, /-kubespray-cluster$/]) assert.equal(including(names, suffix).length, 1, `${suffix}: ${names.join(", ")}`);
        assert.deepEqual(api.servers(), []);
    });

    it("seed 002's registry body (the package's registry image, OCI): import-request --stack, then the real preview plans the registry's VM, its volume and the registry step", async () => {
        const names = await creates(
            await importRequest("registry-vnf-instantiate.json", "edge-registry", async (dir) => {
                fs.mkdirSync(path.join(dir, "Files/images"), { recursive: true });
                await registryImage(path.join(dir, "Files/images/private_registry.tar"), "oci-archive");
            }),
        );
        assert.deepEqual(including(names, /^edge-registry-(server-vm|volume|registry)$/), ["edge-registry-registry", "edge-registry-server-vm", "edge-registry-volume"], names.join(", "));
        assert.deepEqual(api.servers(), []);
    });

    it("seed 002's cluster body: import-request --stack, pulumi up: every node has both registry connections (HTTP; HTTPS with the package's CA, the hosts line and the kubelet login); pulumi destroy leaves nothing", async () => {
        const stack = await importRequest("registry-connection-instantiate.json", "edge-registries");
        await stack.up();
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
        await stack.destroy();
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });
});
