/**
 * The Tacker-facing LCM service: ETSI SOL003 `/vnflcm/v1` over this project's stacks. Bodies are checked by
 * JSON schema before a handler runs (a bad body is a 400 naming the field); every error is a
 * ProblemDetails. `X-Auth-Token` (the `openstack` client sends `notused` without Keystone) is ignored;
 * bearer or basic authentication can be switched on.
 */
import { LogFormat, logOperations } from "./operationLog";
import { createHash, randomUUID } from "node:crypto";
import * as path from "node:path";
import Fastify, { FastifyError, FastifyInstance, FastifyRequest } from "fastify";
import { maskSecrets } from "../config/secrets";
import { parseJsonBody } from "./jsonBody";
import { LIST_RULES, ListQuery, ListRules, nextPageLink, queryList } from "./query";
import { NfvoOptions } from "./kubernetesVims";
import { instanceLinks } from "./instanceView";
import { assertNoneHolding, Lifecycle, Operation } from "./lifecycle";
import { API_PREFIX, instanceHref, opOccHref } from "./links";
import { Notifier } from "./notifications";
import { conflict, notFound, ProblemError, problemOf, sendProblem } from "./problem";
import { authenticate, ServiceAuth } from "./authentication";

export type { ServiceAuth };
import { dryRun, operationOf } from "./dryRun";
import { DryRunPool } from "./dryRunPool";
import { clientError, DEFAULT_HTTP_LIMITS, HttpLimits, limitedServer } from "./httpServer";
import { registerOpenApi, serveOpenApi } from "./openApi";
import { SCHEMAS } from "./schemas";
import { AutomationStackRunner, StackRunner } from "./stackRunner";
import { SecretsKeyring } from "./secretsAtRest";
import { openStore, Store, Table } from "./store";
import { thisReplica } from "./claims";
import { subscriptionRoutes } from "./subscriptionRoutes";
import { vimRoutes } from "./vimRoutes";
import { opOccRoutes, visibleOp } from "./opOccRoutes";
import { Readiness, readinessRoute } from "./readiness";

export const API_VERSION = "1.3.0";

/** Each operation's request body, as its task resource (`POST …/vnf_instances/{id}/<operation>`) takes it. */
const REQUEST_SCHEMAS: Record<Operation, object> = {
    INSTANTIATE: SCHEMAS.instantiateVnfRequest,
    SCALE: SCHEMAS.scaleVnfRequest,
    SCALE_TO_LEVEL: SCHEMAS.scaleVnfToLevelRequest,
    HEAL: SCHEMAS.healVnfRequest,
    TERMINATE: SCHEMAS.terminateVnfRequest,
    OPERATE: SCHEMAS.operateVnfRequest,
    CHANGE_EXT_CONN: SCHEMAS.changeExtVnfConnectivityRequest,
    CHANGE_FLAVOUR: SCHEMAS.changeVnfFlavourRequest,
};

