/**
 * SOL003's VNF LCM operation occurrences: show one (its task links those its state allows), its tasks (retry,
 * rollback, cancel, fail: lifecycle.ts decides whether each is allowed now), and its progress as server-sent
 * events.
 */
import { FastifyInstance } from "fastify";
import { Lifecycle } from "./lifecycle";
import { API_PREFIX, opOccLinks } from "./links";
import { notFound } from "./problem";
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

/** What a GET shows of an occurrence: `visible`, its task links those its state allows. */
export function visibleOp(visible: (record: Body) => Body, record: Body): Body {
    const shown = visible(record);
    return { ...shown, _links: opOccLinks(shown as Parameters<typeof opOccLinks>[0]) };
}

export function opOccRoutes(app: FastifyInstance, { store, lifecycle, visible }: OpOccRouteContext): void {
    const findOp = (id: string) => {
        const found = store.get("op_occs", id);
        if (!found) throw notFound("VNF LCM operation occurrence", id);
        return found;
    };
    app.get<{ Params: { id: string } }>(`${API_PREFIX}/vnf_lcm_op_occs/:id`, async (request) => visibleOp(visible, findOp(request.params.id)));
    const opTask = (name: "retry" | "rollback" | "cancel") =>
        app.post<{ Params: { id: string } }>(`${API_PREFIX}/vnf_lcm_op_occs/:id/${name}`, async (request, reply) => {
            lifecycle[name](request.params.id);
            return reply.code(202).send();
        });
    opTask("retry");
    opTask("rollback");
    opTask("cancel");
    app.post<{ Params: { id: string } }>(`${API_PREFIX}/vnf_lcm_op_occs/:id/fail`, async (request) => visibleOp(visible, lifecycle.fail(request.params.id)));
    // Progress as server-sent events: one `progress` event per engine event, `state` on each transition, until
    // the occurrence is over or waits for a person. A watcher that reads slowly loses progress events (each
    // is the whole progress so far), never a state.
    app.get<{ Params: { id: string } }>(`${API_PREFIX}/vnf_lcm_op_occs/:id/progress`, (request, reply) => {
        const op = findOp(request.params.id);
        reply.hijack();
        const raw = reply.raw;
        raw.on("error", () => undefined);
        raw.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
        const send = (event: string, data: unknown) => raw.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
        send("state", { operationState: op.operationState });
        if (WAITING_OR_DONE.has(String(op.operationState))) return void raw.end();
        const finish = () => {
            lifecycle.events.off(String(op.id), listener);
            if (!raw.writableEnded) raw.end();
        };
        const listener = (data: Body) => {
            if (raw.writableEnded || (!data.operationState && raw.writableNeedDrain)) return;
            send(data.operationState ? "state" : "progress", data);
            if (WAITING_OR_DONE.has(String(data.operationState))) finish();
        };
        lifecycle.events.on(String(op.id), listener);
        raw.on("close", finish);
    });

}
