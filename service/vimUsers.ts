/** Lookups of VIMs the routes and the planners share: the default of a type, and which instances use a VIM. */
import { RUNNING } from "./operationStates";
import { Store } from "./store";

type Body = Record<string, any>;


/**
 * Each instance's INSTANTIATE that has not ended (it holds the instance), by instance id: the instance may still
 * come to run on its plan's VIMs.
 */
export async function unfinishedInstantiateByInstance(store: Store): Promise<Map<string, Body>> {
    return new Map((await store.holdingOpOccs()).filter((o) => o.operation === "INSTANTIATE").map((o) => [String(o.vnfInstanceId), o]));
}

/**
 * The instances that use one of the VIMs `ids`: instantiated on it (their stored VIM ids), or being
 * instantiated on it (the plan of an INSTANTIATE that has not ended, which is written when it starts).
 */
export async function vimUsers(store: Store, ids: string[]): Promise<Body[]> {
    const names = (used: Body) => ids.includes(String(used.kubernetesVimId)) || ids.includes(String(used.vimId));
    const unfinished = await unfinishedInstantiateByInstance(store);
    return (await store.list("vnf_instances")).filter((i) => names(i.instantiationState === "INSTANTIATED" ? { kubernetesVimId: i.__kubernetesVimId, vimId: i.__vimId } : ((unfinished.get(String(i.id))?.__plan ?? {}) as Body)));
}

/** The VIM of `type` registered with --is-default (at most one per type), if any. */
export async function defaultVim(store: Store, type: "openstack" | "kubernetes"): Promise<Body | undefined> {
    return (await store.list("vims")).find((v) => v.isDefault && (v.type ?? "openstack") === type);
}

/** The occurrences running on VIM `id` (their plan names it): their commands have its credentials of when they started. */
export async function operationsRunningOn(store: Store, id: string): Promise<Body[]> {
    return (await store.list("op_occs")).filter((o) => RUNNING.has(String(o.operationState)) && [(o.__plan as Body | undefined)?.vimId, (o.__plan as Body | undefined)?.kubernetesVimId].includes(id));
}