export interface ServiceOptions {
    /** Where the SQLite database lives. */
    dataDir: string;
    /**
     * The keys that seal secrets at rest, one per line (secretsAtRest.ts); default the environment's
     * K8S_VNF_LCM_SECRETS_KEY, else a key made once in the data directory.
     */
    secretsKeyFile?: string;
    /**
     * A PostgreSQL URL (postgres://user@host/db, its password from PGPASSWORD or ~/.pgpass): the store several
     * replicas of the service share. Default: SQLite in dataDir.
     */
    database?: string;
    /** How long a replica's claim on an operation lasts unless renewed; default 15 s. */
    claimLeaseMs?: number;
    /** Authentication of API clients; default none. */
    auth?: ServiceAuth;
    /**
     * Base URL in `Location` headers, `_links` and notifications; default the address and port the request
     * arrived at (never the client's Host header).
     */
    publicUrl?: string;
    /** Whether subscriptions may call back to loopback addresses (the service's own host); default no. */
    allowLoopbackCallbacks?: boolean;
    /** Notification delivery: attempts and the first pause (doubling). */
    delivery?: { attempts: number; firstPauseMs: number };
    /** The project directory (Pulumi.yaml); default: this package's. */
    projectDir?: string;
    /** A Tacker NFVO to register the clusters' Kubernetes VIMs in too. */
    nfvo?: NfvoOptions;
    /** VNF packages, one unpacked folder per vnfdId; without it, requests may name no package file. */
    packagesDir?: string;
    /** Items in one page of a list (SOL013 §5.4: further pages through `Link: <…>; rel="next"`); default 100. */
    pageSize?: number;
    /** Operations running at once, across instances; default 4. */
    maxParallel?: number;
    /** Where a line goes for each step of each operation (operationLog.ts), in which format; default nowhere. */
    log?: { format: LogFormat; write: (line: string) => void };
    /** Dry runs (`POST …/plan`) at once, a pool of their own; default 2. */
    maxDryRuns?: number;
    /** How stacks are run; default the Automation API with the Pulumi CLI on PATH (or under `pulumiRoot`). */
    runner?: StackRunner;
    /** Directory holding bin/pulumi, for the default runner. */
    pulumiRoot?: string;
    /** Environment of the service (OS_* for the default VIM; the rest, PULUMI_* included, for the CLI); default process.env. */
    env?: NodeJS.ProcessEnv;
    /** Deadlines of a request's arrival, and connections at once; default DEFAULT_HTTP_LIMITS. */
    httpLimits?: Partial<HttpLimits>;
}

export interface Service {
    app: FastifyInstance;
    store: Store;
    /** What seals secrets at rest: its sealing key's id and where the keys came from. */
    keyring: SecretsKeyring;
    notifier: Notifier;
    lifecycle: Lifecycle;
    /**
     * Loads what operations need (the Automation API) before the first one does, then answers ready; the promise
     * is the Pulumi CLI's check, which fails as the first operation would (missing, too old).
     */
    warmUp(): Promise<void>;
    close(): Promise<void>;
}

type Body = Record<string, any>;

