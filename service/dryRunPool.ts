/**
 * The dry runs under way (dryRun.ts). A pool of their own, bounded: a full pool is a 429 with Retry-After,
 * so that dry runs never take the slots of operations nor the machine. Each has a folder of its own in the
 * service's data folder, holding its scratch copy of the stack's config file (encrypted secrets) and a
 * record of the Pulumi command it runs, so that a restarted service stops what a dead one left running and
 * removes the folder. A dry run stops when its client goes, and when an operation is about to run on its
 * instance: it never creates or previews a stack an operation may be updating. A preview takes no lock of
 * the stack (v3.248.0 pkg/backend/diy/backend.go: `Preview` calls `apply` without `Lock`), so a stopped one
 * leaves nothing to clear.
 */
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { ProblemError, TooManyRequests } from "./problem";
import { PulumiProcess, removeOutputDir, stopPulumiProcess } from "./pulumiProcess";

/** How long a stopped preview gets to end on SIGINT before it is killed (it has nothing to finish). */
const STOP_GRACE_MS = 5_000;

/** Seconds a client is told to wait when the pool is full (a preview of a cluster takes about this long). */
const DRY_RUN_RETRY_AFTER_SECONDS = 15;

/** What a dry run's work is given. */
export interface DryRunSlot {
    /** Aborted when its client goes or an operation needs the instance; its reason, a DryRunStopped, says which. */
    signal: AbortSignal;
    /** Its folder: scratch files go here. */
    scratchDir: string;
    /** To be told of each Pulumi process it starts, and (undefined) when it has ended. */
    onProcess: (process: PulumiProcess | undefined) => void;
}

export class DryRunStopped extends ProblemError {
    constructor(detail: string) {
        super(409, detail);
        this.name = "DryRunStopped";
    }
}

const PROCESS_FILE = "pulumi-process.json";

interface Running {
    instanceId: string;
    controller: AbortController;
    /** Settles when the dry run has ended, whatever its outcome. */
    ended: Promise<unknown>;
    /** Its Pulumi command while one runs. */
    process?: PulumiProcess;
}

export class DryRunPool {
    private readonly running = new Map<string, Running>();

    constructor(
        /** The pool's folder, in the service's data folder. */
        private readonly dir: string,
        /** Dry runs at once. */
        private readonly limit: number,
    ) {}

    /** After a restart, before anything runs: stops each command a dead service's dry runs left running, removes their folders. */
    async recover(): Promise<void> {
        fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
        for (const name of fs.readdirSync(this.dir)) {
            const folder = path.join(this.dir, name);
            const recorded = readRecord(path.join(folder, PROCESS_FILE));
            if (recorded) {
                await stopPulumiProcess(recorded, STOP_GRACE_MS);
                removeOutputDir(recorded);
            }
            fs.rmSync(folder, { recursive: true, force: true });
        }
    }

    /**
     * Runs `work` as a dry run of the instance, refused (429) when the pool is full. Must be called in the same
     * turn as the check that no operation holds the instance: it is counted from the call on.
     */
    run<T>(instanceId: string, clientGone: AbortSignal, work: (slot: DryRunSlot) => Promise<T>): Promise<T> {
        if (this.running.size >= this.limit) {
            return Promise.reject(new TooManyRequests(`${this.limit} dry runs are under way, as many as this service runs at once; try again in ${DRY_RUN_RETRY_AFTER_SECONDS} s`, DRY_RUN_RETRY_AFTER_SECONDS));
        }
        const id = randomUUID();
        const controller = new AbortController();
        const scratchDir = path.join(this.dir, id);
        fs.mkdirSync(scratchDir, { recursive: true, mode: 0o700 });
        const leave = () => controller.abort(new DryRunStopped("the client went away"));
        if (clientGone.aborted) leave();
        clientGone.addEventListener("abort", leave);
        const record = path.join(scratchDir, PROCESS_FILE);
        const entry: Running = { instanceId, controller, ended: Promise.resolve() };
        const onProcess = (process: PulumiProcess | undefined) => {
            entry.process = process;
            if (process) fs.writeFileSync(record, JSON.stringify(process), { mode: 0o600 });
            else fs.rmSync(record, { force: true });
        };
        const ended = (async () => {
            try {
                return await work({ signal: controller.signal, scratchDir, onProcess });
            } finally {
                clientGone.removeEventListener("abort", leave);
                fs.rmSync(scratchDir, { recursive: true, force: true });
                this.running.delete(id);
            }
        })();
        entry.ended = ended.catch(() => undefined);
        this.running.set(id, entry);
        return ended;
    }

    /**
     * Stops the instance's dry runs and waits until they have ended (an operation is about to run on its
     * stack, or the instance is being deleted): SIGINT through their signal, then, after STOP_GRACE_MS, their
     * command and its plugins killed.
     */
    async stopFor(instanceId: string, cause = "an operation started on it"): Promise<void> {
        const reason = `VNF instance ${instanceId}: ${cause}, so its dry run was stopped`;
        await Promise.all([...this.running.values()].filter((r) => r.instanceId === instanceId).map((r) => stop(r, reason)));
    }

    /** Stops every dry run and waits for them (shutdown). */
    async stopAll(): Promise<void> {
        await Promise.all([...this.running.values()].map((r) => stop(r, "the service is stopping")));
    }
}

async function stop(run: Running, reason: string): Promise<void> {
    run.controller.abort(new DryRunStopped(reason));
    let timer: NodeJS.Timeout | undefined;
    const late = await Promise.race([run.ended.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), STOP_GRACE_MS)))]);
    clearTimeout(timer);
    if (late && run.process) await stopPulumiProcess(run.process, 0);
    await run.ended;
}

function readRecord(file: string): PulumiProcess | undefined {
    try {
        const parsed = JSON.parse(fs.readFileSync(file, "utf8")) as PulumiProcess;
        return Number.isInteger(parsed.pid) && parsed.pid > 1 && typeof parsed.startTime === "string" ? parsed : undefined;
    } catch {
        return undefined;
    }
}
