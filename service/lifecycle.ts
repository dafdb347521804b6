/**
 * SOL003 operations as stack updates. A VNF instance is the stack named after its id; instantiate, scale
 * and heal are `up` with new stack config, terminate is `destroy`. Every operation is an occurrence with
 * the SOL003 state machine: STARTING → PROCESSING → COMPLETED | FAILED_TEMP; from FAILED_TEMP retry
 * (run again), rollback (→ ROLLING_BACK → ROLLED_BACK, with exactly the previous config) or fail
 * (→ FAILED); cancel aborts the running Pulumi command (SIGINT, Pulumi's graceful cancel) and starts no
 * other. One operation per instance at a time; operations of different instances run in parallel up to a
 * limit. What an operation will do is planned and checked before it is accepted: a refused request runs
 * nothing (operationPlanner.ts). Each Pulumi process an operation runs is recorded, so that after a crash
 * recover() stops it.
 */
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { OPERATION_LOG_EVENT } from "./operationLog";
import { OperationState, RUNNING } from "./operationStates";
import { findSecretLeaves, maskSecrets, redactText } from "../config/secrets";
import { vimConnectionIdOf } from "./instanceView";
import { KubernetesVims, NfvoOptions } from "./kubernetesVims";
import { instanceHref, opOccHref } from "./links";
import { Notifier } from "./notifications";
import { Operation, OperationPlanner, Plan, stackNameOf } from "./operationPlanner";
import { PulumiProcess } from "./pulumiProcess";
import { ServerChanges } from "./serverChanges";
import { conflict, notFound, problemBody, ProblemError } from "./problem";
import { Store } from "./store";
import { instanceAfter } from "./instanceAfter";
import { openStackEnvOf } from "./vimRecords";
import { StackRunner } from "./stackRunner";

export type { Operation } from "./operationPlanner";
export { stackNameOf } from "./operationPlanner";

type Body = Record<string, any>;

export type { OperationState };

/** States in which an occurrence holds its instance: no other operation may start. */
const HOLDING: ReadonlySet<string> = new Set(["STARTING", "PROCESSING", "FAILED_TEMP", "ROLLING_BACK"]);

export interface LifecycleOptions {
    /** The project directory: request conversion resolves paths there. */
    projectDir: string;
    /** VNF packages, one unpacked folder per vnfdId: where a request's package files are found. */
    packagesDir?: string;
    /** Operations running at once, across instances. */
    maxParallel: number;
    /** OS_* variables used when a request names no registered VIM. */
    defaultVimEnv: Record<string, string>;
    /** A Tacker NFVO the clusters' Kubernetes VIMs are registered in too. */
    nfvo?: NfvoOptions;
    /** Stops the instance's dry runs and waits for them, before an operation's first command on its stack. */
    stopDryRuns?: (instanceId: string) => Promise<void>;
}

export class Lifecycle {
    /** Progress of running occurrences, by id: `progress` events (server-sent to watchers). */
    readonly events = new EventEmitter();
    private readonly running = new Map<string, AbortController>();
    private readonly waiting: (() => void)[] = [];
    private active = 0;
    readonly kubernetesVims: KubernetesVims;
    private readonly planner: OperationPlanner;

    constructor(
        private readonly store: Store,
        private readonly notifier: Notifier,
        private readonly runner: StackRunner,
        private readonly options: LifecycleOptions,
    ) {
        this.events.setMaxListeners(0);
        this.kubernetesVims = new KubernetesVims(store, options.nfvo);
        this.planner = new OperationPlanner(store, this.kubernetesVims, { projectDir: options.projectDir, packagesDir: options.packagesDir });
    }

