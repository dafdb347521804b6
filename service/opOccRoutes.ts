/**
 * SOL003's VNF LCM operation occurrences: show one (its task links those its state allows), its tasks (retry,
 * rollback, cancel, fail: lifecycle.ts decides whether each is allowed now), and its progress as server-sent
 * events.
 */
import { FastifyInstance } from "fastify";
import { Lifecycle } from "./lifecycle";
import { API_PREFIX, opOccLinks } from "./links";
import { notFound, ProblemError } from "./problem";
import { Store } from "./store";

type Body = Record<string, any>;

export interface OpOccRouteContext {
    store: Store;
    lifecycle: Lifecycle;
    /** What a GET shows of a stored record. */
    visible: (record: Body) => Body;
}

/**
 * States in which an occurrence's progress stream ends: it is over, or waits for a person (FAILED_TEMP: a
 * retry or rollback starts a new run, watched by a new stream).
 */
const WAITING_OR_DONE: ReadonlySet<string> = new Set(["COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK"]);

/** How often a progress stream reads the occurrence, for what another replica runs. */
const PROGRESS_POLL_MS = 500;

/** What a GET shows of an occurrence: `visible`, its task links those its state allows. */
export function visibleOp(visible: (record: Body) => Body, record: Body): Body {
    const shown = visible(record);
    return { ...shown, _links: opOccLinks(shown as Parameters<typeof opOccLinks>[0]) };
}

export function opOccRoutes(app: FastifyInstance, { store, lifecycle, visible }: OpOccRouteContext): void {
    // What these routes show of an occurrence: as stored, its secrets masked.
    const findOp = async (id: string) => {
        const found = await store.getMasked("op_occs", id);
        if (!found) throw notFound("VNF LCM operation occurrence", id);
        return found;
    };
    app.get<{ Params: { id: string } }>(`${API_PREFIX}/vnf_lcm_op_occs/:id`, async (request) => visibleOp(visible, await findOp(request.params.id)));
    const opTask = (name: "retry" | "rollback") =>
        app.post<{ Params: { id: string } }>(`${API_PREFIX}/vnf_lcm_op_occs/:id/${name}`, async (request, reply) => {
            await lifecycle[name](request.params.id);
            return reply.code(202).send();
        });
    opTask("retry");
    opTask("rollback");
    // SOL003 §5.4.17: GRACEFUL waits for the steps under way; FORCEFUL stops them (cancelMode; GRACEFUL when absent).
    app.post<{ Params: { id: string }; Body: Body | undefined }>(`${API_PREFIX}/vnf_lcm_op_occs/:id/cancel`, async (request, reply) => {
        const mode = request.body?.cancelMode ?? "GRACEFUL";
        if (mode !== "GRACEFUL" && mode !== "FORCEFUL") throw new ProblemError(400, "cancelMode: GRACEFUL or FORCEFUL");
        await lifecycle.cancel(request.params.id, mode);
        return reply.code(202).send();
    });
    app.post<{ Params: { id: string } }>(`${API_PREFIX}/vnf_lcm_op_occs/:id/fail`, async (request) => visibleOp(visible, await lifecycle.fail(request.params.id)));
    // Progress as server-sent events: one `progress` event per engine event, `state` on each transition, until
    // the occurrence is over or waits for a person. A watcher that reads slowly loses progress events (each
    // is the whole progress so far), never a state. What another replica runs reaches this one through the
    // store, read every PROGRESS_POLL_MS.
    app.get<{ Params: { id: string } }>(`${API_PREFIX}/vnf_lcm_op_occs/:id/progress`, async (request, reply) => {
        const op = await findOp(request.params.id);
        reply.hijack();
        const raw = reply.raw;
        raw.on("error", () => undefined);
        raw.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
        const send = (event: string, data: unknown) => raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        let state = String(op.operationState);
        // Engine events seen so far: a progress read from the store is sent only when it is further along.
        let events = Number((op.progress as Body | undefined)?.engineEvents ?? 0);
        send("state", { operationState: state });
        if (WAITING_OR_DONE.has(state)) return void raw.end();
        const finish = () => {
            clearInterval(poll);
            lifecycle.events.off(String(op.id), listener);
            if (!raw.writableEnded) raw.end();
        };
        const listener = (data: Body) => {
            if (raw.writableEnded || (!data.operationState && raw.writableNeedDrain)) return;
            if (data.operationState) {
                if (data.operationState === state) return;
                state = String(data.operationState);
            } else {
                events = Math.max(events, Number(data.engineEvents ?? 0));
            }
            send(data.operationState ? "state" : "progress", data);
            if (WAITING_OR_DONE.has(state)) finish();
        };
        const poll = setInterval(() => {
            store.getMasked("op_occs", String(op.id)).then(
                (now) => {
                    if (!now || raw.writableEnded) return;
                    if (Number((now.progress as Body | undefined)?.engineEvents ?? 0) > events) listener(now.progress as Body);
                    if (now.operationState !== state) listener({ operationState: now.operationState });
                },
                () => undefined,
            );
        }, PROGRESS_POLL_MS);
        lifecycle.events.on(String(op.id), listener);
        raw.on("close", finish);
    });
}
