/**
 * SOL003 / SOL013 v2.6.1 behaviour any standard client relies on, in process on loopback: ETag and If-Match
 * on an individual VNF instance, the mandatory fields of compute resources and notifications, list queries
 * (filter, attribute selectors, paging). Stacks are run by a runner that reports what an engine would (a
 * server created per VNFC): the Pulumi side is the real-CLI suites' (realLcm.lab.spec.ts, realLcmOperations.lab.spec.ts).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { parseRequestText } from "../config/requestText";
import { createService, Service } from "../service/app";
import { RunOptions, StackRunner } from "../service/stackRunner";
import { REQUESTS_DIR } from "./support/fixtures";
import { describeEachStore, storeFor } from "./support/stores";

const INSTANCE = "openstack:compute/instance:Instance";

/** Creates one server per VNFC of a simple cluster and reports it as the engine's events do. */
class ServersRunner implements StackRunner {
    private next = 0;
    /** The config of every `up`, in order. */
    readonly ups: Record<string, any>[] = [];
    /** Makes the next `up` whose config this matches fail once. */
    failOnce?: (config: Record<string, any>) => boolean;
    /** Makes the next destroy fail. */
    failDestroy = false;
    /** While set, an `up` waits for it before it does anything. */
    hold?: Promise<void>;
    async up(stack: string, config: Record<string, any>, options: RunOptions): Promise<Record<string, unknown>> {
        await this.hold;
        this.ups.push(structuredClone(config));
        if (this.failOnce?.(config)) {
            this.failOnce = undefined;
            throw new Error("stand-in: the update failed");
        }
        const vnfcs = [{ name: `${stack}-master-0`, vduId: "masterNode", cpdId: "masterNode_CP1" }, ...Array.from({ length: config.workers?.count ?? 2 }, (_, i) => ({ name: `${stack}-worker-${i}`, vduId: "workerNode", cpdId: "workerNode_CP2" }))];
        const resources = vnfcs.map((v) => {
            const serverId = `server-${this.next++}`;
            const metadata = { op: "create", urn: `urn:pulumi:${stack}::k8s-vnf::${INSTANCE}::${v.name}`, type: INSTANCE, new: { id: serverId } };
            options.onEvent?.({ sequence: 0, timestamp: 0, resourcePreEvent: { metadata } } as never);
            options.onEvent?.({ sequence: 0, timestamp: 0, resOutputsEvent: { metadata } } as never);
            return { id: v.name, vduId: v.vduId, cpdId: v.cpdId, serverId };
        });
        return { vnfcResources: resources, scale: { worker_instance: { count: config.workers?.count ?? 2, min: 2, max: 4 } } };
    }
    async destroy(): Promise<void> {
        if (this.failDestroy) {
            this.failDestroy = false;
            throw new Error("stand-in: the destroy failed");
        }
    }
    async preview(): Promise<void> {
        throw new Error("these tests make no plans");
    }
    async recover(): Promise<string> {
        return "nothing was running";
    }
}

