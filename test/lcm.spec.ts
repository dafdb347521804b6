import { strict as assert } from "node:assert";
import { execFile, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { parseRequestText } from "../config/requestText";
import { REQUESTS_DIR } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";
import { opState, ServiceProcess, waitForOp } from "./support/serviceProcess";

const exec = promisify(execFile);

/** A subscriber's callback endpoint on loopback: 204 to the test GET, records every notification. */
class Callback {
    readonly received: Record<string, any>[] = [];
    /** POSTs to refuse with a 500 before accepting (a flaky subscriber). */
    failFirst = 0;
    attempts = 0;
    private constructor(
        private readonly server: http.Server,
        readonly url: string,
    ) {}
    static async start(): Promise<Callback> {
        let self: Callback | undefined;
        const server = http.createServer((req, res) => {
            let body = "";
            req.on("data", (d) => (body += d));
            req.on("end", () => {
                if (req.method === "POST") {
                    self!.attempts++;
                    if (self!.failFirst > 0) {
                        self!.failFirst--;
                        res.writeHead(500).end();
                        return;
                    }
                    self!.received.push(JSON.parse(body));
                }
                res.writeHead(204).end();
            });
        });
        await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
        self = new Callback(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/notifications`);
        return self;
    }
    stop(): Promise<void> {
        return new Promise((r) => this.server.close(() => r()));
    }
}

const clientAvailable = () => spawnSync("openstack", ["--version"]).status === 0;

/** The seed's simple InstantiateVnfRequest without its VIM (the service's own OS_* are used). */
function instantiateBodyWithoutVim(): any {
    const body = parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8"), "simple") as any;
    delete body.vimConnectionInfo;
    return body;
}

describe("LCM service (SOL003 /vnflcm/v1) with the real openstack vnflcm client", function () {
    this.timeout(120_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-"));
    let service: ServiceProcess;
    let callback: Callback;
    const openstack = async (...args: string[]) => (await exec("openstack", ["--os-auth-type", "none", "--os-endpoint", service.url, "vnflcm", ...args], { timeout: 60_000 })).stdout;
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

    it("create: 201 with the instance, NOT_INSTANTIATED, and a creation notification to the subscriber", async () => {
        const created = await json("create", "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177", "--name", "vnf-simple", "--description", "seed 004 simple");
        instanceId = created.ID;
        assert.equal(created["VNF Instance Name"], "vnf-simple");
        assert.equal(created["Instantiation State"], "NOT_INSTANTIATED");
        for (let i = 0; i < 50 && callback.received.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
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
        assert.match(((await r.json()) as any).detail, /callbackUri: the test GET of .* answered 404, not 204/);
    });

    it("delete: 204, a deletion notification; then show is a 404 whose detail the client prints", async () => {
        const before = callback.received.length;
        await openstack("delete", instanceId);
        for (let i = 0; i < 50 && callback.received.length === before; i++) await new Promise((r) => setTimeout(r, 100));
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

const STANDIN_CLI = path.join(PROJECT_DIR, "test/support/stand-ins/pulumi-cli");
const SEED_VIM = "05ef7ca5-7e32-4a6b-a03d-52f811f04496";

describe("LCM operations as stack updates: the real openstack client, the Automation API, a stand-in Pulumi CLI", function () {
    this.timeout(180_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-ops-"));
    const pulumiState = path.join(dataDir, "pulumi-standin");
    const env = { K8S_VNF_PULUMI_ROOT: STANDIN_CLI, PULUMI_STANDIN_STATE: pulumiState, PULUMI_CONFIG_PASSPHRASE: "test-passphrase" };
    let service: ServiceProcess;
    let callback: Callback;
    let id = "";
    const openstack = async (...args: string[]) => (await exec("openstack", ["--os-auth-type", "none", "--os-endpoint", service.url, "vnflcm", ...args], { timeout: 60_000 })).stdout;
    const refused = (...args: string[]) =>
        openstack(...args).then(
            () => assert.fail(`openstack vnflcm ${args.join(" ")} succeeded`),
            (e: { stderr: string }) => e.stderr,
        );
    const json = async (...args: string[]) => JSON.parse(await openstack(...args, "-f", "json"));
    const api = (method: string, route: string, body?: unknown) => service.call(method, route, body);
    /** Waits until the instance's newest operation leaves STARTING/PROCESSING; returns it. */
    const settle = async () => {
        for (let i = 0; i < 300; i++) {
            const ops = (await api("GET", "/vnflcm/v1/vnf_lcm_op_occs")).body.filter((o: any) => o.vnfInstanceId === id);
            const last = ops.at(-1);
            if (last && !["STARTING", "PROCESSING", "ROLLING_BACK"].includes(last.operationState)) return last;
            await new Promise((r) => setTimeout(r, 100));
        }
        assert.fail("the operation did not finish");
    };
    const knob = (name: string, value: string | undefined) => (value === undefined ? fs.rmSync(path.join(pulumiState, name), { force: true }) : fs.writeFileSync(path.join(pulumiState, name), value));
    const standinCalls = () => fs.readFileSync(path.join(pulumiState, "calls"), "utf8");
    const seedFile = (name: string) => {
        const file = path.join(dataDir, name);
        // The client parses the file as strict JSON; the seeds carry Tacker's '#' comments.
        fs.writeFileSync(file, JSON.stringify(parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, name), "utf8"), name)));
        return file;
    };

    before(async function () {
        if (!clientAvailable()) {
            if (process.env.CI) assert.fail("the openstack client is missing; .ci/run installs python3-openstackclient and python3-tackerclient");
            this.skip();
        }
        fs.mkdirSync(pulumiState);
        service = await ServiceProcess.start(dataDir, env);
        callback = await Callback.start();
        const file = path.join(dataDir, "subscription.json");
        fs.writeFileSync(file, JSON.stringify({ callbackUri: callback.url, filter: { notificationTypes: ["VnfLcmOperationOccurrenceNotification"] } }));
        await openstack("subsc", "create", file);
    });
    after(async () => {
        await service?.stop();
        await callback?.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("a VIM registered with the service is named by the seed's vimId; its password is never returned", async () => {
        const registered = await api("POST", "/k8s-vnf/v1/vims", { id: SEED_VIM, name: "openstack-lab", authUrl: "http://keystone.example:5000/v3", username: "admin", password: "vim-password-not-returned", projectName: "admin" });
        assert.equal(registered.status, 201);
        for (const shown of [registered.body, (await api("GET", `/k8s-vnf/v1/vims/${SEED_VIM}`)).body, ...(await api("GET", "/k8s-vnf/v1/vims")).body]) {
            assert.ok(!JSON.stringify(shown).includes("vim-password-not-returned"));
        }
    });

    it("instantiate with the seed's body: 202, the stack is configured (secrets as secrets) and brought up with the VIM's credentials", async () => {
        id = (await json("create", "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177", "--name", "vnf-simple")).ID;
        assert.match(await openstack("instantiate", id, seedFile("simple-instantiate.json")), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const shown = await api("GET", `/vnflcm/v1/vnf_instances/${id}`);
        assert.equal(shown.body.instantiationState, "INSTANTIATED");
        const vnfcs = shown.body.instantiatedVnfInfo.vnfcResourceInfo;
        assert.deepEqual(vnfcs.map((v: any) => v.vduId), ["masterNode", "workerNode", "workerNode"]);
        assert.deepEqual(shown.body.instantiatedVnfInfo.scaleStatus, [{ aspectId: "worker_instance", scaleLevel: 0 }]);
        const config = JSON.parse(fs.readFileSync(path.join(pulumiState, "stacks", `vnf-${id}`, "config.json"), "utf8"));
        assert.equal(config["k8s-vnf:masters"].secret, true, "the masters' password makes the key secret");
        assert.equal(config["k8s-vnf:flavour"].secret, false);
        assert.match(standinCalls(), /env OS_AUTH_URL=http:\/\/keystone\.example:5000\/v3 OS_PASSWORD=set/);
        assert.ok(!JSON.stringify((await api("GET", "/vnflcm/v1/vnf_lcm_op_occs")).body).includes('"ubuntu"'), "request passwords are not shown in operationParams");
        assert.ok(!JSON.stringify(shown.body).includes("__"), "no internal fields");
    });

    it("subscribers get START and RESULT of every operation", async () => {
        for (let i = 0; i < 50 && callback.received.length < 2; i++) await new Promise((r) => setTimeout(r, 100));
        assert.deepEqual(callback.received.slice(0, 2).map((n) => [n.notificationStatus, n.operation, n.operationState]), [
            ["START", "INSTANTIATE", "STARTING"],
            ["RESULT", "INSTANTIATE", "COMPLETED"],
        ]);
    });

    it("scale out by one with the client: a third worker, scale level 1; scale in below the minimum is refused and runs nothing", async () => {
        assert.match(await openstack("scale", "--type", "SCALE_OUT", "--aspect-id", "worker_instance", "--number-of-steps", "1", id), /has been accepted/);
        assert.equal((await settle()).operationState, "COMPLETED");
        const info = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo;
        assert.equal(info.vnfcResourceInfo.filter((v: any) => v.vduId === "workerNode").length, 3);
        assert.deepEqual(info.scaleStatus, [{ aspectId: "worker_instance", scaleLevel: 1 }]);
        const before = standinCalls();
        const error = await refused("scale", "--type", "SCALE_IN", "--aspect-id", "worker_instance", "--number-of-steps", "5", id);
        assert.match(error, /numberOfSteps: SCALE_IN by 5 would leave -2 workers, below the minimum 2/);
        assert.equal(standinCalls(), before, "nothing ran");
    });

    it("the seed's scale-in body (numberOfSteps as a string) works as it is", async () => {
        const r = await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, JSON.parse(fs.readFileSync(path.join(REQUESTS_DIR, "scale-in.json"), "utf8")));
        assert.equal(r.status, 202);
        assert.equal((await settle()).operationState, "COMPLETED");
        assert.deepEqual((await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo.scaleStatus, [{ aspectId: "worker_instance", scaleLevel: 0 }]);
    });

    it("heal one worker with the client: exactly its VM is replaced; VNFC ids stay", async () => {
        const before = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo.vnfcResourceInfo;
        const worker = before.find((v: any) => v.id.endsWith("-worker-1"));
        assert.match(await openstack("heal", "--vnfc-instance", worker.id, "--", id), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED");
        assert.deepEqual(op.resourceChanges.affectedVnfcs, [{ id: worker.id, changeType: "MODIFIED" }]);
        const after = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo.vnfcResourceInfo;
        assert.deepEqual(after.map((v: any) => v.id), before.map((v: any) => v.id));
        const changed = after.filter((v: any, i: number) => v.computeResource.resourceId !== before[i].computeResource.resourceId).map((v: any) => v.id);
        assert.deepEqual(changed, [worker.id]);
    });

    it("healing the only master node by node is refused before anything runs", async () => {
        const master = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo.vnfcResourceInfo.find((v: any) => v.id.endsWith("-master-0"));
        const error = await refused("heal", "--vnfc-instance", master.id, "--", id);
        assert.match(error, /heal\.nodes\.master-0: a single-master cluster cannot heal its master node by node/);
    });

    it("two operations on one instance at once: one 202, one 409", async () => {
        knob("delay-ms", "1500");
        try {
            const body = { type: "SCALE_OUT", aspectId: "worker_instance" };
            const [a, b] = await Promise.all([api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, body), api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, body)]);
            assert.deepEqual([a.status, b.status].sort(), [202, 409]);
            assert.match((a.status === 409 ? a : b).body.detail, /one operation at a time/);
            assert.equal((await settle()).operationState, "COMPLETED");
        } finally {
            knob("delay-ms", undefined);
        }
    });

    it("a restart in the middle of an operation leaves it FAILED_TEMP; op retry (client) completes it", async () => {
        knob("delay-ms", "4000");
        const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_IN", aspectId: "worker_instance", numberOfSteps: 1 });
        const opId = accepted.location!.split("/").pop()!;
        for (let i = 0; i < 50 && (await api("GET", `/vnflcm/v1/vnf_lcm_op_occs/${opId}`)).body.operationState !== "PROCESSING"; i++) await new Promise((r) => setTimeout(r, 100));
        await service.crash();
        knob("delay-ms", undefined);
        service = await ServiceProcess.start(dataDir, env);
        const op = await json("op", "show", opId);
        assert.equal(op["Operation State"], "FAILED_TEMP");
        assert.match(JSON.stringify(op.Error), /the service restarted while the operation was running/);
        await openstack("op", "retry", opId);
        assert.equal((await settle()).operationState, "COMPLETED");
    });

    it("a failed update: FAILED_TEMP with the error; op fail (client) makes it FAILED", async () => {
        knob("fail-next", "stand-in: the OpenStack API answered 503");
        await openstack("scale", "--type", "SCALE_OUT", "--aspect-id", "worker_instance", id);
        const op = await settle();
        assert.equal(op.operationState, "FAILED_TEMP");
        assert.match(op.error.detail, /503/);
        const failed = await json("op", "fail", op.id);
        assert.equal(failed["Operation State"], "FAILED");
    });

    it("a failed heal rolled back (client) re-runs the previous config: ROLLED_BACK", async () => {
        knob("fail-next", "stand-in: quota exceeded");
        await api("POST", `/vnflcm/v1/vnf_instances/${id}/heal`, {});
        const op = await settle();
        assert.equal(op.operationState, "FAILED_TEMP");
        await openstack("op", "rollback", op.id);
        assert.equal((await settle()).operationState, "ROLLED_BACK");
    });

    it("op cancel (client) stops the running Pulumi command: FAILED_TEMP, then rolled back", async () => {
        knob("delay-ms", "5000");
        try {
            const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" });
            const opId = accepted.location!.split("/").pop()!;
            for (let i = 0; i < 50 && (await api("GET", `/vnflcm/v1/vnf_lcm_op_occs/${opId}`)).body.operationState !== "PROCESSING"; i++) await new Promise((r) => setTimeout(r, 100));
            const started = Date.now();
            // tackerclient 1.12's `op cancel` prints that the request was accepted, then fails inside cliff
            // (a ShowOne command returning nothing: "cannot unpack non-iterable NoneType object").
            const printed = await exec("openstack", ["--os-auth-type", "none", "--os-endpoint", service.url, "vnflcm", "op", "cancel", "--cancel-mode", "GRACEFUL", opId]).then(
                (r) => r.stdout,
                (e: { stdout: string; stderr: string }) => (assert.match(e.stderr, /cannot unpack non-iterable NoneType/), e.stdout),
            );
            assert.match(printed, new RegExp(`Cancel request for LCM operation ${opId} has been accepted`));
            const op = await settle();
            assert.ok(Date.now() - started < 4000, "cancelled, not waited out");
            assert.equal(op.operationState, "FAILED_TEMP");
            assert.equal(op.isCancelPending, true);
            assert.match(op.error.detail, /cancelled/);
        } finally {
            knob("delay-ms", undefined);
        }
        const op = await settle();
        await openstack("op", "rollback", op.id);
        assert.equal((await settle()).operationState, "ROLLED_BACK");
    });

    it("progress streams as server-sent events while an operation runs, and the occurrence records it", async () => {
        knob("delay-ms", "800");
        try {
            const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/heal`, {});
            const stream = await fetch(`${accepted.location}/progress`);
            assert.match(String(stream.headers.get("content-type")), /text\/event-stream/);
            const text = await stream.text();
            assert.match(text, /event: state\ndata: \{"operationState":"(STARTING|PROCESSING)"\}/);
            assert.match(text, /event: progress\ndata: \{"engineEvents":\d+/);
            assert.match(text, /event: state\ndata: \{"operationState":"COMPLETED"\}/);
            const op = await settle();
            assert.ok(op.progress.resourcesDone > 0, JSON.stringify(op.progress));
            assert.equal(op.resourceChanges.affectedVnfcs.length, 3, "an entire heal replaces every VM");
        } finally {
            knob("delay-ms", undefined);
        }
    });

    it("a dead callback never blocks an operation", async () => {
        const dead = await Callback.start();
        const sub = await api("POST", "/vnflcm/v1/subscriptions", { callbackUri: dead.url });
        assert.equal(sub.status, 201);
        await dead.stop();
        const started = Date.now();
        await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_IN", aspectId: "worker_instance" });
        assert.equal((await settle()).operationState, "COMPLETED");
        assert.ok(Date.now() - started < 5000, "not held up by notification retries");
        await api("DELETE", `/vnflcm/v1/subscriptions/${sub.body.id}`);
    });

    it("terminate (client): destroy, NOT_INSTANTIATED; then delete works", async () => {
        assert.match(await openstack("terminate", "--termination-type", "FORCEFUL", id), /has been accepted/);
        assert.equal((await settle()).operationState, "COMPLETED");
        assert.equal((await json("show", id))["Instantiation State"], "NOT_INSTANTIATED");
        assert.match(standinCalls(), new RegExp(`destroy --yes --skip-preview .*--stack vnf-${id}`));
        await openstack("delete", id);
    });

    it("without the Pulumi CLI an operation fails saying so", async () => {
        const other = await ServiceProcess.start(fs.mkdtempSync(path.join(dataDir, "no-cli-")), { K8S_VNF_PULUMI_ROOT: path.join(dataDir, "nowhere") });
        try {
            const instance = (await other.call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "d" })).body;
            const accepted = await other.call("POST", `/vnflcm/v1/vnf_instances/${instance.id}/instantiate`, instantiateBodyWithoutVim());
            assert.equal(accepted.status, 202);
            assert.equal(await waitForOp(accepted.location!, ["FAILED_TEMP"]), "FAILED_TEMP");
            const op = (await (await fetch(accepted.location!)).json()) as { error: { detail: string } };
            assert.match(op.error.detail, /the Pulumi CLI is not installed where the service looks for it/);
        } finally {
            await other.stop();
        }
    });
});

