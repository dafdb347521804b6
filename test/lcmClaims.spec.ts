/**
 * What replicas rely on, held by the store (both engines): one occurrence holding an instance, one writer of
 * a row at a time (two stores on one database, as two replicas have), claims and their leases; and what a
 * replica does with a claim that lapses: a replica on another host is not signalled, its stack's lock is left
 * for that command, and the occurrence is FAILED_TEMP saying so. Three `serve` processes on PostgreSQL with
 * the real Pulumi CLI are lcmReplicas.spec.ts's.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createService } from "../service/app";
import { mayTakeOver, thisReplica } from "../service/claims";
import { describeProcess, stillRunning, stopPulumiProcess } from "../service/pulumiProcess";
import { SecretsKeyring } from "../service/secretsAtRest";
import { StackRunner } from "../service/stackRunner";
import { HoldingConflict, openStore, Replica, Store } from "../service/store";
import { parseRequestText } from "../config/requestText";
import { REQUESTS_DIR } from "./support/fixtures";
import { describeEachStore, storeFor } from "./support/stores";

const occurrence = (id: string, instance: string, state: string) => ({ id, vnfInstanceId: instance, operationState: state, operation: "SCALE" });

/** A replica of another host: its boot id is not this one's. */
const elsewhere = (): Replica => ({ id: randomUUID(), bootId: randomUUID(), hostname: "other-host", pid: 4242, startTime: "1" });

class IdleRunner implements StackRunner {
    recovered: { stack: string; leftRunning: unknown }[] = [];
    async up(): Promise<Record<string, unknown>> {
        return {};
    }
    async preview(): Promise<void> {}
    async destroy(): Promise<void> {}
    async recover(stack: string, leftRunning: unknown, _env: Record<string, string>): Promise<string> {
        this.recovered.push({ stack, leftRunning });
        return "its Pulumi command (pid 4242) ran on other-host, where it may still run: not stopped from here";
    }
}

