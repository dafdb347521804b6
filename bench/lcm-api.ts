/**
 * The LCM service as users run it (`k8s-vnf serve`, its own process), on the real Pulumi CLI v3.248.0 and its
 * plugins as tools/build.sh built them (K8S_VNF_PULUMI_ROOT, test/support/tools.ts; the bench needs them built,
 * as `npm test` leaves them), measured from this process:
 * - its API under load: with 1,000 VNF instances and 10,000 operation occurrences stored, GET latency (p50/p99)
 *   of an instance and of an occurrence under 100 concurrent clients, and the time to accept a task (the 202:
 *   checks, plan, occurrence committed to SQLite, its log synced). Each accepted task is cancelled at once (at most one runs,
 *   `--max-parallel 1`): the stored instances have no stacks to update. The service has a project folder of
 *   its own, so that a task's first Pulumi command, cancelled or not, never touches this checkout's state;
 * - how long `serve` takes from its command to listening, with that data, and to ready (GET /readyz 200: the
 *   Automation API loaded, service/readiness.ts);
 * - operations end to end, where lab hosts can run (root): instantiate of the simple seed (1 master, 2 workers)
 *   and a scale-out by one, from the 202 to COMPLETED, through the Automation API, the real CLI, the program and
 *   the real OpenStack provider against the lab OpenStack API (test/support/openstackApi), its VMs lab hosts,
 *   the first master running the real control plane (kube-apiserver and etcd: the cluster's Kubernetes VIM is
 *   made by the real Kubernetes plugin; kubeadm, kubectl and the kubelet are the lab's stand-ins), as
 *   test/realLcm.lab.spec.ts runs it; and how many Pulumi commands the service ran for the two (each command
 *   has a private folder of its own in the service's temporary folder, service/pulumiCommand.ts: counted as
 *   they are made). It takes minutes; `LCM_BENCH_E2E=0` skips it (the API part alone needs no lab hosts).
 *
 * The load comes from this process, on the same CPUs as the service (two, on the bench machine): it is kept
 * lean so that what is measured is the service. Each of the 100 clients is a loop with one request at a time
 * on a keep-alive connection of its own (node:http, an Agent of 100 sockets). fetch (undici) cost several
 * times the CPU per request, and this process's own queueing showed up as the service's latency.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { agent, CLIENTS, load, percentile, REQUESTS, request, untilReady } from "./httpLoad";
import { INSTANCES, OP_OCCS, storedRecords } from "./lcmRecords";
import { OUTPUT_DIR_PREFIX } from "../service/pulumiProcess";
import { SecretsKeyring } from "../service/secretsAtRest";
import { SqliteStore } from "../service/sqliteStore";
import { DEFAULT_LEASE_MS } from "../service/store";
import { Lab, labAvailable } from "../test/lab/lab";
import { seedBody } from "../test/support/lcmClient";
import { LabOpenStackApi } from "../test/support/openstackApi/server";
import { realServiceEnv, SAMPLE_FLAVOR, SAMPLE_IMAGE, startService, stopServiceTree } from "../test/support/realLcmService";
import { ServiceProcess } from "../test/support/serviceProcess";
import { serviceProject } from "../test/support/serviceProject";
import { builtTools } from "../test/support/tools";

const TASKS = 100;

async function main(): Promise<void> {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-bench-"));
    const dataDir = path.join(root, "service");
    fs.mkdirSync(dataDir);
    const store = await SqliteStore.open(dataDir, SecretsKeyring.load({ dataDir }), DEFAULT_LEASE_MS);
    const project = serviceProject();
    let server: ServiceProcess | undefined;
    try {
        const { instanceIds, opIds, changes } = storedRecords();
        await store.put(changes);
        await store.close();
        const size = fs.statSync(store.location).size;
        // The built CLI's environment (realPulumiEnv: PATH, HOME, LANG and USER of this one, a Pulumi home and
        // temporary folder in `root`): no OS_* or PULUMI_* of the machine's reaches the service.
        const env = realServiceEnv(root);
        const starting = process.hrtime.bigint();
        server = await ServiceProcess.start(dataDir, {}, ["--max-parallel", "1", "--project", project.dir], env);
        const startMs = Number(process.hrtime.bigint() - starting) / 1e6;
        await untilReady(server.url);
        const readyMs = Number(process.hrtime.bigint() - starting) / 1e6;
        const prefix = `${server.url}/vnflcm/v1`;
        const instanceUrls = instanceIds.map((id) => new URL(`${prefix}/vnf_instances/${id}`));
        const opUrls = opIds.map((id) => new URL(`${prefix}/vnf_lcm_op_occs/${id}`));

        // Warm-up of both routes: JIT, connections.
        const over = (urls: URL[]) => (k: number) => urls[k % urls.length];
        await load(over(instanceUrls));
        await load(over(opUrls.slice(-REQUESTS)));
        const instanceGets = await load(over(instanceUrls));
        const opGets = await load(over(opUrls));

        const accept: number[] = [];
        for (let i = 0; i < TASKS; i++) {
            const t0 = process.hrtime.bigint();
            const r = await request("POST", new URL(`${prefix}/vnf_instances/${instanceIds[i]}/scale`), JSON.stringify({ type: "SCALE_OUT", aspectId: "worker_instance" }));
            if (r.status !== 202) throw new Error(`scale: ${r.status} ${r.body}`);
            accept.push(Number(process.hrtime.bigint() - t0) / 1e6);
            await request("POST", new URL(`${r.location}/cancel`));
        }
        accept.sort((a, b) => a - b);

        const row = (label: string, l: number[]) => `${label.padEnd(52)} p50 ${percentile(l, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(l, 99).toFixed(1).padStart(7)} ms`;
        console.log(`LCM API: ${INSTANCES} instances and ${OP_OCCS} operation occurrences stored (SQLite file: ${(size / 1e6).toFixed(1)} MB)`);
        console.log(row(`GET vnf_instances/{id}, ${CLIENTS} concurrent clients`, instanceGets));
        console.log(row(`GET vnf_lcm_op_occs/{id}, ${CLIENTS} concurrent clients`, opGets));
        console.log(row(`POST scale → 202 (accepted, committed and synced)`, accept));
        console.log(`${"serve start with that data (command → listening)".padEnd(52)} ${startMs.toFixed(0).padStart(7)} ms   (goal < 1000 ms)`);
        console.log(`${"  → ready (GET /readyz 200: warmed up)".padEnd(52)} ${readyMs.toFixed(0).padStart(7)} ms`);
    } finally {
        agent.destroy();
        if (server) await stopServiceTree(server);
        project.remove();
        fs.rmSync(root, { recursive: true, force: true });
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
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-bench-ops-"));
    let api: LabOpenStackApi | undefined;
    let service: ServiceProcess | undefined;
    let watcher: fs.FSWatcher | undefined;
    try {
        await lab.start([]);
        const tools = builtTools();
        lab.giveTools({ kube: tools.bins.kube, etcd: tools.bins.etcd });
        // The seed's body as it is but for the lab's login password and its VIM: the service's own OS_* credentials
        // are the lab API's, as an operator's service would hold its cloud's.
        const body = seedBody(lab, "simple-instantiate.json", { withoutVim: true });
        api = await LabOpenStackApi.start(lab, { cluster: "bench", networkId: body.extVirtualLinks[0].resourceId, imageName: SAMPLE_IMAGE, flavorNames: [SAMPLE_FLAVOR] });
        const env = realServiceEnv(root);
        const commands = new Set<string>();
        watcher = fs.watch(env.TMPDIR, (_event, name) => {
            if (name?.startsWith(OUTPUT_DIR_PREFIX)) commands.add(name);
        });
        service = await startService(root, project, { ...env, ...api.env() });
        const id = (await service.call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "bench" })).body.id;
        const instantiate = await timed(service, `/vnflcm/v1/vnf_instances/${id}/instantiate`, body);
        const scaleOut = await timed(service, `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" });
        console.log("LCM operations end to end (Automation API, the real Pulumi CLI and plugins, the lab OpenStack API, the program on lab hosts):");
        console.log(`  instantiate simple (1 master, 2 workers)  ${instantiate.toFixed(1).padStart(6)} s`);
        console.log(`  scale out by one worker                   ${scaleOut.toFixed(1).padStart(6)} s`);
        console.log(`  Pulumi commands run for the two           ${String(commands.size).padStart(6)}`);
    } finally {
        watcher?.close();
        if (service) await stopServiceTree(service);
        await api?.stop();
        await lab.stop();
        project.remove();
        fs.rmSync(root, { recursive: true, force: true });
    }
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
