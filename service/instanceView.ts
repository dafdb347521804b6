/**
 * What a VNF instance shows of its stack (SOL003 VnfInstance): its `_links`, its VIM connections and its
 * `instantiatedVnfInfo`, built from the stack's outputs when an operation completes (lifecycle.ts).
 */
import { instanceHref } from "./links";

type Body = Record<string, any>;

/**
 * A VNF instance's `_links` (SOL003 VnfInstance): itself and the tasks its state allows (scaling if it
 * scales; a port move and a flavour change between the HA flavours for clusters).
 */
export function instanceLinks(baseUrl: string, instanceId: string, state: "NOT_INSTANTIATED" | "INSTANTIATED", can: { scalable?: boolean; operable?: boolean; portsMovable?: boolean; flavourChangeable?: boolean } = {}): Body {
    const self = instanceHref(baseUrl, instanceId);
    const tasks =
        state === "NOT_INSTANTIATED"
            ? { instantiate: "instantiate" }
            : {
                  terminate: "terminate",
                  ...(can.scalable ? { scale: "scale", scaleToLevel: "scale_to_level" } : {}),
                  heal: "heal",
                  ...(can.operable !== false ? { operate: "operate" } : {}),
                  ...(can.portsMovable ? { changeExtConn: "change_ext_conn" } : {}),
                  ...(can.flavourChangeable ? { changeFlavour: "change_flavour" } : {}),
              };
    return { self: { href: self }, ...Object.fromEntries(Object.entries(tasks).map(([name, route]) => [name, { href: `${self}/${route}` }])) };
}

/**
 * The id of the instance's VIM connection, which every compute resource names (SOL003 ResourceHandle): the
 * registered VIM's id, or `default` for the service's own OS_* credentials.
 */
export function vimConnectionIdOf(vimId: string | undefined): string {
    return vimId ?? "default";
}

/** A cluster's VIM connections: the OpenStack VIM it runs on, and the Kubernetes VIM it is (Tacker shows both). */
export function vimConnectionInfoOf(vimId: string | undefined, kubernetesVim: Body | undefined): Body[] {
    return [
        { id: vimConnectionIdOf(vimId), ...(vimId ? { vimId } : {}), vimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3" },
        ...(kubernetesVim ? [{ id: `${kubernetesVim.id}-kubernetes`, vimId: kubernetesVim.id, vimType: "ETSINFV.KUBERNETES.V_1", interfaceInfo: { endpoint: kubernetesVim.authUrl } }] : []),
    ];
}

/** A CNF's VIM connection: the Kubernetes VIM it runs on (registered, or given inline: no id to name). */
export function cnfVimConnectionInfo(config: Record<string, unknown>, kubernetesVimId: string | undefined): Body[] {
    const vim = (config.cnf as Body).vim;
    return [{ id: kubernetesVimId ?? "kubernetes", ...(kubernetesVimId ? { vimId: kubernetesVimId } : {}), vimType: "ETSINFV.KUBERNETES.V_1", interfaceInfo: { endpoint: vim.endpoint } }];
}

/** SOL003 VnfOperationalStateType of a stack config (`operate.vnfState`, STARTED when unset). */
export function vnfStateOf(config: Record<string, unknown> | undefined): "STARTED" | "STOPPED" {
    return (config?.operate as Body | undefined)?.vnfState === "STOPPED" ? "STOPPED" : "STARTED";
}

export function instantiatedInfo(flavourId: string | undefined, vnfState: "STARTED" | "STOPPED", outputs: Record<string, unknown>, vimConnectionId: string): Body {
    const scale = (outputs.scale ?? {}) as Record<string, { count: number; min: number; max: number }>;
    const vnfcs = (outputs.vnfcResources ?? []) as Body[];
    return {
        flavourId: flavourId ?? "simple",
        vnfState,
        scaleStatus: Object.entries(scale).map(([aspectId, s]) => ({ aspectId, scaleLevel: s.count - s.min })),
        maxScaleLevels: Object.entries(scale).map(([aspectId, s]) => ({ aspectId, scaleLevel: s.max - s.min })),
        vnfcResourceInfo: vnfcs.map((v) =>
            v.resourceType
                ? // A CNF's: a pod slot of a workload (its pods' names are the controller's, not the stack's).
                  { id: v.id, vduId: v.vduId, computeResource: { vimConnectionId, resourceId: v.resourceId, vimLevelResourceType: v.resourceType } }
                : {
                      id: v.id,
                      vduId: v.vduId,
                      computeResource: { vimConnectionId, resourceId: v.serverId, vimLevelResourceType: "OS::Nova::Server" },
                      vnfcCpInfo: [{ id: `${v.id}-${v.cpdId}`, cpdId: v.cpdId }],
                  },
        ),
    };
}

export function withoutKeys(o: Body, keys: string[]): Body {
    return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
}