describeEachStore("LCM service: SOL003/SOL013 conformance (in process)", function (kind) {
    this.timeout(30_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-conformance-"));
    let service: Service;
    let base: string;
    let subscriber: http.Server;
    const runner = new ServersRunner();
    const notifications: any[] = [];
    const api = async (method: string, route: string, body?: unknown, headers: Record<string, string> = {}) => {
        const r = await fetch(route.startsWith("http") ? route : `${base}${route}`, { method, headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await r.text();
        return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : undefined };
    };
    const settle = async (location: string) => {
        for (let i = 0; i < 200; i++) {
            const op = (await api("GET", location)).body;
            if (!["STARTING", "PROCESSING", "ROLLING_BACK"].includes(op.operationState)) return op;
            await new Promise((r) => setTimeout(r, 25));
        }
        assert.fail(`${location} did not finish`);
    };
    const instantiated = async (name: string) => {
        const id = (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177", vnfInstanceName: name })).body.id;
        const body = parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8"), "simple") as any;
        delete body.vimConnectionInfo;
        const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, body);
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        return { id, op: await settle(String(accepted.headers.get("location"))) };
    };

    /** The URL of the next page a list response links to (SOL013 §5.4.2.1); header names are case-insensitive. */
    const nextPage = (headers: Headers) => /<([^>]+)>;\s*rel="next"/.exec(headers.get("link") ?? "")?.[1];
    /** Every page of a list, following its Link rel="next" from `route` until a page has none. */
    const allPages = async (route: string) => {
        const pages: any[][] = [];
        for (let next: string | undefined = route; next !== undefined; ) {
            const page = await api("GET", next);
            assert.equal(page.status, 200, `${next}: ${JSON.stringify(page.body)}`);
            pages.push(page.body);
            next = nextPage(page.headers);
        }
        return pages;
    };

    before(async () => {
        subscriber = http.createServer((req, res) => {
            let body = "";
            req.on("data", (d) => (body += d));
            req.on("end", () => {
                if (req.method === "POST") notifications.push(JSON.parse(body));
                res.writeHead(204).end();
            });
        });
        await new Promise<void>((r) => subscriber.listen(0, "127.0.0.1", r));
        service = await createService({ dataDir, ...(await storeFor(kind, dataDir)), runner, env: {}, allowLoopbackCallbacks: true, pageSize: 2 });
        base = await service.app.listen({ port: 0, host: "127.0.0.1" });
        const callbackUri = `http://127.0.0.1:${(subscriber.address() as AddressInfo).port}/cb`;
        assert.equal((await api("POST", "/vnflcm/v1/subscriptions", { callbackUri })).status, 201);
    });
    after(async () => {
        await service?.close();
        await new Promise<void>((r) => (subscriber ? subscriber.close(() => r()) : r()));
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("an individual VNF instance has an ETag; a PATCH with a stale If-Match is a 412 and changes nothing; the current one is accepted", async () => {
        const id = (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "x", vnfInstanceName: "etag" })).body.id;
        const first = await api("GET", `/vnflcm/v1/vnf_instances/${id}`);
        const etag = String(first.headers.get("etag"));
        assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
        assert.equal((await api("PATCH", `/vnflcm/v1/vnf_instances/${id}`, { vnfInstanceName: "renamed" }, { "if-match": etag })).status, 202);
        const second = await api("GET", `/vnflcm/v1/vnf_instances/${id}`);
        assert.notEqual(second.headers.get("etag"), etag, "a change makes a new ETag");
        const stale = await api("PATCH", `/vnflcm/v1/vnf_instances/${id}`, { vnfInstanceName: "lost update" }, { "if-match": etag });
        assert.equal(stale.status, 412);
        assert.equal(stale.body.status, 412);
        assert.equal((await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.vnfInstanceName, "renamed");
    });

    it("compute resources name their VIM connection: vnfcResourceInfo and affectedVnfcs carry vimConnectionId, resourceId and vimLevelResourceType", async () => {
        const { id, op } = await instantiated("vim-connection");
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const instance = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body;
        const connections = instance.vimConnectionInfo.map((c: any) => c.id);
        assert.equal(op.resourceChanges.affectedVnfcs.length, 3);
        for (const resource of [...instance.instantiatedVnfInfo.vnfcResourceInfo, ...op.resourceChanges.affectedVnfcs].map((v: any) => v.computeResource)) {
            assert.ok(connections.includes(resource.vimConnectionId), JSON.stringify(resource));
            assert.match(resource.resourceId, /^server-\d+$/);
            assert.equal(resource.vimLevelResourceType, "OS::Nova::Server");
        }
    });

    it("notifications carry SOL003's mandatory fields and links (vnfInstance, subscription, vnfLcmOpOcc)", async () => {
        const { op } = await instantiated("notified");
        for (let i = 0; i < 100 && !notifications.some((n) => n.vnfLcmOpOccId === op.id && n.notificationStatus === "RESULT"); i++) await new Promise((r) => setTimeout(r, 20));
        const result = notifications.find((n) => n.vnfLcmOpOccId === op.id && n.notificationStatus === "RESULT");
        for (const field of ["id", "notificationType", "subscriptionId", "timeStamp", "notificationStatus", "operationState", "vnfInstanceId", "operation", "isAutomaticInvocation", "vnfLcmOpOccId"]) assert.ok(result[field] !== undefined, field);
        assert.deepEqual(Object.keys(result._links).sort(), ["subscription", "vnfInstance", "vnfLcmOpOcc"]);
        assert.match(result._links.vnfLcmOpOcc.href, new RegExp(`/vnflcm/v1/vnf_lcm_op_occs/${op.id}$`));
        assert.ok(result.affectedVnfcs.every((v: any) => v.computeResource.vimConnectionId));
        const created = notifications.find((n) => n.notificationType === "VnfIdentifierCreationNotification");
        assert.deepEqual(Object.keys(created._links).sort(), ["subscription", "vnfInstance"]);
    });

    it("a notification sent to two subscriptions carries the same id in both (SOL003: the id of a notification sent several times due to several subscriptions)", async () => {
        const second = await api("POST", "/vnflcm/v1/subscriptions", { callbackUri: `http://127.0.0.1:${(subscriber.address() as AddressInfo).port}/cb2`, filter: { notificationTypes: ["VnfIdentifierCreationNotification"] } });
        assert.equal(second.status, 201, JSON.stringify(second.body));
        try {
            const id = (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177", vnfInstanceName: "notified-twice" })).body.id;
            const created = () => notifications.filter((n) => n.notificationType === "VnfIdentifierCreationNotification" && n.vnfInstanceId === id);
            for (let i = 0; i < 100 && created().length < 2; i++) await new Promise((r) => setTimeout(r, 20));
            assert.equal(created().length, 2, JSON.stringify(created()));
            assert.equal(new Set(created().map((n) => n.subscriptionId)).size, 2);
            assert.equal(new Set(created().map((n) => n.id)).size, 1);
        } finally {
            assert.equal((await api("DELETE", `/vnflcm/v1/subscriptions/${second.body.id}`)).status, 204);
        }
    });

    it("lists take SOL013 filters and attribute selectors; a bad query is a 400 naming the parameter", async () => {
        const named = await api("GET", `/vnflcm/v1/vnf_instances?filter=${encodeURIComponent("(eq,vnfInstanceName,vim-connection)")}`);
        assert.deepEqual(named.body.map((v: any) => v.vnfInstanceName), ["vim-connection"]);
        assert.equal(named.body[0].instantiatedVnfInfo, undefined, "complex attributes are left out by default (exclude_default)");
        const all = await api("GET", `/vnflcm/v1/vnf_instances?all_fields&filter=${encodeURIComponent("(eq,vnfInstanceName,vim-connection)")}`);
        assert.equal(all.body[0].instantiatedVnfInfo.vnfcResourceInfo.length, 3);
        const bad = await api("GET", `/vnflcm/v1/vnf_lcm_op_occs?filter=${encodeURIComponent("(like,operation,SCALE)")}`);
        assert.equal(bad.status, 400);
        assert.match(bad.body.detail, /^filter: /);
        assert.equal((await api("GET", "/vnflcm/v1/subscriptions?fields=filter")).status, 400, "subscriptions take no attribute selectors");
    });

    it("a filter or selector naming an attribute the resource does not have is a 400 naming it; one no record sets is not; every attribute a list shows can be named", async () => {
        const refusals = [
            ["vnf_instances", "filter", "(eq,noSuchAttribute,x)", /^filter: 'noSuchAttribute' is not an attribute of VnfInstance/],
            ["vnf_instances", "fields", "noSuchAttribute", /^fields: 'noSuchAttribute' is not an attribute of VnfInstance/],
            ["vnf_lcm_op_occs", "exclude_fields", "noSuchAttribute", /^exclude_fields: 'noSuchAttribute' is not an attribute of VnfLcmOpOcc/],
            ["vnf_lcm_op_occs", "filter", "(eq,resourceChanges/noSuchPart,x)", /^filter: 'resourceChanges\/noSuchPart' is not an attribute of VnfLcmOpOcc/],
            ["subscriptions", "filter", "(eq,vnfInstanceName,x)", /^filter: 'vnfInstanceName' is not an attribute of LccnSubscription/],
        ] as const;
        for (const [list, parameter, value, detail] of refusals) {
            const r = await api("GET", `/vnflcm/v1/${list}?${parameter}=${encodeURIComponent(value)}`);
            assert.equal(r.status, 400, `${list}?${parameter}=${value}`);
            assert.match(r.body.detail, detail);
        }
        const unset = await api("GET", `/vnflcm/v1/vnf_instances?filter=${encodeURIComponent("(eq,vnfInstanceDescription,nobody wrote this)")}`);
        assert.deepEqual([unset.status, unset.body], [200, []]);
        for (const list of ["vnf_instances?all_fields", "vnf_lcm_op_occs?all_fields", "subscriptions"]) {
            const shown = new Set((await allPages(`/vnflcm/v1/${list}`)).flat().flatMap((item) => attributePaths(item)));
            const filter = [...shown].map((name) => `(neq,${name},x)`).join(";");
            const r = await api("GET", `/vnflcm/v1/${list.split("?")[0]}?filter=${encodeURIComponent(filter)}`);
            assert.equal(r.status, 200, `${list}: ${r.body?.detail}`);
        }
    });

    it("a list of op occs without selectors shows every mandatory VnfLcmOpOcc attribute, operationParams (1..1) included", async () => {
        const mandatory = ["id", "operationState", "stateEnteredTime", "startTime", "vnfInstanceId", "operation", "isAutomaticInvocation", "operationParams", "isCancelPending", "_links"];
        const occs = (await allPages("/vnflcm/v1/vnf_lcm_op_occs")).flat();
        assert.ok(occs.length >= 3, `op occs of the tests before (${occs.length})`);
        for (const occ of occs) assert.deepEqual(mandatory.filter((name) => occ[name] === undefined), [], `${occ.operation} ${occ.id}`);
        assert.ok(occs.every((occ) => occ.resourceChanges === undefined), "the rest of the default exclude set is left out");
    });

    it("paging: a list longer than a page links the next (Link rel=next); following the links lists every record exactly once; a bad or stale marker is a 400", async () => {
        const created: string[] = [];
        for (let i = 0; i < 5; i++) created.push((await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "x", vnfInstanceName: `paged-${i}` })).body.id);
        const pagedOnly = `/vnflcm/v1/vnf_instances?filter=${encodeURIComponent("(cont,vnfInstanceName,paged-)")}`;
        const instancePages = await allPages(pagedOnly);
        assert.deepEqual(instancePages.map((page) => page.length), [2, 2, 1], "pages of 2 (pageSize), each but the last linking the next");
        assert.deepEqual(instancePages.flat().map((v) => v.id), created);
        const everyInstance = (await allPages("/vnflcm/v1/vnf_instances?exclude_default")).flat().map((v) => v.id);
        assert.equal(new Set(everyInstance).size, everyInstance.length, "no instance twice");
        assert.deepEqual(created.filter((id) => !everyInstance.includes(id)), [], "every instance");

        for (let i = 0; i < 4; i++) assert.equal((await api("PATCH", `/vnflcm/v1/vnf_instances/${created[0]}`, { vnfInstanceDescription: `change ${i}` })).status, 202);
        const opPages = await allPages(`/vnflcm/v1/vnf_lcm_op_occs?filter=${encodeURIComponent(`(eq,vnfInstanceId,${created[0]})`)}`);
        assert.deepEqual(opPages.map((page) => page.length), [2, 2]);
        const opIds = opPages.flat().map((op) => op.id);
        assert.equal(new Set(opIds).size, 4, "four MODIFY_INFO occurrences, each once");
        const everyOp = (await allPages("/vnflcm/v1/vnf_lcm_op_occs")).flat().map((op) => op.id);
        assert.equal(new Set(everyOp).size, everyOp.length, "no op occ twice");
        assert.deepEqual(opIds.filter((id) => !everyOp.includes(id)), [], "every op occ");

        const foreign = await api("GET", "/vnflcm/v1/vnf_lcm_op_occs?nextpage_opaque_marker=not-a-marker");
        assert.equal(foreign.status, 400);
        assert.match(foreign.body.detail, /^nextpage_opaque_marker: /);
        const first = await api("GET", pagedOnly);
        const second = nextPage(first.headers);
        assert.ok(second, "a next page");
        assert.equal((await api("DELETE", `/vnflcm/v1/vnf_instances/${first.body[1].id}`)).status, 204);
        const stale = await api("GET", second);
        assert.equal(stale.status, 400);
        assert.match(stale.body.detail, /^nextpage_opaque_marker: .* no longer in this list/);
    });

    it("scale_to_level: the workers' aspect to a scale level (SCALE_TO_LEVEL), out of range or by instantiation level refused with the field; links follow the state", async () => {
        const { id } = await instantiated("to-level");
        const instance = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body;
        assert.deepEqual(Object.keys(instance._links).sort(), ["changeExtConn", "heal", "operate", "scale", "scaleToLevel", "self", "terminate"], "no changeFlavour: simple has no flavour to change to");
        const accepted = await api("POST", instance._links.scaleToLevel.href, { scaleInfo: [{ aspectId: "worker_instance", scaleLevel: 2 }] });
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        const op = await settle(String(accepted.headers.get("location")));
        assert.deepEqual([op.operation, op.operationState], ["SCALE_TO_LEVEL", "COMPLETED"]);
        const scaled = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo;
        assert.deepEqual(scaled.scaleStatus, [{ aspectId: "worker_instance", scaleLevel: 2 }]);
        assert.equal(scaled.vnfcResourceInfo.filter((v: any) => v.vduId === "workerNode").length, 4);
        const refusals = [
            [{ scaleInfo: [{ aspectId: "worker_instance", scaleLevel: 3 }] }, /scaleInfo\[0\]\.scaleLevel: worker_instance goes up to level 2/],
            [{ scaleInfo: [{ aspectId: "master_instance", scaleLevel: 1 }] }, /scaleInfo\[0\]\.aspectId: this VNF scales worker_instance/],
            [{ instantiationLevelId: "instantiation_level_2" }, /instantiationLevelId: this VNF has no instantiation levels/],
            [{ scaleInfo: [{ aspectId: "worker_instance", scaleLevel: -1 }] }, /body\.scaleInfo\.0\.scaleLevel: must be >= 0/],
        ] as const;
        for (const [body, detail] of refusals) {
            const r = await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale_to_level`, body);
            assert.equal(r.status, 400, JSON.stringify(body));
            assert.match(r.body.detail, detail);
        }
    });

    it("an occurrence links a task only while it is allowed (SOL003 Table 5.5.2.13-1): cancel while it runs; retry, rollback and fail while FAILED_TEMP, a terminate's without rollback; none once it is over", async () => {
        const tasks = (op: any) => Object.keys(op._links).filter((k) => k !== "self" && k !== "vnfInstance").sort();
        const { id, op } = await instantiated("links");
        assert.deepEqual(tasks(op), [], "COMPLETED");
        let release!: () => void;
        runner.hold = new Promise((resolve) => (release = resolve));
        const scaling = String((await api("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" })).headers.get("location"));
        let running = (await api("GET", scaling)).body;
        for (let i = 0; i < 200 && running.operationState !== "PROCESSING"; i++) running = (await new Promise((r) => setTimeout(r, 25)), await api("GET", scaling)).body;
        assert.deepEqual([running.operationState, tasks(running)], ["PROCESSING", ["cancel"]]);
        runner.failOnce = () => true;
        runner.hold = undefined;
        release();
        const failed = await settle(scaling);
        assert.deepEqual([failed.operationState, tasks(failed)], ["FAILED_TEMP", ["fail", "retry", "rollback"]]);
        assert.equal(failed._links.retry.href, `${scaling}/retry`);
        const listed = (await api("GET", `/vnflcm/v1/vnf_lcm_op_occs?filter=(eq,id,${failed.id})`)).body;
        assert.deepEqual(listed.map(tasks), [["fail", "retry", "rollback"]], "the same in a list");
        const declared = (await api("POST", `${scaling}/fail`)).body;
        assert.deepEqual([declared.operationState, tasks(declared)], ["FAILED", []]);

        runner.failDestroy = true;
        const terminating = String((await api("POST", `/vnflcm/v1/vnf_instances/${id}/terminate`, { terminationType: "FORCEFUL" })).headers.get("location"));
        const terminate = await settle(terminating);
        assert.deepEqual([terminate.operationState, tasks(terminate)], ["FAILED_TEMP", ["fail", "retry"]]);
        assert.equal((await api("POST", `${terminating}/retry`)).status, 202);
        assert.deepEqual(tasks(await settle(terminating)), []);
    });

    it("a multi-update operation that failed half way: retry resumes where it stopped; rollback steps back the way it came, one worker per update", async () => {
        const { id } = await instantiated("resume");
        const move = { extVirtualLinks: [{ id: "vl", resourceId: "net-b", extCps: [{ cpdId: "workerNode_CP2" }] }] };
        const networks = (since: number) => runner.ups.slice(since).map((c) => `${c.workers.networkId ?? "-"}/${c.workers.portMove?.moved ?? "done"}`);
        let since = runner.ups.length;
        runner.failOnce = (c) => c.workers.networkId === "net-b" && !c.workers.portMove;
        const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/change_ext_conn`, move);
        let op = await settle(String(accepted.headers.get("location")));
        assert.equal(op.operationState, "FAILED_TEMP");
        assert.deepEqual(networks(since), ["net-b/1", "net-b/done"], "worker-0 moved, then the last update failed");
        since = runner.ups.length;
        assert.equal((await api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${op.id}/retry`)).status, 202);
        op = await settle(String(accepted.headers.get("location")));
        assert.equal(op.operationState, "COMPLETED");
        assert.deepEqual(networks(since), ["net-b/done"], "the retry runs only what had not succeeded");

        since = runner.ups.length;
        runner.failOnce = (c) => c.workers.networkId === "net-c" && !c.workers.portMove;
        const second = await api("POST", `/vnflcm/v1/vnf_instances/${id}/change_ext_conn`, { extVirtualLinks: [{ ...move.extVirtualLinks[0], resourceId: "net-c" }] });
        op = await settle(String(second.headers.get("location")));
        assert.equal(op.operationState, "FAILED_TEMP");
        assert.equal((await api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${op.id}/rollback`)).status, 202);
        op = await settle(String(second.headers.get("location")));
        assert.equal(op.operationState, "ROLLED_BACK");
        assert.deepEqual(networks(since), ["net-c/1", "net-c/done", "net-c/1", "net-b/done"], "back: worker-1 undone first, then worker-0");
    });

    it("operate, change_ext_conn and change_flavour: malformed bodies are 400s naming the field; STOPPED shows in vnfState, and a heal is then a 409", async () => {
        const { id } = await instantiated("operate");
        const post = (task: string, body: unknown) => api("POST", `/vnflcm/v1/vnf_instances/${id}/${task}`, body);
        const malformed: [string, unknown, RegExp][] = [
            ["operate", { changeStateTo: "PAUSED" }, /changeStateTo/],
            ["operate", { changeStateTo: "STOPPED", stopType: "GRACEFUL", gracefulStopTimeout: -1 }, /gracefulStopTimeout/],
            ["operate", { changeStateTo: "STOPPED", gracefulStopTimeout: 10 }, /^gracefulStopTimeout: only for stopType GRACEFUL$/],
            ["change_ext_conn", { extVirtualLinks: [] }, /extVirtualLinks/],
            ["change_ext_conn", { extVirtualLinks: [{ id: "x", resourceId: "n", extCps: [{}] }] }, /cpdId/],
            ["change_flavour", {}, /newFlavourId/],
        ];
        for (const [task, body, detail] of malformed) {
            const r = await post(task, body);
            assert.equal(r.status, 400, `${task} ${JSON.stringify(body)}`);
            assert.match(r.body.detail, detail);
        }
        const stop = await post("operate", { changeStateTo: "STOPPED" });
        assert.equal(stop.status, 202);
        assert.equal((await settle(String(stop.headers.get("location")))).operationState, "COMPLETED");
        assert.equal((await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo.vnfState, "STOPPED");
        const heal = await post("heal", {});
        assert.deepEqual([heal.status, /is STOPPED/.test(heal.body.detail)], [409, true]);
    });
});

/** The attribute names `value` holds, as a filter writes them (a/b/c), arrays crossed. */
function attributePaths(value: unknown, prefix = ""): string[] {
    if (Array.isArray(value)) return value.flatMap((element) => attributePaths(element, prefix));
    if (typeof value !== "object" || value === null) return [];
    return Object.entries(value).flatMap(([name, inner]) => [`${prefix}${name}`, ...attributePaths(inner, `${prefix}${name}/`)]);
}
