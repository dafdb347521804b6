/**
 * `GET /readyz`: whether this replica should be sent requests, for a load balancer's or a kubelet's probe, as
 * Kubernetes' own components answer it. Not ready while it warms up (loading the Automation API blocks the
 * process for most of a second: better before the first request than during it), and while its store does not
 * answer; once it stops, fastify answers 503 while it closes. No authentication, as a probe has none: it says
 * nothing but that.
 */
import { FastifyInstance } from "fastify";
import { Store } from "./store";

export const READINESS_ROUTE = "/readyz";

/** How long the store may take to answer a probe's query before the replica counts as not ready. */
const STORE_ANSWER_MS = 2_000;

export class Readiness {
    phase: "starting" | "ready" = "starting";

    constructor(private readonly store: Store) {}

    /** The phase, and "store unreachable" when a ready replica's store does not answer in time. */
    async check(): Promise<{ ready: boolean; status: string }> {
        if (this.phase !== "ready") return { ready: false, status: this.phase };
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${STORE_ANSWER_MS} ms`)), STORE_ANSWER_MS);
        });
        try {
            await Promise.race([this.store.ping(), late]);
            return { ready: true, status: "ready" };
        } catch {
            return { ready: false, status: "store unreachable" };
        } finally {
            clearTimeout(timer);
        }
    }
}

export function readinessRoute(app: FastifyInstance, readiness: Readiness): void {
    const summary = "Whether this replica should be sent requests: 200 ready; 503 starting, or its store unreachable. No authentication.";
    app.get(READINESS_ROUTE, { schema: { summary } }, async (_request, reply) => {
        const { ready, status } = await readiness.check();
        return reply.code(ready ? 200 : 503).send({ status });
    });
}
