/**
 * The HTTP server under the LCM service (service/httpServer.ts), in process on loopback, spoken to in raw
 * bytes: a request's headers and body must arrive within their deadlines, connections are bounded, refused
 * clients keep no connection, and header names go out as SOL003 and SOL013 spell them, whatever a client
 * that folds case would hide.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { parseRequestText } from "../config/requestText";
import { createService, ServiceOptions } from "../service/app";
import { StackRunner } from "../service/stackRunner";
import { REQUESTS_DIR } from "./support/fixtures";
import { runTeardowns } from "./support/teardowns";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Updates that succeed at once. */
const runner: StackRunner = {
    up: async () => ({ vnfcResources: [], scale: { worker_instance: { count: 2, min: 2, max: 4 } } }),
    destroy: async () => undefined,
    preview: async () => undefined,
    recover: async () => "nothing was running",
};

/** A raw connection to the service: what it was sent back, and when it closed. */
async function connection(base: string) {
    const url = new URL(base);
    const socket = net.connect(Number(url.port), url.hostname);
    const received = { text: "" };
    socket.on("data", (d) => (received.text += d));
    socket.on("error", () => undefined);
    const closed = new Promise<number>((r) => socket.on("close", () => r(Date.now())));
    await new Promise((r) => socket.once("connect", r));
    return { socket, received, closed };
}

/** The status line and headers of one request sent in raw bytes on its own connection. */
async function head(base: string, method: string, route: string, body?: string): Promise<string> {
    const c = await connection(base);
    const length = body === undefined ? "" : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`;
    c.socket.end(`${method} ${route} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${length}\r\n${body ?? ""}`);
    await c.closed;
    return c.received.text.split("\r\n\r\n")[0];
}

const names = (text: string) => text.split("\r\n").slice(1).map((line) => line.slice(0, line.indexOf(":")));

describe("the LCM service's HTTP server: deadlines, bounded connections, header names (raw bytes on loopback)", function () {
    this.timeout(30_000);
    const teardowns: (() => Promise<void>)[] = [];
    afterEach(() => runTeardowns(teardowns));
    const started = async (options: Partial<ServiceOptions> = {}) => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-http-"));
        const service = await createService({ runner, env: {}, dataDir, ...options });
        teardowns.push(async () => {
            try {
                await service.close();
            } finally {
                fs.rmSync(dataDir, { recursive: true, force: true });
            }
        });
        return service.app.listen({ port: 0, host: "127.0.0.1" });
    };

    it("a request whose body trickles in is cut off at the request deadline with a 408 ProblemDetails, and its connection closed", async () => {
        const base = await started({ httpLimits: { requestTimeoutMs: 1_500, headersTimeoutMs: 1_000 } });
        const c = await connection(base);
        const t0 = Date.now();
        c.socket.write("POST /vnflcm/v1/vnf_instances HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{");
        const trickle = setInterval(() => c.socket.writable && c.socket.write(" "), 200);
        try {
            const at = await Promise.race([c.closed, sleep(15_000).then(() => 0)]);
            assert.ok(at > 0, "the connection was still open after 15 s");
            assert.ok(at - t0 < 10_000, `cut after ${at - t0} ms`);
            assert.match(c.received.text, /^HTTP\/1\.1 408 /);
            assert.match(c.received.text, /\r\nContent-Type: application\/problem\+json\r\n[^]*"status":408/);
        } finally {
            clearInterval(trickle);
            c.socket.destroy();
        }
    });

    it("a connection that sends nothing is closed at the header deadline", async () => {
        const base = await started({ httpLimits: { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 } });
        const c = await connection(base);
        const t0 = Date.now();
        const at = await Promise.race([c.closed, sleep(15_000).then(() => 0)]);
        assert.ok(at > 0 && at - t0 < 10_000, `closed after ${at ? at - t0 : "more than 15000"} ms`);
    });

    it("connections beyond the bound are refused while the others stay served; a refused client (401) keeps no connection", async () => {
        const base = await started({ httpLimits: { maxConnections: 2 }, auth: { type: "bearer", token: "http-token" } });
        const held = [await connection(base), await connection(base)];
        teardowns.push(async () => held.forEach((c) => c.socket.destroy()));
        const third = await connection(base);
        const at = await Promise.race([third.closed, sleep(5_000).then(() => 0)]);
        assert.ok(at > 0, "a third connection was kept open");
        held[0].socket.write("GET /vnflcm/v1/vnf_instances HTTP/1.1\r\nHost: x\r\n\r\n");
        const refusedAt = await Promise.race([held[0].closed, sleep(5_000).then(() => 0)]);
        assert.match(held[0].received.text, /^HTTP\/1\.1 401 [^]*\r\nConnection: close\r\n/);
        assert.ok(refusedAt > 0, "the refused client's connection was kept open");
    });

    it("header names go out as SOL003 and SOL013 spell them: Location, ETag, Link, Content-Type, Allow, WWW-Authenticate", async () => {
        const base = await started({ pageSize: 1 });
        const guarded = await started({ auth: { type: "bearer", token: "http-token" } });
        const created = await head(base, "POST", "/vnflcm/v1/vnf_instances", JSON.stringify({ vnfdId: "x" }));
        await head(base, "POST", "/vnflcm/v1/vnf_instances", JSON.stringify({ vnfdId: "y" }));
        assert.ok(names(created).includes("Location"), created);
        assert.ok(names(created).includes("Content-Type"), created);
        const id = /\/vnf_instances\/([0-9a-f-]+)/.exec(created)![1];
        assert.ok(names(await head(base, "GET", `/vnflcm/v1/vnf_instances/${id}`)).includes("ETag"));
        assert.ok(names(await head(base, "GET", "/vnflcm/v1/vnf_instances")).includes("Link"));
        assert.ok(names(await head(base, "PUT", `/vnflcm/v1/vnf_instances/${id}`)).includes("Allow"));
        const body = parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8"), "simple-instantiate.json") as Record<string, unknown>;
        delete body.vimConnectionInfo;
        const task = await head(base, "POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, JSON.stringify(body));
        assert.match(task, /^HTTP\/1\.1 202 /);
        assert.ok(names(task).includes("Location"), task);
        const refused = await head(guarded, "GET", "/vnflcm/v1/vnf_instances");
        assert.match(refused, /^HTTP\/1\.1 401 /);
        assert.ok(names(refused).includes("WWW-Authenticate"), refused);
        for (const text of [created, task, refused]) assert.ok(!names(text).some((n) => /^[a-z]/.test(n)), `a lower-case name in ${text}`);
    });
});
