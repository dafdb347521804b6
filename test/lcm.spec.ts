import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import * as YAML from "yaml";
import { Lab, labAvailable } from "./lab/lab";
import { listObjects } from "./support/engine/kubernetes/store";
import { REQUESTS_DIR } from "./support/fixtures";
import { Callback, clientAvailable, seedBody, vnflcmClient } from "./support/lcmClient";
import { PROJECT_DIR } from "./support/program";
import { alive } from "./support/processAlive";
import { opState, ServiceProcess, waitForOp } from "./support/serviceProcess";
import { ServiceProject, serviceProject } from "./support/serviceProject";
import { ServerChanges } from "../service/serverChanges";
import { STAND_IN_PULUMI_ROOT } from "./support/stand-ins/pulumi-cli/client";

const exec = promisify(execFile);

/** Starts a lab without hosts (the engine starts one per VM), or skips the suite where none can run. */
async function startLab(context: Mocha.Context): Promise<Lab> {
    const available = labAvailable();
    if (!available.ok) {
        if (process.env.CI) assert.fail(`lab hosts cannot run: ${available.why}`);
        context.skip();
    }
    const lab = new Lab();
    await lab.start([]);
    return lab;
}

/** The stand-in Pulumi CLI's environment for a service: its knobs folder, a passphrase, the lab. */
function standInEnv(knobs: string, lab?: Lab): Record<string, string> {
    fs.mkdirSync(knobs, { recursive: true });
    return { K8S_VNF_PULUMI_ROOT: STAND_IN_PULUMI_ROOT, PULUMI_STANDIN_STATE: knobs, PULUMI_CONFIG_PASSPHRASE: "test-passphrase", ...(lab ? { K8S_VNF_LAB: lab.descriptorFile } : {}) };
}

/** A stack file's config with every encrypted value shown as "[secure]" (ciphertexts change with each set). */
function configOf(project: ServiceProject, stack: string): Record<string, unknown> {
    const text = project.stackFileText(stack);
    const config = (text ? YAML.parse(text).config : undefined) ?? {};
    return JSON.parse(JSON.stringify(config, (_k, v) => (v && typeof v === "object" && typeof v.secure === "string" ? "[secure]" : v)));
}

/**
 * Stops Pulumi commands a service under test left running (a test that failed between a crash and the
 * restart): by the PIDs the stand-in recorded, each only while it is still the stand-in, with its group.
 */
function stopLeftoverCommands(knobs: string): void {
    const calls = path.join(knobs, "calls");
    if (!fs.existsSync(calls)) return;
    for (const pid of new Set(fs.readFileSync(calls, "utf8").trim().split("\n").map((l) => Number(l.split(" ")[0])))) {
        let cmdline = "";
        try {
            cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
        } catch {
            continue;
        }
        if (!cmdline.includes(path.join(STAND_IN_PULUMI_ROOT, "bin", "pulumi"))) continue;
        try {
            process.kill(-pid, "SIGKILL");
        } catch {
            // it ended meanwhile
        }
    }
}

