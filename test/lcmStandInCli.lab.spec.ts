/**
 * The LCM service's operations on the stand-in Pulumi CLI (test/support/stand-ins/pulumi-cli), which runs the
 * real program through the test engine on lab hosts, for what the real CLI and the lab cannot be made to do yet:
 * - change-ext-conn moves workers to a second Neutron network, which the lab OpenStack API does not model;
 * - a cancel that must arrive while `pulumi stack select` runs, and the service's scheduling (--max-parallel,
 *   a crash with an operation waiting, a GRACEFUL terminate's wait), need Pulumi commands that take a set
 *   time: the stand-in's delays.
 * Everything else the service does around its operations runs on the real CLI: realLcm.lab.spec.ts,
 * realLcmOperations.lab.spec.ts, realLcmSeeds.lab.spec.ts, kubesprayLcm.lab.spec.ts.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Lab, labAvailable } from "./lab/lab";
import { Callback, clientAvailable, seedBody, vnflcmClient } from "./support/lcmClient";
import { PROJECT_DIR } from "./support/program";
import { opState, ServiceProcess } from "./support/serviceProcess";
import { ServiceProject, serviceProject } from "./support/serviceProject";
import { STAND_IN_PULUMI_ROOT } from "./support/stand-ins/pulumi-cli/client";

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

/** Stops what a suite here started: its service, the Pulumi commands it left, the callback, the lab, its folders. */
async function stopSuite(started: { service?: ServiceProcess; knobs: string; callback?: Callback; lab?: Lab; project?: ServiceProject; dataDir: string }): Promise<void> {
    await started.service?.stop();
    stopLeftoverCommands(started.knobs);
    await started.callback?.stop();
    await started.lab?.stop();
    started.project?.remove();
    fs.rmSync(started.dataDir, { recursive: true, force: true });
}

const SEED_VIM = "05ef7ca5-7e32-4a6b-a03d-52f811f04496";
/** The vnfdId seed 000's instance is created with: its package is examples/package under `serve --packages`. */
const STORAGE_VNFD = "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177";

describe("LCM operations on the stand-in Pulumi CLI (see the header): change-ext-conn, a cancel during `pulumi stack select`; the real openstack client, the Automation API, the program on lab hosts", function () {
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
    after(() => stopSuite({ service, knobs, callback, lab, project, dataDir }));

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
        const workers = project.stackConfig(stack())["k8s-vnf:workers"] as any;
        assert.deepEqual([workers.networkId, workers.portMove], [moved, undefined]);

        const settled = calls().length;
        const refusedMaster = await api("POST", `/vnflcm/v1/vnf_instances/${id}/change_ext_conn`, { extVirtualLinks: [{ id: "x", resourceId: moved, extCps: [{ cpdId: "masterNode_CP1" }] }] });
        assert.equal(refusedMaster.status, 422);
        const flavour = await api("POST", `/vnflcm/v1/vnf_instances/${id}/change_flavour`, { newFlavourId: "complex" });
        assert.deepEqual([flavour.status, flavour.body.detail], [422, "newFlavourId: simple → complex changes the control plane's endpoint (the master's address ↔ the HA VIP), which is in the API server's certificate and every node's kubeconfig; instantiate a new VNF of flavour complex instead"]);
        assert.equal(calls().length, settled, "a refusal runs nothing");
    });

    it("a cancel that arrives while `pulumi stack select` runs is not lost: no update starts, FAILED_TEMP", async () => {
        delays({ "stack select": 4000 });
        const before = calls().length;
        let opId: string;
        try {
            opId = (await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" })).location!.split("/").pop()!;
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
        assert.equal(await workerCount(), 2);
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
});

describe("LCM service on the stand-in Pulumi CLI (see the header): parallel limit, graceful termination, notification retries (simple clusters on lab hosts)", function () {
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
    after(() => stopSuite({ service, knobs, callback, lab, project, dataDir }));

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
