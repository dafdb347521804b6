/**
 * Neutron's address checks, shared by ports (allowed address pairs) and security group rules (remote_ip_prefix):
 * neutron_lib/api/validators/__init__.py validate_ip_address and validate_subnet, and netaddr.IPNetwork as
 * neutron/extensions/securitygroup.py convert_ip_prefix_to_cidr reads a prefix (an address alone is a host
 * prefix). Stricter than netaddr on odd spellings ("10/8"): the lab accepts dotted quads and RFC 4291 text only.
 */
import { isIP } from "node:net";

export interface Cidr {
    version: 4 | 6;
    address: string;
    prefix: number;
    /** netaddr's str(IPNetwork(text)): the address with its prefix length (`10.0.0.5` → `10.0.0.5/32`). */
    text: string;
}

/** `address` or `address/len`, as netaddr.IPNetwork reads it, else undefined. */
export function parseCidr(text: string): Cidr | undefined {
    if (typeof text !== "string" || /\s/.test(text)) return undefined;
    const [address, length, extra] = text.split("/");
    if (extra !== undefined) return undefined;
    const version = isIP(address);
    if (version !== 4 && version !== 6) return undefined;
    const max = version === 4 ? 32 : 128;
    if (length !== undefined && !/^\d{1,3}$/.test(length)) return undefined;
    const prefix = length === undefined ? max : Number(length);
    if (prefix > max) return undefined;
    return { version, address, prefix, text: `${address}/${prefix}` };
}

/** neutron_lib validate_ip_address: undefined when valid, else its message (node's isIP also refuses octets with leading zeros). */
export function ipAddressError(data: unknown): string | undefined {
    return typeof data === "string" && isIP(data) !== 0 ? undefined : `'${String(data)}' is not a valid IP address`;
}

/** neutron_lib validate_subnet: undefined when valid, else its message (an IPv4 prefix with host bits set is refused). */
export function subnetError(data: unknown): string | undefined {
    const text = String(data);
    const cidr = typeof data === "string" && text.includes("/") ? parseCidr(text) : undefined;
    if (!cidr) return `'${text}' is not a valid IP subnet`;
    if (cidr.version === 4) {
        const network = networkOf(cidr.address, cidr.prefix);
        if (network !== cidr.address) return `'${text}' isn't a recognized IP subnet cidr, '${network}/${cidr.prefix}' is recommended`;
    }
    return undefined;
}

/** The network address of an IPv4 address under a prefix length. */
function networkOf(address: string, prefix: number): string {
    const value = address.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);
    const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
    const net = (value & mask) >>> 0;
    return [24, 16, 8, 0].map((shift) => (net >>> shift) & 255).join(".");
}
