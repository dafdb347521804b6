/**
 * The LCM service's log of its operations (service/operationLog.ts), in process: a line per step of each
 * occurrence, as text or JSON lines, with the error's detail redacted as the occurrence stores it. The
 * stacks are run by a runner that fails where the test says.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { createService, Service } from "../service/app";
import { logLine } from "../service/operationLog";
import { StackRunner } from "../service/stackRunner";
import { request } from "./support/fixtures";
import { describeEachStore, storeFor } from "./support/stores";

/** Fails the next update with `failWith` (when set), else answers with a cluster's outputs. */
class FailingRunner implements StackRunner {
    failWith?: string;
    async up(): Promise<Record<string, unknown>> {
        const message = this.failWith;
        this.failWith = undefined;
        if (message) throw new Error(message);
        return { vnfKind: "cluster", vnfcResources: [], scale: { worker_instance: { count: 2, min: 2, max: 4 } } };
    }
    async destroy(): Promise<void> {}
    async preview(): Promise<void> {
        throw new Error("these tests make no plans");
    }
    async recover(): Promise<string> {
        return "nothing was running";
    }
}

describeEachStore("LCM service: the log of its operations (text or JSON lines)", function (kind) {
    this.timeout(30_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-oplog-"));
    const runner = new FailingRunner();
    const lines: string[] = [];
    let service: Service;
    let base = "";
    const call = async (method: string, route: string, body?: unknown) => {
        const r = await fetch(route.startsWith("http") ? route : `${base}${route}`, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await r.text();
        return { status: r.status, location: r.headers.get("location") ?? "", body: text ? JSON.parse(text) : undefined };
    };

    before(async () => {
        service = await createService({ dataDir, ...(await storeFor(kind, dataDir)), runner, env: {}, log: { format: "json", write: (line) => lines.push(line) } });
        await service.app.listen({ port: 0, host: "127.0.0.1" });
        base = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
    });
    after(async () => {
        await service?.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("JSON lines: accepted, each state entered, the failure with its redacted detail as the occurrence has it, the retry to COMPLETED; one object per line, no secret", async () => {
        const body = request("simple-instantiate.json");
        delete body.vimConnectionInfo;
        const password = body.additionalParams.k8s_cluster_installation_param.master_node.password as string;
        assert.ok(password, "the seed has a password to leak");
        const id = (await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "d" })).body.id;
        runner.failWith = `the update failed: ssh ubuntu:${password}@10.0.0.5 refused\nsecond line`;
        const location = (await call("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, body)).location;
        await service.lifecycle.idle();
        const failed = (await call("GET", location)).body;
        assert.equal(failed.operationState, "FAILED_TEMP");
        assert.equal((await call("POST", `${location}/retry`)).status, 202);
        await service.lifecycle.idle();

        const text = lines.join("");
        assert.ok(text.endsWith("\n") && !text.includes(password), "whole lines, no password");
        const events = text.trim().split("\n").map((l) => JSON.parse(l));
        const mine = events.filter((e) => e.vnfLcmOpOccId === failed.id);
        assert.deepEqual(mine.map((e) => [e.level, e.operationState]), [
            ["info", "STARTING"],
            ["info", "PROCESSING"],
            ["error", "FAILED_TEMP"],
            ["info", "PROCESSING"],
            ["info", "COMPLETED"],
        ]);
        assert.deepEqual(Object.keys(mine[2]).sort(), ["error", "level", "msg", "operation", "operationState", "time", "vnfInstanceId", "vnfLcmOpOccId"]);
        assert.equal(mine[2].error, failed.error.detail, "the detail the occurrence shows");
        assert.deepEqual([mine[0].operation, mine[0].vnfInstanceId], ["INSTANTIATE", id]);
    });

    it("text: one line per event, its line breaks shown, not made", () => {
        const op = { id: "op-1", vnfInstanceId: "vnf-1", operation: "HEAL", operationState: "FAILED_TEMP", error: { detail: "first\nsecond" } };
        const line = logLine("text", { op }, new Date("2026-11-29T00:00:00Z"));
        assert.equal(line, "2026-11-29T00:00:00.000Z ERROR HEAL op-1 (instance vnf-1) operation FAILED_TEMP: first ⏎ second");
        assert.equal(logLine("text", { op: { ...op, operationState: "PROCESSING" }, stage: { done: 1, of: 3 } }, new Date(0)), "1970-01-01T00:00:00.000Z INFO HEAL op-1 (instance vnf-1) update 1 of 3 done");
        assert.match(logLine("text", { op: { ...op, error: { detail: "\u001b[31mred\u001b[0m" } } }), /: \\x1b\[31mred\\x1b\[0m$/, "a terminal escape shown, not sent");
    });
});
