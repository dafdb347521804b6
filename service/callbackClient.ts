/**
 * HTTP to subscribers' callbacks, so that a callbackUri cannot make the service reach what it should not
 * (SSRF): only http and https; never a link-local address (cloud metadata at 169.254.169.254 included), an
 * unspecified, multicast or broadcast one; loopback only when the operator allows it. The policy is applied
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
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8);
LOOPBACK.addAddress("::1", "ipv6");

/** Why the policy refuses an address, or undefined. IPv4-mapped IPv6 addresses count as their IPv4 one. */
export function refusedAddress(address: string, policy: CallbackPolicy): string | undefined {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
    const ip = mapped ?? address;
    const family = isIP(ip) === 6 ? "ipv6" : "ipv4";
    if (NEVER.check(ip, family)) return "a link-local, unspecified, multicast or metadata address";
    if (!policy.allowLoopback && LOOPBACK.check(ip, family)) return "a loopback address (the service's own host; `serve --allow-loopback-callbacks` allows it)";
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
