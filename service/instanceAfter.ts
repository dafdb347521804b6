/**
 * What a VNF instance becomes when an operation on it completes or is rolled back: its instantiation state,
 * links, VIM connections and `instantiatedVnfInfo` from the stack's outputs (SOL003 VnfInstance), and the
 * stack config and scale it now has.
 */
import { cnfScale, VnfdLookup } from "./cnfOperations";
import { cnfVimConnectionInfo, instanceLinks, instantiatedInfo, vimConnectionInfoOf, vnfStateOf, withoutKeys } from "./instanceView";
import { Plan } from "./operationPlanner";

type Body = Record<string, any>;

/** What `instanceAfter` looks up outside the records it is given. */
export interface InstanceLookups {
    /** A CNF's VNFD for a flavour, knowing which of its workloads the stack deployed. */
    vnfdOf: (flavourId: string | undefined, deployed: Set<string>) => VnfdLookup;
    /** The cluster's own Kubernetes VIM, when it is one. */
    clusterVim: Body | undefined;
}

/** The instance record after `op` ran `direction` with the stack's `outputs`. */
export function instanceAfter(op: Body, instance: Body, direction: "forward" | "back", outputs: Record<string, unknown> | undefined, lookups: InstanceLookups): Body {
    const plan = op.__plan as Plan;
    const terminated = op.operation === "TERMINATE" || (direction === "back" && op.operation === "INSTANTIATE");
    const config = direction === "forward" ? plan.config : plan.previousConfig;
    const flavourId = direction === "forward" ? (plan.flavourId ?? instance.instantiatedVnfInfo?.flavourId) : instance.instantiatedVnfInfo?.flavourId;
    const cnf = (config ?? plan.previousConfig)?.vnfKind === "cnf";
    const vnfd = cnf && !terminated ? lookups.vnfdOf(flavourId, new Set(((outputs?.vnfcResources ?? []) as Body[]).map((v) => String(v.vduId)))) : undefined;
    const scale = vnfd ? cnfScale(config!, vnfd) : (outputs?.scale as Body | undefined);
    // A CNF's VNFCs are named by workload in the stack; the VNFD says which VDU each workload is.
    const vnfcResources = vnfd && !("problem" in vnfd) ? ((outputs?.vnfcResources ?? []) as Body[]).map((v) => ({ ...v, vduId: vnfd.vdus.find((d) => d.name === v.vduId)?.vduId ?? v.vduId })) : outputs?.vnfcResources;
    const cluster = (config?.vnfKind ?? "cluster") === "cluster";
    const links = instanceLinks(String(op.__baseUrl ?? ""), String(instance.id), terminated ? "NOT_INSTANTIATED" : "INSTANTIATED", {
        scalable: Object.keys(scale ?? {}).length > 0,
        operable: !cnf,
        portsMovable: cluster,
        flavourChangeable: cluster && (flavourId === "complex" || flavourId === "podaffinity"),
    });
    const metadata = { ...((instance.metadata as Body) ?? {}) };
    if (cnf) delete metadata.namespace;
    const namespace = plan.cnfNamespace ?? instance.__namespace;
    const vimConnectionInfo = cnf ? cnfVimConnectionInfo((config ?? plan.previousConfig)!, plan.kubernetesVimId) : vimConnectionInfoOf(plan.vimId, lookups.clusterVim);
    const next: Body = terminated
        ? { ...withoutKeys(instance, ["instantiatedVnfInfo", "__stackConfig", "__scale", "__vimId", "__kubernetesVimId", "__namespace", "vimConnectionInfo"]), metadata, instantiationState: "NOT_INSTANTIATED", _links: links }
        : {
              ...instance,
              instantiationState: "INSTANTIATED",
              _links: links,
              // Seed 003: the CNF's namespace is part of the instance, for its scale, heal and terminate and in GET.
              ...(cnf ? { metadata: { ...metadata, namespace }, __namespace: namespace } : {}),
              instantiatedVnfInfo: instantiatedInfo(flavourId, vnfStateOf(config), { ...(outputs ?? {}), scale, vnfcResources }, vimConnectionInfo[0].id),
              __stackConfig: config,
              __scale: scale,
              __vimId: plan.vimId,
              __kubernetesVimId: plan.kubernetesVimId,
              vimConnectionInfo,
          };
    return next;
}
