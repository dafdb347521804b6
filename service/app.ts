/**
 * The Tacker-facing LCM service: ETSI SOL003 `/vnflcm/v1` over this project's stacks. Bodies are checked by
 * JSON schema before a handler runs (a bad body is a 400 naming the field); every error is a
 * ProblemDetails. `X-Auth-Token` (the `openstack` client sends `notused` without Keystone) is ignored;
 * bearer or basic authentication can be switched on.
 */
import { randomUUID, timingSafeEqual } from "node:crypto";
import Fastify, { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Notifier } from "./notifications";
import { conflict, notFound, problemBody, ProblemError } from "./problem";
import { SCHEMAS } from "./schemas";
import { Store } from "./store";

export const API_PREFIX = "/vnflcm/v1";
export const API_VERSION = "1.3.0";

export type ServiceAuth = { type: "none" } | { type: "bearer"; token: string } | { type: "basic"; username: string; password: string };

export interface ServiceOptions {
    /** Where the SQLite database lives. */
    dataDir: string;
    /** Authentication of API clients; default none. */
    auth?: ServiceAuth;
    /** Base URL in `Location` headers and `_links`; default from the request's Host. */
    publicUrl?: string;
    /** Notification delivery: attempts and the first pause (doubling). */
    delivery?: { attempts: number; firstPauseMs: number };
}

export interface Service {
    app: FastifyInstance;
    store: Store;
    notifier: Notifier;
    close(): Promise<void>;
}

type Body = Record<string, any>;

export async function createService(options: ServiceOptions): Promise<Service> {
    const store = await Store.open(options.dataDir);
    const notifier = new Notifier(store, options.delivery);
    const app = Fastify({ logger: false, ajv: { customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false } } });
    app.addContentTypeParser(["application/merge-patch+json"], { parseAs: "string" }, (_req, body, done) => {
        try {
            done(null, JSON.parse(String(body)));
        } catch (e) {
            done(new ProblemError(400, `the body is not JSON: ${(e as Error).message}`), undefined);
        }
    });
    app.setErrorHandler((error: FastifyError, request, reply) => sendProblem(reply, problemOf(error), request.url));
    app.setNotFoundHandler((request, reply) => sendProblem(reply, new ProblemError(404, `no resource ${request.method} ${request.url}`), request.url));
    if (options.auth && options.auth.type !== "none") app.addHook("onRequest", authenticate(options.auth));

    const base = (request: FastifyRequest) => options.publicUrl ?? `${request.protocol}://${request.headers.host}`;
    const instanceUrl = (request: FastifyRequest, id: string) => `${base(request)}${API_PREFIX}/vnf_instances/${id}`;
    const findInstance = (id: string) => {
        const found = store.get("vnf_instances", id);
        if (!found) throw notFound("VNF instance", id);
        return found;
    };

    app.get(`${API_PREFIX}/api_versions`, async () => ({ uriPrefix: API_PREFIX, apiVersions: [{ version: API_VERSION, isDeprecated: false }] }));

    app.post(`${API_PREFIX}/vnf_instances`, { schema: { body: SCHEMAS.createVnfInstance } }, async (request, reply) => {
        const body = request.body as Body;
        const id = randomUUID();
        const instance = {
            id,
            vnfdId: body.vnfdId,
            vnfProvider: "k8s-vnf",
            vnfProductName: "Kubernetes cluster on OpenStack",
            vnfSoftwareVersion: "1.0",
            vnfdVersion: "1.0",
            vnfInstanceName: body.vnfInstanceName ?? "",
            vnfInstanceDescription: body.vnfInstanceDescription ?? "",
            instantiationState: "NOT_INSTANTIATED",
            metadata: body.metadata ?? {},
            _links: { self: { href: instanceUrl(request, id) }, instantiate: { href: `${instanceUrl(request, id)}/instantiate` } },
        };
        store.put([{ table: "vnf_instances", id, body: instance }]);
        notifier.publish({ notificationType: "VnfIdentifierCreationNotification", vnfInstanceId: id }, base(request));
        return reply.code(201).header("location", instanceUrl(request, id)).send(instance);
    });

    app.get(`${API_PREFIX}/vnf_instances`, async () => store.list("vnf_instances"));

    app.get<{ Params: { id: string } }>(`${API_PREFIX}/vnf_instances/:id`, async (request) => findInstance(request.params.id));

    app.patch<{ Params: { id: string } }>(`${API_PREFIX}/vnf_instances/:id`, { schema: { body: SCHEMAS.modifyVnfInstance } }, async (request, reply) => {
        const instance = findInstance(request.params.id);
        const body = request.body as Body;
        const now = new Date().toISOString();
        const next: Body = { ...instance };
        for (const key of ["vnfInstanceName", "vnfInstanceDescription"]) if (body[key] !== undefined) next[key] = body[key];
        if (body.metadata) next.metadata = mergePatch((instance.metadata as Body) ?? {}, body.metadata);
        if (body.vimConnectionInfo) next.vimConnectionInfo = body.vimConnectionInfo;
        const opId = randomUUID();
        const opOcc = {
            id: opId,
            operationState: "COMPLETED",
            stateEnteredTime: now,
            startTime: now,
            vnfInstanceId: instance.id,
            operation: "MODIFY_INFO",
            isAutomaticInvocation: false,
            operationParams: body,
            isCancelPending: false,
            _links: { self: { href: `${base(request)}${API_PREFIX}/vnf_lcm_op_occs/${opId}` }, vnfInstance: { href: instanceUrl(request, String(instance.id)) } },
        };
        store.put([
            { table: "vnf_instances", id: String(instance.id), body: next },
            { table: "op_occs", id: opId, body: opOcc },
        ]);
        return reply.code(202).header("location", opOcc._links.self.href).send();
    });

    app.delete<{ Params: { id: string } }>(`${API_PREFIX}/vnf_instances/:id`, async (request, reply) => {
        const instance = findInstance(request.params.id);
        if (instance.instantiationState !== "NOT_INSTANTIATED") throw conflict(`VNF instance ${instance.id} is ${instance.instantiationState}: terminate it before deleting it`);
        store.remove("vnf_instances", String(instance.id));
        notifier.publish({ notificationType: "VnfIdentifierDeletionNotification", vnfInstanceId: String(instance.id) }, base(request));
        return reply.code(204).send();
    });

    app.get(`${API_PREFIX}/vnf_lcm_op_occs`, async () => store.list("op_occs"));
    app.get<{ Params: { id: string } }>(`${API_PREFIX}/vnf_lcm_op_occs/:id`, async (request) => {
        const found = store.get("op_occs", request.params.id);
        if (!found) throw notFound("VNF LCM operation occurrence", request.params.id);
        return found;
    });

    app.post(`${API_PREFIX}/subscriptions`, { schema: { body: SCHEMAS.subscriptionRequest } }, async (request, reply) => {
        const body = request.body as Body;
        await notifier.testCallback(body.callbackUri, body.authentication);
        const id = randomUUID();
        const subscription = {
            id,
            filter: body.filter ?? {},
            callbackUri: body.callbackUri,
            verbosity: body.verbosity ?? "FULL",
            _links: { self: { href: `${base(request)}${API_PREFIX}/subscriptions/${id}` } },
        };
        // Delivery credentials are kept, never returned.
        store.put([{ table: "subscriptions", id, body: { ...subscription, __authentication: body.authentication ?? null } }]);
        return reply.code(201).header("location", subscription._links.self.href).send(subscription);
    });
    const publicSubscription = (s: Body) => Object.fromEntries(Object.entries(s).filter(([k]) => !k.startsWith("__")));
    app.get(`${API_PREFIX}/subscriptions`, async () => store.list("subscriptions").map(publicSubscription));
    app.get<{ Params: { id: string } }>(`${API_PREFIX}/subscriptions/:id`, async (request) => {
        const found = store.get("subscriptions", request.params.id);
        if (!found) throw notFound("subscription", request.params.id);
        return publicSubscription(found);
    });
    app.delete<{ Params: { id: string } }>(`${API_PREFIX}/subscriptions/:id`, async (request, reply) => {
        if (!store.get("subscriptions", request.params.id)) throw notFound("subscription", request.params.id);
        store.remove("subscriptions", request.params.id);
        return reply.code(204).send();
    });

    return {
        app,
        store,
        notifier,
        async close() {
            await app.close();
            await notifier.drain();
            store.close();
        },
    };
}

