/**
 * SOL003 notifications to subscribers: filtered per subscription, POSTed to the callback (204 expected),
 * retried with a doubling pause, and never awaited by the operation that caused them, so a dead callback
 * cannot block anything. Callbacks are called under an address policy (./callbackClient).
 */
import { randomUUID } from "node:crypto";
import { maskSecrets } from "../config/secrets";
import { callCallback, CallbackPolicy, CallbackRefusedError } from "./callbackClient";
import { instanceHref, subscriptionHref } from "./links";
import { ProblemError } from "./problem";
import { Store } from "./store";

export interface Notification {
    notificationType: "VnfLcmOperationOccurrenceNotification" | "VnfIdentifierCreationNotification" | "VnfIdentifierDeletionNotification";
    vnfInstanceId: string;
    [key: string]: unknown;
}

type Authentication = { authType?: string[]; paramsBasic?: { userName?: string; password?: string } } | null | undefined;

const TIMEOUT_MS = 10_000;

function headersFor(auth: Authentication): Record<string, string> {
    const basic = auth?.authType?.includes("BASIC") ? auth.paramsBasic : undefined;
    return basic?.userName ? { authorization: `Basic ${Buffer.from(`${basic.userName}:${basic.password ?? ""}`).toString("base64")}` } : {};
}

function matches(filter: Record<string, any>, n: Notification): boolean {
    if (filter.notificationTypes?.length && !filter.notificationTypes.includes(n.notificationType)) return false;
    if (filter.vnfInstanceSubscriptionFilter?.vnfInstanceIds?.length && !filter.vnfInstanceSubscriptionFilter.vnfInstanceIds.includes(n.vnfInstanceId)) return false;
    if (n.notificationType === "VnfLcmOperationOccurrenceNotification") {
        if (filter.operationTypes?.length && !filter.operationTypes.includes(n.operation)) return false;
        if (filter.operationStates?.length && !filter.operationStates.includes(n.operationState)) return false;
    }
    return true;
}

export class Notifier {
    private readonly inFlight = new Set<Promise<void>>();
    private sending: Promise<void> = Promise.resolve();
    /** Deliveries that gave up, for operators and tests: subscription id and why. */
    readonly failures: { subscriptionId: string; reason: string }[] = [];

    constructor(
        private readonly store: Store,
        private readonly delivery = { attempts: 4, firstPauseMs: 1_000 },
        private readonly policy: CallbackPolicy = { allowLoopback: false },
    ) {}

    /**
     * The GET test of a new subscription's callback: it must answer 204. A failure says no more than that
     * (whether the port was closed or the host silent is nobody's business).
     */
    async testCallback(uri: string, auth: Authentication): Promise<void> {
        let status: number | undefined;
        try {
            status = await callCallback(uri, { method: "GET", headers: headersFor(auth), timeoutMs: TIMEOUT_MS }, this.policy);
        } catch (e) {
            if (e instanceof CallbackRefusedError) throw new ProblemError(400, e.message);
        }
        if (status !== 204) throw new ProblemError(400, "callbackUri: the test GET did not answer 204 No Content");
    }

    /** Sends `notification` to every matching subscription, in the background; `links` join the standard two. */
    publish(notification: Notification, baseUrl: string, links: Record<string, { href: string }> = {}): void {
        // In the order published: each starts its deliveries once the one before has.
        this.sending = this.sending.then(() => this.send(notification, baseUrl, links)).catch(() => undefined);
        this.track(this.sending);
    }

    /** Waits for deliveries under way (at shutdown). */
    async drain(): Promise<void> {
        while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
    }

    private track(p: Promise<void>): void {
        const tracked = p.catch(() => undefined).finally(() => this.inFlight.delete(tracked));
        this.inFlight.add(tracked);
    }

    private async send(notification: Notification, baseUrl: string, links: Record<string, { href: string }>): Promise<void> {
        // SOL003 (VnfLcmOperationOccurrenceNotification, VnfIdentifierCreationNotification, …): a notification
        // sent to several subscriptions carries the same id in each.
        const id = randomUUID();
        for (const subscription of await this.store.list("subscriptions")) {
            if (!matches((subscription.filter as Record<string, unknown>) ?? {}, notification)) continue;
            const body = maskSecrets({
                id,
                ...notification,
                subscriptionId: subscription.id,
                timeStamp: new Date().toISOString(),
                _links: { vnfInstance: { href: instanceHref(baseUrl, notification.vnfInstanceId) }, subscription: { href: subscriptionHref(baseUrl, String(subscription.id)) }, ...links },
            });
            this.track(this.deliver(String(subscription.id), String(subscription.callbackUri), subscription.__authentication as Authentication, body));
        }
    }

    private async deliver(subscriptionId: string, uri: string, auth: Authentication, body: Record<string, unknown>): Promise<void> {
        let reason = "";
        for (let attempt = 0; attempt < this.delivery.attempts; attempt++) {
            if (attempt > 0) await new Promise((r) => setTimeout(r, this.delivery.firstPauseMs * 2 ** (attempt - 1)));
            try {
                const status = await callCallback(uri, { method: "POST", headers: { "content-type": "application/json", ...headersFor(auth) }, body: JSON.stringify(body), timeoutMs: TIMEOUT_MS }, this.policy);
                if (status === 204) return;
                reason = `answered ${status}`;
            } catch (e) {
                reason = (e as Error).message;
            }
        }
        this.failures.push({ subscriptionId, reason: `${uri}: ${reason} after ${this.delivery.attempts} attempts` });
    }
}
