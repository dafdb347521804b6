/**
 * The service's OpenAPI document, made by @fastify/swagger from the routes as they are registered (paths,
 * parameters and the request bodies' JSON schemas, the same ones that check each request), and served at
 * OPENAPI_PATH behind the same authentication as every other route.
 */
import swagger from "@fastify/swagger";
import { FastifyInstance } from "fastify";
import { API_PREFIX } from "./links";

/** Where the document is served (a vendor resource beside SOL003's, as Tacker serves none). */
export const OPENAPI_PATH = `${API_PREFIX}/api-docs`;

/**
 * Registers the generator: call before any route is added, so that every route is in the document, and
 * `serveOpenApi` after them.
 */
export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
    await app.register(swagger, {
        openapi: {
            openapi: "3.0.3",
            info: {
                title: "k8s-vnf LCM service",
                description:
                    "ETSI GS NFV-SOL 003 VNF lifecycle management (/vnflcm/v1) over Pulumi stacks, as Tacker's `openstack vnflcm` client uses it, and the service's own VIM registry (/k8s-vnf/v1/vims).",
                version,
            },
        },
    });
}

/** GET OPENAPI_PATH: the document, left out of itself. */
export function serveOpenApi(app: FastifyInstance): void {
    app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}
