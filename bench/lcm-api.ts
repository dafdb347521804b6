/**
 * The LCM service as users run it (`k8s-vnf serve`, its own process), against the stand-in Pulumi CLI
 * (test/support/stand-ins/pulumi-cli), measured from this process:
 * - its API under load: with 1,000 VNF instances and 10,000 operation occurrences stored, GET latency (p50/p99)
 *   of an instance and of an occurrence under 100 concurrent clients, and the time to accept a task (the 202:
 *   checks, plan, occurrence journalled and fsynced). Each accepted task is cancelled at once (at most one runs,
 *   `--max-parallel 1`): the stored instances have no stacks to update;
 * - how long `serve` takes from its command to listening, with that data;
 * - operations end to end, where lab hosts can run (root): instantiate of the simple seed (1 master, 2 workers)
 *   and a scale-out by one, from the 202 to COMPLETED, through the Automation API, the CLI and the program.
 *   It takes minutes; `LCM_BENCH_E2E=0` skips it (the API part alone needs no lab hosts).
 *
 * The load comes from this process, on the same CPUs as the service (two, on the bench machine): it is kept
 * lean so that what is measured is the service. Each of the 100 clients is a loop with one request at a time
 * on a keep-alive connection of its own (node:http, an Agent of 100 sockets). fetch (undici) cost several
 * times the CPU per request, and this process's own queueing showed up as the service's latency.
 */
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import { parseRequestText } from "../config/requestText";
import { instanceLinks } from "../service/instanceView";
import { instanceHref, opOccHref } from "../service/links";
import { Store } from "../service/store";
import { Lab, labAvailable } from "../test/lab/lab";
import { REQUESTS_DIR } from "../test/support/fixtures";
import { ServiceProcess } from "../test/support/serviceProcess";
import { serviceProject } from "../test/support/serviceProject";
import { STAND_IN_PULUMI_ROOT } from "../test/support/stand-ins/pulumi-cli/client";

const INSTANCES = 1_000;
const OP_OCCS = 10_000;
const CLIENTS = 100;
const REQUESTS = 5_000;
const TASKS = 100;
/** The base URL the records were written under, as the service stores each record's links when it creates it. */
const STORED_BASE = "http://lcm.example:9890";

function percentile(sorted: number[], p: number): number {
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** One keep-alive connection per client, never more. */
const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });

interface Answer {
    status: number;
    location?: string;
    body: Buffer;
}

/** A request to the service (`url`: its base URL and a path), answered when the whole body is in. */
function request(method: string, url: URL, body?: string): Promise<Answer> {
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

/** REQUESTS GETs over `urls` in turn, from CLIENTS clients at once; their latencies (ms), sorted. */
async function load(urls: URL[]): Promise<number[]> {
    const latencies: number[] = [];
    let next = 0;
    await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
            while (next < REQUESTS) {
                const url = urls[next++ % urls.length];
                const t0 = process.hrtime.bigint();
                const r = await request("GET", url);
                if (r.status !== 200) throw new Error(`GET ${url}: ${r.status}`);
                latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
            }
        }),
    );
    return latencies.sort((a, b) => a - b);
}

