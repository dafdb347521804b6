/**
 * The LCM service under racing and slow clients, in process on loopback, its stacks run by a gated runner
 * (each update or preview waits until the test lets it go): one state machine that concurrent task
 * requests cannot race, dry runs in a bounded pool of their own that stop when their client goes or an
 * operation needs the stack, and survive no crash; a progress stream that ends when a person must act, and
 * that a watcher who never reads cannot turn into a crash. What the real Pulumi CLI does under a dry run is
 * realLcm.lab's; the HTTP server's deadlines and header names are httpServer.spec's.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { parseRequestText } from "../config/requestText";
import { createService } from "../service/app";
import { describeProcess, stillRunning } from "../service/pulumiProcess";
import { PreviewOptions, RunOptions, StackRunner } from "../service/stackRunner";
import { REQUESTS_DIR } from "./support/fixtures";
import { describeEachStore, StoreKind, storeFor } from "./support/stores";
import { runTeardowns } from "./support/teardowns";

type Body = Record<string, any>;

/** A promise the test resolves. */
function gate() {
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    return { opened, open };
}

/** Updates and previews that wait for their stack's gate; an update of a stack in `failing` fails once. */
class GatedRunner implements StackRunner {
    readonly log: string[] = [];
    readonly gates = new Map<string, ReturnType<typeof gate>>();
    readonly failing = new Set<string>();
    /** Previews wait for this (or their abort). */
    previewGate = gate();
    /** Told of each preview's options when it starts; what it returns, the preview waits for instead of the gate. */
    previewStarted?: (options: PreviewOptions) => Promise<void> | void;
    /** Engine events each update reports once its gate opens. */
    eventsPerUpdate = 0;

    async up(stack: string, _config: Record<string, unknown>, options: RunOptions): Promise<Record<string, unknown>> {
        this.log.push(`up ${stack}`);
        await this.gates.get(stack)?.opened;
        for (let i = 0; i < this.eventsPerUpdate; i++) options.onEvent?.({ sequence: i, timestamp: 0, diagnosticEvent: { message: "x".repeat(200), color: "never", severity: "info" } });
        if (this.failing.delete(stack)) throw new Error(`the update of ${stack} failed`);
        return { vnfcResources: [], scale: { worker_instance: { count: 2, min: 2, max: 4 } } };
    }
    async destroy(stack: string): Promise<void> {
        this.log.push(`destroy ${stack}`);
    }
    async preview(stack: string, _config: Record<string, unknown> | undefined, options: PreviewOptions): Promise<void> {
        this.log.push(`preview ${stack}`);
        const own = this.previewStarted?.(options);
        if (own) return own.then(() => void this.log.push(`preview ended ${stack}`));
        await new Promise<void>((resolve, reject) => {
            void this.previewGate.opened.then(resolve);
            options.signal?.addEventListener("abort", () => {
                this.log.push(`preview stopped ${stack}`);
                reject(new Error("preview interrupted"));
            });
        });
    }
    async recover(): Promise<string> {
        return "nothing was running";
    }
}