    /**
     * After a restart, before anything else runs: what had not started is rolled back; what was processing
     * failed temporarily, once the Pulumi command the dead service left running is stopped and its stack's
     * stale lock cleared (so a retry is the only update of that stack).
     */
    async recover(): Promise<void> {
        for (const op of this.store.list("op_occs")) {
            if (op.operationState === "STARTING") {
                const next = { ...op, operationState: "ROLLED_BACK", isCancelPending: false, stateEnteredTime: new Date().toISOString() };
                this.store.put([{ table: "op_occs", id: String(op.id), body: next }]);
                this.events.emit(OPERATION_LOG_EVENT, { op: next, note: "had not started when the service stopped: ROLLED_BACK" });
            } else if (op.operationState === "PROCESSING" || op.operationState === "ROLLING_BACK") {
                let cleanup: string;
                try {
                    cleanup = await this.runner.recover(stackNameOf(String(op.vnfInstanceId)), op.__pulumi as PulumiProcess | undefined, this.vimEnv((op.__plan as Plan).vimId));
                } catch (e) {
                    cleanup = `its stack could not be cleared (${redactText((e as Error).message, this.secretsOf(op))}); a retry may find it locked`;
                }
                const error = problemBody(500, `the service restarted while the operation was running: ${cleanup}; retry, roll back or fail it`);
                const next = { ...op, __pulumi: undefined, operationState: "FAILED_TEMP", isCancelPending: false, stateEnteredTime: new Date().toISOString(), error };
                this.store.put([{ table: "op_occs", id: String(op.id), body: next }]);
                this.events.emit(OPERATION_LOG_EVENT, { op: next });
            }
        }
    }

    /** Accepts an operation: checks it, plans it, stores the occurrence (STARTING) and starts it. */
    start(operation: Operation, instanceId: string, params: Body, baseUrl: string): Body {
        const plan = this.accepted(operation, instanceId, params);
        const id = randomUUID();
        const now = new Date().toISOString();
        const opUrl = opOccHref(baseUrl, id);
        const op = {
            id,
            operationState: "STARTING",
            stateEnteredTime: now,
            startTime: now,
            vnfInstanceId: instanceId,
            operation,
            isAutomaticInvocation: false,
            operationParams: maskSecrets(params),
            isCancelPending: false,
            // The task links follow the state: a GET shows them (links.ts opOccLinks).
            _links: { self: { href: opUrl }, vnfInstance: { href: instanceHref(baseUrl, instanceId) } },
            __plan: plan,
            __baseUrl: baseUrl,
        };
        this.store.put([{ table: "op_occs", id, body: op }]);
        this.events.emit(OPERATION_LOG_EVENT, { op });
        this.notifyOp(op, "START");
        void this.execute(id, "forward");
        return op;
    }

    /**
     * What an operation would run, for a dry run (dryRun.ts): checked as `start` checks it, nothing started.
     * `updates` are the stack configs it would apply in turn (none: a destroy); `secrets` what its commands
     * could show.
     */
    dryRunOf(operation: Operation, instanceId: string, params: Body): { stackName: string; updates: Record<string, unknown>[]; env: Record<string, string>; secrets: string[] } {
        const plan = this.accepted(operation, instanceId, params);
        const updates = operation === "TERMINATE" ? [] : [...(plan.stages ?? []), plan.config ?? {}];
        return { stackName: stackNameOf(instanceId), updates, env: this.vimEnv(plan.vimId), secrets: this.secretsOf({ __plan: plan }) };
    }

    /** The plan of an operation the instance can take now; refused (404, 409, 400) before anything runs. */
    private accepted(operation: Operation, instanceId: string, params: Body): Plan {
        const instance = this.store.get("vnf_instances", instanceId);
        if (!instance) throw notFound("VNF instance", instanceId);
        this.assertNoOperation(instanceId);
        const wanted = operation === "INSTANTIATE" ? "NOT_INSTANTIATED" : "INSTANTIATED";
        if (instance.instantiationState !== wanted) throw conflict(`VNF instance ${instanceId} is ${instance.instantiationState}; ${operation.toLowerCase()} needs ${wanted}`);
        if ((instance.instantiatedVnfInfo as Body | undefined)?.vnfState === "STOPPED" && operation !== "OPERATE" && operation !== "TERMINATE") {
            throw conflict(`VNF instance ${instanceId} is STOPPED: its VMs are shut off, so ${operation.toLowerCase()} cannot reach them; start it first (operate with changeStateTo STARTED)`);
        }
        return this.planner.plan(operation, instance, params);
    }