async function main(): Promise<void> {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-bench-"));
    const store = await Store.open(dataDir);
    let server: ServiceProcess | undefined;
    try {
        const now = Date.now();
        const instances = Array.from({ length: INSTANCES }, (_, i) => {
            const id = randomUUID();
            return {
                table: "vnf_instances" as const,
                id,
                body: {
                    id,
                    vnfdId: "bench",
                    vnfInstanceName: `vnf-${i}`,
                    instantiationState: "INSTANTIATED",
                    instantiatedVnfInfo: { flavourId: "simple", vnfState: "STARTED", scaleStatus: [{ aspectId: "worker_instance", scaleLevel: 0 }], vnfcResourceInfo: [] },
                    __stackConfig: { flavour: "simple", image: "img", flavor: "flv", network: { networkId: "net" }, masters: { password: "pw-bench" }, workers: { count: 2, minCount: 2, maxCount: 4, password: "pw-bench" } },
                    __scale: { worker_instance: { count: 2, min: 2, max: 4 } },
                    _links: instanceLinks(STORED_BASE, id, "INSTANTIATED", { scalable: true }),
                    __created: now + i,
                },
            };
        });
        const opOccs = Array.from({ length: OP_OCCS }, (_, i) => {
            const id = randomUUID();
            const instance = instances[i % INSTANCES];
            return { table: "op_occs" as const, id, body: { id, vnfInstanceId: instance.id, operation: "SCALE", operationState: "COMPLETED", startTime: new Date(now).toISOString(), operationParams: { type: "SCALE_OUT", aspectId: "worker_instance" }, _links: { self: { href: opOccHref(STORED_BASE, id) }, vnfInstance: { href: instanceHref(STORED_BASE, instance.id) } }, __created: now + i } };
        });
        store.put([...instances, ...opOccs]);
        store.close();
        const size = fs.statSync(store.file).size;
        // Only PATH from this environment: no OS_* or PULUMI_* of the machine's reaches the service.
        const knobs = path.join(dataDir, "pulumi-standin");
        fs.mkdirSync(knobs);
        const starting = process.hrtime.bigint();
        server = await ServiceProcess.start(dataDir, { K8S_VNF_PULUMI_ROOT: STAND_IN_PULUMI_ROOT, PULUMI_STANDIN_STATE: knobs, PULUMI_CONFIG_PASSPHRASE: "bench" }, ["--max-parallel", "1"], { PATH: process.env.PATH });
        const startMs = Number(process.hrtime.bigint() - starting) / 1e6;
        const prefix = `${server.url}/vnflcm/v1`;
        const instanceUrls = instances.map((r) => new URL(`${prefix}/vnf_instances/${r.id}`));
        const opUrls = opOccs.map((r) => new URL(`${prefix}/vnf_lcm_op_occs/${r.id}`));

        // Warm-up of both routes: JIT, connections.
        await load(instanceUrls);
        await load(opUrls.slice(-REQUESTS));
        const instanceGets = await load(instanceUrls);
        const opGets = await load(opUrls);

        const accept: number[] = [];
        for (let i = 0; i < TASKS; i++) {
            const t0 = process.hrtime.bigint();
            const r = await request("POST", new URL(`${prefix}/vnf_instances/${instances[i].id}/scale`), JSON.stringify({ type: "SCALE_OUT", aspectId: "worker_instance" }));
            if (r.status !== 202) throw new Error(`scale: ${r.status} ${r.body}`);
            accept.push(Number(process.hrtime.bigint() - t0) / 1e6);
            await request("POST", new URL(`${r.location}/cancel`));
        }
        accept.sort((a, b) => a - b);

        const row = (label: string, l: number[]) => `${label.padEnd(52)} p50 ${percentile(l, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(l, 99).toFixed(1).padStart(7)} ms`;
        console.log(`LCM API: ${INSTANCES} instances and ${OP_OCCS} operation occurrences stored (SQLite file: ${(size / 1e6).toFixed(1)} MB)`);
        console.log(row(`GET vnf_instances/{id}, ${CLIENTS} concurrent clients`, instanceGets));
        console.log(row(`GET vnf_lcm_op_occs/{id}, ${CLIENTS} concurrent clients`, opGets));
        console.log(row(`POST scale → 202 (accepted, journalled with fsync)`, accept));
        console.log(`${"serve start with that data (command → listening)".padEnd(52)} ${startMs.toFixed(0).padStart(7)} ms   (goal < 1000 ms)`);
    } finally {
        agent.destroy();
        await server?.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
    }
    await endToEnd();
}

/** Seconds from a task's 202 until its occurrence leaves STARTING/PROCESSING; fails unless COMPLETED. */
async function timed(service: ServiceProcess, route: string, body: unknown): Promise<number> {
    const t0 = Date.now();
    const accepted = await service.call("POST", route, body);
    if (accepted.status !== 202) throw new Error(`${route}: ${accepted.status} ${JSON.stringify(accepted.body)}`);
    for (;;) {
        const op = (await service.call("GET", new URL(accepted.location!).pathname)).body;
        if (op.operationState === "COMPLETED") return (Date.now() - t0) / 1000;
        if (!["STARTING", "PROCESSING"].includes(op.operationState)) throw new Error(`${route}: ${op.operationState} ${JSON.stringify(op.error)}`);
        await new Promise((r) => setTimeout(r, 200));
    }
}

async function endToEnd(): Promise<void> {
    if (process.env.LCM_BENCH_E2E === "0") {
        console.log("LCM operations end to end: skipped (LCM_BENCH_E2E=0)");
        return;
    }
    const available = labAvailable();
    if (!available.ok) {
        console.log(`LCM operations end to end: skipped (${available.why})`);
        return;
    }
    const lab = new Lab();
    const project = serviceProject();
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-bench-ops-"));
    let service: ServiceProcess | undefined;
    try {
        await lab.start([]);
        const knobs = path.join(dataDir, "pulumi-standin");
        fs.mkdirSync(knobs);
        service = await ServiceProcess.start(dataDir, { K8S_VNF_PULUMI_ROOT: STAND_IN_PULUMI_ROOT, PULUMI_STANDIN_STATE: knobs, PULUMI_CONFIG_PASSPHRASE: "bench", K8S_VNF_LAB: lab.descriptorFile }, ["--project", project.dir], { PATH: process.env.PATH });
        const text = fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8").replace(/("password"\s*:\s*)"ubuntu"/g, (_m, key) => `${key}${JSON.stringify(lab.password)}`);
        const body = parseRequestText(text, "simple-instantiate.json") as Record<string, unknown>;
        delete body.vimConnectionInfo;
        const id = (await service.call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "bench" })).body.id;
        const instantiate = await timed(service, `/vnflcm/v1/vnf_instances/${id}/instantiate`, body);
        const scaleOut = await timed(service, `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" });
        const commands = fs.readFileSync(path.join(knobs, "calls"), "utf8").trim().split("\n").filter((l) => !l.split(" ")[1].startsWith("env")).length;
        console.log("LCM operations end to end (Automation API, stand-in Pulumi CLI, the program on lab hosts):");
        console.log(`  instantiate simple (1 master, 2 workers)  ${instantiate.toFixed(1).padStart(6)} s`);
        console.log(`  scale out by one worker                   ${scaleOut.toFixed(1).padStart(6)} s`);
        console.log(`  Pulumi commands run for the two           ${String(commands).padStart(6)}`);
    } finally {
        await service?.stop();
        await lab.stop();
        project.remove();
        fs.rmSync(dataDir, { recursive: true, force: true });
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
