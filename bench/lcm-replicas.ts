/**
 * The LCM service as replicas (issue 28): several `k8s-vnf serve` processes on one PostgreSQL database (a
 * private server of this bench's own, test/support/postgres.ts), the real Pulumi CLI v3.248.0 and its plugins
 * as tools/build.sh built them, one project folder for all (replicas on one host), `--max-parallel 1
 * --claim-lease 5`, and an OpenStack endpoint on a closed loopback port: every update fails fast (connection
 * refused) and creates nothing. Measured from this process, on the same two CPUs as the replicas:
 * 1. three replicas loaded: with 1,000 instances and 10,000 occurrences seeded through PostgresStore (sealed
 *    with the key the replicas get), each replica's start (command → listening, and → ready: GET /readyz 200
 *    once it has loaded the Automation API, service/readiness.ts), one after the other, each started once the
 *    one before is ready, as a rolling start behind a load balancer goes; GET p50/p99 of an instance and of an
 *    occurrence under 100 concurrent clients, the requests spread round-robin over the three, and of
 *    api_versions (no store read: the HTTP path alone, the floor the two stand on here); the 202 of a scale
 *    task (plan, occurrence committed with its claim), each cancelled at once, as bench/lcm-api.ts does on one
 *    SQLite replica (whose figures it prints; not repeated here). Of 100, p99 is the slowest, shown with its
 *    place;
 * 2. failover under load: 6 fresh instances, a subscriber (test/support/lcmClient.ts Callback), and for 90 s
 *    (BENCH_REPEATS=1; else 180 s) each instance instantiated, and its occurrence retried whenever FAILED_TEMP,
 *    each request through a random replica, so occurrences cycle PROCESSING → FAILED_TEMP. Every 30 s one
 *    replica's service process is SIGKILLed (preferably one running a `pulumi up`, left running as a crash
 *    leaves it) and a new replica started in its place. The bench sends no request to a replica it is about to
 *    kill (it waits for its own requests to it to end), so every 202 it counts was answered, and none is cut.
 *    The process table is sampled every 200 ms (/proc/<pid>/cmdline): per stack, the most `pulumi up
 *    --stack vnf-<id>` commands at once (a process whose parent is a `pulumi up` of the same stack is that
 *    command's plugin between fork and exec, showing its parent's command line: not a second one). Then no more work, and a wait until none of its occurrences is
 *    STARTING/PROCESSING/ROLLING_BACK (60 s at most). Counted (the bench exits 1 unless the first three are 0):
 *    - operations lost: 202s (instantiates and retries) whose occurrence is missing, or still running at the end;
 *    - run twice: stacks on which two `pulumi up` ran at once;
 *    - duplicate notifications. A run is what a 202 starts (an instantiate, or a retry): it ends in exactly one
 *      result state (FAILED_TEMP, COMPLETED, ROLLED_BACK, FAILED: by the replica running it, or by the one
 *      that took it over), and each state entered is notified once, by the replica that made it. The service
 *      sends START once per occurrence (at its accept; a retry sends none) and no stateEnteredTime in a
 *      notification, so per occurrence: START notifications beyond 1, plus RESULT notifications beyond its
 *      runs (its 202s as the bench counted them); a delivery repeated (same notification id) is shown too.
 *      RESULTs fewer than runs (a replica killed between storing a state and delivering its notification:
 *      at most once) are shown as missing, not counted as duplicates;
 *    - operations (202s), retries, kills, takeovers (RESULTs of a run whose replica died: FAILED_TEMP "the
 *      service (…) stopped while the operation was running", or ROLLED_BACK: the bench cancels nothing).
 * 3. store writes per second, SQLite (service/sqliteStore.ts) and PostgreSQL: `store.put` of one occurrence
 *    body as a replica wrote it in 2 (its `__plan` holding the request's passwords, so each write seals), one
 *    write at a time for 3 s, each on a fresh store.
 * Everything started here is ended by its handle or PID (replicas and what they run; the Pulumi commands a
 * killed replica left, by PID and start time; the PostgreSQL server), never by a name.
 */