    /**
     * A task on a FAILED_TEMP occurrence moves it to its next state before the request is answered, even
     * when the run must wait for a slot: of concurrent retry, rollback, fail and cancel requests one wins,
     * the others find it no longer FAILED_TEMP (409).
     */
    retry(opId: string): void {
        const op = this.failedTemp(opId, "retry");
        this.transition(op, "PROCESSING");
        void this.execute(String(op.id), "forward");
    }

    rollback(opId: string): void {
        const op = this.failedTemp(opId, "rollback");
        if (op.operation === "TERMINATE") throw new ProblemError(409, "a terminate cannot be rolled back: retry it or fail it");
        this.transition(op, "ROLLING_BACK");
        void this.execute(String(op.id), "back");
    }

    fail(opId: string): Body {
        const op = this.failedTemp(opId, "fail");
        return this.transition(op, "FAILED");
    }

    cancel(opId: string): void {
        const op = this.find(opId);
        if (op.operationState === "STARTING" && !this.running.has(opId)) {
            this.transition({ ...op, isCancelPending: true }, "ROLLED_BACK");
            return;
        }
        const controller = this.running.get(opId);
        // SOL003 v2.6.1 §5.4.17.3.1: an occurrence STARTING, PROCESSING or ROLLING_BACK can be cancelled, once.
        if (!controller || !RUNNING.has(String(op.operationState))) {
            throw conflict(`operation ${opId} is ${op.operationState}; only a starting, processing or rolling back one can be cancelled`);
        }
        if (op.isCancelPending) throw conflict(`operation ${opId} is being cancelled already`);
        this.store.put([{ table: "op_occs", id: opId, body: { ...op, isCancelPending: true } }]);
        controller.abort();
    }

    /** Waits until no operation runs (tests, shutdown). */
    async idle(): Promise<void> {
        while (this.running.size || this.active) await new Promise((r) => setTimeout(r, 20));
    }

    /** Refuses (409) while another operation holds the instance. */
    assertNoOperation(instanceId: string): void {
        const holding = this.store.opOccsOf(instanceId).find((o) => HOLDING.has(String(o.operationState)));
        if (holding) throw conflict(`operation ${holding.id} (${holding.operation}) of VNF instance ${instanceId} is ${holding.operationState}; one operation at a time`);
    }

    private find(opId: string): Body {
        const op = this.store.get("op_occs", opId);
        if (!op) throw notFound("VNF LCM operation occurrence", opId);
        return op;
    }

    private failedTemp(opId: string, task: string): Body {
        const op = this.find(opId);
        if (op.operationState !== "FAILED_TEMP") throw conflict(`operation ${opId} is ${op.operationState}; ${task} needs FAILED_TEMP`);
        return op;
    }

    /** Runs an occurrence (or its rollback) when a slot is free; records the outcome. */
    private async execute(opId: string, direction: "forward" | "back"): Promise<void> {
        const controller = new AbortController();
        this.running.set(opId, controller);
        try {
            await this.options.stopDryRuns?.(String(this.find(opId).vnfInstanceId));
            await this.acquire();
            try {
                let op = this.find(opId);
                if (op.operationState === "ROLLED_BACK") return; // cancelled while waiting
                if (op.operationState === "STARTING" && controller.signal.aborted) {
                    this.transition(op, "ROLLED_BACK"); // cancelled while waiting for a slot: nothing ran
                    return;
                }
                if (controller.signal.aborted) throw new Error("cancelled while it waited for a free slot; nothing ran");
                if (op.operationState === "STARTING") op = this.transition(op, "PROCESSING");
                const outcome = await this.perform(op, direction, controller.signal);
                this.complete(op, direction, outcome);
            } finally {
                this.release();
            }
        } catch (e) {
            const op = this.find(opId);
            const message = redactText((e as Error).message, this.secretsOf(op));
            this.transition(op, "FAILED_TEMP", problemBody(500, controller.signal.aborted ? `cancelled: ${message}` : message));
        } finally {
            this.running.delete(opId);
        }
    }

