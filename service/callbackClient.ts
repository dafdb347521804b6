/**
 * HTTP to subscribers' callbacks, so that a callbackUri cannot make the service reach what it should not
 * (SSRF): only http and https; never a link-local address (cloud metadata at 169.254.169.254 included), another
 * cloud's metadata address, an unspecified, multicast or broadcast one, nor an IPv6 address that carries one of
 * these; loopback only when the operator allows it. The policy is applied
 * to the address actually connected to (the request's own DNS lookup), so a name that resolves elsewhere
 * at delivery time than at subscription is still refused. Redirects are never followed, and a failure says
 * only that the callback did not answer 204, not why (which would tell whether a port is open, or where a name
 * resolves); only a URL or a literal address the policy refuses is named as such.
 */
import * as dns from "node:dns";
import * as http from "node:http";
import * as https from "node:https";
import { BlockList, isIP } from "node:net";

export interface CallbackPolicy {
    /** Whether callbacks on loopback (127.0.0.0/8, ::1) are allowed: the service's own host. */
    allowLoopback: boolean;
}

export class CallbackRefusedError extends Error {}

const NEVER = new BlockList();
NEVER.addSubnet("169.254.0.0", 16); // link-local, the metadata service among them
NEVER.addSubnet("0.0.0.0", 8);
NEVER.addSubnet("224.0.0.0", 4);
NEVER.addAddress("255.255.255.255");
NEVER.addSubnet("fe80::", 10, "ipv6");
NEVER.addAddress("::", "ipv6");
NEVER.addSubnet("ff00::", 8, "ipv6");
NEVER.addAddress("fd00:ec2::254", "ipv6"); // the metadata service over IPv6
NEVER.addAddress("100.100.100.200"); // Alibaba Cloud's metadata service
NEVER.addAddress("192.0.0.192"); // Oracle Cloud's metadata service
NEVER.addAddress("168.63.129.16"); // Azure's host endpoint (WireServer)
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8);
LOOPBACK.addAddress("::1", "ipv6");

/** An IPv6 address's 16 bytes (the forms `isIP` accepts, a dotted IPv4 tail included), or undefined. */
function ipv6Bytes(address: string): number[] | undefined {
    if (isIP(address) !== 6) return undefined;
    let text = address.replace(/%.*$/, "");
    const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
    if (dotted) text = text.slice(0, dotted.index) + [0, 2].map((i) => ((Number(dotted[i + 1]) << 8) | Number(dotted[i + 2])).toString(16)).join(":");
    const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
    const groups = (part: string | undefined) => (part ? part.split(":").map((g) => parseInt(g, 16)) : []);
    const words = tail === undefined ? groups(head) : [...groups(head), ...new Array(8 - groups(head).length - groups(tail).length).fill(0), ...groups(tail)];
    return words.flatMap((w) => [w >> 8, w & 0xff]);
}

/**
 * The IPv4 address an IPv6 one carries and reaches through a translator: IPv4-mapped and -compatible
 * (::ffff:a.b.c.d, ::a.b.c.d), NAT64's well-known prefix (64:ff9b::/96, RFC 6052) and the local-use prefix
 * in its /96 layout (64:ff9b:1::/96, RFC 8215), and 6to4 (2002::/16, RFC 3056). A metadata service behind
 * one of them is still the metadata service. Operator-chosen NAT64 prefixes and the /48–/64 layouts are
 * not decoded: nothing in an address says it is one.
 */
function embeddedIpv4(address: string): string | undefined {
    const b = ipv6Bytes(address);
    if (!b) return undefined;
    const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
    const v4 = (at: number) => b.slice(at, at + 4).join(".");
    // IPv4-compatible only from 1.0.0.0 on: ::1 and :: are IPv6's own loopback and unspecified addresses.
    if (zero(0, 10) && ((b[10] === 0xff && b[11] === 0xff) || (b[10] === 0 && b[11] === 0 && b[12] !== 0))) return v4(12);
    if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && (zero(4, 12) || (b[4] === 0 && b[5] === 1 && zero(6, 12)))) return v4(12);
    if (b[0] === 0x20 && b[1] === 0x02) return v4(2);
    return undefined;
}

/** Whether an IP address is the host's own (127.0.0.0/8, ::1, and those as IPv4-mapped IPv6). */
export function isLoopbackAddress(address: string): boolean {
    const family = isIP(address);
    return family !== 0 && LOOPBACK.check(address, family === 6 ? "ipv6" : "ipv4");
}

/** Why the policy refuses an address, or undefined. An IPv6 address that carries an IPv4 one counts as both. */
export function refusedAddress(address: string, policy: CallbackPolicy): string | undefined {
    for (const ip of [address, embeddedIpv4(address)].filter((a): a is string => a !== undefined)) {
        const family = isIP(ip) === 6 ? "ipv6" : "ipv4";
        if (NEVER.check(ip, family)) return "a link-local, unspecified, multicast or metadata address";
        if (!policy.allowLoopback && LOOPBACK.check(ip, family)) return "a loopback address (the service's own host; `serve --allow-loopback-callbacks` allows it)";
    }
    return undefined;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/** The request's DNS lookup, refusing every name that resolves to an address the policy refuses. */
function guardedLookup(policy: CallbackPolicy) {
    return (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
        dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
            if (err) return callback(err, []);
            const refused = addresses.map((a) => refusedAddress(a.address, policy)).find(Boolean);
            // Said no differently from any other failure: which names resolve where is nobody's business.
            if (refused) return callback(new Error("refused"), []);
            if (options.all) callback(null, addresses);
            else callback(null, addresses[0].address, addresses[0].family);
        });
    };
}

/** Checks what can be checked before any connection: the scheme and a literal address. */
export function checkCallbackUri(uri: string, policy: CallbackPolicy): URL {
    let url: URL;
    try {
        url = new URL(uri);
    } catch {
        throw new CallbackRefusedError("callbackUri: is not a URL");
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new CallbackRefusedError("callbackUri: must be an http or https URL");
    const host = url.hostname.replace(/^\[|\]$/g, "");
    const refused = isIP(host) ? refusedAddress(host, policy) : undefined;
    if (refused) throw new CallbackRefusedError(`callbackUri: ${refused}, which this service does not call`);
    return url;
}

export interface CallbackRequest {
    method: "GET" | "POST";
    headers?: Record<string, string>;
    body?: string;
    timeoutMs: number;
}

/**
 * One request to a callback; resolves with the status (a redirect is a status like any other). Rejects with
 * CallbackRefusedError when the URL or its literal address is refused, or with an Error that carries no detail.
 */
export function callCallback(uri: string, request: CallbackRequest, policy: CallbackPolicy): Promise<number> {
    const url = checkCallbackUri(uri, policy);
    const client = url.protocol === "https:" ? https : http;
    return new Promise((resolve, reject) => {
        // One deadline for the whole exchange: a callback trickling bytes cannot hold a request (or shutdown) open.
        const deadline = setTimeout(() => req.destroy(new Error("timed out")), request.timeoutMs);
        const req = client.request(url, { method: request.method, headers: request.headers, lookup: guardedLookup(policy) as never }, (res) => {
            res.resume();
            res.on("end", () => clearTimeout(deadline));
            res.on("error", () => clearTimeout(deadline));
            resolve(res.statusCode ?? 0);
        });
        req.on("error", () => {
            clearTimeout(deadline);
            reject(new Error("no answer"));
        });
        req.end(request.body);
    });
}
