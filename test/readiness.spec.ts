/**
 * `GET /readyz` (service/readiness.ts), on both stores: not ready until the service has warmed up (its runner
 * loaded what its first run would), answered without credentials while every other route still wants them,
 * and not ready while its PostgreSQL server does not answer (a private server of this test's own, stopped).
 * The real `serve` prints its ready line and answers the probe: serveCli.spec.ts.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createService, Service } from "../service/app";
import { Readiness } from "../service/readiness";
import { StackRunner } from "../service/stackRunner";
import { PostgresServer, skipUnlessPostgres, startPostgres } from "./support/postgres";
import { describeEachStore, storeFor } from "./support/stores";

class WarmingRunner implements StackRunner {
    warmedUp = 0;
    async up(): Promise<Record<string, unknown>> {
        return {};
    }
    async preview(): Promise<void> {}
    async destroy(): Promise<void> {}
    async recover(): Promise<string> {
        return "nothing was left";
    }
    async warmUp(): Promise<void> {
        this.warmedUp++;
    }
}

const TOKEN = "readiness-test-token";

describeEachStore("LCM service readiness (GET /readyz)", function (kind) {
    this.timeout(60_000);
    let dir: string;
    let service: Service | undefined;
    let pg: PostgresServer | undefined;
    beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-readiness-"))));
    afterEach(async () => {
        await service?.close().catch(() => undefined);
        service = undefined;
        await pg?.stop();
        pg = undefined;
        fs.rmSync(dir, { recursive: true, force: true });
    });
    const probe = async () => {
        const answer = await service!.app.inject({ method: "GET", url: "/readyz" });
        return { status: answer.statusCode, body: answer.json() };
    };

    it("not ready until warmed up, then ready; the probe needs no credentials where every API route does", async () => {
        const runner = new WarmingRunner();
        service = await createService({ dataDir: dir, ...(await storeFor(kind, dir)), runner, env: {}, auth: { type: "bearer", token: TOKEN } });
        assert.deepEqual(await probe(), { status: 503, body: { status: "starting" } });
        await service.warmUp();
        assert.equal(runner.warmedUp, 1);
        assert.deepEqual(await probe(), { status: 200, body: { status: "ready" } });
        const unauthenticated = await service.app.inject({ method: "GET", url: "/vnflcm/v1/vnf_instances" });
        assert.equal(unauthenticated.statusCode, 401);
        const authenticated = await service.app.inject({ method: "GET", url: "/vnflcm/v1/vnf_instances", headers: { authorization: `Bearer ${TOKEN}` } });
        assert.equal(authenticated.statusCode, 200);
    });

    if (kind === "postgres") {
        it("not ready while its PostgreSQL server does not answer", async function () {
            skipUnlessPostgres(this);
            pg = await startPostgres();
            service = await createService({ dataDir: dir, database: await pg.newDatabase(), runner: new WarmingRunner(), env: {} });
            await service.warmUp();
            assert.deepEqual(await probe(), { status: 200, body: { status: "ready" } });
            await pg.stop();
            pg = undefined;
            assert.deepEqual(await probe(), { status: 503, body: { status: "store unreachable" } });
        });
    }
});

describe("LCM service readiness: a store that does not answer", () => {
    it("is not ready once its answer is late, and however many probes come, the store gets one query at a time", async () => {
        let pings = 0;
        let answer: (() => void) | undefined;
        const readiness = new Readiness({ ping: () => ((pings += 1), new Promise<void>((resolve) => (answer = resolve))) }, 100);
        readiness.markReady();
        const probes = await Promise.all([readiness.check(), readiness.check(), readiness.check()]);
        assert.deepEqual(probes, Array(3).fill({ ready: false, status: "store unreachable" }));
        assert.equal(pings, 1);
        answer!();
        const next = readiness.check();
        answer!();
        assert.deepEqual(await next, { ready: true, status: "ready" });
        assert.equal(pings, 2);
    });
});