import { randomBytes, randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseRequestText } from "../config/requestText";
import { findSecretLeaves } from "../config/secrets";
import { PostgresStore } from "../service/postgresStore";
import { descendants, describeProcess, PulumiProcess, stillRunning } from "../service/pulumiProcess";
import { SecretsKeyring } from "../service/secretsAtRest";
import { SqliteStore } from "../service/sqliteStore";
import { Body, DEFAULT_LEASE_MS, Store } from "../service/store";
import { REQUESTS_DIR } from "../test/support/fixtures";
import { agent, CLIENTS, load, percentile, request, untilReady } from "./httpLoad";
import { INSTANCES, OP_OCCS, storedRecords } from "./lcmRecords";
import { Callback } from "../test/support/lcmClient";
import { PostgresServer, startPostgres } from "../test/support/postgres";
import { killServiceTree, realServiceEnv } from "../test/support/realLcmService";
import { commandLine } from "../test/support/processAlive";
import { ServiceProcess } from "../test/support/serviceProcess";
import { serviceProject } from "../test/support/serviceProject";
import { silentEndpoint } from "../test/support/silentEndpoint";

const TASKS = 100;
const FAILOVER_INSTANCES = 6;
const DURATION_MS = Number(process.env.BENCH_REPEATS ?? 2) === 1 ? 90_000 : 180_000;
const KILL_EVERY_MS = 30_000;
const SETTLE_MS = 60_000;
const WRITE_MS = 3_000;
const RUNNING = ["STARTING", "PROCESSING", "ROLLING_BACK"];
const OCCS = "/vnflcm/v1/vnf_lcm_op_occs";

/** A process's parent PID (/proc/<pid>/stat field 4), "?" once it has ended. */
const parentOf = (pid: number) => {
    try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
        return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1];
    } catch {
        return "?";
    }
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const msSince = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
const row = (label: string, l: number[], goal: string) => `${label.padEnd(60)} p50 ${percentile(l, 50).toFixed(1).padStart(7)} ms   p99 ${percentile(l, 99).toFixed(1).padStart(7)} ms   (goal: ${goal})`;

/** A replica as part 2 uses it: requests in flight from this process, and whether it is about to be killed. */
interface Replica {
    service: ServiceProcess;
    inflight: number;
    draining: boolean;
}

