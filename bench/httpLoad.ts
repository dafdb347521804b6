/**
 * The load generator of the LCM benches (lcm-api.ts, lcm-replicas.ts): lean on purpose, since it runs on the
 * same CPUs as the service it measures. Each of CLIENTS clients is a loop with one request at a time on a
 * keep-alive connection of its own (node:http; fetch cost several times the CPU per request).
 */
import * as http from "node:http";

export const CLIENTS = 100;
export const REQUESTS = 5_000;

/** The value at percentile `p` of latencies sorted ascending. */
export function percentile(sorted: number[], p: number): number {
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/**
 * One keep-alive connection per client, never more. A free one is dropped after 4 s idle: the service closes
 * one idle for 5 s (keepAliveTimeout), and a request sent on it as it closes fails (socket hang up).
 */
export const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS, timeout: 4_000 });

export interface Answer {
    status: number;
    location?: string;
    body: Buffer;
}

/** A request to the service (`url`: its base URL and a path), answered when the whole body is in. */
export function request(method: string, url: URL, body?: string): Promise<Answer> {
    return new Promise((resolve, reject) => {
        const headers: http.OutgoingHttpHeaders = body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) };
        const req = http.request({ agent, method, hostname: url.hostname, port: url.port, path: url.pathname, headers }, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body: Buffer.concat(chunks) }));
            res.on("error", reject);
        });
        req.on("error", reject);
        req.end(body);
    });
}

/** Waits until the service at `baseUrl` answers GET /readyz with 200 (warmed up); polled every 10 ms. */
export async function untilReady(baseUrl: string): Promise<void> {
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 10))) {
        if ((await request("GET", new URL(`${baseUrl}/readyz`))).status === 200) return;
    }
    throw new Error(`${baseUrl} was not ready within 30 s`);
}

/** REQUESTS GETs, the k-th of `urlOf(k)`, from CLIENTS clients at once; their latencies (ms), sorted. */
export async function load(urlOf: (k: number) => URL): Promise<number[]> {
    const latencies: number[] = [];
    let next = 0;
    await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
            while (next < REQUESTS) {
                const url = urlOf(next++);
                const t0 = process.hrtime.bigint();
                const r = await request("GET", url);
                if (r.status !== 200) throw new Error(`GET ${url}: ${r.status}`);
                latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
            }
        }),
    );
    return latencies.sort((a, b) => a - b);
}
