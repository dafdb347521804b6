/** SOL003's subscriptions: made once their callback answers a test notification, shown, deleted. */
import { randomUUID } from "node:crypto";
import { FastifyInstance, FastifyRequest } from "fastify";
import { API_PREFIX, subscriptionHref } from "./links";
import { Notifier } from "./notifications";
import { notFound } from "./problem";
import { SCHEMAS } from "./schemas";
import { Store } from "./store";

type Body = Record<string, any>;

export interface SubscriptionRouteContext {
    store: Store;
    notifier: Notifier;
    /** The base URL of `Location` headers and links. */
    base: (request: FastifyRequest) => string;
    /** What a GET shows of a stored record. */
    visible: (record: Body) => Body;
}

export function subscriptionRoutes(app: FastifyInstance, { store, notifier, base, visible }: SubscriptionRouteContext): void {
    app.post(`${API_PREFIX}/subscriptions`, { schema: { body: SCHEMAS.subscriptionRequest } }, async (request, reply) => {
        const body = request.body as Body;
        await notifier.testCallback(body.callbackUri, body.authentication);
        const id = randomUUID();
        const subscription = {
            id,
            filter: body.filter ?? {},
            callbackUri: body.callbackUri,
            verbosity: body.verbosity ?? "FULL",
            _links: { self: { href: subscriptionHref(base(request), id) } },
        };
        // Delivery credentials are kept, never returned.
        await store.put([{ table: "subscriptions", id, body: { ...subscription, __authentication: body.authentication ?? null } }]);
        return reply.code(201).header("location", subscription._links.self.href).send(subscription);
    });
    app.get<{ Params: { id: string } }>(`${API_PREFIX}/subscriptions/:id`, async (request) => {
        const found = await store.getMasked("subscriptions", request.params.id);
        if (!found) throw notFound("subscription", request.params.id);
        return visible(found);
    });
    app.delete<{ Params: { id: string } }>(`${API_PREFIX}/subscriptions/:id`, async (request, reply) => {
        if (!(await store.get("subscriptions", request.params.id))) throw notFound("subscription", request.params.id);
        await store.remove("subscriptions", request.params.id);
        return reply.code(204).send();
    });
}
