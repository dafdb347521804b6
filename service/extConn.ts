/**
 * change_ext_conn (SOL003 §5.4.11, ChangeExtVnfConnectivityRequest) on this project's VNFs: the workers'
 * connection point moves to another network or other addresses, one worker at a time, each a stack update
 * that replaces that worker's VM on its new port (drained first, joined again after). Other connection points
 * are refused with the reason: the masters' addresses are the control plane's identity (its certificates,
 * etcd's peer URLs, every node's kubeconfig), and the other VMs' addresses are what the nodes were configured
 * with.
 */
import { ProblemError } from "./problem";

type Body = Record<string, any>;
type Config = Record<string, unknown>;

/** Where a node group's ports are: the stack config's placement fields. */
interface PortPlacement {
    networkId: string;
    subnetId?: string;
    fixedIps?: string[];
}

/** SOL013 §6.4: a request that is well formed but that this VNF cannot carry out. */
const unprocessable = (detail: string) => new ProblemError(422, detail);

/**
 * The stack configs that carry out the request: `stages` moving workers 0, 1, … one per update, then
 * `config`, where every worker has moved and no move is under way.
 */
export function planExtConnChange(current: Config, params: Body): { stages: Config[]; config: Config } {
    const workers = (current.workers ?? {}) as Body;
    const masters = (current.masters ?? {}) as Body;
    const workersCp = workers.connectionPoint ?? "workerNode_CP2";
    const mastersCp = masters.connectionPoint ?? "masterNode_CP1";
    const links: Body[] = params.extVirtualLinks ?? [];
    let target: PortPlacement | undefined;
    links.forEach((link, i) => {
        (link.extCps ?? []).forEach((cp: Body, j: number) => {
            const field = `extVirtualLinks[${i}].extCps[${j}].cpdId`;
            if (current.vnfKind === "registry") throw unprocessable(`${field}: a registry VNF's address is what every cluster's registry connection names; it does not move`);
            if (cp.cpdId === mastersCp) {
                throw unprocessable(`${field}: ${mastersCp} carries the control plane's addresses, which are in its certificates, etcd's peer URLs and every node's kubeconfig; moving them makes a new cluster (heal the entire VNF after a new instantiate)`);
            }
            if (cp.cpdId !== workersCp) throw unprocessable(`${field}: this VNF moves only its workers' connection point ${workersCp}; ${cp.cpdId} is not one it can move (the storage server's, the registry's and the load balancer's addresses are what the nodes were configured with)`);
            if (target) throw new ProblemError(400, `${field}: ${workersCp} is given twice`);
            target = placementOf(link, cp);
        });
    });
    if (!target) throw new ProblemError(400, `extVirtualLinks: name ${workersCp} in an extCps[].cpdId to move the workers' ports`);
    const network = (current.network ?? {}) as Body;
    const fromSubnet = workers.subnetId ?? (workers.networkId ? undefined : network.subnetId);
    const from: PortPlacement = {
        networkId: workers.networkId ?? network.networkId,
        ...(fromSubnet ? { subnetId: fromSubnet } : {}),
        ...(workers.fixedIps ? { fixedIps: workers.fixedIps } : {}),
    };
    const to: PortPlacement = target;
    if (to.networkId === from.networkId && (to.subnetId ?? from.subnetId) === from.subnetId && JSON.stringify(to.fixedIps ?? []) === JSON.stringify(from.fixedIps ?? [])) {
        throw new ProblemError(409, `${workersCp} is already on network ${to.networkId} with these addresses`);
    }
    const count = Number(workers.count ?? 0);
    const heal = { generation: 0, nodes: {}, ...((current.heal as Body) ?? {}) };
    const moved = (k: number): Config => {
        // A worker that moves is replaced even where only its address changes (Neutron updates a port's
        // fixed IP in place, but the VM and its kubelet keep the address they booted with).
        const nodes = { ...heal.nodes } as Record<string, number>;
        for (let i = 0; i < k; i++) nodes[`worker-${i}`] = (nodes[`worker-${i}`] ?? 0) + 1;
        const rest = Object.fromEntries(Object.entries(workers).filter(([key]) => !["networkId", "subnetId", "fixedIps", "portMove"].includes(key)));
        return {
            ...current,
            workers: { ...rest, ...to, ...(k < count ? { portMove: { from, moved: k } } : {}) },
            heal: { ...heal, nodes },
        };
    };
    const stages = Array.from({ length: Math.max(0, count - 1) }, (_, k) => moved(k + 1));
    return { stages, config: moved(count) };
}

/**
 * The placement one extCp asks for: the link's network, the addresses and subnet of its cpConfig (a list in
 * Tacker's v1 API, a map by cpConfigId in SOL003 v2.6.1 and later).
 */
function placementOf(link: Body, cp: Body): PortPlacement {
    const configs: Body[] = Array.isArray(cp.cpConfig) ? cp.cpConfig : Object.values(cp.cpConfig ?? {});
    const addresses: Body[] = configs.flatMap((c: Body) => (c.cpProtocolData ?? []).flatMap((p: Body) => p.ipOverEthernet?.ipAddresses ?? []));
    const fixedIps = addresses.flatMap((a) => a.fixedAddresses ?? []);
    const subnetId = addresses.map((a) => a.subnetId).find(Boolean);
    return { networkId: link.resourceId, ...(subnetId ? { subnetId } : {}), ...(fixedIps.length ? { fixedIps } : {}) };
}