    private async perform(op: Body, direction: "forward" | "back", signal: AbortSignal): Promise<Record<string, unknown> | undefined> {
        const opId = String(op.id);
        const plan = op.__plan as Plan;
        const stackName = stackNameOf(String(op.vnfInstanceId));
        const env = this.vimEnv(plan.vimId);
        const servers = new ServerChanges();
        const progress = { engineEvents: 0, resourcesStarted: 0, resourcesDone: 0, vmsChanging: 0, lastEvent: "" };
        let recorded = 0;
        const onEvent = (event: Body) => {
            servers.see(event);
            progress.engineEvents++;
            if (event.resourcePreEvent) progress.resourcesStarted++;
            if (event.resOutputsEvent) progress.resourcesDone++;
            progress.vmsChanging = servers.count;
            progress.lastEvent = Object.keys(event).find((k) => k.endsWith("Event")) ?? "";
            this.events.emit(opId, { ...progress });
            // The occurrence shows progress too, written at most twice a second.
            if (Date.now() - recorded > 500) {
                recorded = Date.now();
                this.store.put([{ table: "op_occs", id: opId, body: { ...this.find(opId), progress: { ...progress } } }]);
            }
        };
        // Each Pulumi process is recorded while it runs, for recover() after a crash.
        const onProcess = (process: PulumiProcess | undefined) => this.store.put([{ table: "op_occs", id: opId, body: { ...this.find(opId), __pulumi: process } }]);
        const run = { env, onEvent, signal, onProcess };
        let outputs: Record<string, unknown> | undefined;
        const instanceId = String(op.vnfInstanceId);
        if (op.operation === "TERMINATE" || (direction === "back" && op.operation === "INSTANTIATE")) {
            if (direction === "forward" && plan.gracefulSeconds) await abortableSleep(plan.gracefulSeconds * 1000, signal);
            // Its VIMs first: a cluster being destroyed takes no new CNF.
            await this.kubernetesVims.unregister(instanceId);
            await this.runner.destroy(stackName, run);
        } else {
            const updates = updatesOf(plan, direction, Number(op.__stagesDone ?? 0));
            // Every update done (a retry after what followed them failed): one more, which changes nothing, for the outputs.
            if (updates.length === 0) updates.push({ config: plan.config, position: Number(op.__stagesDone) });
            for (const [i, update] of updates.entries()) {
                outputs = await this.runner.up(stackName, update.config ?? {}, run);
                this.recordStage(op, update.config, update.position);
                if (updates.length > 1) this.events.emit(OPERATION_LOG_EVENT, { op, stage: { done: i + 1, of: updates.length } });
            }
            // A cluster's VIMs follow its outputs: a new cluster (entire heal) has a new CA and new tokens.
            await this.kubernetesVims.register(instanceId, updates.at(-1)!.config, outputs ?? {});
        }
        const instance = this.store.get("vnf_instances", String(op.vnfInstanceId));
        const before = ((instance?.instantiatedVnfInfo as Body | undefined)?.vnfcResourceInfo ?? []) as Body[];
        const vimConnectionId = plan.kubernetesVimId ?? ((plan.config ?? plan.previousConfig)?.vnfKind === "cnf" ? "kubernetes" : vimConnectionIdOf(plan.vimId));
        const affectedVnfcs = servers.affectedVnfcs(before, (outputs?.vnfcResources ?? []) as Body[]).map((v) => ({ ...v, computeResource: { vimConnectionId, ...v.computeResource } }));
        this.store.put([{ table: "op_occs", id: opId, body: { ...this.find(opId), progress, resourceChanges: { affectedVnfcs } } }]);
        return outputs;
    }

    /**
     * After each update of a multi-update operation: how far along the stack is (a retry resumes there, a
     * rollback steps back from there), and the instance's config is the stack's, so that an operation failed
     * half way leaves the next one planning from where the stack is.
     */
    private recordStage(op: Body, config: Record<string, unknown> | undefined, position: number): void {
        const instance = this.store.get("vnf_instances", String(op.vnfInstanceId)) as Body;
        this.store.put([
            { table: "op_occs", id: String(op.id), body: { ...this.find(String(op.id)), __stagesDone: position } },
            { table: "vnf_instances", id: String(instance.id), body: { ...instance, __stackConfig: config } },
        ]);
    }

