/** Lookups of VIMs the routes and the planners share: the default of a type, and which instances use a VIM. */
import { RUNNING } from "./operationStates";
import { Store } from "./store";

type Body = Record<string, any>;

/** States of an INSTANTIATE that has not ended: the instance may still come to run on the plan's VIMs. */
const UNFINISHED = ["STARTING", "PROCESSING", "FAILED_TEMP", "ROLLING_BACK"];

/** The instance's INSTANTIATE that has not ended, if any. */
export function unfinishedInstantiate(store: Store, instance: Body): Body | undefined {
    return store.opOccsOf(String(instance.id)).find((o) => o.operation === "INSTANTIATE" && UNFINISHED.includes(String(o.operationState)));
}

/**
 * The instances that use one of the VIMs `ids`: instantiated on it (their stored VIM ids), or being
 * instantiated on it (the plan of an INSTANTIATE that has not ended, which is written when it starts).
 */
export function vimUsers(store: Store, ids: string[]): Body[] {
    const names = (used: Body) => ids.includes(String(used.kubernetesVimId)) || ids.includes(String(used.vimId));
    return store.list("vnf_instances").filter((i) => {
        if (i.instantiationState === "INSTANTIATED") return names({ kubernetesVimId: i.__kubernetesVimId, vimId: i.__vimId });
        return names((unfinishedInstantiate(store, i)?.__plan ?? {}) as Body);
    });
}

/** The VIM of `type` registered with --is-default (at most one per type), if any. */
export function defaultVim(store: Store, type: "openstack" | "kubernetes"): Body | undefined {
    return store.list("vims").find((v) => v.isDefault && (v.type ?? "openstack") === type);
}

/** The occurrences running on VIM `id` (their plan names it): their commands have its credentials of when they started. */
export function operationsRunningOn(store: Store, id: string): Body[] {
    return store.list("op_occs").filter((o) => RUNNING.has(String(o.operationState)) && [(o.__plan as Body | undefined)?.vimId, (o.__plan as Body | undefined)?.kubernetesVimId].includes(id));
}