describeEachStore("LCM store: what replicas rely on", function (kind) {
    this.timeout(60_000);
    let dir: string;
    const opened: Store[] = [];
    beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-claims-"))));
    afterEach(async () => {
        for (const store of opened.splice(0)) await store.close().catch(() => undefined);
        fs.rmSync(dir, { recursive: true, force: true });
    });
    const keyring = () => SecretsKeyring.load({ dataDir: dir });
    const open = async (leaseMs = 15_000) => {
        const store = await openStore({ dataDir: dir, ...(await storeFor(kind, dir)), keyring: keyring(), leaseMs });
        opened.push(store);
        return store;
    };

    it("one occurrence holds an instance: a second holding one is refused (HoldingConflict) and nothing of its transaction stays; an ended one holds nothing; the holding ones are listed in one query", async () => {
        const store = await open();
        await store.put([{ table: "op_occs", id: "o1", body: occurrence("o1", "i1", "FAILED_TEMP") }]);
        await assert.rejects(store.put([{ table: "vims", id: "v", body: { id: "v" } }, { table: "op_occs", id: "o2", body: occurrence("o2", "i1", "STARTING") }]), HoldingConflict);
        assert.equal(await store.get("vims", "v"), undefined, "the whole transaction went");
        await store.put([{ table: "op_occs", id: "o3", body: occurrence("o3", "i2", "STARTING") }]);
        await store.update("op_occs", "o1", (op) => ({ ...op!, operationState: "FAILED" }));
        await store.put([{ table: "op_occs", id: "o2", body: occurrence("o2", "i1", "STARTING") }]);
        await store.put([{ table: "op_occs", id: "o4", body: occurrence("o4", "i1", "COMPLETED") }]);
        assert.deepEqual((await store.opOccsOf("i1")).map((o) => `${o.id} ${o.operationState}`), ["o1 FAILED", "o2 STARTING", "o4 COMPLETED"]);
        // Ordered by when each was stored, in milliseconds: o2 and o3 may share one.
        assert.deepEqual((await store.holdingOpOccs()).map((o) => `${o.id} ${o.vnfInstanceId}`).sort(), ["o2 i1", "o3 i2"], "the holding ones, one per instance");
    });

    it("one writer of a row at a time: two stores on one database (two replicas) each add 1 to a row 40 times at once, and it ends at 80", async () => {
        const [a, b] = [await open(), await open()];
        await a.put([{ table: "vnf_instances", id: "n", body: { id: "n", count: 0 } }]);
        const add = (store: Store) => Array.from({ length: 40 }, () => store.update("vnf_instances", "n", (row) => ({ ...row!, count: Number(row!.count) + 1 })));
        await Promise.all([...add(a), ...add(b)]);
        assert.equal((await b.get("vnf_instances", "n"))!.count, 80);
    });

    it("claims: taken with a state, renewed by their holder for what it names, lapsed once not renewed for a lease; a live holder on this host is not taken over, a dead one is at once, one in another PID namespace only once lapsed", async () => {
        const store = await open(400);
        const me = thisReplica();
        const other = elsewhere();
        await store.put([
            { table: "op_occs", id: "mine", body: occurrence("mine", "i1", "PROCESSING"), claim: me },
            // Claimed by this replica, which no longer runs it (a run that could not record its end).
            { table: "op_occs", id: "left", body: occurrence("left", "i4", "PROCESSING"), claim: me },
            { table: "op_occs", id: "theirs", body: occurrence("theirs", "i2", "PROCESSING"), claim: other },
            { table: "op_occs", id: "nobody", body: occurrence("nobody", "i3", "FAILED_TEMP") },
        ]);
        const claims = async () => Object.fromEntries((await store.claimed()).map((c) => [c.id, c.claim.lapsed]));
        assert.deepEqual(await claims(), { mine: false, left: false, theirs: false }, "only occurrences a replica runs have claims");
        for (let i = 0; i < 6; i++) {
            await new Promise((r) => setTimeout(r, 150));
            await store.renewClaims(me.id, ["mine", "theirs"]);
        }
        assert.deepEqual(await claims(), { mine: false, left: true, theirs: true }, "900 ms later: only the renewed one holds; a replica renews only what it names, and only its own");
        const theirs = (await store.claimed()).find((c) => c.id === "theirs")!.claim;
        assert.equal(theirs.owner?.hostname, "other-host");
        const shared = store.shared;
        assert.equal(mayTakeOver(store, me, theirs), true, "lapsed");
        assert.equal(mayTakeOver(store, me, { owner: me, lapsed: true }), false, "never one's own");
        const sleeper = spawn("sleep", ["30"]);
        try {
            const live = describeProcess(sleeper.pid!)!;
            const alive: Replica = { id: randomUUID(), bootId: live.bootId!, hostname: os.hostname(), pid: live.pid, startTime: live.startTime };
            assert.equal(mayTakeOver(store, me, { owner: alive, lapsed: false }), !shared, "a live holder on this host: only an embedded store (one process) takes it");
            assert.equal(mayTakeOver(store, me, { owner: { ...alive, startTime: "0" }, lapsed: false }), true, "a dead holder on this host (its PID reused since): at once");
            const container = { ...alive, startTime: "0", bootId: `${alive.bootId.split("/")[0]}/pid:[1]` };
            assert.equal(mayTakeOver(store, me, { owner: container, lapsed: false }), !shared, "a holder in another PID namespace of this boot (a container beside this one): its PIDs say nothing here");
        } finally {
            sleeper.kill("SIGKILL");
        }
    });

    it("a claim lapsed by a replica of another host: taken over once its lease ran out, its command not signalled, FAILED_TEMP saying where it ran and that the lock was left", async () => {
        const dataDir = path.join(dir, "service");
        const runner = new IdleRunner();
        const seeded = await openStore({ dataDir, ...(await storeFor(kind, dataDir)), keyring: SecretsKeyring.load({ dataDir }), leaseMs: 600 });
        const other = elsewhere();
        const process = { pid: 4242, startTime: "1", bootId: other.bootId, hostname: "other-host" };
        await seeded.put([
            { table: "vnf_instances", id: "i1", body: { id: "i1", instantiationState: "INSTANTIATED" } },
            { table: "op_occs", id: "o1", body: { ...occurrence("o1", "i1", "PROCESSING"), __plan: {}, __pulumi: process }, claim: other },
        ]);
        // The other replica renews its claim for a while, then stops (its host is gone).
        const renewing = setInterval(() => void seeded.renewClaims(other.id, ["o1"]), 100);
        const service = await createService({ dataDir, ...(await storeFor(kind, dataDir)), runner, env: {}, claimLeaseMs: 600 });
        try {
            if (kind === "postgres") {
                await new Promise((r) => setTimeout(r, 1_200));
                assert.equal((await service.store.get("op_occs", "o1"))!.operationState, "PROCESSING", "a claim renewed by its live replica of another host is left to it");
            }
            clearInterval(renewing);
            let op: Record<string, any> | undefined;
            for (let i = 0; i < 100 && op?.operationState !== "FAILED_TEMP"; i++) {
                await new Promise((r) => setTimeout(r, 100));
                op = await service.store.get("op_occs", "o1");
            }
            assert.equal(op!.operationState, "FAILED_TEMP");
            assert.match(op!.error.detail, /^the service \(other-host, pid 4242\) stopped while the operation was running: its Pulumi command \(pid 4242\) ran on other-host, where it may still run: not stopped from here; retry, roll back or fail it$/);
            assert.deepEqual(runner.recovered, [{ stack: "vnf-i1", leftRunning: process }]);
            assert.equal(op!.__pulumi, undefined);
        } finally {
            clearInterval(renewing);
            await service.close();
            await seeded.close();
        }
    });
});