describe("LCM service: parallel limit, graceful termination, notification retries", function () {
    this.timeout(120_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-limits-"));
    const pulumiState = path.join(dataDir, "pulumi-standin");
    let service: ServiceProcess;
    let callback: Callback;
    const api = (method: string, route: string, body?: unknown) => service.call(method, route, body);
    const newInstance = async () => (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "d" })).body.id as string;

    before(async () => {
        fs.mkdirSync(pulumiState);
        service = await ServiceProcess.start(dataDir, { K8S_VNF_PULUMI_ROOT: STANDIN_CLI, PULUMI_STANDIN_STATE: pulumiState, PULUMI_CONFIG_PASSPHRASE: "x" }, ["--max-parallel", "1"]);
        callback = await Callback.start();
    });
    after(async () => {
        await service?.stop();
        await callback?.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("with --max-parallel 1, a second instance's operation waits in STARTING until the first is done", async () => {
        fs.writeFileSync(path.join(pulumiState, "delay-ms"), "1500");
        try {
            const [a, b] = [await newInstance(), await newInstance()];
            const first = (await api("POST", `/vnflcm/v1/vnf_instances/${a}/instantiate`, instantiateBodyWithoutVim())).location!;
            await waitForOp(first, ["PROCESSING"]);
            const second = (await api("POST", `/vnflcm/v1/vnf_instances/${b}/instantiate`, instantiateBodyWithoutVim())).location!;
            await new Promise((r) => setTimeout(r, 500));
            assert.equal(await opState(second), "STARTING");
            assert.equal(await waitForOp(first, ["COMPLETED"]), "COMPLETED");
            assert.equal(await waitForOp(second, ["COMPLETED"]), "COMPLETED");
        } finally {
            fs.rmSync(path.join(pulumiState, "delay-ms"), { force: true });
        }
    });

    it("a crash with one operation processing and one waiting: after the restart FAILED_TEMP and ROLLED_BACK; deleting an instantiated instance is a 409", async () => {
        fs.writeFileSync(path.join(pulumiState, "delay-ms"), "3000");
        const env = { K8S_VNF_PULUMI_ROOT: STANDIN_CLI, PULUMI_STANDIN_STATE: pulumiState, PULUMI_CONFIG_PASSPHRASE: "x" };
        let processing: string;
        let waiting: string;
        try {
            const [a, b] = [await newInstance(), await newInstance()];
            processing = (await api("POST", `/vnflcm/v1/vnf_instances/${a}/instantiate`, instantiateBodyWithoutVim())).location!.split("/").pop()!;
            await waitForOp(`${service.url}/vnflcm/v1/vnf_lcm_op_occs/${processing}`, ["PROCESSING"]);
            waiting = (await api("POST", `/vnflcm/v1/vnf_instances/${b}/instantiate`, instantiateBodyWithoutVim())).location!.split("/").pop()!;
            await service.crash();
        } finally {
            fs.rmSync(path.join(pulumiState, "delay-ms"), { force: true });
        }
        service = await ServiceProcess.start(dataDir, env, ["--max-parallel", "1"]);
        assert.equal(await opState(`${service.url}/vnflcm/v1/vnf_lcm_op_occs/${processing}`), "FAILED_TEMP");
        assert.equal(await opState(`${service.url}/vnflcm/v1/vnf_lcm_op_occs/${waiting}`), "ROLLED_BACK");

        const instantiated = (await api("GET", "/vnflcm/v1/vnf_instances")).body.find((v: any) => v.instantiationState === "INSTANTIATED");
        const refused = await api("DELETE", `/vnflcm/v1/vnf_instances/${instantiated.id}`);
        assert.equal(refused.status, 409);
        assert.match(refused.body.detail, /is INSTANTIATED: terminate it before deleting it/);
    });

    it("a GRACEFUL terminate waits its timeout before destroying; FORCEFUL does not", async () => {
        const ids = [await newInstance(), await newInstance()];
        for (const id of ids) await waitForOp((await api("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, instantiateBodyWithoutVim())).location!, ["COMPLETED"]);
        const time = async (id: string, body: object) => {
            const started = Date.now();
            await waitForOp((await api("POST", `/vnflcm/v1/vnf_instances/${id}/terminate`, body)).location!, ["COMPLETED"]);
            return Date.now() - started;
        };
        assert.ok((await time(ids[0], { terminationType: "GRACEFUL", gracefulTerminationTimeout: 2 })) >= 2000);
        assert.ok((await time(ids[1], { terminationType: "FORCEFUL", gracefulTerminationTimeout: 2 })) < 2000);
    });

    it("a notification a subscriber refuses is delivered again, once", async () => {
        await api("POST", "/vnflcm/v1/subscriptions", { callbackUri: callback.url, filter: { notificationTypes: ["VnfIdentifierCreationNotification"] } });
        callback.failFirst = 1;
        const id = await newInstance();
        for (let i = 0; i < 60 && callback.received.length === 0; i++) await new Promise((r) => setTimeout(r, 100));
        assert.equal(callback.attempts, 2);
        assert.deepEqual(callback.received.map((n) => n.vnfInstanceId), [id]);
    });
});
