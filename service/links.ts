/**
 * Where the API's resources live: the one place that spells `/vnflcm/v1` and its resource paths, for the
 * routes and for every link the service writes (`Location`, `_links`, notifications).
 */
export const API_PREFIX = "/vnflcm/v1";

/** An individual VNF instance under `base` (the configured public URL, or the request's own). */
export const instanceHref = (base: string, id: string) => `${base}${API_PREFIX}/vnf_instances/${id}`;

/** An individual VNF LCM operation occurrence. */
export const opOccHref = (base: string, id: string) => `${base}${API_PREFIX}/vnf_lcm_op_occs/${id}`;

/** An individual subscription. */
export const subscriptionHref = (base: string, id: string) => `${base}${API_PREFIX}/subscriptions/${id}`;
