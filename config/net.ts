import { isIP } from "node:net";

/** An IPv4 or IPv6 network, held as numbers so that containment and overlap are exact. */
export interface Network {
    /** 4 or 6. */
    readonly family: 4 | 6;
    /** The network address with host bits cleared. */
    readonly address: bigint;
    readonly prefix: number;
    /** The canonical text form, for example `192.168.0.0/16`. */
    readonly text: string;
    /** True when the text given had host bits set (e.g. `192.168.3.0/16`). */
    readonly hadHostBits: boolean;
}

const BITS = { 4: 32, 6: 128 } as const;

export function parseIp(text: string): { family: 4 | 6; value: bigint } | undefined {
    const family = isIP(text);
    if (family === 4) {
        return { family, value: text.split(".").reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n) };
    }
    if (family === 6) {
        if (text.includes(".")) return undefined; // IPv4-mapped forms are not used for cluster addressing
        const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
        const headParts = head ? head.split(":") : [];
        const tailParts = tail ? tail.split(":") : [];
        const missing = 8 - headParts.length - tailParts.length;
        const groups = [...headParts, ...Array<string>(tail === undefined ? 0 : missing).fill("0"), ...tailParts];
        return { family, value: groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n) };
    }
    return undefined;
}

export function formatIp(family: 4 | 6, value: bigint): string {
    if (family === 4) {
        return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join(".");
    }
    const groups = Array.from({ length: 8 }, (_, i) => ((value >> BigInt((7 - i) * 16)) & 0xffffn).toString(16));
    // Compress the longest run of zero groups, as RFC 5952 asks.
    let best = { start: -1, length: 0 };
    for (let i = 0; i < 8; ) {
        if (groups[i] !== "0") { i++; continue; }
        let j = i;
        while (j < 8 && groups[j] === "0") j++;
        if (j - i > best.length && j - i > 1) best = { start: i, length: j - i };
        i = j;
    }
    if (best.start < 0) return groups.join(":");
    return `${groups.slice(0, best.start).join(":")}::${groups.slice(best.start + best.length).join(":")}`;
}

/** Parses `a.b.c.d/n` (or IPv6). Returns undefined when it is not a network at all. */
export function parseCidr(text: string): Network | undefined {
    const match = /^([^/\s]+)\/(\d{1,3})$/.exec(text);
    if (!match) return undefined;
    const ip = parseIp(match[1]);
    if (!ip) return undefined;
    const prefix = Number(match[2]);
    const bits = BITS[ip.family];
    if (prefix > bits) return undefined;
    const hostMask = (1n << BigInt(bits - prefix)) - 1n;
    const address = ip.value & ~hostMask;
    return {
        family: ip.family,
        address,
        prefix,
        text: `${formatIp(ip.family, address)}/${prefix}`,
        hadHostBits: address !== ip.value,
    };
}

function lastAddress(n: Network): bigint {
    return n.address | ((1n << BigInt(BITS[n.family] - n.prefix)) - 1n);
}

export function overlaps(a: Network, b: Network): boolean {
    return a.family === b.family && a.address <= lastAddress(b) && b.address <= lastAddress(a);
}

export function containsIp(n: Network, ip: string): boolean {
    const parsed = parseIp(ip);
    return !!parsed && parsed.family === n.family && parsed.value >= n.address && parsed.value <= lastAddress(n);
}