/** The seed's instantiate body, on the service's own OS_* credentials (no VIM registered here). */
function instantiateBody(): Body {
    const body = parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8"), "simple-instantiate.json") as Body;
    delete body.vimConnectionInfo;
    return body;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A service in process with its own data folder; stopped after the test by `close`. */
async function startService(kind: StoreKind, runner: StackRunner, options: Partial<Parameters<typeof createService>[0]> = {}) {
    const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-races-"));
    const service = await createService({ runner, env: {}, ...(await storeFor(kind, dataDir)), ...options, dataDir });
    const base = await service.app.listen({ port: 0, host: "127.0.0.1" });
    const api = async (method: string, route: string, body?: unknown, signal?: AbortSignal) => {
        const r = await fetch(`${base}${route}`, { method, signal, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await r.text();
        return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : undefined };
    };
    const instance = async () => (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177" })).body.id as string;
    const instantiate = async (id: string) => {
        const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, instantiateBody());
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        return String(accepted.headers.get("location")).split("/").pop()!;
    };
    const stateOf = async (opId: string) => (await api("GET", `/vnflcm/v1/vnf_lcm_op_occs/${opId}`)).body.operationState as string;
    /** Waits until the occurrence is in `state`, for at most `ms` (whatever each GET takes). */
    const until = async (opId: string, state: string, ms = 4_000) => {
        for (const deadline = Date.now() + ms; Date.now() < deadline && (await stateOf(opId)) !== state; ) await sleep(10);
        assert.equal(await stateOf(opId), state, opId);
    };
    const close = async () => {
        try {
            await service.close();
        } finally {
            fs.rmSync(dataDir, { recursive: true, force: true });
        }
    };
    return { service, base, dataDir, api, instance, instantiate, stateOf, until, close };
}

describeEachStore("LCM service under racing and slow clients (in process, a gated runner)", function (kind) {
    this.timeout(30_000);
    const teardowns: (() => Promise<void>)[] = [];
    afterEach(() => runTeardowns(teardowns));
    const started = async (runner: StackRunner, options: Partial<Parameters<typeof createService>[0]> = {}) => {
        const s = await startService(kind, runner, options);
        teardowns.push(s.close);
        return s;
    };
    /** An instance whose instantiate's dry run is previewing (until `runner.previewGate` opens). */
    const previewing = async () => {
        const runner = new GatedRunner();
        const s = await started(runner);
        teardowns.push(async () => runner.previewGate.open());
        const id = await s.instance();
        const planned = s.api("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, instantiateBody());
        while (!runner.log.includes(`preview vnf-${id}`)) await sleep(10);
        return { runner, s, id, planned };
    };
    /** An instance whose instantiate is FAILED_TEMP. */
    const failedInstantiate = async () => {
        const runner = new GatedRunner();
        const s = await started(runner);
        const id = await s.instance();
        runner.failing.add(`vnf-${id}`);
        const op = await s.instantiate(id);
        await s.until(op, "FAILED_TEMP");
        return { runner, s, id, op };
    };
    /** One slot: instance B's instantiate FAILED_TEMP, then instance A's holding the slot until `slot` opens. */
    const failedWhileSlotBusy = async () => {
        const runner = new GatedRunner();
        const s = await started(runner, { maxParallel: 1 });
        const [a, b] = [await s.instance(), await s.instance()];
        runner.failing.add(`vnf-${b}`);
        const failedB = await s.instantiate(b);
        await s.until(failedB, "FAILED_TEMP");
        const slot = gate();
        runner.gates.set(`vnf-${a}`, slot);
        teardowns.push(async () => slot.open());
        const busyA = await s.instantiate(a);
        await s.until(busyA, "PROCESSING");
        return { runner, s, b, failedB, slot, busyA };
    };

    it("of concurrent retry, rollback, fail and cancel on a FAILED_TEMP occurrence waiting for a slot, one wins and the others get 409; a failed one never runs again", async () => {
        const { runner, s, b, failedB, slot, busyA } = await failedWhileSlotBusy();

        const tasks = ["retry", "rollback", "fail", "cancel"].flatMap((task) => Array.from({ length: 5 }, () => task));
        const answers = await Promise.all(tasks.map(async (task) => ({ task, status: (await s.api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${failedB}/${task}`)).status })));
        assert.ok(answers.every((x) => x.status < 300 || x.status === 409), JSON.stringify(answers));
        const won = answers.filter((x) => x.status < 300).map((x) => x.task);
        // One task of FAILED_TEMP wins; a cancel can win only after a retry or rollback (then it is PROCESSING or ROLLING_BACK), and once.
        const winner = won.filter((task) => task !== "cancel");
        assert.equal(winner.length, 1, JSON.stringify(answers));
        const cancelled = won.includes("cancel");
        assert.ok(won.filter((task) => task === "cancel").length <= 1 && (!cancelled || winner[0] !== "fail"), JSON.stringify(answers));
        const expected = { retry: "PROCESSING", rollback: "ROLLING_BACK", fail: "FAILED" }[winner[0] as "retry"];
        assert.equal(await s.stateOf(failedB), expected, `${winner[0]} moved it before answering`);

        slot.open();
        await s.until(busyA, "COMPLETED");
        await s.service.lifecycle.idle();
        const final = cancelled || winner[0] === "fail" ? expected.replace(/PROCESSING|ROLLING_BACK/, "FAILED_TEMP") : { retry: "COMPLETED", rollback: "ROLLED_BACK" }[winner[0] as "retry"];
        assert.equal(await s.stateOf(failedB), final, `${won.join(" + ")}: ${runner.log.join(", ")}`);
        assert.equal((await s.api("GET", `/vnflcm/v1/vnf_lcm_op_occs/${failedB}`)).body.isCancelPending, false, "no cancel pending once it has ended");
        const ran = runner.log.filter((l) => l.endsWith(`vnf-${b}`)).slice(1);
        assert.deepEqual(ran, cancelled || winner[0] === "fail" ? [] : [winner[0] === "retry" ? `up vnf-${b}` : `destroy vnf-${b}`], `after its failed try, B's stack ran only what ${won.join(" + ")} asked`);
    });

    it("a FAILED occurrence stays failed: retry, rollback and cancel of it are 409, and nothing runs", async () => {
        const { runner, s, id, op } = await failedInstantiate();
        assert.equal((await s.api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${op}/fail`)).status, 200);
        for (const task of ["retry", "rollback", "cancel", "fail"]) assert.equal((await s.api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${op}/${task}`)).status, 409, task);
        await s.service.lifecycle.idle();
        assert.equal(await s.stateOf(op), "FAILED");
        assert.deepEqual(runner.log, [`up vnf-${id}`]);
    });

    it("a retried occurrence cancelled while it waits for a slot runs nothing and is FAILED_TEMP again", async () => {
        const { runner, s, b, failedB, slot } = await failedWhileSlotBusy();
        assert.equal((await s.api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${failedB}/retry`)).status, 202);
        assert.equal((await s.api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${failedB}/cancel`)).status, 202);
        slot.open();
        await s.until(failedB, "FAILED_TEMP");
        const op = (await s.api("GET", `/vnflcm/v1/vnf_lcm_op_occs/${failedB}`)).body;
        assert.match(op.error.detail, /cancelled \(GRACEFUL\): .*nothing ran/);
        assert.equal(op.isCancelPending, false);
        assert.equal(runner.log.filter((l) => l === `up vnf-${b}`).length, 1, runner.log.join(", "));
        assert.equal((await s.api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${failedB}/retry`)).status, 202, "retried again");
        await s.until(failedB, "COMPLETED");
    });

    it("dry runs have a bounded pool of their own: the next gets 429 with Retry-After while other requests are answered at once", async () => {
        const runner = new GatedRunner();
        const s = await started(runner, { maxDryRuns: 2 });
        teardowns.push(async () => runner.previewGate.open());
        const ids = [await s.instance(), await s.instance(), await s.instance()];
        const body = instantiateBody();
        const pending = ids.slice(0, 2).map((id) => s.api("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, body));
        while (runner.log.filter((l) => l.startsWith("preview")).length < 2) await sleep(10);
        const third = await s.api("POST", `/k8s-vnf/v1/vnf_instances/${ids[2]}/plan`, body);
        assert.equal(third.status, 429, JSON.stringify(third.body));
        assert.match(String(third.headers.get("retry-after")), /^\d+$/);
        assert.match(third.body.detail, /2 dry runs are under way/);
        const t0 = Date.now();
        assert.equal((await s.api("GET", "/vnflcm/v1/vnf_instances")).status, 200);
        assert.ok(Date.now() - t0 < 3_000, "a GET is not held up by the previews");
        runner.previewGate.open();
        for (const answer of await Promise.all(pending)) assert.equal(answer.status, 200, JSON.stringify(answer.body));
        assert.equal((await s.api("POST", `/k8s-vnf/v1/vnf_instances/${ids[2]}/plan`, body)).status, 200, "a slot is free again");
        assert.deepEqual(fs.readdirSync(path.join(s.dataDir, "dry-runs")), [], "each dry run's folder removed");
    });

    it("an instantiate accepted while a dry run previews the same stack stops the dry run (409) before its first update", async () => {
        const { runner, s, id, planned } = await previewing();
        const op = await s.instantiate(id);
        const answer = await planned;
        assert.equal(answer.status, 409, JSON.stringify(answer.body));
        assert.match(answer.body.detail, /VNF instance .*: an operation started on it, so its dry run was stopped/);
        await s.until(op, "COMPLETED");
        assert.deepEqual(runner.log, [`preview vnf-${id}`, `preview stopped vnf-${id}`, `up vnf-${id}`], "the preview ended before the update began");
    });

    it("a dry run stops when its client goes, and frees its slot", async () => {
        const runner = new GatedRunner();
        const s = await started(runner, { maxDryRuns: 1 });
        teardowns.push(async () => runner.previewGate.open());
        const id = await s.instance();
        const client = new AbortController();
        const planned = s.api("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, instantiateBody(), client.signal).catch((e: Error) => e);
        while (!runner.log.includes(`preview vnf-${id}`)) await sleep(10);
        client.abort();
        assert.ok((await planned) instanceof Error);
        for (let i = 0; i < 100 && !runner.log.includes(`preview stopped vnf-${id}`); i++) await sleep(10);
        assert.ok(runner.log.includes(`preview stopped vnf-${id}`), runner.log.join(", "));
        runner.previewGate.open();
        assert.equal((await s.api("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, instantiateBody())).status, 200);
    });

    it("a dry run left running by a crashed service is stopped by the next one, and its folder (the scratch config) removed", async () => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-races-"));
        const runner = new GatedRunner();
        // The preview's Pulumi command, as the real runner reports it: its own process group.
        const command = spawn("sleep", ["300"], { detached: true, stdio: "ignore" });
        teardowns.push(async () => void (command.exitCode === null && command.signalCode === null && process.kill(-command.pid!, "SIGKILL")));
        let scratchDir = "";
        runner.previewStarted = (options) => {
            scratchDir = options.scratchDir!;
            fs.writeFileSync(path.join(scratchDir, "Pulumi.vnf-x.yaml"), "encryptionsalt: v1:abc\n");
            options.onProcess?.(describeProcess(command.pid!));
        };
        const crashed = await startService(kind, runner, { dataDir });
        let next: Awaited<ReturnType<typeof startService>> | undefined;
        teardowns.push(async () => {
            runner.previewGate.open();
            await crashed.service.close();
            await next?.close();
        });
        const id = await crashed.instance();
        const planned = crashed.api("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, instantiateBody()).catch((e: Error) => e);
        while (!scratchDir) await sleep(10);
        // The dead service's process is abandoned as it is (its preview never ends); a new one opens the same data.
        next = await startService(kind, new GatedRunner(), { dataDir });
        assert.ok(!stillRunning(describeProcess(command.pid!) ?? { pid: command.pid!, startTime: "gone" }), "the preview's command was stopped");
        assert.ok(!fs.existsSync(scratchDir), "its scratch folder is gone");
        assert.deepEqual(fs.readdirSync(path.join(dataDir, "dry-runs")), []);
        assert.equal((await next.api("GET", "/vnflcm/v1/vnf_instances")).status, 200);
        runner.previewGate.open();
        await planned;
    });

    it("an instance a FAILED_TEMP instantiate holds cannot be deleted (409) until that occurrence is failed or rolled back", async () => {
        const { s, id, op } = await failedInstantiate();
        const refused = await s.api("DELETE", `/vnflcm/v1/vnf_instances/${id}`);
        assert.equal(refused.status, 409, JSON.stringify(refused.body));
        assert.match(refused.body.detail, /is FAILED_TEMP; one operation at a time/);
        assert.equal((await s.api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${op}/fail`)).status, 200);
        assert.equal((await s.api("DELETE", `/vnflcm/v1/vnf_instances/${id}`)).status, 204);
    });

    it("the progress stream of an occurrence waiting for a person (FAILED_TEMP) ends, as it does when it gets there", async () => {
        const { s, op } = await failedInstantiate();
        const stream = await fetch(`${s.base}/vnflcm/v1/vnf_lcm_op_occs/${op}/progress`, { signal: AbortSignal.timeout(5_000) });
        assert.equal(stream.status, 200);
        assert.match(await stream.text(), /^event: state\ndata: \{"operationState":"FAILED_TEMP"\}\n\n$/);
    });

    it("a dry run whose preview ignores SIGINT is killed after its grace, and the operation goes on", async function () {
        this.timeout(40_000);
        const runner = new GatedRunner();
        const s = await started(runner);
        const stubborn = spawn("sh", ["-c", "trap '' INT; sleep 300"], { detached: true, stdio: "ignore" });
        teardowns.push(async () => void (stubborn.exitCode === null && stubborn.signalCode === null && process.kill(-stubborn.pid!, "SIGKILL")));
        const exited = new Promise<void>((r) => stubborn.once("exit", () => r()));
        runner.previewStarted = (options) => {
            options.onProcess?.(describeProcess(stubborn.pid!));
            return exited;
        };
        const id = await s.instance();
        const planned = s.api("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, instantiateBody());
        while (!runner.log.includes(`preview vnf-${id}`)) await sleep(10);
        await sleep(300); // the shell has set its trap
        const op = await s.instantiate(id);
        // The preview's command gets STOP_GRACE_MS (5 s, service/dryRunPool.ts) after SIGINT before it is killed.
        await s.until(op, "COMPLETED", 15_000);
        assert.equal((await planned).status, 409);
        assert.notEqual(stubborn.signalCode ?? stubborn.exitCode, null, "the preview's command was killed");
        assert.deepEqual(runner.log, [`preview vnf-${id}`, `preview ended vnf-${id}`, `up vnf-${id}`]);
    });

    it("deleting an instance stops its dry run first, so no stack is made for an instance that is gone", async () => {
        const { runner, s, id, planned } = await previewing();
        assert.equal((await s.api("DELETE", `/vnflcm/v1/vnf_instances/${id}`)).status, 204);
        assert.ok(runner.log.includes(`preview stopped vnf-${id}`), "stopped before the delete was answered");
        const answer = await planned;
        assert.equal(answer.status, 409);
        assert.match(answer.body.detail, /the instance is being deleted, so its dry run was stopped/);
    });

    it("a slow watcher of the progress stream cannot bring the service down: the stream ends at FAILED_TEMP and a retry's events go nowhere", async () => {
        const runner = new GatedRunner();
        runner.eventsPerUpdate = 2_000;
        const s = await started(runner);
        const id = await s.instance();
        const slot = gate();
        runner.gates.set(`vnf-${id}`, slot);
        teardowns.push(async () => slot.open());
        runner.failing.add(`vnf-${id}`);
        const op = await s.instantiate(id);
        await s.until(op, "PROCESSING");
        const url = new URL(s.base);
        const watcher = net.connect(Number(url.port), url.hostname);
        teardowns.push(async () => void watcher.destroy());
        await new Promise((r) => watcher.once("connect", r));
        watcher.write(`GET /vnflcm/v1/vnf_lcm_op_occs/${op}/progress HTTP/1.1\r\nHost: x\r\n\r\n`);
        watcher.pause();
        await sleep(200);
        slot.open();
        await s.until(op, "FAILED_TEMP");
        runner.gates.delete(`vnf-${id}`);
        assert.equal((await s.api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${op}/retry`)).status, 202);
        await s.until(op, "COMPLETED");
        assert.equal(s.service.lifecycle.events.listenerCount(op), 0, "the ended stream listens no more");
        assert.equal((await s.api("GET", "/vnflcm/v1/vnf_instances")).status, 200);
    });
});