/** RFC 7386 JSON merge patch. */
function mergePatch(target: Body, patch: Body): Body {
    const out: Body = { ...target };
    for (const [k, v] of Object.entries(patch)) {
        if (v === null) delete out[k];
        else if (typeof v === "object" && !Array.isArray(v) && typeof out[k] === "object" && out[k] !== null) out[k] = mergePatch(out[k], v);
        else out[k] = v;
    }
    return out;
}

function sendProblem(reply: FastifyReply, problem: ProblemError, instance: string) {
    return reply.code(problem.status).type("application/problem+json").send(problemBody(problem.status, problem.detail, instance));
}

/** A schema failure names the fields (`body.numberOfSteps: must be integer`); other errors keep their status. */
function problemOf(error: FastifyError): ProblemError {
    if (error instanceof ProblemError) return error;
    if (error.validation) {
        const details = error.validation.map((v) => {
            const missing = (v.params as { missingProperty?: string }).missingProperty;
            const extra = (v.params as { additionalProperty?: string }).additionalProperty;
            const field = `body${v.instancePath.replace(/\//g, ".")}${missing ? `.${missing}` : ""}${extra ? `.${extra}` : ""}`;
            return `${field}: ${missing ? "is required" : extra ? "is not a known field" : v.message}`;
        });
        return new ProblemError(400, details.join("; "));
    }
    const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
    return new ProblemError(status, status === 500 ? `internal error: ${error.message}` : error.message);
}

function authenticate(auth: Exclude<ServiceAuth, { type: "none" }>) {
    const expected = auth.type === "bearer" ? `Bearer ${auth.token}` : `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString("base64")}`;
    return async (request: FastifyRequest, reply: FastifyReply) => {
        const given = Buffer.from(String(request.headers.authorization ?? ""));
        const want = Buffer.from(expected);
        if (given.length !== want.length || !timingSafeEqual(given, want)) {
            reply.header("www-authenticate", auth.type === "bearer" ? "Bearer" : 'Basic realm="k8s-vnf"');
            return sendProblem(reply, new ProblemError(401, `this service needs ${auth.type} authentication (Authorization header)`), request.url);
        }
    };
}