    private complete(op: Body, direction: "forward" | "back", outputs: Record<string, unknown> | undefined): void {
        const instance = this.store.get("vnf_instances", String(op.vnfInstanceId)) as Body;
        const next = instanceAfter(op, instance, direction, outputs, {
            vnfdOf: (flavourId, deployed) => this.planner.cnfs.vnfdOf(instance, flavourId, deployed),
            clusterVim: this.kubernetesVims.ofCluster(String(instance.id)).find((v) => !v.tenant),
        });
        this.store.put([{ table: "vnf_instances", id: String(instance.id), body: next }]);
        this.transition(this.find(String(op.id)), direction === "forward" ? "COMPLETED" : "ROLLED_BACK");
    }

    private transition(op: Body, state: OperationState, error?: Body): Body {
        // SOL003 v2.6.1 table 5.5.2.13-1: isCancelPending is true only while a cancel is under way.
        const cancelPending = RUNNING.has(state) && op.isCancelPending === true;
        const next = { ...op, operationState: state, stateEnteredTime: new Date().toISOString(), isCancelPending: cancelPending, ...(error ? { error } : {}) };
        if (!error && (state === "PROCESSING" || state === "COMPLETED")) delete next.error;
        this.store.put([{ table: "op_occs", id: String(op.id), body: next }]);
        if (state !== "PROCESSING" && state !== "ROLLING_BACK") this.notifyOp(next, "RESULT");
        this.events.emit(String(op.id), { operationState: state });
        this.events.emit(OPERATION_LOG_EVENT, { op: next });
        return next;
    }

    private notifyOp(op: Body, status: "START" | "RESULT"): void {
        this.notifier.publish(
            {
                notificationType: "VnfLcmOperationOccurrenceNotification",
                vnfInstanceId: String(op.vnfInstanceId),
                notificationStatus: status,
                operationState: op.operationState,
                operation: op.operation,
                vnfLcmOpOccId: op.id,
                isAutomaticInvocation: false,
                verbosity: "FULL",
                ...(op.error ? { error: op.error } : {}),
                ...(status === "RESULT" && op.resourceChanges ? { affectedVnfcs: op.resourceChanges.affectedVnfcs } : {}),
            },
            String(op.__baseUrl ?? ""),
            { vnfLcmOpOcc: { href: opOccHref(op.__baseUrl ?? "", op.id) } },
        );
    }

    /** Every secret value an operation's Pulumi commands could show: its configs' and its VIM's. */
    private secretsOf(op: Body): string[] {
        const plan = (op.__plan ?? {}) as Plan;
        const vim = plan.vimId ? this.store.get("vims", plan.vimId) : undefined;
        const values = findSecretLeaves([plan.config, plan.previousConfig, this.options.defaultVimEnv]).map((s) => s.value);
        return vim?.__password ? [...values, String(vim.__password)] : values;
    }

    private vimEnv(vimId: string | undefined): Record<string, string> {
        if (!vimId) return this.options.defaultVimEnv;
        const vim = this.store.get("vims", vimId);
        if (!vim) throw new Error(`VIM ${vimId} is no longer registered`);
        return openStackEnvOf(vim);
    }

    private acquire(): Promise<void> {
        if (this.active < this.options.maxParallel) {
            this.active++;
            return Promise.resolve();
        }
        return new Promise((resolve) => this.waiting.push(() => (this.active++, resolve())));
    }

    private release(): void {
        this.active--;
        this.waiting.shift()?.();
    }
}

/**
 * The stack updates an operation runs, each with how many of its forward configs the stack then has.
 * Forward: its stages and final config, from where a failed run stopped (`done` of them succeeded). Back:
 * node by node the way it came (the last succeeded config again, undoing a half-done one, then each earlier
 * one), then the config before the operation.
 */
export function updatesOf(plan: Pick<Plan, "stages" | "config" | "previousConfig">, direction: "forward" | "back", done: number): { config: Record<string, unknown> | undefined; position: number }[] {
    const forward = [...(plan.stages ?? []), plan.config];
    if (direction === "forward") return forward.slice(done).map((config, i) => ({ config, position: done + i + 1 }));
    return [...forward.slice(0, done).map((config, i) => ({ config, position: i + 1 })).reverse(), { config: plan.previousConfig, position: 0 }];
}


function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(new Error("aborted while waiting for the graceful termination timeout"));
        });
    });
}
