/**
 * The LCM service's API under load: with 1,000 VNF instances and 10,000 operation occurrences stored,
 * GET latency (p50/p99) of an instance and of an occurrence under 100 concurrent clients, and the time to
 * accept a task (the 202: checks, plan, occurrence journalled and fsynced). The service runs as users run
 * it (`k8s-vnf serve`, its own process); the load comes from this one. Stacks are not run: the service is
 * given no Pulumi CLI, so accepted tasks fail afterwards, which the 202 does not wait for.
 */
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Store } from "../service/store";
import { ServiceProcess } from "../test/support/serviceProcess";

const INSTANCES = 1_000;
const OP_OCCS = 10_000;
const CLIENTS = 100;
const REQUESTS = 5_000;
const TASKS = 100;

function percentile(sorted: number[], p: number): number {
    return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function load(urls: string[]): Promise<number[]> {
    const latencies: number[] = [];
    let next = 0;
    await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
            while (next < REQUESTS) {
                const url = urls[next++ % urls.length];
                const t0 = process.hrtime.bigint();
                const r = await fetch(url);
                await r.arrayBuffer();
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
                    __created: now + i,
                },
            };
        });
        const opOccs = Array.from({ length: OP_OCCS }, (_, i) => {
            const id = randomUUID();
            const instance = instances[i % INSTANCES];
            return { table: "op_occs" as const, id, body: { id, vnfInstanceId: instance.id, operation: "SCALE", operationState: "COMPLETED", startTime: new Date(now).toISOString(), operationParams: { type: "SCALE_OUT", aspectId: "worker_instance" }, __created: now + i } };
        });
        store.put([...instances, ...opOccs]);
        store.close();
        const size = fs.statSync(store.file).size;
        // Only PATH from this environment: no OS_* or PULUMI_* of the machine's reaches the service.
        server = await ServiceProcess.start(dataDir, { K8S_VNF_PULUMI_ROOT: path.join(dataDir, "no-pulumi-here") }, [], { PATH: process.env.PATH });
        const prefix = `${server.url}/vnflcm/v1`;

        await load(instances.map((r) => `${prefix}/vnf_instances/${r.id}`)); // warm-up: JIT, connections
        const instanceGets = await load(instances.map((r) => `${prefix}/vnf_instances/${r.id}`));
        const opGets = await load(opOccs.map((r) => `${prefix}/vnf_lcm_op_occs/${r.id}`));

        const accept: number[] = [];
        for (let i = 0; i < TASKS; i++) {
            const t0 = process.hrtime.bigint();
            const r = await fetch(`${prefix}/vnf_instances/${instances[i].id}/scale`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "SCALE_OUT", aspectId: "worker_instance" }) });
            await r.arrayBuffer();
            if (r.status !== 202) throw new Error(`scale: ${r.status}`);
            accept.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
        accept.sort((a, b) => a - b);

        const row = (label: string, l: number[]) => `${label.padEnd(52)} p50 ${percentile(l, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(l, 99).toFixed(1).padStart(7)} ms`;
        console.log(`LCM API: ${INSTANCES} instances and ${OP_OCCS} operation occurrences stored (SQLite file: ${(size / 1e6).toFixed(1)} MB)`);
        console.log(row(`GET vnf_instances/{id}, ${CLIENTS} concurrent clients`, instanceGets));
        console.log(row(`GET vnf_lcm_op_occs/{id}, ${CLIENTS} concurrent clients`, opGets));
        console.log(row(`POST scale → 202 (accepted, journalled with fsync)`, accept));
    } finally {
        await server?.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