describe("LCM service (SOL003 /vnflcm/v1) with the real openstack vnflcm client", function () {
    this.timeout(120_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-"));
    let service: ServiceProcess;
    let callback: Callback;
    const openstack = vnflcmClient(() => service.url);
    const json = async (...args: string[]) => JSON.parse(await openstack(...args, "-f", "json"));

    before(async function () {
        if (!clientAvailable()) {
            if (process.env.CI) assert.fail("the openstack client is missing; .ci/run installs python3-openstackclient and python3-tackerclient");
            this.skip();
        }
        service = await ServiceProcess.start(dataDir);
        callback = await Callback.start();
    });
    after(async () => {
        await service?.stop();
        await callback?.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    let instanceId = "";
    let subscriptionId = "";

    it("subsc create: the callback is tested with a GET, the subscription is listed and shown", async () => {
        const file = path.join(dataDir, "subscription.json");
        fs.writeFileSync(file, JSON.stringify({ callbackUri: callback.url, filter: { notificationTypes: ["VnfIdentifierCreationNotification", "VnfIdentifierDeletionNotification"] } }));
        const created = await json("subsc", "create", file);
        subscriptionId = created.ID;
        assert.match(subscriptionId, /^[0-9a-f-]{36}$/);
        assert.equal(created["Callback URI"], callback.url);
        const list = await json("subsc", "list");
        assert.deepEqual(list.map((s: any) => s.ID), [subscriptionId]);
    });

    it("versions and subsc show (client): the API version the client asks for, with and without a major version; the subscription with its filter", async () => {
        for (const args of [[], ["--major-version", "1"]]) {
            const versions = await json("versions", ...args);
            assert.deepEqual(versions.apiVersions.map((v: any) => v.version), ["1.3.0"], args.join(" "));
        }
        const shown = await json("subsc", "show", subscriptionId);
        assert.deepEqual([shown.ID, shown["Callback URI"]], [subscriptionId, callback.url]);
        assert.deepEqual(shown.Filter.notificationTypes, ["VnfIdentifierCreationNotification", "VnfIdentifierDeletionNotification"]);
    });

    it("create: 201 with the instance, NOT_INSTANTIATED, and a creation notification to the subscriber", async () => {
        const created = await json("create", "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177", "--name", "vnf-simple", "--description", "seed 004 simple");
        instanceId = created.ID;
        assert.equal(created["VNF Instance Name"], "vnf-simple");
        assert.equal(created["Instantiation State"], "NOT_INSTANTIATED");
        await callback.until((r) => r.length > 0, 5000);
        assert.deepEqual(callback.received.map((n) => [n.notificationType, n.vnfInstanceId, n.subscriptionId]), [["VnfIdentifierCreationNotification", instanceId, subscriptionId]]);
    });

    it("show and list: the instance with its instantiation state; the list is a top-level array", async () => {
        const shown = await json("show", instanceId);
        assert.equal(shown["Instantiation State"], "NOT_INSTANTIATED");
        assert.equal(shown["VNFD ID"], "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177");
        const list = await json("list");
        assert.deepEqual(list.map((v: any) => v.ID), [instanceId]);
    });

    it("update (merge patch) is accepted with an operation occurrence; op list and op show show it", async () => {
        const file = path.join(dataDir, "update.json");
        fs.writeFileSync(file, JSON.stringify({ vnfInstanceName: "vnf-renamed", metadata: { owner: "noc" } }));
        assert.match(await openstack("update", instanceId, "--I", file), new RegExp(`^Update vnf:${instanceId}`));
        assert.equal((await json("show", instanceId))["VNF Instance Name"], "vnf-renamed");
        const ops = await json("op", "list");
        assert.equal(ops.length, 1);
        assert.equal(ops[0]["Operation"], "MODIFY_INFO");
        assert.equal(ops[0]["Operation State"], "COMPLETED");
        const op = await json("op", "show", ops[0].ID);
        assert.equal(op["VNF Instance ID"], instanceId);
    });

    it("a restart keeps everything stored", async () => {
        await service.stop();
        service = await ServiceProcess.start(dataDir);
        assert.equal((await json("show", instanceId))["VNF Instance Name"], "vnf-renamed");
        assert.equal((await json("subsc", "list")).length, 1);
    });

    it("malformed bodies: 400 ProblemDetails naming the field", async () => {
        const post = async (route: string, body: unknown) => {
            const r = await fetch(`${service.url}/vnflcm/v1/${route}`, { method: "POST", headers: { "content-type": "application/json", "x-auth-token": "notused" }, body: JSON.stringify(body) });
            return { status: r.status, type: r.headers.get("content-type"), body: (await r.json()) as any };
        };
        const missing = await post("vnf_instances", { vnfInstanceName: "x" });
        assert.equal(missing.status, 400);
        assert.match(String(missing.type), /application\/problem\+json/);
        assert.equal(missing.body.status, 400);
        assert.match(missing.body.detail, /body\.vnfdId: is required/);
        const wrongType = await post("vnf_instances", { vnfdId: 42, vnfInstanceNmae: "typo" });
        assert.match(wrongType.body.detail, /body\.vnfdId: must be string/);
        assert.match(wrongType.body.detail, /body\.vnfInstanceNmae: is not a known field/);
        const badFilter = await post("subscriptions", { callbackUri: callback.url, filter: { operationTypes: ["EXPLODE"] } });
        assert.match(badFilter.body.detail, /body\.filter\.operationTypes\.0: must be equal to one of the allowed values/);
    });

    it("a callback that does not answer 204 is refused at subscription", async () => {
        const r = await fetch(`${service.url}/vnflcm/v1/subscriptions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ callbackUri: `${service.url}/no-such-callback` }) });
        assert.equal(r.status, 400);
        assert.match(((await r.json()) as any).detail, /callbackUri: the test GET did not answer 204 No Content/);
    });

    it("delete: 204, a deletion notification; then show is a 404 whose detail the client prints", async () => {
        const before = callback.received.length;
        await openstack("delete", instanceId);
        await callback.until((r) => r.length !== before, 5000);
        assert.equal(callback.received.at(-1)!.notificationType, "VnfIdentifierDeletionNotification");
        const error = await openstack("show", instanceId).then(
            () => assert.fail("show of a deleted instance succeeded"),
            (e: { stderr: string }) => e.stderr,
        );
        assert.match(error, new RegExp(`VNF instance ${instanceId} not found`));
    });

    it("subsc delete removes the subscription", async () => {
        await openstack("subsc", "delete", subscriptionId);
        assert.deepEqual(await json("subsc", "list"), []);
    });
});

describe("affectedVnfcs from the engine's events (ServerChanges)", () => {
    const urn = (name: string) => `urn:pulumi:s::k8s-vnf::k8s-vnf:openstack:Server$openstack:compute/instance:Instance::${name}`;
    const type = "openstack:compute/instance:Instance";
    /** A step's two events as the CLI sends them: the pre-event before the step, the outputs after it. */
    const step = (op: string, name: string, oldId: string | null, newId: string | null) => [
        { resourcePreEvent: { metadata: { op, urn: urn(name), type, old: oldId ? { id: oldId } : null, new: newId !== null ? { id: op === "create" || op === "create-replacement" ? "" : newId } : null } } },
        { resOutputsEvent: { metadata: { op, urn: urn(name), type, old: oldId ? { id: oldId } : null, new: newId !== null ? { id: newId } : null } } },
    ];

    it("each changed server is its VNFC by server id, whatever its resource is named; servers that are no VNFC are left out", () => {
        const changes = new ServerChanges();
        const events = [
            ...step("create", "v-storage-server-vm", null, "srv-storage"),
            ...step("create", "v-registry-server-vm", null, "srv-registry"),
            ...step("delete-replaced", "v-worker-1-vm", "srv-w1-old", null),
            ...step("replace", "v-worker-1-vm", "srv-w1-old", "srv-w1-new"),
            ...step("create-replacement", "v-worker-1-vm", "srv-w1-old", "srv-w1-new"),
            ...step("delete", "v-worker-2-vm", "srv-w2", null),
            ...step("same", "v-master-0-vm", "srv-m0", "srv-m0"),
            ...step("create", "v-ansible-vm", null, "srv-ansible"),
        ];
        for (const e of events) changes.see(e);
        const before = [
            { id: "v-worker-1", vduId: "workerNode", computeResource: { resourceId: "srv-w1-old" } },
            { id: "v-worker-2", vduId: "workerNode", computeResource: { resourceId: "srv-w2" } },
        ];
        const after = [
            { id: "v-storage", vduId: "storage_server", serverId: "srv-storage" },
            { id: "v-registry", vduId: "PrivateRegistryVDU", serverId: "srv-registry" },
            { id: "v-worker-1", vduId: "workerNode", serverId: "srv-w1-new" },
            { id: "v-master-0", vduId: "masterNode", serverId: "srv-m0" },
        ];
        assert.deepEqual(
            changes.affectedVnfcs(before, after).map((v) => [v.id, v.vduId, v.changeType, v.computeResource.resourceId]),
            [
                ["v-storage", "storage_server", "ADDED", "srv-storage"],
                ["v-registry", "PrivateRegistryVDU", "ADDED", "srv-registry"],
                ["v-worker-1", "workerNode", "MODIFIED", "srv-w1-new"],
                ["v-worker-2", "workerNode", "REMOVED", "srv-w2"],
            ],
        );
        assert.equal(changes.count, 5, "the master's same step changes nothing");
    });
});

describe("LCM service authentication", function () {
    this.timeout(60_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-auth-"));
    let service: ServiceProcess;
    before(async () => {
        service = await ServiceProcess.start(dataDir, { K8S_VNF_LCM_TOKEN: "lcm-token-for-tests" });
    });
    after(async () => {
        await service?.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("with a token set, a request without it is a 401 ProblemDetails; with it, answered", async () => {
        const without = await fetch(`${service.url}/vnflcm/v1/vnf_instances`, { headers: { "x-auth-token": "notused" } });
        assert.equal(without.status, 401);
        assert.match(((await without.json()) as any).detail, /bearer authentication/);
        const withToken = await fetch(`${service.url}/vnflcm/v1/vnf_instances`, { headers: { authorization: "Bearer lcm-token-for-tests" } });
        assert.equal(withToken.status, 200);
        assert.deepEqual(await withToken.json(), []);
    });
});

const SEED_VIM = "05ef7ca5-7e32-4a6b-a03d-52f811f04496";
/** The vnfdId seed 000's instance is created with: its package is examples/package under `serve --packages`. */
const STORAGE_VNFD = "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177";

describe("LCM operations as stack updates: the real openstack client, the Automation API, the stand-in Pulumi CLI running the program on lab hosts", function () {
    this.timeout(300_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-ops-"));
    const knobs = path.join(dataDir, "pulumi-standin");
    // VNF packages as `serve --packages` takes them: one unpacked folder per vnfdId.
    const packagesDir = path.join(dataDir, "packages");
    fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(packagesDir, STORAGE_VNFD), { recursive: true });
    let lab: Lab;
    let project: ServiceProject;
    let env: Record<string, string>;
    let service: ServiceProcess;
    let callback: Callback;
    let id = "";
    const stack = () => `vnf-${id}`;
    const openstack = vnflcmClient(() => service.url);
    const refused = (...args: string[]) =>
        openstack(...args).then(
            () => assert.fail(`openstack vnflcm ${args.join(" ")} succeeded`),
            (e: { stderr: string }) => e.stderr,
        );
    const json = async (...args: string[]) => JSON.parse(await openstack(...args, "-f", "json"));
    const api = (method: string, route: string, body?: unknown) => service.call(method, route, body);
    /** Waits until the instance's newest operation leaves STARTING/PROCESSING/ROLLING_BACK; returns it. */
    const settle = async () => {
        for (let i = 0; i < 1200; i++) {
            const ops = (await api("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields")).body.filter((o: any) => o.vnfInstanceId === id);
            const last = ops.at(-1);
            if (last && !["STARTING", "PROCESSING", "ROLLING_BACK"].includes(last.operationState)) return last;
            await new Promise((r) => setTimeout(r, 250));
        }
        assert.fail("the operation did not finish");
    };
    const knob = (name: string, value: string | undefined) => (value === undefined ? fs.rmSync(path.join(knobs, name), { force: true }) : fs.writeFileSync(path.join(knobs, name), value));
    const delays = (ms: Record<string, number> | undefined) => knob("delays.json", ms && JSON.stringify(ms));
    /** The stand-in's command lines, `<pid> <arguments>`. */
    const calls = () => fs.readFileSync(path.join(knobs, "calls"), "utf8").trim().split("\n");
    /**
     * The PID of a Pulumi command that has started since `after` calls were recorded ("env": an update holding its lock).
     * Waits up to two minutes: on a loaded 2-core CI machine the commands before an update (stack select, config) took over 30 s.
     */
    const startedCommand = async (after: number, command: string) => {
        for (let i = 0; i < 1200; i++) {
            const line = calls().slice(after).find((l) => l.split(" ")[1] === command);
            if (line) return Number(line.split(" ")[0]);
            await new Promise((r) => setTimeout(r, 100));
        }
        assert.fail(`no pulumi ${command} started`);
    };
    const locks = () => {
        const dir = path.join(project.dir, ".pulumi-state/.pulumi/locks/organization/k8s-vnf", stack());
        return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
    };
    const vnfcs = async () => (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo.vnfcResourceInfo as any[];
    const workerCount = async () => (await vnfcs()).filter((v) => v.vduId === "workerNode").length;
    const seedFile = (name: string) => {
        const file = path.join(dataDir, name);
        // The client parses the file as strict JSON; the seeds carry Tacker's '#' comments.
        fs.writeFileSync(file, JSON.stringify(seedBody(lab, name)));
        return file;
    };

    before(async function () {
        if (!clientAvailable()) {
            if (process.env.CI) assert.fail("the openstack client is missing; .ci/run installs python3-openstackclient and python3-tackerclient");
            this.skip();
        }
        lab = await startLab(this);
        project = serviceProject();
        env = standInEnv(knobs, lab);
        service = await ServiceProcess.start(dataDir, env, ["--project", project.dir, "--packages", packagesDir]);
        callback = await Callback.start();
        const file = path.join(dataDir, "subscription.json");
        fs.writeFileSync(file, JSON.stringify({ callbackUri: callback.url, filter: { notificationTypes: ["VnfLcmOperationOccurrenceNotification"] } }));
        await openstack("subsc", "create", file);
    });
    after(async () => {
        await service?.stop();
        stopLeftoverCommands(knobs);
        await callback?.stop();
        await lab?.stop();
        project?.remove();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("a VIM registered with the service is named by the seed's vimId; its password is never returned", async () => {
        const registered = await api("POST", "/k8s-vnf/v1/vims", { id: SEED_VIM, name: "openstack-lab", authUrl: "http://keystone.example:5000/v3", username: "admin", password: "vim-password-not-returned", projectName: "admin" });
        assert.equal(registered.status, 201);
        for (const shown of [registered.body, (await api("GET", `/k8s-vnf/v1/vims/${SEED_VIM}`)).body, ...(await api("GET", "/k8s-vnf/v1/vims")).body]) {
            assert.ok(!JSON.stringify(shown).includes("vim-password-not-returned"));
        }
    });

    it("instantiate with the seed's body: the program builds 1 master + 2 workers on lab hosts, with the VIM's credentials", async () => {
        id = (await json("create", "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177", "--name", "vnf-simple")).ID;
        assert.match(await openstack("instantiate", id, seedFile("simple-instantiate.json")), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const shown = await api("GET", `/vnflcm/v1/vnf_instances/${id}`);
        assert.equal(shown.body.instantiationState, "INSTANTIATED");
        assert.deepEqual(shown.body.instantiatedVnfInfo.vnfcResourceInfo.map((v: any) => [v.id, v.vduId]), [
            [`${stack()}-master-0`, "masterNode"],
            [`${stack()}-worker-0`, "workerNode"],
            [`${stack()}-worker-1`, "workerNode"],
        ]);
        assert.deepEqual(shown.body.instantiatedVnfInfo.scaleStatus.find((s: any) => s.aspectId === "worker_instance"), { aspectId: "worker_instance", scaleLevel: 0 });
        assert.deepEqual(lab.hostNames().sort(), [`${stack()}-master-0`, `${stack()}-worker-0`, `${stack()}-worker-1`]);
        assert.ok(calls().some((l) => / env OS_AUTH_URL=http:\/\/keystone\.example:5000\/v3 OS_PASSWORD=set$/.test(l)), "the VIM's credentials reached the update");
        assert.ok(!JSON.stringify((await api("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields")).body).includes(lab.password), "request passwords are not shown in operationParams");
        assert.ok(!JSON.stringify(shown.body).includes("__"), "no internal fields");
    });

    it("the stack config is what the CLI accepts: maps as maps (Pulumi.yaml type object), each secret an encrypted leaf set from standard input", async () => {
        const config = configOf(project, stack());
        assert.deepEqual(config["k8s-vnf:masters"], { aspectId: "master_instance", connectionPoint: "masterNode_CP1", username: "ubuntu", count: 1, networkId: "71a3fbd1-f31e-4c2c-b0e2-26267d64a9ee", password: "[secure]" });
        assert.equal((config["k8s-vnf:proxy"] as any).httpProxy, "[secure]");
        assert.equal(config["k8s-vnf:flavour"], "simple");
        const secretSets = calls().filter((l) => / config set --stack \S+ --secret --raw --path /.test(l));
        assert.deepEqual(secretSets.map((l) => l.split(" ").at(-2)).sort(), ["masters.password", "proxy.httpProxy", "proxy.httpsProxy", "workers.password"]);
    });

    it("subscribers get START and RESULT of every operation", async () => {
        await callback.until((r) => r.length >= 2, 5000);
        assert.deepEqual(callback.received.slice(0, 2).map((n) => [n.notificationStatus, n.operation, n.operationState]), [
            ["START", "INSTANTIATE", "STARTING"],
            ["RESULT", "INSTANTIATE", "COMPLETED"],
        ]);
    });

    it("affectedVnfcs of the instantiate: every VNFC ADDED, ids from the program's vnfcResources", async () => {
        const op = (await api("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields")).body.find((o: any) => o.vnfInstanceId === id && o.operation === "INSTANTIATE");
        assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]).sort(), (await vnfcs()).map((v) => [v.id, "ADDED"]).sort());
    });

    // Seed 003: the cluster just instantiated is a Kubernetes VIM. CNFs through the service run on the real
    // kubelet's cluster (realKubelet.lab.spec.ts), their planning in process (lcmVim.spec.ts).
    const clusterObjects = (kind: string, namespace?: string) => listObjects(path.join(lab.clusterState, stack()), { kind, namespace });

    it("the cluster is a Kubernetes VIM: `openstack vim list` (client) shows kubernetes_vim at its API endpoint; the instance names it in vimConnectionInfo; no token anywhere", async () => {
        const vimCommand = (...args: string[]) => exec("openstack", ["--os-auth-type", "none", "--os-endpoint", service.url, "vim", ...args, "-f", "json"], { timeout: 60_000 });
        const vim = JSON.parse((await vimCommand("list")).stdout).find((v: any) => v.Name === "kubernetes_vim");
        assert.equal(vim?.Type, "kubernetes");
        const shown = JSON.parse((await vimCommand("show", "kubernetes_vim")).stdout);
        const master = (await vnfcs()).find((v) => v.vduId === "masterNode");
        assert.equal(shown.auth_url, `https://${lab.host(master.id).address}:6443`);
        const instance = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body;
        assert.ok(instance.vimConnectionInfo.some((v: any) => v.vimId === vim.ID && v.vimType === "ETSINFV.KUBERNETES.V_1"), JSON.stringify(instance.vimConnectionInfo));
        const token = Buffer.from(clusterObjects("Secret", "kube-system").find((s) => s.metadata.name === "k8s-vnf-vim-token")!.data.token, "base64").toString();
        for (const route of ["/v1.0/vims", `/v1.0/vims/${vim.ID}`, `/vnflcm/v1/vnf_instances/${id}`, "/vnflcm/v1/vnf_lcm_op_occs"]) assert.ok(!JSON.stringify((await api("GET", route)).body).includes(token), route);
    });

    it("a failed entire heal rolled back (client) restores the previous stack config exactly: the heal key it added is removed, no VM is replaced", async () => {
        const configBefore = configOf(project, stack());
        assert.equal(configBefore["k8s-vnf:heal"], undefined);
        const serversBefore = (await vnfcs()).map((v) => v.computeResource.resourceId);
        knob("fail-next", "stand-in: quota exceeded");
        await api("POST", `/vnflcm/v1/vnf_instances/${id}/heal`, {});
        const op = await settle();
        assert.equal(op.operationState, "FAILED_TEMP");
        assert.match(op.error.detail, /quota exceeded/);
        assert.deepEqual((configOf(project, stack())["k8s-vnf:heal"] as any)?.generation, 1, "the failed heal had set its generation");
        await openstack("op", "rollback", op.id);
        assert.equal((await settle()).operationState, "ROLLED_BACK");
        assert.deepEqual(configOf(project, stack()), configBefore);
        assert.deepEqual((await vnfcs()).map((v) => v.computeResource.resourceId), serversBefore);
    });

    it("scale out by one with the client: a third worker, scale level 1, reported ADDED; scale in below the minimum is refused and runs nothing", async () => {
        assert.match(await openstack("scale", "--type", "SCALE_OUT", "--aspect-id", "worker_instance", "--number-of-steps", "1", id), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const info = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo;
        assert.equal(await workerCount(), 3);
        assert.deepEqual(info.scaleStatus.find((s: any) => s.aspectId === "worker_instance"), { aspectId: "worker_instance", scaleLevel: 1 });
        assert.ok(lab.hostNames().includes(`${stack()}-worker-2`));
        const before = calls().length;
        const error = await refused("scale", "--type", "SCALE_IN", "--aspect-id", "worker_instance", "--number-of-steps", "5", id);
        assert.match(error, /numberOfSteps: SCALE_IN by 5 would leave -2 workers, below the minimum 2/);
        assert.equal(calls().length, before, "nothing ran");
        assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]), [[`${stack()}-worker-2`, "ADDED"]]);
    });

    it("the seed's scale-in body (numberOfSteps as a string) works as it is; the removed worker is reported REMOVED", async () => {
        const r = await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, JSON.parse(fs.readFileSync(path.join(REQUESTS_DIR, "scale-in.json"), "utf8")));
        assert.equal(r.status, 202);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.equal(await workerCount(), 2);
        assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]), [[`${stack()}-worker-2`, "REMOVED"]]);
    });

    it("operate: a graceful stop is two updates (drain, then every VM shut off); while STOPPED a scale is a 409; a start is one update back to STARTED", async () => {
        const instance = async () => (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body;
        assert.ok((await instance())._links.operate?.href.endsWith(`/vnf_instances/${id}/operate`), "the operate link");
        const operate = (body: unknown) => api("POST", `/vnflcm/v1/vnf_instances/${id}/operate`, body);
        const ups = (since: number) => calls().slice(since).filter((l) => l.split(" ")[1] === "up").length;
        assert.equal((await operate({ changeStateTo: "STARTED" })).status, 409, "already STARTED");
        const misplaced = await operate({ changeStateTo: "STARTED", stopType: "GRACEFUL" });
        assert.deepEqual([misplaced.status, misplaced.body.detail], [400, "stopType: only for changeStateTo STOPPED"]);

        let before = calls().length;
        assert.equal((await operate({ changeStateTo: "STOPPED", stopType: "GRACEFUL", gracefulStopTimeout: 5 })).status, 202);
        let op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.equal(ups(before), 2, "drain first, then the VMs");
        assert.deepEqual(configOf(project, stack())["k8s-vnf:operate"], { vnfState: "STOPPED", drained: true, drainTimeout: 5 });
        assert.equal((await instance()).instantiatedVnfInfo.vnfState, "STOPPED");
        assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]).sort(), (await vnfcs()).map((v) => [v.id, "MODIFIED"]).sort());
        for (const v of await vnfcs()) await assert.rejects(lab.inside(v.id, "true"), `${v.id} is shut off`);

        before = calls().length;
        const scale = await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" });
        assert.equal(scale.status, 409);
        assert.match(scale.body.detail, /is STOPPED: its VMs are shut off, so scale cannot reach them; start it first/);
        assert.equal((await operate({ changeStateTo: "STOPPED" })).status, 409, "already STOPPED");
        assert.equal(calls().length, before, "nothing ran");

        assert.equal((await operate({ changeStateTo: "STARTED" })).status, 202);
        op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.equal(ups(before), 1);
        assert.equal((await instance()).instantiatedVnfInfo.vnfState, "STARTED");
        for (const v of await vnfcs()) assert.equal((await lab.inside(v.id, "echo up")).trim(), "up", `${v.id} runs`);
    });

    it("change-ext-conn (client) moves the workers to another network one worker per update: each replaced on its new port and joined again; the master stays. change_flavour is refused saying why", async () => {
        const before = await vnfcs();
        const address = (name: string) => lab.host(name).address;
        const addressesBefore = Object.fromEntries(before.map((v) => [v.id, address(v.id)]));
        const file = path.join(dataDir, "change-ext-conn.json");
        const moved = "5b2f2a8e-3f0c-4f6e-9d1e-7f3c2a1b9c00";
        fs.writeFileSync(file, JSON.stringify({ extVirtualLinks: [{ id: "net1_worker", resourceId: moved, extCps: [{ cpdId: "workerNode_CP2", cpConfig: [{ cpProtocolData: [{ layerProtocol: "IP_OVER_ETHERNET" }] }] }] }] }));
        const since = calls().length;
        assert.match(await openstack("change-ext-conn", id, file), /has been accepted/);
        const op = await settle();
        assert.deepEqual([op.operation, op.operationState], ["CHANGE_EXT_CONN", "COMPLETED"], JSON.stringify(op.error));
        assert.equal(calls().slice(since).filter((l) => l.split(" ")[1] === "up").length, 2, "one update per worker");
        const after = await vnfcs();
        const replaced = after.filter((v, i) => v.computeResource.resourceId !== before[i].computeResource.resourceId).map((v) => v.vduId);
        assert.deepEqual(replaced, ["workerNode", "workerNode"]);
        for (const v of after.filter((x) => x.vduId === "workerNode")) assert.notEqual(address(v.id), addressesBefore[v.id], `${v.id} on its new port`);
        const master = after.find((v) => v.vduId === "masterNode")!;
        assert.equal(address(master.id), addressesBefore[master.id]);
        const workers = configOf(project, stack())["k8s-vnf:workers"] as any;
        assert.deepEqual([workers.networkId, workers.portMove], [moved, undefined]);

        const settled = calls().length;
        const refusedMaster = await api("POST", `/vnflcm/v1/vnf_instances/${id}/change_ext_conn`, { extVirtualLinks: [{ id: "x", resourceId: moved, extCps: [{ cpdId: "masterNode_CP1" }] }] });
        assert.equal(refusedMaster.status, 422);
        const flavour = await api("POST", `/vnflcm/v1/vnf_instances/${id}/change_flavour`, { newFlavourId: "complex" });
        assert.deepEqual([flavour.status, flavour.body.detail], [422, "newFlavourId: simple → complex changes the control plane's endpoint (the master's address ↔ the HA VIP), which is in the API server's certificate and every node's kubeconfig; instantiate a new VNF of flavour complex instead"]);
        assert.equal(calls().length, settled, "a refusal runs nothing");
    });

    it("an instantiate whose config the program would refuse is a 400 naming the field, before anything runs", async () => {
        // The instance's package (--packages) has no registry image: the request's field is named.
        const other = (await json("create", STORAGE_VNFD, "--name", "vnf-registry")).ID;
        const before = calls().length;
        const r = await api("POST", `/vnflcm/v1/vnf_instances/${other}/instantiate`, seedBody(lab, "registry-vnf-instantiate.json", { withoutVim: true }));
        assert.equal(r.status, 400);
        assert.match(r.body.detail, /additionalParams\.private_registry_installation_param\.image_path: Files\/images\/private_registry\.tar does not exist in the package directory/);
        assert.equal(calls().length, before, "nothing ran");
        await api("DELETE", `/vnflcm/v1/vnf_instances/${other}`);
        const noPackage = await api("POST", `/vnflcm/v1/vnf_instances/${(await json("create", "no-such-vnfd")).ID}/instantiate`, seedBody(lab, "storage-instantiate.json", { withoutVim: true }));
        assert.equal(noPackage.status, 400, "an instance whose vnfdId has no package");
        assert.match(noPackage.body.detail, /no package for vnfdId "no-such-vnfd": put the unpacked package in .*\/packages\/<vnfdId>/);
        assert.equal(calls().length, before, "nothing ran");
    });

    it("healing the only master node by node is refused before anything runs", async () => {
        const master = (await vnfcs()).find((v) => v.id.endsWith("-master-0"));
        const error = await refused("heal", "--vnfc-instance", master.id, "--", id);
        assert.match(error, /heal\.nodes\.master-0: a single-master cluster cannot heal its master node by node/);
    });

    it("two operations on one instance at once: one 202, one 409", async () => {
        delays({ up: 1500 });
        try {
            const body = { type: "SCALE_OUT", aspectId: "worker_instance" };
            const [a, b] = await Promise.all([api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, body), api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, body)]);
            assert.deepEqual([a.status, b.status].sort(), [202, 409]);
            assert.match((a.status === 409 ? a : b).body.detail, /one operation at a time/);
            assert.equal((await settle()).operationState, "COMPLETED");
            assert.equal(await workerCount(), 3);
        } finally {
            delays(undefined);
        }
    });

    it("a crash mid-update: after the restart the dead service's `pulumi up` is stopped before anything else, the operation is FAILED_TEMP, and op retry (client) is the only update", async () => {
        delays({ up: 300_000 });
        const before = calls().length;
        let orphan: number;
        try {
            const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_IN", aspectId: "worker_instance", numberOfSteps: 1 });
            orphan = await startedCommand(before, "env");
            await service.crash();
            assert.ok(alive(orphan), "the dead service's pulumi up is still running, holding the stack's lock");
            assert.equal(locks().length, 1);
            service = await ServiceProcess.start(dataDir, env, ["--project", project.dir, "--packages", packagesDir]);
            const op = await json("op", "show", accepted.location!.split("/").pop()!);
            assert.equal(op["Operation State"], "FAILED_TEMP");
            assert.match(JSON.stringify(op.Error), new RegExp(`the service restarted while the operation was running: its Pulumi command \\(pid ${orphan}\\) was cancelled; the stack's lock was cleared`));
            assert.equal(alive(orphan), false);
            assert.deepEqual(locks(), []);
        } finally {
            delays(undefined);
        }
        const retried = calls().length;
        await openstack("op", "retry", (await settle()).id);
        assert.equal((await settle()).operationState, "COMPLETED");
        assert.equal(calls().slice(retried).filter((l) => l.split(" ")[1] === "up").length, 1);
        assert.equal(await workerCount(), 2);
    });

    it("a crash that also killed the `pulumi up`: its stale lock is cleared with pulumi cancel on restart, so op retry completes", async () => {
        delays({ up: 300_000 });
        const before = calls().length;
        try {
            const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" });
            const orphan = await startedCommand(before, "env");
            await service.crash();
            process.kill(-orphan, "SIGKILL");
            for (let i = 0; i < 100 && alive(orphan); i++) await new Promise((r) => setTimeout(r, 50));
            assert.equal(locks().length, 1, "a killed update leaves its lock");
            service = await ServiceProcess.start(dataDir, env, ["--project", project.dir, "--packages", packagesDir]);
            const op = (await api("GET", `/vnflcm/v1/vnf_lcm_op_occs/${accepted.location!.split("/").pop()}`)).body;
            assert.equal(op.operationState, "FAILED_TEMP");
            assert.match(op.error.detail, /its Pulumi command \(pid \d+\) was no longer running; the stack's lock was cleared \(pulumi cancel\)/);
            assert.deepEqual(locks(), []);
            assert.ok(calls().some((l) => l.endsWith(`cancel --yes --stack ${stack()} --non-interactive`)));
        } finally {
            delays(undefined);
        }
        await openstack("op", "retry", (await settle()).id);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.equal(await workerCount(), 3);
    });

    it("a cancel that arrives while `pulumi stack select` runs is not lost: no update starts, FAILED_TEMP", async () => {
        delays({ "stack select": 4000 });
        const before = calls().length;
        let opId: string;
        try {
            opId = (await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_IN", aspectId: "worker_instance" })).location!.split("/").pop()!;
            await startedCommand(before, "stack");
            assert.equal((await api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/cancel`, { cancelMode: "GRACEFUL" })).status, 202);
            const op = await settle();
            assert.equal(op.operationState, "FAILED_TEMP");
            assert.match(op.error.detail, /cancelled/);
            await new Promise((r) => setTimeout(r, 1000));
            assert.deepEqual(calls().slice(before).map((l) => l.split(" ")[1]).filter((c) => c !== "stack" && c !== "version"), [], "no command after the cancel");
        } finally {
            delays(undefined);
        }
        await api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/rollback`);
        assert.equal((await settle()).operationState, "ROLLED_BACK");
        assert.equal(await workerCount(), 3);
    });

    it("a failed update: FAILED_TEMP with the error; op fail (client) makes it FAILED", async () => {
        knob("fail-next", "stand-in: the OpenStack API answered 503");
        try {
            await openstack("scale", "--type", "SCALE_IN", "--aspect-id", "worker_instance", id);
        } catch (e) {
            knob("fail-next", undefined);
            throw e;
        }
        const op = await settle();
        assert.equal(op.operationState, "FAILED_TEMP");
        assert.match(op.error.detail, /503/);
        const failed = await json("op", "fail", op.id);
        assert.equal(failed["Operation State"], "FAILED");
    });

    it("progress streams as server-sent events while an operation runs, and the occurrence records it", async () => {
        delays({ up: 800 });
        try {
            const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_IN", aspectId: "worker_instance" });
            const stream = await fetch(`${accepted.location}/progress`);
            assert.match(String(stream.headers.get("content-type")), /text\/event-stream/);
            const text = await stream.text();
            assert.match(text, /event: state\ndata: \{"operationState":"(STARTING|PROCESSING)"\}/);
            assert.match(text, /event: progress\ndata: \{"engineEvents":\d+/);
            assert.match(text, /event: state\ndata: \{"operationState":"COMPLETED"\}/);
            const op = await settle();
            assert.ok(op.progress.resourcesDone > 0, JSON.stringify(op.progress));
            assert.equal(await workerCount(), 2);
        } finally {
            delays(undefined);
        }
    });

    it("a dead callback never blocks an operation", async () => {
        const dead = await Callback.start();
        const sub = await api("POST", "/vnflcm/v1/subscriptions", { callbackUri: dead.url });
        assert.equal(sub.status, 201);
        await dead.stop();
        const started = Date.now();
        await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" });
        assert.equal((await settle()).operationState, "COMPLETED");
        assert.ok(Date.now() - started < 120_000, "not held up by notification retries");
        await api("DELETE", `/vnflcm/v1/subscriptions/${sub.body.id}`);
    });

    it("the lab's password is nowhere to be seen: not on a Pulumi command line, in a stack file, a GET, a notification or the service's output", async () => {
        const seen = [
            fs.readFileSync(path.join(knobs, "calls"), "utf8"),
            ...fs.readdirSync(path.join(project.dir, "stacks")).map((f) => fs.readFileSync(path.join(project.dir, "stacks", f), "utf8")),
            JSON.stringify((await api("GET", "/vnflcm/v1/vnf_instances?all_fields")).body),
            JSON.stringify((await api("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields")).body),
            JSON.stringify(callback.received),
            service.output,
        ];
        for (const text of seen) assert.ok(!text.includes(lab.password), text.slice(0, 200));
    });

    it("terminate (client): destroy, NOT_INSTANTIATED, the lab hosts are gone; then delete works", async () => {
        assert.match(await openstack("terminate", "--termination-type", "FORCEFUL", id), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.equal((await json("show", id))["Instantiation State"], "NOT_INSTANTIATED");
        assert.ok(calls().some((l) => l.includes(`destroy --yes --skip-preview`) && l.includes(`--stack ${stack()}`)));
        assert.deepEqual(lab.hostNames(), []);
        await openstack("delete", id);
    });

    it("without the Pulumi CLI an operation fails saying so", async () => {
        const other = await ServiceProcess.start(fs.mkdtempSync(path.join(dataDir, "no-cli-")), { K8S_VNF_PULUMI_ROOT: path.join(dataDir, "nowhere") });
        try {
            const instance = (await other.call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "d" })).body;
            const accepted = await other.call("POST", `/vnflcm/v1/vnf_instances/${instance.id}/instantiate`, seedBody(lab, "simple-instantiate.json", { withoutVim: true }));
            assert.equal(accepted.status, 202);
            assert.equal(await waitForOp(accepted.location!, ["FAILED_TEMP"]), "FAILED_TEMP");
            const op = (await (await fetch(accepted.location!)).json()) as { error: { detail: string } };
            assert.match(op.error.detail, /the Pulumi CLI is not installed where the service looks for it/);
        } finally {
            await other.stop();
        }
    });

    it("a Pulumi CLI older than 3.208 (no replacementTrigger, so heals would do nothing) is refused, saying so, before any command", async () => {
        const otherKnobs = path.join(dataDir, "old-cli");
        const otherEnv = standInEnv(otherKnobs, lab);
        fs.writeFileSync(path.join(otherKnobs, "version"), "v3.205.0");
        const other = await ServiceProcess.start(fs.mkdtempSync(path.join(dataDir, "old-cli-data-")), otherEnv, ["--project", project.dir]);
        try {
            const instance = (await other.call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "d" })).body;
            const accepted = await other.call("POST", `/vnflcm/v1/vnf_instances/${instance.id}/instantiate`, seedBody(lab, "simple-instantiate.json", { withoutVim: true }));
            assert.equal(await waitForOp(accepted.location!, ["FAILED_TEMP", "COMPLETED"]), "FAILED_TEMP");
            const op = (await (await fetch(accepted.location!)).json()) as { error: { detail: string } };
            assert.match(op.error.detail, /the Pulumi CLI at .*\/bin\/pulumi is v3\.205\.0; this service needs v3\.208\.0 or newer \(heal replaces VMs through replacementTrigger/);
            assert.deepEqual(fs.readFileSync(path.join(otherKnobs, "calls"), "utf8").trim().split("\n").map((l) => l.split(" ").slice(1).join(" ")), ["version --non-interactive"]);
        } finally {
            await other.stop();
        }
    });
});

describe("LCM service: parallel limit, graceful termination, notification retries (simple clusters on lab hosts)", function () {
    this.timeout(300_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-limits-"));
    const knobs = path.join(dataDir, "pulumi-standin");
    let lab: Lab;
    let project: ServiceProject;
    let env: Record<string, string>;
    let service: ServiceProcess;
    let callback: Callback;
    const api = (method: string, route: string, body?: unknown) => service.call(method, route, body);
    const newInstance = async () => (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "d" })).body.id as string;
    const instantiate = async (instance: string) => (await api("POST", `/vnflcm/v1/vnf_instances/${instance}/instantiate`, seedBody(lab, "simple-instantiate.json", { withoutVim: true }))).location!;
    const delays = (ms: Record<string, number> | undefined) => (ms ? fs.writeFileSync(path.join(knobs, "delays.json"), JSON.stringify(ms)) : fs.rmSync(path.join(knobs, "delays.json"), { force: true }));
    const calls = () => fs.readFileSync(path.join(knobs, "calls"), "utf8").trim().split("\n");
    const waitLong = async (opUrl: string, states: string[]) => {
        for (let i = 0; i < 600; i++) {
            const s = await opState(opUrl);
            if (states.includes(s)) return s;
            await new Promise((r) => setTimeout(r, 200));
        }
        throw new Error(`${opUrl} never reached ${states.join("/")}`);
    };

    before(async function () {
        lab = await startLab(this);
        project = serviceProject();
        env = standInEnv(knobs, lab);
        service = await ServiceProcess.start(dataDir, env, ["--max-parallel", "1", "--project", project.dir]);
        callback = await Callback.start();
    });
    after(async () => {
        await service?.stop();
        stopLeftoverCommands(knobs);
        await callback?.stop();
        await lab?.stop();
        project?.remove();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("with --max-parallel 1, a second instance's operation waits in STARTING until the first is done", async () => {
        delays({ up: 2000 });
        try {
            const [a, b] = [await newInstance(), await newInstance()];
            const first = await instantiate(a);
            await waitLong(first, ["PROCESSING"]);
            const second = await instantiate(b);
            await new Promise((r) => setTimeout(r, 500));
            assert.equal(await opState(second), "STARTING");
            assert.equal(await waitLong(first, ["COMPLETED", "FAILED_TEMP"]), "COMPLETED");
            assert.equal(await waitLong(second, ["COMPLETED", "FAILED_TEMP"]), "COMPLETED");
        } finally {
            delays(undefined);
        }
    });

    it("a crash with one operation processing and one waiting: after the restart FAILED_TEMP and ROLLED_BACK; deleting an instantiated instance is a 409", async () => {
        delays({ up: 300_000 });
        let processing: string;
        let waiting: string;
        try {
            const [a, b] = [await newInstance(), await newInstance()];
            processing = (await instantiate(a)).split("/").pop()!;
            await waitLong(`${service.url}/vnflcm/v1/vnf_lcm_op_occs/${processing}`, ["PROCESSING"]);
            waiting = (await instantiate(b)).split("/").pop()!;
            await service.crash();
        } finally {
            delays(undefined);
        }
        service = await ServiceProcess.start(dataDir, env, ["--max-parallel", "1", "--project", project.dir]);
        assert.equal(await opState(`${service.url}/vnflcm/v1/vnf_lcm_op_occs/${processing}`), "FAILED_TEMP");
        assert.equal(await opState(`${service.url}/vnflcm/v1/vnf_lcm_op_occs/${waiting}`), "ROLLED_BACK");

        const instantiated = (await api("GET", "/vnflcm/v1/vnf_instances")).body.find((v: any) => v.instantiationState === "INSTANTIATED");
        const refused = await api("DELETE", `/vnflcm/v1/vnf_instances/${instantiated.id}`);
        assert.equal(refused.status, 409);
        assert.match(refused.body.detail, /is INSTANTIATED: terminate it before deleting it/);
    });

    it("a GRACEFUL terminate waits its timeout before its first Pulumi command; FORCEFUL does not", async () => {
        const instantiated = (await api("GET", "/vnflcm/v1/vnf_instances")).body.filter((v: any) => v.instantiationState === "INSTANTIATED").map((v: any) => v.id);
        assert.equal(instantiated.length, 2);
        /** Time from the 202 until the terminate's first command for the stack (`stack select`). */
        const untilFirstCommand = async (instance: string, body: object) => {
            const stackSelect = (l: string) => l.includes(`stack select --stack vnf-${instance}`);
            const before = calls().filter(stackSelect).length;
            const location = (await api("POST", `/vnflcm/v1/vnf_instances/${instance}/terminate`, body)).location!;
            const accepted = Date.now();
            while (calls().filter(stackSelect).length === before) await new Promise((r) => setTimeout(r, 50));
            const waited = Date.now() - accepted;
            assert.equal(await waitLong(location, ["COMPLETED", "FAILED_TEMP"]), "COMPLETED");
            return waited;
        };
        // 15 s apart: on a loaded 2-core CI machine a FORCEFUL terminate's first command came 5.5 s after its 202.
        const graceful = await untilFirstCommand(instantiated[0], { terminationType: "GRACEFUL", gracefulTerminationTimeout: 15 });
        const forceful = await untilFirstCommand(instantiated[1], { terminationType: "FORCEFUL", gracefulTerminationTimeout: 15 });
        assert.ok(graceful >= 15_000, `graceful waited ${graceful} ms`);
        assert.ok(forceful < 15_000 && graceful - forceful >= 10_000, `forceful waited ${forceful} ms, graceful ${graceful} ms`);
        assert.deepEqual(lab.hostNames(), []);
    });

    it("a notification a subscriber refuses is delivered again, once", async () => {
        await api("POST", "/vnflcm/v1/subscriptions", { callbackUri: callback.url, filter: { notificationTypes: ["VnfIdentifierCreationNotification"] } });
        callback.failFirst = 1;
        const id = await newInstance();
        await callback.until((r) => r.length > 0, 6000);
        assert.equal(callback.attempts, 2);
        assert.deepEqual(callback.received.map((n) => n.vnfInstanceId), [id]);
    });
});
