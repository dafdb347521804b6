/**
 * SOL003 operations as stack updates. A VNF instance is the stack named after its id; instantiate, scale
 * and heal are `up` with new stack config, terminate is `destroy`. Every operation is an occurrence with
 * the SOL003 state machine: STARTING → PROCESSING → COMPLETED | FAILED_TEMP; from FAILED_TEMP retry
 * (run again), rollback (→ ROLLING_BACK → ROLLED_BACK, with exactly the previous config) or fail
 * (→ FAILED); cancel aborts the running Pulumi command (SIGINT, Pulumi's graceful cancel) and starts no
 * other. One operation per instance at a time; operations of different instances run in parallel up to a
 * limit. What an operation will do is planned and checked before it is accepted: a refused request runs
 * nothing (operationPlanner.ts). Each Pulumi process an operation runs is recorded, so that after a crash
 * it can be stopped.
 *
 * Several replicas may share the store (claims.ts): the one that accepts an operation claims it and runs it;
 * a task (retry, rollback) claims it for the replica that accepts the task. Every change of an occurrence is
 * made with its row locked (Store.update), so of two replicas asked at once one wins; a cancel accepted by
 * another replica is seen by the running one within a second. A claim whose replica died is taken over:
 * what had not started is rolled back; what was running failed temporarily, once its Pulumi command is
 * stopped (when it ran on this host) and its stack's lock cleared (takeOver).
 */
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import { OPERATION_LOG_EVENT } from "./operationLog";
import { OperationState, RUNNING } from "./operationStates";
import { maskSecrets, redactText } from "../config/secrets";
import { vimConnectionIdOf } from "./instanceView";
import { KubernetesVims, NfvoOptions } from "./kubernetesVims";
import { instanceHref, opOccHref } from "./links";
import { Notifier } from "./notifications";
import { Operation, OperationPlanner, Plan, stackNameOf } from "./operationPlanner";
import { PulumiProcess } from "./pulumiProcess";
import { ServerChanges } from "./serverChanges";
import { conflict, notFound, problemBody, ProblemError } from "./problem";
import { ClaimKeeper, mayTakeOver } from "./claims";
import { assertNoneHolding, LostClaim, Occurrences } from "./occurrences";
import { abortableSleep, OperationCancel } from "./operationCancel";
import { OperationStacks } from "./operationStacks";
import { Takeover } from "./takeover";
import { HoldingConflict, Replica, Store } from "./store";
import { instanceAfter } from "./instanceAfter";
import { StackRunner } from "./stackRunner";

export type { Operation } from "./operationPlanner";
export { assertNoneHolding } from "./occurrences";
export { stackNameOf } from "./operationPlanner";

type Body = Record<string, any>;

