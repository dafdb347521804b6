import { strict as assert } from "node:assert";
import { ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { PROJECT_DIR } from "./support/program";

const exec = promisify(execFile);

/** The service as a user runs it: `bin/k8s-vnf serve`, its own process, stopped by its PID. */
class ServiceProcess {
    private constructor(
        private readonly child: ChildProcess,
        readonly url: string,
    ) {}

    static async start(dataDir: string, env: Record<string, string> = {}): Promise<ServiceProcess> {
        const child = spawn(path.join(PROJECT_DIR, "bin/k8s-vnf"), ["serve", "--port", "0", "--data-dir", dataDir], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
        let stderr = "";
        child.stderr!.on("data", (d) => (stderr += d));
        const url = await new Promise<string>((resolve, reject) => {
            child.stdout!.on("data", (d) => {
                const m = /on (http:\/\/127\.0\.0\.1:\d+)\/vnflcm\/v1/.exec(String(d));
                if (m) resolve(m[1]);
            });
            child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${stderr}`)));
        });
        return new ServiceProcess(child, url);
    }

    async stop(): Promise<void> {
        if (this.child.exitCode !== null) return;
        const exited = new Promise((r) => this.child.once("exit", r));
        this.child.kill("SIGTERM");
        await exited;
    }
}

/** A subscriber's callback endpoint on loopback: 204 to the test GET, records every notification. */
class Callback {
    readonly received: Record<string, any>[] = [];
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
                if (req.method === "POST") self!.received.push(JSON.parse(body));
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