export async function createService(options: ServiceOptions): Promise<Service> {
    const keyring = SecretsKeyring.load({ keyFile: options.secretsKeyFile, env: options.env ?? process.env, dataDir: options.dataDir });
    const store = await openStore({ dataDir: options.dataDir, database: options.database, keyring, leaseMs: options.claimLeaseMs });
    const notifier = new Notifier(store, options.delivery, { allowLoopback: options.allowLoopbackCallbacks ?? false });
    const env = options.env ?? process.env;
    const projectDir = options.projectDir ?? path.resolve(__dirname, "..");
    const variables = (keep: (name: string) => boolean) => Object.fromEntries(Object.entries(env).filter(([k, v]) => keep(k) && v !== undefined)) as Record<string, string>;
    // The CLI gets the service's environment but for OpenStack credentials (each operation passes its VIM's)
    // and the service's own credentials (its API's, its database's, its secrets key).
    // PostgreSQL's PG* variables (PGPASSWORD) only when the Pulumi state is in PostgreSQL too.
    const pulumiOnPostgres = /^postgres(ql)?:/.test(env.PULUMI_BACKEND_URL ?? "");
    const cliEnv = variables((k) => !k.startsWith("OS_") && !k.startsWith("K8S_VNF_LCM_") && k !== "K8S_VNF_TACKER_NFVO_TOKEN" && (pulumiOnPostgres || !k.startsWith("PG")));
    const runner = options.runner ?? new AutomationStackRunner({ projectDir, pulumiRoot: options.pulumiRoot, env: cliEnv });
    const dryRuns = new DryRunPool(path.join(options.dataDir, "dry-runs"), options.maxDryRuns ?? 2);
    const replica = thisReplica();
    const lifecycle = new Lifecycle(store, notifier, runner, {
        projectDir,
        packagesDir: options.packagesDir,
        maxParallel: options.maxParallel ?? 4,
        defaultVimEnv: variables((k) => k.startsWith("OS_")),
        nfvo: options.nfvo,
        stopDryRuns: (instanceId) => dryRuns.stopFor(instanceId),
    }, replica);
    if (options.log) logOperations(lifecycle.events, options.log.format, options.log.write);
    await dryRuns.recover();
    await lifecycle.recover();
    const app = Fastify({
        logger: false,
        serverFactory: limitedServer({ ...DEFAULT_HTTP_LIMITS, ...options.httpLimits }),
        clientErrorHandler: clientError,
        ajv: { customOptions: { allErrors: true, coerceTypes: false, removeAdditional: false } },
        // Errors met before routing (a URL that does not decode) bypass the error handler.
        frameworkErrors: (error, request, reply) => sendProblem(reply, problemOf(error), request.url),
    });
    // Only JSON bodies: fastify's own parsers (text/plain among them) go.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser(["application/json", "application/merge-patch+json"], { parseAs: "string" }, (_req, body, done) => {
        try {
            done(null, parseJsonBody(String(body)));
        } catch (e) {
            done(e as ProblemError, undefined);
        }
    });
    const routes = new KnownRoutes();
    app.addHook("onRoute", (route) => routes.add(route.url, route.method));
    app.setErrorHandler((error: FastifyError, request, reply) => sendProblem(reply, problemOf(error), request.url));
    app.setNotFoundHandler((request, reply) => {
        const allowed = routes.methodsOf(request.url);
        if (allowed.length === 0) return sendProblem(reply, new ProblemError(404, `no resource ${request.method} ${request.url}`), request.url);
        reply.header("allow", allowed.join(", "));
        return sendProblem(reply, new ProblemError(405, `${request.method} is not supported here; allowed: ${allowed.join(", ")}`), request.url);
    });
    if (options.auth && options.auth.type !== "none") app.addHook("onRequest", authenticate(options.auth));
    await registerOpenApi(app, API_VERSION);
    const readiness = new Readiness(store);
    readinessRoute(app, readiness);

    const base = (request: FastifyRequest) => options.publicUrl ?? arrivalUrl(request);
    const instanceUrl = (request: FastifyRequest, id: string) => instanceHref(base(request), id);

    // SOL013 §9.3: the versions of the API, under the API's root and under the major version's prefix.
    const apiVersions = async () => ({ uriPrefix: API_PREFIX, apiVersions: [{ version: API_VERSION, isDeprecated: false }] });
    app.get("/vnflcm/api_versions", apiVersions);
    app.get(`${API_PREFIX}/api_versions`, apiVersions);

    app.post(`${API_PREFIX}/vnf_instances`, { schema: { body: SCHEMAS.createVnfInstance } }, async (request, reply) => {
        const body = maskSecrets(request.body as Body);
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
            _links: instanceLinks(base(request), id, "NOT_INSTANTIATED"),
        };
        await store.put([{ table: "vnf_instances", id, body: instance }]);
        notifier.publish({ notificationType: "VnfIdentifierCreationNotification", vnfInstanceId: id }, base(request));
        return reply.code(201).header("location", instanceUrl(request, id)).send(instance);
    });

    // Lists (SOL013 §5.2–5.4): filtered, paged and cut by attribute selectors, over what a GET shows.
    const list = (table: Table, route: string, rules: ListRules, view: (record: Body) => Body = visible) =>
        app.get(route, async (request, reply) => {
            const page = queryList((await store.listMasked(table)).map(view), request.query as ListQuery, { ...rules, pageSize: options.pageSize ?? 100 });
            if (page.nextMarker) reply.header("link", nextPageLink(`${base(request)}${route}`, request.query as ListQuery, page.nextMarker));
            return page.items;
        });
    list("vnf_instances", `${API_PREFIX}/vnf_instances`, LIST_RULES.vnfInstances);
    list("op_occs", `${API_PREFIX}/vnf_lcm_op_occs`, LIST_RULES.opOccs, (record) => visibleOp(visible, record));
    list("subscriptions", `${API_PREFIX}/subscriptions`, LIST_RULES.subscriptions);

    // SOL003 §5.4.3.3.2 / SOL013 §4.5: an individual VNF instance carries an ETag; a PATCH may send it back
    // in If-Match, and a stale one is a 412.
    app.get<{ Params: { id: string } }>(`${API_PREFIX}/vnf_instances/:id`, async (request, reply) => {
        const found = await store.getMasked("vnf_instances", request.params.id);
        if (!found) throw notFound("VNF instance", request.params.id);
        // Serialized once, for its entity tag and its body.
        const text = JSON.stringify(visible(found));
        return reply.header("etag", etagOfText(text)).type(JSON_TYPE).send(text);
    });

    for (const [operation, schema] of Object.entries(REQUEST_SCHEMAS) as [Operation, object][]) {
        app.post<{ Params: { id: string } }>(`${API_PREFIX}/vnf_instances/:id/${operation.toLowerCase()}`, { schema: { body: schema } }, async (request, reply) => {
            const op = await lifecycle.start(operation, request.params.id, request.body as Body, base(request));
            return reply.code(202).header("location", (op._links as Body).self.href).send();
        });
    }

    // A dry run of any of those requests (dryRun.ts): the same checks, then a preview; 200 with the plan, as
    // text when the client asks for text/plain.
    app.post<{ Params: { id: string }; Querystring: { operation?: string } }>(`/k8s-vnf/v1/vnf_instances/:id/plan`, async (request, reply) => {
        const body = (request.body ?? {}) as Body;
        if (typeof body !== "object" || Array.isArray(body)) throw new ProblemError(400, "body: must be an LCM request object");
        const operation = operationOf(request.query.operation, body);
        const validate = request.compileValidationSchema(REQUEST_SCHEMAS[operation]);
        if (!validate(body)) throw Object.assign(new Error("invalid body"), { validation: validate.errors ?? [] });
        const clientGone = new AbortController();
        reply.raw.on("close", () => reply.raw.writableFinished || clientGone.abort());
        const plan = await dryRun(lifecycle, runner, dryRuns, operation, request.params.id, body, clientGone.signal);
        if (/^text\/plain\b/.test(request.headers.accept ?? "")) return reply.type("text/plain; charset=utf-8").send(plan.text);
        return plan;
    });

    // A PATCH and a DELETE decide with the instance's row locked (Store.onInstance): against an operation
    // accepted meanwhile, here or on another replica.
    app.patch<{ Params: { id: string } }>(`${API_PREFIX}/vnf_instances/:id`, { schema: { body: SCHEMAS.modifyVnfInstance } }, async (request, reply) => {
        const id = request.params.id;
        const ifMatch = request.headers["if-match"];
        // Whatever the patch carries under a secret's name (vimConnectionInfo's accessInfo.password) is kept
        // masked: the service runs operations with registered VIMs' credentials, never these.
        const body = maskSecrets(request.body as Body);
        const now = new Date().toISOString();
        const opId = randomUUID();
        const opOcc = {
            id: opId,
            operationState: "COMPLETED",
            stateEnteredTime: now,
            startTime: now,
            vnfInstanceId: id,
            operation: "MODIFY_INFO",
            isAutomaticInvocation: false,
            operationParams: body,
            isCancelPending: false,
            _links: { self: { href: opOccHref(base(request), opId) }, vnfInstance: { href: instanceUrl(request, id) } },
        };
        await store.onInstance(id, (instance, occurrences) => {
            if (!instance) throw notFound("VNF instance", id);
            if (ifMatch !== undefined && ifMatch !== "*" && !ifMatch.split(",").map((t) => t.trim()).includes(etagOf(visible(instance)))) {
                throw new ProblemError(412, `If-Match: VNF instance ${id} has changed since (its ETag is no longer ${ifMatch})`);
            }
            assertNoneHolding(id, occurrences);
            const next: Body = { ...instance };
            for (const key of ["vnfInstanceName", "vnfInstanceDescription"]) if (body[key] !== undefined) next[key] = body[key];
            if (body.metadata) next.metadata = mergePatch((instance.metadata as Body) ?? {}, body.metadata);
            if (body.vimConnectionInfo) next.vimConnectionInfo = body.vimConnectionInfo;
            return { put: [{ table: "vnf_instances", id, body: next }, { table: "op_occs", id: opId, body: opOcc }] };
        });
        return reply.code(202).header("location", opOcc._links.self.href).send();
    });

    app.delete<{ Params: { id: string } }>(`${API_PREFIX}/vnf_instances/:id`, async (request, reply) => {
        const id = request.params.id;
        const notInstantiated = (instance: Body | undefined) => {
            if (!instance) throw notFound("VNF instance", id);
            if (instance.instantiationState !== "NOT_INSTANTIATED") throw conflict(`VNF instance ${id} is ${instance.instantiationState}: terminate it before deleting it`);
        };
        notInstantiated(await store.get("vnf_instances", id));
        // An instantiate's dry run would otherwise go on to make the stack of an instance that is gone.
        await dryRuns.stopFor(id, "the instance is being deleted");
        await store.onInstance(id, (instance, occurrences) => {
            notInstantiated(instance);
            assertNoneHolding(id, occurrences);
            return { remove: [{ table: "vnf_instances", id }] };
        });
        notifier.publish({ notificationType: "VnfIdentifierDeletionNotification", vnfInstanceId: id }, base(request));
        return reply.code(204).send();
    });

    opOccRoutes(app, { store, lifecycle, visible });
    vimRoutes(app, { store, base, visible });

    subscriptionRoutes(app, { store, notifier, base, visible });
    serveOpenApi(app);

    return {
        app,
        store,
        keyring,
        notifier,
        lifecycle,
        warmUp() {
            const cliChecked = runner.warmUp?.() ?? Promise.resolve();
            readiness.markReady();
            return cliChecked;
        },
        async close() {
            await dryRuns.stopAll();
            await app.close();
            await lifecycle.idle();
            await lifecycle.close();
            await notifier.drain();
            await store.close();
        },
    };
}