export type { OperationState };



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
    private readonly running = new Map<string, OperationCancel>();
    private readonly waiting: (() => void)[] = [];
    private backgroundWrites: Promise<void> = Promise.resolve();
    private active = 0;
    readonly kubernetesVims: KubernetesVims;
    private readonly planner: OperationPlanner;
    private readonly claims: ClaimKeeper;
    private readonly occurrences: Occurrences;
    private readonly stacks: OperationStacks;
    private readonly takeover: Takeover;

    constructor(
        private readonly store: Store,
        notifier: Notifier,
        private readonly runner: StackRunner,
        private readonly options: LifecycleOptions,
        /** This process, as the claims it holds name it. */
        readonly replica: Replica,
    ) {
        this.events.setMaxListeners(0);
        this.kubernetesVims = new KubernetesVims(store, options.nfvo);
        this.planner = new OperationPlanner(store, this.kubernetesVims, { projectDir: options.projectDir, packagesDir: options.packagesDir });
        this.occurrences = new Occurrences(store, notifier, this.events, replica);
        this.stacks = new OperationStacks(store, runner, options.defaultVimEnv);
        this.takeover = new Takeover(store, replica, this.occurrences, this.stacks, (opId) => this.running.has(opId));
        this.claims = new ClaimKeeper(
            store,
            replica,
            () => [...this.running.keys(), ...this.takeover.underWay],
            () => this.keepClaims(),
            (what, e) => this.events.emit(OPERATION_LOG_EVENT, { note: `${what}: ${e.message}` }),
        );
    }

    /**
     * At start, before anything else runs: the claims of replicas that are gone are taken over (after a
     * crash, this process's own of before); then claims are kept until close().
     */
    async recover(): Promise<void> {
        this.claims.start();
        await this.takeover.takeOverLapsed();
    }

    /** Stops keeping claims (at shutdown, once nothing runs). */
    async close(): Promise<void> {
        await this.claims.stop();
    }

    /** Whether this replica is running the occurrence now. */
    runsHere(opId: string): boolean {
        return this.running.has(opId);
    }

    /** Accepts an operation: checks it, plans it, stores the occurrence (STARTING) and starts it. */
    async start(operation: Operation, instanceId: string, params: Body, baseUrl: string): Promise<Body> {
        const { plan, instance } = await this.accepted(operation, instanceId, params);
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
        try {
            // Stored only if the instance is still as it was planned from, and no operation holds it: checked with
            // its row locked, against a DELETE, a PATCH or another operation on any replica meanwhile.
            await this.store.onInstance(instanceId, (now, occurrences) => {
                if (!now) throw notFound("VNF instance", instanceId);
                assertNoneHolding(instanceId, occurrences);
                if (JSON.stringify(now) !== JSON.stringify(instance)) throw conflict(`VNF instance ${instanceId} changed while the request was checked; send it again`);
                return { put: [{ table: "op_occs", id, body: op, claim: this.replica }] };
            });
        } catch (e) {
            if (e instanceof HoldingConflict) throw conflict(`VNF instance ${instanceId}: another operation was accepted at the same moment; one operation at a time`);
            throw e;
        }
        this.events.emit(OPERATION_LOG_EVENT, { op });
        this.occurrences.notify(op, "START");
        this.run(id, "forward");
        return op;
    }

    /**
     * What an operation would run, for a dry run (dryRun.ts): checked as `start` checks it, nothing started.
     * `updates` are the stack configs it would apply in turn (none: a destroy); `secrets` what its commands
     * could show.
     */
    async dryRunOf(operation: Operation, instanceId: string, params: Body): Promise<{ stackName: string; updates: Record<string, unknown>[]; env: Record<string, string>; secrets: string[] }> {
        const { plan } = await this.accepted(operation, instanceId, params);
        const updates = operation === "TERMINATE" ? [] : [...(plan.stages ?? []), plan.config ?? {}];
        return { stackName: stackNameOf(instanceId), updates, env: await this.stacks.vimEnv(plan.vimId), secrets: await this.stacks.secretsOf({ __plan: plan }) };
    }

    /** The plan of an operation the instance can take now; refused (404, 409, 400) before anything runs. */
    private async accepted(operation: Operation, instanceId: string, params: Body): Promise<{ plan: Plan; instance: Body }> {
        const instance = await this.store.get("vnf_instances", instanceId);
        if (!instance) throw notFound("VNF instance", instanceId);
        await this.assertNoOperation(instanceId);
        const wanted = operation === "INSTANTIATE" ? "NOT_INSTANTIATED" : "INSTANTIATED";
        if (instance.instantiationState !== wanted) throw conflict(`VNF instance ${instanceId} is ${instance.instantiationState}; ${operation.toLowerCase()} needs ${wanted}`);
        if ((instance.instantiatedVnfInfo as Body | undefined)?.vnfState === "STOPPED" && operation !== "OPERATE" && operation !== "TERMINATE") {
            throw conflict(`VNF instance ${instanceId} is STOPPED: its VMs are shut off, so ${operation.toLowerCase()} cannot reach them; start it first (operate with changeStateTo STARTED)`);
        }
        return { plan: await this.planner.plan(operation, instance, params), instance };
    }

    /**
     * A task on a FAILED_TEMP occurrence moves it to its next state before the request is answered, even
     * when the run must wait for a slot: of concurrent retry, rollback, fail and cancel requests one wins,
     * the others find it no longer FAILED_TEMP (409).
     */
    async retry(opId: string): Promise<void> {
        await this.occurrences.transition(opId, "PROCESSING", { task: "retry", claim: this.replica });
        this.run(opId, "forward");
    }

    async rollback(opId: string): Promise<void> {
        const refuseTerminate = (op: Body) => {
            if (op.operation === "TERMINATE") throw new ProblemError(409, "a terminate cannot be rolled back: retry it or fail it");
        };
        await this.occurrences.transition(opId, "ROLLING_BACK", { task: "rollback", claim: this.replica, check: refuseTerminate });
        this.run(opId, "back");
    }

    async fail(opId: string): Promise<Body> {
        return this.occurrences.transition(opId, "FAILED", { task: "fail" });
    }

    /**
     * SOL003 v2.6.1 §5.4.17.3.1: an occurrence STARTING, PROCESSING or ROLLING_BACK can be cancelled, once.
     * Marked in the store; the replica running it stops it (this one at once, another within a second).
     * One whose replica is gone before it started is rolled back here.
     */
    async cancel(opId: string, mode: "GRACEFUL" | "FORCEFUL" = "GRACEFUL"): Promise<void> {
        let unclaimedStart = false;
        await this.store.update("op_occs", opId, (op, claim) => {
            if (!op) throw notFound("VNF LCM operation occurrence", opId);
            if (!RUNNING.has(String(op.operationState))) throw conflict(`operation ${opId} is ${op.operationState}; only a starting, processing or rolling back one can be cancelled`);
            // A FORCEFUL cancel may follow a GRACEFUL one that waits for a step the VIM never ends.
            if (op.isCancelPending && (mode !== "FORCEFUL" || op.cancelMode === "FORCEFUL")) throw conflict(`operation ${opId} is being cancelled already (${op.cancelMode ?? "GRACEFUL"})`);
            unclaimedStart = op.operationState === "STARTING" && !this.running.has(opId) && mayTakeOver(this.store, this.replica, claim);
            return { ...op, isCancelPending: true, cancelMode: mode };
        });
        if (unclaimedStart) await this.occurrences.transition(opId, "ROLLED_BACK", { from: ["STARTING"] });
        this.running.get(opId)?.request(mode);
    }

    /** Waits until no operation runs (tests, shutdown). */
    async idle(): Promise<void> {
        while (this.running.size || this.active) await new Promise((r) => setTimeout(r, 20));
    }

    /** Refuses (409) while another operation holds the instance. */
    async assertNoOperation(instanceId: string): Promise<void> {
        assertNoneHolding(instanceId, await this.store.opOccsOf(instanceId));
    }

    /** Each tick of the claims: cancels accepted elsewhere reach what runs here; lapsed claims are taken over. */
    private async keepClaims(): Promise<void> {
        for (const [opId, cancel] of this.running) {
            if (cancel.mode === "FORCEFUL") continue;
            const op = await this.store.get("op_occs", opId);
            if (op?.isCancelPending === true) cancel.request(op.cancelMode === "FORCEFUL" ? "FORCEFUL" : "GRACEFUL");
        }
        await this.takeover.takeOverLapsed();
    }


    /** Runs an occurrence in the background; what cannot even be recorded (the store gone) is logged. */
    private run(opId: string, direction: "forward" | "back"): void {
        this.execute(opId, direction).catch((e) => this.events.emit(OPERATION_LOG_EVENT, { note: `operation ${opId}: its outcome could not be recorded: ${(e as Error).message}` }));
    }

    /** Runs an occurrence (or its rollback) when a slot is free; records the outcome. */
    private async execute(opId: string, direction: "forward" | "back"): Promise<void> {
        const cancel = new OperationCancel();
        this.running.set(opId, cancel);
        try {
            await this.options.stopDryRuns?.(String((await this.occurrences.find(opId)).vnfInstanceId));
            await this.acquire();
            try {
                let op = await this.occurrences.find(opId);
                if (op.operationState === "ROLLED_BACK") return; // cancelled while waiting
                if (op.operationState === "STARTING" && (cancel.mode || op.isCancelPending)) {
                    await this.occurrences.transition(opId, "ROLLED_BACK", { from: ["STARTING"], owned: true }); // cancelled while waiting for a slot: nothing ran
                    return;
                }
                if (cancel.mode) throw new Error("cancelled while it waited for a free slot; nothing ran");
                if (op.operationState === "STARTING") op = await this.occurrences.transition(opId, "PROCESSING", { from: ["STARTING"], owned: true });
                const outcome = await this.perform(op, direction, cancel);
                await this.complete(op, direction, outcome);
            } finally {
                this.release();
            }
        } catch (e) {
            if (e instanceof LostClaim) {
                cancel.request("FORCEFUL");
                this.events.emit(OPERATION_LOG_EVENT, { note: `${e.message}: this replica stopped running it` });
                return;
            }
            const op = await this.occurrences.find(opId);
            const secrets = await this.stacks.secretsOf(op);
            let message = redactText((e as Error).message, secrets);
            // A FORCEFUL cancel killed the command: its stack's lock is cleared, so that a retry can run.
            if (cancel.mode === "FORCEFUL") message += `; ${await this.stacks.clearLock(op, secrets)}`;
            await this.occurrences.transition(opId, "FAILED_TEMP", { owned: true, error: problemBody(500, cancel.mode ? `cancelled (${cancel.mode}): ${message}` : message) }).catch((lost) => {
                if (!(lost instanceof LostClaim)) throw lost;
            });
        } finally {
            this.running.delete(opId);
        }
    }

    private async perform(op: Body, direction: "forward" | "back", cancel: OperationCancel): Promise<Record<string, unknown> | undefined> {
        const signal = cancel.graceful.signal;
        const opId = String(op.id);
        const plan = op.__plan as Plan;
        const stackName = stackNameOf(String(op.vnfInstanceId));
        const env = await this.stacks.vimEnv(plan.vimId);
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
                const shown = { ...progress };
                this.background(() => this.occurrences.changeOwned(opId, (current) => ({ ...current, progress: shown })));
            }
        };
        // Each Pulumi process is recorded while it runs, for a takeover after a crash.
        const onProcess = (process: PulumiProcess | undefined) => this.background(() => this.occurrences.changeOwned(opId, (current) => ({ ...current, __pulumi: process })));
        const run = { env, onEvent, signal, force: cancel.forceful.signal, onProcess };
        let outputs: Record<string, unknown> | undefined;
        const instanceId = String(op.vnfInstanceId);
        if (op.operation === "TERMINATE" || (direction === "back" && op.operation === "INSTANTIATE")) {
            if (direction === "forward" && plan.gracefulSeconds) await abortableSleep(plan.gracefulSeconds * 1000, signal);
            // Its VIMs first: a cluster being destroyed takes no new CNF.
            await this.kubernetesVims.unregister(instanceId);
            await this.runner.destroy(stackName, { ...run, config: (op.operation === "TERMINATE" ? plan.previousConfig : plan.config) ?? undefined });
        } else {
            const updates = updatesOf(plan, direction, Number(op.__stagesDone ?? 0));
            // Every update done (a retry after what followed them failed): one more, which changes nothing, for the outputs.
            if (updates.length === 0) updates.push({ config: plan.config, position: Number(op.__stagesDone) });
            for (const [i, update] of updates.entries()) {
                outputs = await this.runner.up(stackName, update.config ?? {}, run);
                await this.recordStage(op, update.config, update.position);
                if (updates.length > 1) this.events.emit(OPERATION_LOG_EVENT, { op, stage: { done: i + 1, of: updates.length } });
            }
            // A cluster's VIMs follow its outputs: a new cluster (entire heal) has a new CA and new tokens.
            await this.kubernetesVims.register(instanceId, updates.at(-1)!.config, outputs ?? {});
        }
        await this.backgroundWrites;
        const instance = await this.store.get("vnf_instances", String(op.vnfInstanceId));
        const before = ((instance?.instantiatedVnfInfo as Body | undefined)?.vnfcResourceInfo ?? []) as Body[];
        const vimConnectionId = plan.kubernetesVimId ?? ((plan.config ?? plan.previousConfig)?.vnfKind === "cnf" ? "kubernetes" : vimConnectionIdOf(plan.vimId));
        const affectedVnfcs = servers.affectedVnfcs(before, (outputs?.vnfcResources ?? []) as Body[]).map((v) => ({ ...v, computeResource: { vimConnectionId, ...v.computeResource } }));
        await this.occurrences.changeOwned(opId, (current) => ({ ...current, progress, resourceChanges: { affectedVnfcs } }));
        return outputs;
    }

    /**
     * After each update of a multi-update operation: how far along the stack is (a retry resumes there, a
     * rollback steps back from there), and the instance's config is the stack's, so that an operation failed
     * half way leaves the next one planning from where the stack is.
     */
    private async recordStage(op: Body, config: Record<string, unknown> | undefined, position: number): Promise<void> {
        await this.occurrences.changeOwned(String(op.id), (current) => ({ ...current, __stagesDone: position }));
        await this.store.update("vnf_instances", String(op.vnfInstanceId), (instance) => (instance ? { ...instance, __stackConfig: config } : undefined));
    }

    private async complete(op: Body, direction: "forward" | "back", outputs: Record<string, unknown> | undefined): Promise<void> {
        const clusterVim = (await this.kubernetesVims.ofCluster(String(op.vnfInstanceId))).find((v) => !v.tenant);
        await this.store.update("vnf_instances", String(op.vnfInstanceId), (instance) =>
            instance ? instanceAfter(op, instance, direction, outputs, { vnfdOf: (flavourId, deployed) => this.planner.cnfs.vnfdOf(instance, flavourId, deployed), clusterVim }) : undefined,
        );
        await this.occurrences.transition(String(op.id), direction === "forward" ? "COMPLETED" : "ROLLED_BACK", { owned: true });
    }

    /**
     * A write that need not hold up the run (progress, the process record), made after the one before it (two
     * in flight at once could commit in either order); the run waits for them before it ends.
     */
    private background(write: () => Promise<unknown>): void {
        this.backgroundWrites = this.backgroundWrites.then(write).then(
            () => undefined,
            () => undefined,
        );
    }

    /** Every secret value an operation's Pulumi commands could show: its configs' and its VIM's. */

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
