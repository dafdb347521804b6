/**
 * The LCM service (`k8s-vnf serve`, its own process) with the real `openstack vnflcm` client: its SOL003
 * resources, notifications and authentication, which need no cluster; a missing or too old Pulumi CLI.
 * Its operations on clusters: realLcm.lab.spec.ts, realLcmOperations.lab.spec.ts, realLcmSeeds.lab.spec.ts,
 * kubesprayLcm.lab.spec.ts (the real Pulumi CLI).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Callback, clientAvailable, seedBody, vnflcmClient } from "./support/lcmClient";
import { ServiceProcess, waitForOp } from "./support/serviceProcess";
import { serviceProject } from "./support/serviceProject";
import { ServerChanges } from "../service/serverChanges";

/** seedBody's login password for requests that reach no host. */
const NO_LAB = { password: "reaches-no-host" };

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

    it("without the Pulumi CLI an operation fails saying so", async () => {
        const other = await ServiceProcess.start(fs.mkdtempSync(path.join(dataDir, "no-cli-")), { K8S_VNF_PULUMI_ROOT: path.join(dataDir, "nowhere") });
        try {
            const instance = (await other.call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "d" })).body;
            const accepted = await other.call("POST", `/vnflcm/v1/vnf_instances/${instance.id}/instantiate`, seedBody(NO_LAB, "simple-instantiate.json", { withoutVim: true }));
            assert.equal(accepted.status, 202);
            assert.equal(await waitForOp(accepted.location!, ["FAILED_TEMP"]), "FAILED_TEMP");
            const op = (await (await fetch(accepted.location!)).json()) as { error: { detail: string } };
            assert.match(op.error.detail, /the Pulumi CLI is not installed where the service looks for it/);
        } finally {
            await other.stop();
        }
    });

    it("a Pulumi CLI older than 3.208 (no replacementTrigger, so heals would do nothing) is refused, saying so, before any command", async () => {
        // A CLI that only says its version, and records how it was called: all an old one gets to do.
        const root = path.join(dataDir, "old-cli");
        fs.mkdirSync(path.join(root, "bin"), { recursive: true });
        fs.writeFileSync(path.join(root, "bin/pulumi"), `#!/bin/sh\necho "$*" >>${JSON.stringify(path.join(root, "calls"))}\necho v3.205.0\n`, { mode: 0o755 });
        const project = serviceProject();
        const other = await ServiceProcess.start(fs.mkdtempSync(path.join(dataDir, "old-cli-data-")), { K8S_VNF_PULUMI_ROOT: root }, ["--project", project.dir]);
        try {
            const instance = (await other.call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "d" })).body;
            const accepted = await other.call("POST", `/vnflcm/v1/vnf_instances/${instance.id}/instantiate`, seedBody(NO_LAB, "simple-instantiate.json", { withoutVim: true }));
            assert.equal(await waitForOp(accepted.location!, ["FAILED_TEMP", "COMPLETED"]), "FAILED_TEMP");
            const op = (await (await fetch(accepted.location!)).json()) as { error: { detail: string } };
            assert.match(op.error.detail, /the Pulumi CLI at .*\/bin\/pulumi is v3\.205\.0; this service needs v3\.208\.0 or newer \(heal replaces VMs through replacementTrigger/);
            // Checked as the service warmed up, and again by the operation unless it came while that check ran (a CLI
            // may be updated meanwhile): nothing else ran.
            const calls = fs.readFileSync(path.join(root, "calls"), "utf8").trim().split("\n");
            assert.ok(calls.length <= 2 && calls.every((c) => c === "version --non-interactive"), calls.join("\n"));
        } finally {
            await other.stop();
            project.remove();
        }
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