describeEachStore("LCM service: an instance's requests decided with its row locked", function (kind) {
    this.timeout(60_000);
    it("of an instantiate and a DELETE of one instance sent at once, never both succeed (an operation for an instance that is gone); of two PATCHes with the same If-Match, one", async () => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-instance-races-"));
        const service = await createService({ dataDir, ...(await storeFor(kind, dataDir)), runner: new IdleRunner(), env: {} });
        try {
            const call = async (method: string, url: string, payload?: object, headers: Record<string, string> = {}) => {
                const r = await service.app.inject({ method: method as "GET", url, payload, headers });
                return { status: r.statusCode, etag: r.headers.etag as string | undefined };
            };
            const body = parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8"), "simple-instantiate.json") as Record<string, any>;
            delete body.vimConnectionInfo;
            let both = 0;
            const outcomes = new Set<string>();
            for (let i = 0; i < 12; i++) {
                const id = (await service.app.inject({ method: "POST", url: "/vnflcm/v1/vnf_instances", payload: { vnfdId: "x" } })).json().id;
                const [instantiate, remove] = await Promise.all([call("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, body), call("DELETE", `/vnflcm/v1/vnf_instances/${id}`)]);
                outcomes.add(`${instantiate.status}/${remove.status}`);
                if (instantiate.status === 202 && remove.status === 204) both++;
            }
            assert.equal(both, 0, [...outcomes].join(" "));
            const id = (await service.app.inject({ method: "POST", url: "/vnflcm/v1/vnf_instances", payload: { vnfdId: "x" } })).json().id;
            const { etag } = await call("GET", `/vnflcm/v1/vnf_instances/${id}`);
            const patches = await Promise.all(["a", "b"].map((name) => call("PATCH", `/vnflcm/v1/vnf_instances/${id}`, { vnfInstanceName: name }, { "if-match": etag!, "content-type": "application/merge-patch+json" })));
            assert.deepEqual(patches.map((p) => p.status).sort(), [202, 412]);
        } finally {
            await service.close();
            fs.rmSync(dataDir, { recursive: true, force: true });
        }
    });
});

describe("a Pulumi command recorded on another host", () => {
    it("is never signalled from this one, even when a process here has its PID and start time", async () => {
        const sleeper = spawn("sleep", ["30"]);
        try {
            const here = describeProcess(sleeper.pid!)!;
            const recorded = { ...here, bootId: randomUUID(), hostname: "other-host" };
            assert.equal(stillRunning(recorded), false);
            assert.equal(await stopPulumiProcess(recorded, 100), `its Pulumi command (pid ${here.pid}) ran on other-host, where it may still run: not stopped from here`);
            assert.equal(stillRunning(here), true, "the process here was left alone");
        } finally {
            sleeper.kill("SIGKILL");
        }
    });
});
