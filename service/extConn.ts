/**
 * change_ext_conn (SOL003 §5.4.11, ChangeExtVnfConnectivityRequest) on this project's VNFs: the workers'
 * connection point moves to another network or other addresses, one worker at a time, each a stack update
 * in which that worker gets a new port and so a new VM (drained first, joined again after). A move stopped
 * half way is finished by the same request. Other connection points are refused with the reason: the
 * masters' addresses are the control plane's identity (its certificates, etcd's peer URLs, every node's
 * kubeconfig), and the other VMs' addresses are what the nodes were configured with.
 */
import type { VnfSpec } from "../config/spec";
import { conflict, ProblemError } from "./problem";

type Body = Record<string, any>;
type Config = Record<string, unknown>;

/** Where a node group's ports are, as the stack config's placement fields hold it. */
interface PortPlacement {
    networkId: string;
    subnetId?: string;
    fixedIps?: string[];
}

/** SOL013 §6.4: a request that is well formed but that this VNF cannot carry out. */
const unprocessable = (detail: string) => new ProblemError(422, detail);

/**
 * The stack configs that carry out the request on the VNF whose stack config is `current` (resolved:
 * `spec`): `stages` moving workers 0, 1, … one per update, then `config`, where every worker has moved and
 * no move is under way.
 */
export function planExtConnChange(current: Config, spec: VnfSpec, params: Body): { stages: Config[]; config: Config } {
    if (spec.kind !== "cluster") throw unprocessable("extVirtualLinks: a registry VNF's address is what every cluster's registry connection names; it does not move");
    const { workers } = spec;
    const target = requestedPlacement(params, workers.connectionPoint, spec.masters.connectionPoint, workers.count);
    const now = placement(workers.server.networkId, workers.server.subnetId, workers.fixedIps);
    const move = workers.portMove;
    let from: PortPlacement = now;
    let done = 0;
    if (move) {
        // A move stopped half way: the group's placement is already its target.
        if (!samePlacement(target, now)) throw conflict(`a move of ${workers.connectionPoint} to network ${now.networkId} stopped after ${move.moved} of ${workers.count} workers; send that request again to finish it`);
        from = placement(move.from.networkId, move.from.subnetId, move.from.fixedIps);
        done = move.moved;
    } else if (samePlacement(target, now)) {
        throw conflict(`${workers.connectionPoint} is already on network ${target.networkId} with these addresses`);
    }
    if (target.networkId === from.networkId && target.fixedIps && from.fixedIps) {
        // Each worker's new port is made before its old one goes: on the same network a new address must not
        // be one a worker not moved yet still holds.
        const clash = target.fixedIps.findIndex((ip, i) => from.fixedIps!.some((old, j) => old === ip && j > i));
        if (clash >= 0) throw unprocessable(`extVirtualLinks: the new address ${target.fixedIps[clash]} of worker ${clash} is still held by a worker moving after it; choose addresses the workers do not hold`);
    }
    const rest = Object.fromEntries(Object.entries((current.workers ?? {}) as Body).filter(([key]) => !["networkId", "subnetId", "fixedIps", "portMove"].includes(key)));
    const moved = (k: number): Config => ({ ...current, workers: { ...rest, ...target, ...(k < workers.count ? { portMove: { from, moved: k } } : {}) } });
    const stages = Array.from({ length: Math.max(0, workers.count - 1 - done) }, (_, i) => moved(done + i + 1));
    return { stages, config: moved(workers.count) };
}

/** The placement the request asks for the workers' connection point, or its refusal naming the field. */
function requestedPlacement(params: Body, workersCp: string, mastersCp: string, workerCount: number): PortPlacement {
    let found: PortPlacement | undefined;
    (params.extVirtualLinks as Body[]).forEach((link, i) => {
        if ((link.extLinkPorts ?? []).length) throw unprocessable(`extVirtualLinks[${i}].extLinkPorts: this VNF makes its own ports; pre-created ports are not taken`);
        (link.extCps as Body[]).forEach((cp, j) => {
            const field = `extVirtualLinks[${i}].extCps[${j}]`;
            if (cp.cpdId === mastersCp) {
                throw unprocessable(`${field}.cpdId: ${mastersCp} carries the control plane's addresses, which are in its certificates, etcd's peer URLs and every node's kubeconfig; moving them makes a new cluster (instantiate a new VNF)`);
            }
            if (cp.cpdId !== workersCp) {
                throw unprocessable(`${field}.cpdId: this VNF moves only its workers' connection point ${workersCp}; ${cp.cpdId} is not one it can move (the storage server's, the registry's and the load balancer's addresses are what the nodes were configured with)`);
            }
            if (found) throw new ProblemError(400, `${field}.cpdId: ${workersCp} is given twice`);
            found = placementOf(link, cp, field, workerCount);
        });
    });
    if (!found) throw new ProblemError(400, `extVirtualLinks: name ${workersCp} in an extCps[].cpdId to move the workers' ports`);
    return found;
}

/**
 * The placement one extCp asks for: the link's network, the addresses and subnet of its cpConfig (a list in
 * Tacker's v1 API, a map by cpConfigId in SOL003 v2.6.1 and later).
 */
function placementOf(link: Body, cp: Body, field: string, workerCount: number): PortPlacement {
    const configs: Body[] = Array.isArray(cp.cpConfig) ? cp.cpConfig : Object.values(cp.cpConfig ?? {});
    if (configs.some((c) => c.linkPortId)) throw unprocessable(`${field}.cpConfig: linkPortId names a pre-created port; this VNF makes its own ports`);
    const addresses: Body[] = configs.flatMap((c) => (c.cpProtocolData ?? []).flatMap((p: Body) => p.ipOverEthernet?.ipAddresses ?? []));
    const fixedIps: string[] = addresses.flatMap((a) => a.fixedAddresses ?? []);
    const subnets = [...new Set(addresses.map((a) => a.subnetId).filter(Boolean))] as string[];
    if (subnets.length > 1) throw unprocessable(`${field}.cpConfig: the workers' ports are on one subnet, not ${subnets.join(", ")}`);
    if (fixedIps.length && !subnets.length) throw new ProblemError(400, `${field}.cpConfig: fixedAddresses need the subnetId they belong to`);
    if (fixedIps.length && fixedIps.length < workerCount) throw new ProblemError(400, `${field}.cpConfig: ${fixedIps.length} fixedAddresses for ${workerCount} workers; give one per worker`);
    return placement(link.resourceId, subnets[0], fixedIps);
}

/** A placement as the stack config holds it: no subnet or address list where there is none. */
function placement(networkId: string, subnetId: string | undefined, fixedIps: string[]): PortPlacement {
    return { networkId, ...(subnetId ? { subnetId } : {}), ...(fixedIps.length ? { fixedIps } : {}) };
}

function samePlacement(a: PortPlacement, b: PortPlacement): boolean {
    return a.networkId === b.networkId && (a.subnetId ?? b.subnetId) === b.subnetId && JSON.stringify(a.fixedIps ?? []) === JSON.stringify(b.fixedIps ?? []);
}
