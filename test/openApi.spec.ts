/**
 * The LCM service's OpenAPI document (service/openApi.ts): a valid OpenAPI 3.0 document by
 * @apidevtools/swagger-parser, naming every route the service answers with the request-body schemas that check
 * them, served behind the service's authentication.
 */
import SwaggerParser from "@apidevtools/swagger-parser";
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { createService, Service } from "../service/app";
import { OPENAPI_PATH } from "../service/openApi";
import { SCHEMAS } from "../service/schemas";

describe("LCM service: its OpenAPI document", function () {
    this.timeout(30_000);
    let dataDir: string;
    let service: Service;
    let base: string;
    /** Every route the service registered, as `METHOD /path/{param}` (fastify's onRoute, read from the app). */
    const routes: string[] = [];

    before(async () => {
        dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-openapi-"));
        service = await createService({ dataDir, env: {}, auth: { type: "bearer", token: "openapi-token" } });
        base = await service.app.listen({ port: 0, host: "127.0.0.1" });
        // fastify's route tree, one segment per line, each level four characters deeper than its parent's.
        const stack: string[] = [];
        for (const line of service.app.printRoutes({ commonPrefix: false }).split("\n")) {
            const m = /^([│├└─ ]*)(\S+) \(([A-Z, ]+)\)$/.exec(line);
            if (!m) continue;
            const depth = m[1].length / 4 - 1;
            stack.length = depth;
            stack.push(m[2]);
            const url = stack.join("").replace(/:(\w+)/g, "{$1}");
            for (const method of m[3].split(", ").filter((x) => x !== "HEAD")) routes.push(`${method} ${url}`);
        }
    });
    after(async () => {
        await service?.close();
        if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    });

    const get = (headers: Record<string, string> = {}) => fetch(`${base}${OPENAPI_PATH}`, { headers });

    it("is behind the service's authentication", async () => {
        assert.equal((await get()).status, 401);
    });

    it("is a valid OpenAPI 3.0 document naming every route the service answers, the request bodies with the schemas that check them", async () => {
        const r = await get({ authorization: "Bearer openapi-token" });
        assert.equal(r.status, 200);
        const doc = (await r.json()) as any;
        await SwaggerParser.validate(structuredClone(doc));
        assert.equal(doc.openapi, "3.0.3");
        const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`));
        const served = routes.filter((r) => r !== `GET ${OPENAPI_PATH}`);
        assert.ok(served.length > 20, `the service's routes were read: ${served.join("; ")}`);
        assert.deepEqual(served.filter((r) => !documented.includes(r)), [], "every route documented");
        for (const r of ["POST /vnflcm/v1/vnf_instances/{id}/instantiate", "POST /vnflcm/v1/vnf_instances/{id}/scale", "POST /vnflcm/v1/vnf_lcm_op_occs/{id}/retry", "GET /vnflcm/v1/subscriptions", "POST /k8s-vnf/v1/vims"]) {
            assert.ok(documented.includes(r), r);
        }
        const create = doc.paths["/vnflcm/v1/vnf_instances"].post.requestBody.content["application/json"].schema;
        assert.deepEqual(create.required, SCHEMAS.createVnfInstance.required);
        assert.deepEqual(Object.keys(create.properties).sort(), Object.keys(SCHEMAS.createVnfInstance.properties).sort());
        const instantiate = doc.paths["/vnflcm/v1/vnf_instances/{id}/instantiate"].post.requestBody.content["application/json"].schema;
        assert.ok(instantiate.required.includes("flavourId"), "InstantiateVnfRequest's flavourId required");
    });
});
