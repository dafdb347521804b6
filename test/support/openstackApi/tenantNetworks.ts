/**
 * The lab's tenant networks (state.ts CloudState.tenantNetworks) and the addresses of their subnets: which
 * lab address a port on a network may hold, and which it gets.
 */
import { randomUUID } from "node:crypto";
import { Lab } from "../../lab/lab";

/**
 * A tenant network and its one IPv4 subnet: a /25 half of the lab's /24 each. Both halves are on the lab's one
 * bridge, and router1 has an interface on each subnet, so a host on one reaches a host on the other, as the
 * router would let it (the lab routes nothing: its hosts' /24 puts both halves on their link).
 */
export interface TenantNetwork {
    id: string;
    name: string;
    subnet: { id: string; name: string };
    /** The last octet of the subnet's first address (0 or 128), of its gateway, and of its allocation pool's ends. */
    first: number;
    gateway: number;
    poolStart: number;
    poolEnd: number;
}

/** `lab-net` (the seeds' network) on .0/25, its pool .10-.126, and `lab-net-2` on .128/25, its pool .130-.249. */
export function labTenantNetworks(networkId?: string, otherNetworkId?: string): TenantNetwork[] {
    return [
        { id: networkId ?? randomUUID(), name: "lab-net", subnet: { id: randomUUID(), name: "lab-subnet" }, first: 0, gateway: 1, poolStart: 10, poolEnd: 126 },
        { id: otherNetworkId ?? randomUUID(), name: "lab-net-2", subnet: { id: randomUUID(), name: "lab-subnet-2" }, first: 128, gateway: 129, poolStart: 130, poolEnd: 249 },
    ];
}

export function subnetCidr(lab: Lab, net: TenantNetwork): string {
    return `${lab.subnet}.${net.first}/25`;
}

/** The next free lab index of `net`'s allocation pool, taken for `owner`. */
export function allocateIndexIn(lab: Lab, net: TenantNetwork, owner: string): number {
    return lab.allocateIndex(owner, net.poolStart - 10, net.poolEnd - 10);
}

/** The fixed IPs of a port on `net` that holds the lab indexes `indexes`. */
export function fixedIpsOf(lab: Lab, net: TenantNetwork, indexes: number[]): { subnet_id: string; ip_address: string }[] {
    return indexes.map((i) => ({ subnet_id: net.subnet.id, ip_address: lab.addressOf(i) }));
}

/** The last octet of an address of the lab's /24, else undefined. */
function lastOctet(lab: Lab, address: string): number | undefined {
    const prefix = `${lab.subnet}.`;
    if (!address.startsWith(prefix) || !/^\d+$/.test(address.slice(prefix.length))) return undefined;
    return Number(address.slice(prefix.length));
}

/**
 * The lab index of an address of `net`'s allocation pool, else undefined. Neutron also takes a subnet's
 * addresses outside its pool; the lab has no host for them (its bridge is .1, its hosts .10-.249).
 */
export function indexOfAddress(lab: Lab, address: string, net: TenantNetwork): number | undefined {
    const last = lastOctet(lab, address);
    return last === undefined || last < net.poolStart || last > net.poolEnd ? undefined : last - 10;
}

/** Whether `address` is in `net`'s subnet (its /25). */
export function inSubnet(lab: Lab, address: string, net: TenantNetwork): boolean {
    const last = lastOctet(lab, address);
    return last !== undefined && last >= net.first && last < net.first + 128;
}
