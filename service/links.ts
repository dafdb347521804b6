/**
 * Where the API's resources live: the one place that spells `/vnflcm/v1` and its resource paths, for the
 * routes and for every link the service writes (`Location`, `_links`, notifications).
 */
import { RUNNING } from "./operationStates";

export const API_PREFIX = "/vnflcm/v1";

/** An individual VNF instance under `base` (the configured public URL, or the request's own). */
export const instanceHref = (base: string, id: string) => `${base}${API_PREFIX}/vnf_instances/${id}`;

/** An individual VNF LCM operation occurrence. */
export const opOccHref = (base: string, id: string) => `${base}${API_PREFIX}/vnf_lcm_op_occs/${id}`;

/** An individual subscription. */
export const subscriptionHref = (base: string, id: string) => `${base}${API_PREFIX}/subscriptions/${id}`;

/**
 * An occurrence's `_links` as SOL003 v2.6.1 Table 5.5.2.13-1 has them: itself, its instance, and a task
 * (cancel, retry, rollback, fail) only while the task is currently allowed, as lifecycle.ts allows it: cancel
 * while it runs and no cancel is pending; retry, rollback and fail while FAILED_TEMP, a terminate not rolled back.
 */
export function opOccLinks(op: { _links: { self: { href: string }; vnfInstance: { href: string } }; operationState: unknown; operation: unknown; isCancelPending?: unknown }): Record<string, { href: string }> {
    const self = op._links.self.href;
    const task = (name: string) => ({ [name]: { href: `${self}/${name}` } });
    const failedTemp = op.operationState === "FAILED_TEMP";
    return {
        self: op._links.self,
        vnfInstance: op._links.vnfInstance,
        ...(RUNNING.has(String(op.operationState)) && !op.isCancelPending ? task("cancel") : {}),
        ...(failedTemp ? task("retry") : {}),
        ...(failedTemp && op.operation !== "TERMINATE" ? task("rollback") : {}),
        ...(failedTemp ? task("fail") : {}),
    };
}
