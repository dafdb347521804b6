/**
 * The HTTP server under the service (Fastify's `serverFactory`): bounded in time and connections, and
 * sending header names as the specifications spell them.
 * - A request's headers, and the whole request with its body, must arrive within a deadline (a client
 *   trickling a byte at a time is cut off with a 408); at most `maxConnections` connections are open.
 *   Nothing limits how long a response takes: the progress stream stays open while its operation runs.
 * - Fastify lower-cases every header name it is given (`location`, `link`, `etag`). HTTP names are
 *   case-insensitive, but clients that copy headers into a plain map look for `Location` and `Link`, as
 *   SOL003 and SOL013 spell them, and find nothing; so the names are spelt so on the wire.
 */
import * as http from "node:http";
import type { Socket } from "node:net";
import type { FastifyServerFactory } from "fastify";
import { problemBody } from "./problem";

export interface HttpLimits {
    /** Until a request's headers have arrived. */
    headersTimeoutMs: number;
    /** Until the whole request, body included, has arrived. */
    requestTimeoutMs: number;
    /** An idle kept-alive connection is closed after this. */
    keepAliveTimeoutMs: number;
    /** Connections open at once; more are refused. */
    maxConnections: number;
}

export const DEFAULT_HTTP_LIMITS: HttpLimits = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, maxConnections: 256 };

/** Header names as SOL003 / SOL013 (and RFC 9110) spell them, by their lower-case form. */
const SPELLING = new Map(
    ["Location", "Link", "ETag", "Content-Type", "Content-Length", "Allow", "Retry-After", "WWW-Authenticate", "Cache-Control", "Connection", "Version"].map((name) => [name.toLowerCase(), name]),
);

const spelt = (name: string) => SPELLING.get(name.toLowerCase()) ?? name;

export function limitedServer(limits: HttpLimits): FastifyServerFactory {
    return (handler) => {
        const server = http.createServer(
            {
                headersTimeout: limits.headersTimeoutMs,
                requestTimeout: limits.requestTimeoutMs,
                // How often Node checks those deadlines (default 30 s, longer than a short deadline).
                connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(limits.headersTimeoutMs / 2))),
            },
            (request, response) => {
                speltHeaders(response);
                handler(request, response);
            },
        );
        server.keepAliveTimeout = limits.keepAliveTimeoutMs;
        server.maxConnections = limits.maxConnections;
        return server;
    };
}

/** Makes every header name the response is given go out as SPELLING has it. */
function speltHeaders(response: http.ServerResponse): void {
    const setHeader = response.setHeader.bind(response);
    response.setHeader = (name: string, value: number | string | readonly string[]) => setHeader(spelt(name), value);
    const writeHead = response.writeHead.bind(response) as (...args: unknown[]) => http.ServerResponse;
    response.writeHead = ((...args: unknown[]) => {
        const last = args.length - 1;
        const headers = args[last];
        if (last > 0 && headers && typeof headers === "object" && !Array.isArray(headers)) {
            args[last] = Object.fromEntries(Object.entries(headers).map(([name, value]) => [spelt(name), value]));
        }
        return writeHead(...args);
    }) as typeof response.writeHead;
}

/**
 * Fastify's `clientErrorHandler`: a request Node could not take (its deadline passed, headers too large, not
 * HTTP) answered as a ProblemDetails, as every other error is, and its connection closed.
 */
export function clientError(error: NodeJS.ErrnoException, socket: Socket): void {
    if (error.code === "ECONNRESET" || socket.destroyed) return;
    const status = error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : error.code === "HPE_HEADER_OVERFLOW" ? 431 : 400;
    const detail = status === 408 ? "the request did not arrive in time" : status === 431 ? "the request's headers are too large" : "the request is not valid HTTP";
    const body = JSON.stringify(problemBody(status, detail));
    if (socket.writable) {
        socket.write(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    }
    socket.destroy();
}