/**
 * What a GET shows of a stored record: fields starting with `__` (credentials, stack config) never, and any
 * secret the record holds masked (what requests carry is masked before it is stored; this is the last line).
 */
function visible(record: Body): Body {
    return maskSecrets(Object.fromEntries(Object.entries(record).filter(([k]) => !k.startsWith("__"))));
}

/** A strong entity tag of what a GET shows. */
function etagOf(shown: Body): string {
    return etagOfText(JSON.stringify(shown));
}

function etagOfText(text: string): string {
    return `"${createHash("sha256").update(text).digest("base64url").slice(0, 27)}"`;
}

/** What fastify sends a serialized object as. */
const JSON_TYPE = "application/json; charset=utf-8";

/** The base URL a request arrived at: the service's own address and port, whatever Host the client sent. */
function arrivalUrl(request: FastifyRequest): string {
    const local = request.socket.localAddress ?? "127.0.0.1";
    const address = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(local)?.[1] ?? local; // an IPv4 client of a dual-stack listener
    return `${request.protocol}://${address.includes(":") ? `[${address}]` : address}:${request.socket.localPort}`;
}

/** The routes' URL patterns and their methods, to tell an unsupported method (405) from no resource (404). */
class KnownRoutes {
    private readonly routes: { source: string; pattern: RegExp; methods: Set<string> }[] = [];

    add(url: string, method: string | string[]): void {
        const source = `^${url.split("/").map((seg) => (seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/")}$`;
        let route = this.routes.find((r) => r.source === source);
        if (!route) this.routes.push((route = { source, pattern: new RegExp(source), methods: new Set() }));
        for (const m of ([] as string[]).concat(method)) route.methods.add(m);
    }

    /** The methods of the route the URL's path names, none if it names no route. */
    methodsOf(url: string): string[] {
        const path = url.split("?")[0];
        return [...(this.routes.find((r) => r.pattern.test(path))?.methods ?? [])].sort();
    }
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
