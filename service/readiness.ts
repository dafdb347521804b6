/**
 * `GET /readyz`: whether this replica should be sent requests, for a load balancer's or a kubelet's probe, as
 * Kubernetes' own components answer it: 200 once the service has warmed up (`serve` does so right after it
 * listens: loading the Automation API blocks the process for most of a second, better then than during a
 * request; a request that arrives meanwhile waits for it) and while its store answers; 503 `starting` before
 * (a service made in process and not warmed up), 503 `store unreachable` while the store does not answer in
 * time. Once the service stops, fastify answers 503 while it closes. No authentication, as a probe has none:
 * it says nothing but that.
 */
import { FastifyInstance } from "fastify";
import { Store } from "./store";

export const READINESS_ROUTE = "/readyz";

/** How long the store may take to answer a probe's query before the replica counts as not ready. */
const STORE_ANSWER_MS = 2_000;

export class Readiness {
    private warm = false;
    /** The store's answer probes are waiting for: one query at a time, however many probes come. */
    private pinging: Promise<boolean> | undefined;

    constructor(
        private readonly store: Pick<Store, "ping">,
        private readonly answerMs = STORE_ANSWER_MS,
    ) {}

    markReady(): void {
        this.warm = true;
    }

    async check(): Promise<{ ready: boolean; status: string }> {
        if (!this.warm) return { ready: false, status: "starting" };
        this.pinging ??= this.storeAnswers().finally(() => (this.pinging = undefined));
        return (await this.pinging) ? { ready: true, status: "ready" } : { ready: false, status: "store unreachable" };
    }

    private async storeAnswers(): Promise<boolean> {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`no answer within ${this.answerMs} ms`)), this.answerMs);
        });
        try {
            await Promise.race([this.store.ping(), late]);
            return true;
        } catch {
            return false;
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