async function main(): Promise<number> {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-replicas-bench-"));
    const project = serviceProject();
    const secretsKey = randomBytes(32).toString("base64");
    const keyring = SecretsKeyring.load({ env: { K8S_VNF_LCM_SECRETS_KEY: secretsKey }, dataDir: root });
    // A port that was just listening and is closed: the provider's first request is refused at once.
    const endpoint = await silentEndpoint();
    await endpoint.close();
    const live = new Set<ServiceProcess>();
    const started: ServiceProcess[] = [];
    const leftByKilled: PulumiProcess[] = [];
    let pg: PostgresServer | undefined;
    let store: PostgresStore | undefined;
    let callback: Callback | undefined;
    let sampler: NodeJS.Timeout | undefined;
    try {
        pg = await startPostgres();
        const database = await pg.newDatabase();
        store = await PostgresStore.open(database, keyring, DEFAULT_LEASE_MS);
        let replicaCount = 0;
        const startReplica = async (): Promise<{ service: ServiceProcess; startMs: number; readyMs: number }> => {
            const dir = path.join(root, `replica-${replicaCount++}`);
            fs.mkdirSync(path.join(dir, "data"), { recursive: true });
            const env = { ...realServiceEnv(dir), ...endpoint.env, K8S_VNF_LCM_DATABASE: database, K8S_VNF_LCM_SECRETS_KEY: secretsKey };
            const t0 = process.hrtime.bigint();
            const service = await ServiceProcess.start(path.join(dir, "data"), {}, ["--project", project.dir, "--max-parallel", "1", "--claim-lease", "5"], env);
            live.add(service);
            started.push(service);
            const startMs = msSince(t0);
            await untilReady(service.url);
            return { service, startMs, readyMs: msSince(t0) };
        };

        // 1. Three replicas, loaded.
        const { instanceIds, opIds, changes } = storedRecords();
        const seeding = process.hrtime.bigint();
        await store.put(changes);
        const seedMs = msSince(seeding);
        const replicas: Replica[] = [];
        const startMs: number[] = [];
        const readyMs: number[] = [];
        for (let i = 0; i < 3; i++) {
            const started = await startReplica();
            replicas.push({ service: started.service, inflight: 0, draining: false });
            startMs.push(started.startMs);
            readyMs.push(started.readyMs);
        }
        const spread = (k: number) => replicas[k % replicas.length].service.url;
        const instanceUrl = (k: number) => new URL(`${spread(k)}/vnflcm/v1/vnf_instances/${instanceIds[k % INSTANCES]}`);
        const opUrl = (k: number) => new URL(`${spread(k)}${OCCS}/${opIds[(k * 7) % OP_OCCS]}`);
        await load((k) => (k % 2 ? instanceUrl(k) : opUrl(k))); // warm-up of both routes on each replica: JIT, connections
        const instanceGets = await load(instanceUrl);
        const opGets = await load(opUrl);
        const httpOnly = await load((k) => new URL(`${spread(k)}/vnflcm/v1/api_versions`));
        const accept: number[] = [];
        for (let i = 0; i < TASKS; i++) {
            const t0 = process.hrtime.bigint();
            const r = await request("POST", new URL(`${spread(i)}/vnflcm/v1/vnf_instances/${instanceIds[i]}/scale`), JSON.stringify({ type: "SCALE_OUT", aspectId: "worker_instance" }));
            if (r.status !== 202) throw new Error(`scale: ${r.status} ${r.body}`);
            accept.push(msSince(t0));
            await request("POST", new URL(`${r.location}/cancel`));
        }
        console.log(`LCM replicas: 3 \`serve\` on one PostgreSQL database, ${INSTANCES} instances and ${OP_OCCS} operation occurrences stored (seeded in ${(seedMs / 1000).toFixed(1)} s); requests round-robin over the three`);
        console.log(row(`GET vnf_instances/{id}, ${CLIENTS} concurrent clients`, instanceGets, "p99 < 50 ms"));
        console.log(row(`GET vnf_lcm_op_occs/{id}, ${CLIENTS} concurrent clients`, opGets, "p99 < 50 ms"));
        console.log(`${row("POST scale → 202 (accepted, committed with its claim)", [...accept].sort((a, b) => a - b), "p99 < 100 ms")}   (slowest: ${Math.max(...accept).toFixed(0)} ms, task ${accept.indexOf(Math.max(...accept)) + 1} of ${TASKS})`);
        console.log(row("  the HTTP path alone, no store read (GET api_versions)", httpOnly, "none: what the two above cost beyond"));
        console.log(`${"serve start with that data (command → listening), each".padEnd(60)} ${startMs.map((ms) => `${ms.toFixed(0)} ms`).join(", ")}   (goal < 1000 ms)`);
        console.log(`${"  → ready (GET /readyz 200: warmed up), each".padEnd(60)} ${readyMs.map((ms) => `${ms.toFixed(0)} ms`).join(", ")}`);

        // 2. Failover under load.
        const pick = () => {
            const ready = replicas.filter((r) => !r.draining);
            return ready[Math.floor(Math.random() * ready.length)];
        };
        const call = async (method: string, route: string, body?: unknown) => {
            const r = pick();
            r.inflight++;
            try {
                return await r.service.call(method, route, body);
            } finally {
                r.inflight--;
            }
        };
        callback = await Callback.start();
        const subscribed = await call("POST", "/vnflcm/v1/subscriptions", { callbackUri: callback.url, filter: { notificationTypes: ["VnfLcmOperationOccurrenceNotification"] } });
        if (subscribed.status !== 201) throw new Error(`subscription: ${subscribed.status} ${JSON.stringify(subscribed.body)}`);
        const instantiateBody = parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8"), "simple-instantiate.json") as Body;
        delete instantiateBody.vimConnectionInfo;
        const ours: string[] = [];
        for (let i = 0; i < FAILOVER_INSTANCES; i++) {
            const created = await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177", vnfInstanceName: `failover-${i}` });
            if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
            ours.push(created.body.id);
        }
        const stacks = new Set(ours.map((id) => `vnf-${id}`));
        // The process table: per stack, the most `pulumi up` at once, and what ran when two did.
        const mostUp = new Map<string, number>();
        const overlaps: string[] = [];
        sampler = setInterval(() => {
            // A child between fork and exec shows its parent's command line: a `pulumi up` whose parent is one
            // of the same stack is that parent's plugin being started, not a second command.
            const ups = new Map<string, { stack: string; parent: string }>();
            for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
                const argv = commandLine(Number(pid)).split(" ");
                const stack = argv[argv.indexOf("--stack") + 1];
                if (path.basename(argv[0]) === "pulumi" && argv[1] === "up" && stacks.has(stack)) ups.set(pid, { stack, parent: parentOf(Number(pid)) });
            }
            const upBy = new Map<string, string[]>();
            for (const [pid, { stack, parent }] of ups) {
                if (ups.get(parent)?.stack !== stack) upBy.set(stack, [...(upBy.get(stack) ?? []), `pid ${pid} (parent ${parent})`]);
            }
            for (const [stack, pids] of upBy) {
                mostUp.set(stack, Math.max(mostUp.get(stack) ?? 0, pids.length));
                if (pids.length > 1) overlaps.push(`${new Date().toISOString()} ${stack}: ${pids.join(", ")}`);
            }
        }, 200);
        const runs = new Map<string, number>(); // 202s per occurrence
        const counts = { operations: 0, retries: 0, kills: 0, requestErrors: 0, refused: 0 };
        const refusals: string[] = [];
        let stopping = false;
        const accepted = (opId: string) => {
            counts.operations++;
            runs.set(opId, (runs.get(opId) ?? 0) + 1);
        };
        const drive = async (instanceId: string) => {
            let opId: string | undefined;
            while (!stopping) {
                try {
                    if (!opId) {
                        const r = await call("POST", `/vnflcm/v1/vnf_instances/${instanceId}/instantiate`, instantiateBody);
                        if (r.status === 202) accepted((opId = String(r.location).split("/").pop()!));
                        else (counts.refused++, refusals.push(`instantiate ${instanceId}: ${r.status} ${JSON.stringify(r.body)}`));
                    } else {
                        const state = (await call("GET", `${OCCS}/${opId}`)).body?.operationState;
                        if (state === "FAILED_TEMP") {
                            const r = await call("POST", `${OCCS}/${opId}/retry`);
                            if (r.status === 202) (accepted(opId), counts.retries++);
                            else (counts.refused++, refusals.push(`retry ${opId}: ${r.status} ${JSON.stringify(r.body)}`));
                        } else if (state === "ROLLED_BACK" || state === "FAILED") opId = undefined; // instantiate again: a new occurrence
                        else if (state === "COMPLETED") return;
                    }
                } catch (e) {
                    counts.requestErrors++;
                    refusals.push(`request error: ${(e as Error).message}`);
                }
                await sleep(250);
            }
        };
        const killer = async () => {
            for (let at = KILL_EVERY_MS; at < DURATION_MS; at += KILL_EVERY_MS) {
                await sleep(Math.max(0, at - (Date.now() - failoverStart)));
                // One running a `pulumi up` if any: its takeover is what is measured.
                const running = (r: Replica) => descendants(r.service.pid).some((pid) => /(^|\/)pulumi up /.test(commandLine(pid)));
                const victim = replicas.find(running) ?? replicas[counts.kills % replicas.length];
                victim.draining = true;
                while (victim.inflight > 0) await sleep(10);
                leftByKilled.push(...descendants(victim.service.pid).flatMap((pid) => describeProcess(pid) ?? []));
                await victim.service.crash();
                live.delete(victim.service);
                counts.kills++;
                replicas.splice(replicas.indexOf(victim), 1);
                replicas.push({ service: (await startReplica()).service, inflight: 0, draining: false });
            }
        };
        const failoverStart = Date.now();
        const drivers = ours.map(drive);
        await Promise.all([killer(), sleep(DURATION_MS).then(() => (stopping = true))]);
        await Promise.all(drivers);
        const settleStart = Date.now();
        const final = new Map<string, Body>();
        for (let busy = true; busy && Date.now() - settleStart < SETTLE_MS; await sleep(busy ? 500 : 0)) {
            for (const id of ours) for (const op of (await call("GET", `${OCCS}?filter=(eq,vnfInstanceId,${id})`)).body as Body[]) final.set(String(op.id), op);
            busy = [...final.values()].some((op) => RUNNING.includes(String(op.operationState)));
        }
        const settleMs = Date.now() - settleStart;
        clearInterval(sampler);
        const mine = (n: Body) => runs.has(String(n.vnfLcmOpOccId)) || ours.includes(String(n.vnfInstanceId));
        const resultsOf = (opId: string) => callback!.received.filter((n) => n.vnfLcmOpOccId === opId && n.notificationStatus === "RESULT").length;
        await callback.until(() => [...runs].every(([opId, n]) => resultsOf(opId) >= n), 15_000);
        await sleep(2_000); // late duplicates
        const notes = callback.received.filter(mine);
        const lost = [...runs.keys()].filter((opId) => !final.has(opId) || RUNNING.includes(String(final.get(opId)!.operationState)));
        const runTwice = [...mostUp].filter(([, n]) => n > 1).map(([stack]) => stack);
        const duplicates: string[] = [];
        let duplicateCount = 0;
        let missing = 0;
        for (const opId of new Set([...runs.keys(), ...notes.map((n) => String(n.vnfLcmOpOccId))])) {
            const of = notes.filter((n) => n.vnfLcmOpOccId === opId);
            const starts = of.filter((n) => n.notificationStatus === "START").length;
            const results = of.filter((n) => n.notificationStatus === "RESULT").length;
            const expected = runs.get(opId) ?? 0;
            const extra = Math.max(0, starts - 1) + Math.max(0, results - expected);
            missing += Math.max(0, expected - results);
            duplicateCount += extra;
            if (extra > 0) duplicates.push(`${opId}: ${starts} START, ${results} RESULT for ${expected} runs: ${of.map((n) => `${n.notificationStatus} ${n.operationState}`).join(", ")}`);
        }
        const repeatedIds = notes.length - new Set(notes.map((n) => n.id)).size;
        const takeovers = notes.filter((n) => n.notificationStatus === "RESULT" && (n.operationState === "ROLLED_BACK" || / stopped while the operation was running/.test(String(n.error?.detail ?? "")))).length;
        const states = [...final.values()].reduce((m, op) => m.set(String(op.operationState), (m.get(String(op.operationState)) ?? 0) + 1), new Map<string, number>());
        console.log(`Failover under load: ${FAILOVER_INSTANCES} instances for ${DURATION_MS / 1000} s on 3 replicas, one SIGKILLed every ${KILL_EVERY_MS / 1000} s and replaced; settled ${(settleMs / 1000).toFixed(1)} s after (occurrences: ${[...states].map(([s, n]) => `${n} ${s}`).join(", ")})`);
        console.log(`  operations accepted (202)        ${String(counts.operations).padStart(6)}   (of which retries ${counts.retries}; occurrences ${runs.size})`);
        console.log(`  replicas killed                  ${String(counts.kills).padStart(6)}   takeovers notified ${takeovers}`);
        console.log(`  operations lost                  ${String(lost.length).padStart(6)}   (must be 0)`);
        console.log(`  stacks run twice at once         ${String(runTwice.length).padStart(6)}   (must be 0; most \`pulumi up\` at once on a stack: ${Math.max(0, ...mostUp.values())}, ${mostUp.size} stacks seen)`);
        console.log(`  duplicate notifications          ${String(duplicateCount).padStart(6)}   (must be 0; repeated notification ids ${repeatedIds}; RESULTs missing ${missing})`);
        console.log(`  requests refused or failed       ${String(counts.refused + counts.requestErrors).padStart(6)}`);
        for (const line of [...lost.map((id) => `lost: ${id} ${JSON.stringify(final.get(id) ?? "missing")}`), ...runTwice.map((s) => `run twice: ${s}`), ...overlaps.slice(0, 20), ...duplicates, ...refusals.slice(0, 20)]) console.log(`    ${line}`);
        const failed = lost.length > 0 || runTwice.length > 0 || duplicateCount > 0 || repeatedIds > 0;
        if (failed) for (const r of started) console.error(`--- replica pid ${r.pid} (${live.has(r) ? "running" : "killed"}) output ---\n${r.output}`);

        // 3. Store writes per second, one write at a time.
        const sample = await store.get("op_occs", [...runs.keys()][0]);
        if (!sample) throw new Error("no occurrence to write");
        const writes = async (target: Store): Promise<number> => {
            const id = randomUUID();
            let n = 0;
            const t0 = Date.now();
            for (; Date.now() - t0 < WRITE_MS; n++) {
                const body = { ...sample, id, operationState: n % 2 ? "PROCESSING" : "FAILED_TEMP", stateEnteredTime: new Date().toISOString() };
                await target.put([{ table: "op_occs", id, body }]);
            }
            const rate = n / ((Date.now() - t0) / 1000);
            await target.close();
            return rate;
        };
        fs.mkdirSync(path.join(root, "sqlite"));
        const sqlite = await writes(await SqliteStore.open(path.join(root, "sqlite"), keyring, DEFAULT_LEASE_MS));
        const postgres = await writes(await PostgresStore.open(await pg.newDatabase(), keyring, DEFAULT_LEASE_MS));
        console.log(`Store writes (put of one occurrence as a replica wrote it: ${(JSON.stringify(sample).length / 1024).toFixed(1)} KB, ${findSecretLeaves(sample).length} secrets sealed), one at a time:`);
        console.log(`  SQLite (embedded, one replica)   ${sqlite.toFixed(0).padStart(6)} /s`);
        console.log(`  PostgreSQL (shared by replicas)  ${postgres.toFixed(0).padStart(6)} /s`);
        return failed ? 1 : 0;
    } finally {
        if (sampler) clearInterval(sampler);
        agent.destroy();
        for (const service of live) await killServiceTree(service);
        // What killed replicas left and no takeover stopped: those processes (same PID and start time) and theirs.
        const left = leftByKilled.filter(stillRunning).flatMap((p) => [p.pid, ...descendants(p.pid)]);
        for (const pid of left) {
            try {
                process.kill(pid, "SIGKILL");
            } catch {
                // gone meanwhile
            }
        }
        await callback?.stop();
        await store?.close().catch(() => undefined);
        await pg?.stop();
        project.remove();
        fs.rmSync(root, { recursive: true, force: true });
    }
}

main().then(
    (code) => process.exit(code),
    (e) => {
        console.error(e);
        process.exit(1);
    },
);
