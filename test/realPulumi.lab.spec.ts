/**
 * The real Pulumi CLI (v3.248.0, built by tools/build.sh), its engine, its dynamic-provider host and the
 * OpenStack resource plugin run this program, as a user runs it: `pulumi preview`, `up`, `refresh`,
 * `destroy` with a file:// backend and a passphrase. The OpenStack plugin talks to the lab OpenStack API
 * (test/support/openstackApi), whose servers are lab hosts; the kubeadm steps run on them (kubeadm, kubelet
 * and kubectl are still the lab's stand-ins there).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Lab } from "./lab/lab";
import { useLab } from "./support/labSuite";
import { ociArchive } from "./support/ociImage";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { suiteStack } from "./support/realCluster";
import { alive, PulumiRunError, RealStack } from "./support/realStack";
import { useBuiltTools } from "./support/tools";


function labConfig(lab: Lab, api: LabOpenStackApi, workers: number): Record<string, unknown> {
    return {
        vnfName: "lab",
        flavour: "simple",
        image: api.image.name,
        flavor: api.flavor.name,
        network: { networkId: api.network.id, subnetId: api.network.subnetId },
        masters: { count: 1, password: lab.password },
        workers: { count: workers, maxCount: 20, password: lab.password },
        kubernetes: { cniManifest: "https://projectcalico.example/calico.yaml", drainTimeout: 5 },
    };
}

const MASTER = "lab-master-0";

describe("the real Pulumi CLI, engine and plugins: a simple kubeadm stack (1 master, 2 workers), config errors and preview", function () {
    useBuiltTools();
    this.timeout(900_000);
    let api: LabOpenStackApi;
    const suite = useLab([], { secrets: () => [api?.credentials.password ?? ""] });
    let stack: RealStack;

    before(async function () {
        if (!suite.lab) this.skip();
        api = await LabOpenStackApi.start(suite.lab, { cluster: "simple" });
        suite.onTeardown(() => api.stop());
        stack = await suiteStack(suite, "simple", labConfig(suite.lab, api, 2), { env: api.env() });
    });

    it("a config error is reported with its field path by the real CLI, before anything is created", async () => {
        stack.set("workers.count", 30);
        const error = await stack.up().then(
            () => assert.fail("the up should fail"),
            (e: Error) => e,
        );
        stack.set("workers.count", 2);
        assert.ok(error instanceof PulumiRunError, String(error));
        assert.match(error.message, /workers\.count/);
        assert.deepEqual(stack.state().filter((r) => r.type !== "pulumi:pulumi:Stack" && r.type !== "pulumi:providers:pulumi-nodejs"), [], "nothing registered");
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });

    it("preview --diff of the new stack: every VM, port and step to create, each step's remote actions shown; nothing runs", async () => {
        const text = await stack.preview(["--diff"]);
        for (const name of [`${MASTER}-vm`, `${MASTER}-port`, "lab-worker-1-vm", "lab-kubeadm-init", "lab-kubeadm-worker-1-member"]) {
            assert.match(text, new RegExp(`^\\s*\\+ \\S+: \\(create\\)\\n\\s*\\[urn=\\S+::${name}\\]`, "m"), `${name} to create`);
        }
        assert.match(text, /remoteActions/);
        assert.match(text, /kubeadm init/);
        assert.match(text, /kubeadm join lab-worker-1/);
        assert.match(text, /sha256:[0-9a-f]{16}/);
        assert.ok(!text.includes(suite.lab.password), "no password in the preview");
        assert.deepEqual(api.servers(), []);
    });

    it("k8s-vnf plan --stack: the Automation API runs the real CLI's preview; the plan lists each change and its remote actions", async () => {
        const stdout = await stack.plan(["--json"]);
        const plan = JSON.parse(stdout) as { stack: string; changes: { op: string; name: string; actions: { action: string }[] }[] };
        assert.equal(plan.stack, "simple");
        const byName = new Map(plan.changes.map((c) => [c.name, c]));
        assert.equal(byName.get(`${MASTER}-vm`)?.op, "create");
        assert.ok(byName.get("lab-kubeadm-init")?.actions.some((a) => /kubeadm init/.test(a.action)), "the init's remote action");
        assert.ok(!stdout.includes(suite.lab.password));
        assert.deepEqual(api.servers(), []);
    });
});

const IMAGE = "team/app:1.0";

describe("the real Pulumi CLI, engine and plugins: the registry VNF (seed 002) on a lab host through the lab OpenStack API", function () {
    useBuiltTools();
    this.timeout(900_000);
    let api: LabOpenStackApi;
    const suite = useLab([], { secrets: () => [api?.credentials.password ?? ""] });
    // Made in `before`, so that a suite skipped or filtered out leaves no folder.
    let dir = "";
    let stack: RealStack;
    let ip: string;
    let image: ReturnType<typeof ociArchive>;
    const HOST = "rgh-registry";
    const registryStatus = () => suite.lab.inside(HOST, `curl -s -o /dev/null -w '%{http_code}' http://${ip}:5000/v2/`);
    const vmId = () => stack.state().find((r) => r.urn.endsWith("::rgh-server-vm"))!.id;

    before(async function () {
        if (!suite.lab) this.skip();
        dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-real-registry-"));
        ip = `${suite.lab.subnet}.61`;
        fs.mkdirSync(path.join(dir, "package/Files/images"), { recursive: true });
        image = ociArchive(path.join(dir, "package/Files/images/app.tar"), { files: { "app/hello.txt": "hello from the package\n" }, cmd: ["/app/hello.txt"] });
        api = await LabOpenStackApi.start(suite.lab, { cluster: "rgh" });
        suite.onTeardown(() => api.stop());
        stack = await suiteStack(
            suite,
            "rgh",
            {
                vnfKind: "registry",
                vnfName: "rgh",
                image: api.image.name,
                flavor: api.flavor.name,
                packageDir: path.join(dir, "package"),
                registry: { networkId: api.network.id, subnetId: api.network.subnetId, fixedIps: [ip], password: suite.lab.password, preloadImages: [{ file: "Files/images/app.tar", image: IMAGE }] },
            },
            { env: api.env() },
        );
    });
    after(() => dir && fs.rmSync(dir, { recursive: true, force: true }));

    it("a Nova call that fails (500 on the server create) fails the up with Nova's answer; nothing runs on a host", async () => {
        const fault = { computeFault: { code: 500, message: "Unexpected API Error. Please report this at http://bugs.launchpad.net/nova/ and attach the Nova API log if possible." } };
        api.failNext("POST", /\/servers$/, 500, fault);
        const error = await stack.up().then(
            () => assert.fail("the up should fail"),
            (e: Error) => e,
        );
        assert.match(error.message, /rgh-server-vm: .*Error creating OpenStack server: Internal Server Error/s);
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
        assert.equal(stack.state().filter((r) => r.urn.endsWith("::rgh-registry")).length, 0, "the registry step never ran");
    });

    it("up (again): the VM is a lab host at its port's fixed IP, its Cinder volume attached and formatted once, Debian's registry serving the package's image", async () => {
        await stack.up();
        assert.deepEqual(api.servers().map((s) => [s.name, s.status, s.address]), [[HOST, "ACTIVE", ip]]);
        assert.equal(suite.lab.host(HOST).address, ip);
        const [volume] = suite.lab.volumeIds();
        assert.equal(suite.lab.volumeAttachment(volume)?.host, HOST, "the volume attached to the VM");
        assert.equal((await suite.lab.inside(HOST, "findmnt -rn -o TARGET --target /var/lib/docker-registry")).trim(), "/var/lib/docker-registry");
        assert.equal(await registryStatus(), "200");
        assert.equal((await suite.lab.inside(HOST, "cat /var/lib/docker-registry/docker/registry/v2/repositories/team/app/_manifests/tags/1.0/current/link")).trim(), image.manifestDigest);
        assert.deepEqual(stack.outputsOf("rgh-registry").preloaded, [IMAGE]);
        assert.equal(stack.output.filter((l) => /was blank: formatted ext4/.test(l)).length, 1);
    });

    it("the state and the stack's config file hold the VM's password encrypted only", () => {
        const files = fs.readdirSync(stack.project.dir, { recursive: true, withFileTypes: true }).filter((f) => f.isFile() && !f.parentPath.includes("node_modules")).map((f) => path.join(f.parentPath, f.name));
        assert.ok(files.some((f) => f.endsWith(path.join("stacks", "Pulumi.rgh.yaml"))), "the stack's config file");
        assert.ok(files.some((f) => f.endsWith("rgh.json")), "a checkpoint");
        for (const f of files) assert.ok(!fs.readFileSync(f, "utf8").includes(suite.lab.password), `${f} holds the password in the clear`);
        assert.match(stack.project.stackFileText("rgh")!, /password:\s*\n\s*secure: /);
    });

    it("a second up changes nothing and uploads nothing", async () => {
        const before = stack.output.length;
        const result = await stack.up();
        assert.deepEqual(Object.keys(result.changes), ["same"]);
        assert.equal(stack.output.slice(before).filter((l) => /preloaded/.test(l)).length, 0);
    });

    it("refresh reports the registry stopped behind Pulumi's back; preview shows the update; the next up starts it again", async () => {
        await suite.lab.inside(HOST, "service docker-registry stop");
        await stack.refresh();
        assert.equal(stack.outputsOf("rgh-registry").running, "none");
        const planned = JSON.parse(await stack.preview(["--json"])) as { steps: { op: string; urn: string }[] };
        assert.deepEqual(planned.steps.filter((s) => s.op !== "same").map((s) => `${s.op} ${s.urn.split("::").pop()}`), ["update rgh-registry"]);
        await stack.up();
        assert.equal(await registryStatus(), "200");
        assert.equal(stack.outputsOf("rgh-registry").running, "package");
    });

    it("heal: a new VM at the same address serves the images already pushed from the same volume, not formatted again", async () => {
        const before = vmId();
        const [volume] = suite.lab.volumeIds();
        const since = stack.steps.length;
        const output = stack.output.length;
        stack.set("heal.nodes.registry", 1);
        await stack.up();
        assert.notEqual(vmId(), before, "a new VM");
        const steps = stack.stepsOf(since, /./).filter((s) => s.op !== "same");
        // The steps' explicit provider has no inputs: a config change leaves it as it is (stepResource.ts).
        assert.deepEqual(steps.filter((s) => s.urn.includes("::pulumi:providers:")).map((s) => `${s.op} ${s.name}`), []);
        const changed = [...new Set(steps.filter((s) => !s.urn.includes("::pulumi:providers:")).map((s) => s.name))].sort();
        assert.deepEqual(changed, ["rgh-attach", "rgh-registry", "rgh-server-vm"], "the volume and the port are kept");
        const vm = steps.filter((s) => s.name === "rgh-server-vm").map((s) => s.op);
        assert.deepEqual(vm, ["delete-replaced", "replace", "create-replacement"], "the VM replaced delete-first");
        assert.deepEqual(suite.lab.volumeIds(), [volume]);
        assert.equal(api.servers()[0].address, ip);
        assert.equal(stack.output.filter((l) => /was blank: formatted ext4/.test(l)).length, 1, "not formatted again");
        assert.equal(stack.output.slice(output).filter((l) => /preloaded/.test(l)).length, 0, "nothing pushed again");
        assert.equal(await registryStatus(), "200");
        assert.equal((await suite.lab.inside(HOST, "cat /var/lib/docker-registry/docker/registry/v2/repositories/team/app/_manifests/tags/1.0/current/link")).trim(), image.manifestDigest);
    });

    it("destroy: the server, the volume and the port deleted; no lab host or volume left", async () => {
        await stack.destroy();
        assert.deepEqual(stack.state().filter((r) => r.type !== "pulumi:pulumi:Stack"), []);
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
        assert.deepEqual(suite.lab.volumeIds(), []);
    });

    it("a pulumi up killed mid-create: no process it started is left; `pulumi cancel` clears the lock it held; the checkpoint records the creates cut off", async () => {
        const running = stack.up().then(
            () => undefined,
            (e: Error) => e,
        );
        // The provider waits at least 10 s for a new server to be ACTIVE (resource_openstack_compute_instance_v2.go,
        // stateConf Delay): a server that exists is one whose create is under way.
        while (!api.servers().length) await new Promise((r) => setTimeout(r, 200));
        const ended = await stack.stopRunning(0);
        await running;
        assert.ok(ended.length >= 3, `the CLI and its plugins (${ended.join(" ")})`);
        assert.deepEqual(ended.filter(alive), [], "no process of the killed run is left");

        const locked = await stack.up().then(
            () => "",
            (e: Error) => e.message,
        );
        assert.match(locked, /the stack is currently locked by 1 lock\(s\).*pulumi cancel/s);
        await stack.cli(["cancel", "--yes", "--stack", "rgh"]);
        const deployment = JSON.parse((await stack.cli(["stack", "export", "--stack", "rgh"])).stdout).deployment;
        const pending = (deployment.pending_operations ?? []) as { type: string; resource: { urn: string } }[];
        assert.ok(
            pending.some((p) => p.type === "creating" && p.resource.urn.endsWith("::rgh-server-vm")),
            `the VM's create is pending: ${pending.map((p) => p.resource.urn.split("::").pop()).join(", ")}`,
        );
        // What happens next (docs/verified.md): the engine knows no id for the VM, so an up
        // would create it again and Nova would refuse the port the orphan holds.
    });
});
