/**
 * SOL003 operations as stack updates. A VNF instance is the stack named after its id; instantiate, scale
 * and heal are `up` with new stack config, terminate is `destroy`. Every operation is an occurrence with
 * the SOL003 state machine: STARTING → PROCESSING → COMPLETED | FAILED_TEMP; from FAILED_TEMP retry
 * (run again), rollback (→ ROLLING_BACK → ROLLED_BACK, with exactly the previous config) or fail
 * (→ FAILED); cancel aborts the running Pulumi command (SIGINT, Pulumi's graceful cancel) and starts no
 * other. One operation per instance at a time; operations of different instances run in parallel up to a
 * limit. What an operation will do is planned and checked before it is accepted: a refused request runs
 * nothing. Each Pulumi process an operation runs is recorded, so that after a crash recover() stops it.
 */
import { randomUUID } from "node:crypto";
import { EventEmitter } from "node:events";
import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigError } from "../config/spec";
import { findSecretLeaves, maskSecrets, redactText } from "../config/secrets";
import { cnfScale, planCnfHeal, planCnfScale, planCnfScaleToLevel } from "./cnfOperations";
import { planExtConnChange } from "./extConn";
import { CnfPlanner } from "./cnfPlanner";
import { KubernetesVims, NfvoOptions } from "./kubernetesVims";
import { planFlavourChange } from "./flavourChange";
import { instanceHref, opOccHref } from "./links";
import { Notifier } from "./notifications";
import { PulumiProcess } from "./pulumiProcess";
import { ServerChanges } from "./serverChanges";
import { conflict, notFound, problemBody, ProblemError } from "./problem";
import { Store } from "./store";
import { StackRunner } from "./stackRunner";

type Body = Record<string, any>;

/** The configuration model and the request converter, loaded with the first operation, not at start. */
const configModel = () => require("../config/load") as typeof import("../config/load");
const requestConverter = () => require("../config/tacker") as typeof import("../config/tacker");
const cnfRequests = () => require("../config/tackerCnf") as typeof import("../config/tackerCnf");
export type Operation = "INSTANTIATE" | "SCALE" | "SCALE_TO_LEVEL" | "HEAL" | "OPERATE" | "CHANGE_EXT_CONN" | "CHANGE_FLAVOUR" | "TERMINATE";
export type OperationState = "STARTING" | "PROCESSING" | "COMPLETED" | "FAILED_TEMP" | "FAILED" | "ROLLING_BACK" | "ROLLED_BACK";

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
}

/** What an occurrence will do, fixed when it is accepted. */
interface Plan {
    /** Stack configs applied (`up`) one after the other before `config` (a graceful stop drains first). */
    stages?: Record<string, unknown>[];
    /** Stack config to apply (`up`); absent for terminate (`destroy`). */
    config?: Record<string, unknown>;
    /** The config before the operation, for rollback. */
    previousConfig?: Record<string, unknown>;
    /** Seconds to wait before destroying (GRACEFUL terminate). */
    gracefulSeconds?: number;
    vimId?: string;
    /** The Kubernetes VIM a CNF runs on. */
    kubernetesVimId?: string;
    /** The namespace a CNF being instantiated goes into. */
    cnfNamespace?: string;
    flavourId?: string;
}

export class Lifecycle {
    /** Progress of running occurrences, by id: `progress` events (server-sent to watchers). */
    readonly events = new EventEmitter();
    private readonly running = new Map<string, AbortController>();
    private readonly waiting: (() => void)[] = [];
    private active = 0;
    readonly kubernetesVims: KubernetesVims;
    private readonly cnfs: CnfPlanner;

    constructor(
        private readonly store: Store,
        private readonly notifier: Notifier,
        private readonly runner: StackRunner,
        private readonly options: LifecycleOptions,
    ) {
        this.events.setMaxListeners(0);
        this.kubernetesVims = new KubernetesVims(store, options.nfvo);
        this.cnfs = new CnfPlanner(store, { projectDir: options.projectDir, packagesDir: options.packagesDir, packageOf: (instance) => this.packageOf(instance) });
    }

    /**
     * After a restart, before anything else runs: what had not started is rolled back; what was processing
     * failed temporarily, once the Pulumi command the dead service left running is stopped and its stack's
     * stale lock cleared (so a retry is the only update of that stack).
     */
    /**
     * The unpacked VNF package of an instance's vnfdId, when the service has one: `--packages DIR` holds a
     * folder per vnfdId. The id is the client's: only a plain name is looked up (nothing that climbs out).
     */
    private packageOf(instance: Body): string | undefined {
        const vnfdId = String(instance.vnfdId ?? "");
        if (!this.options.packagesDir || !/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(vnfdId) || vnfdId.includes("..")) return undefined;
        const dir = path.join(this.options.packagesDir, vnfdId);
        return fs.existsSync(dir) && fs.statSync(dir).isDirectory() ? dir : undefined;
    }

    async recover(): Promise<void> {
        for (const op of this.store.list("op_occs")) {
            if (op.operationState === "STARTING") {
                this.store.put([{ table: "op_occs", id: String(op.id), body: { ...op, operationState: "ROLLED_BACK", stateEnteredTime: new Date().toISOString() } }]);
            } else if (op.operationState === "PROCESSING" || op.operationState === "ROLLING_BACK") {
                let cleanup: string;
                try {
                    cleanup = await this.runner.recover(stackNameOf(String(op.vnfInstanceId)), op.__pulumi as PulumiProcess | undefined, this.vimEnv((op.__plan as Plan).vimId));
                } catch (e) {
                    cleanup = `its stack could not be cleared (${redactText((e as Error).message, this.secretsOf(op))}); a retry may find it locked`;
                }
                const error = problemBody(500, `the service restarted while the operation was running: ${cleanup}; retry, roll back or fail it`);
                this.store.put([{ table: "op_occs", id: String(op.id), body: { ...op, __pulumi: undefined, operationState: "FAILED_TEMP", stateEnteredTime: new Date().toISOString(), error } }]);
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
            _links: {
                self: { href: opUrl },
                vnfInstance: { href: instanceHref(baseUrl, instanceId) },
                retry: { href: `${opUrl}/retry` },
                rollback: { href: `${opUrl}/rollback` },
                fail: { href: `${opUrl}/fail` },
                cancel: { href: `${opUrl}/cancel` },
            },
            __plan: plan,
            __baseUrl: baseUrl,
        };
        this.store.put([{ table: "op_occs", id, body: op }]);
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
        return this.plan(operation, instance, params);
    }

    retry(opId: string): void {
        const op = this.failedTemp(opId, "retry");
        void this.execute(String(op.id), "forward");
    }

    rollback(opId: string): void {
        const op = this.failedTemp(opId, "rollback");
        if (op.operation === "TERMINATE") throw new ProblemError(409, "a terminate cannot be rolled back: retry it or fail it");
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
        if (!controller || (op.operationState !== "PROCESSING" && op.operationState !== "STARTING")) throw conflict(`operation ${opId} is ${op.operationState}; only a starting or processing one can be cancelled`);
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

    /** What the operation will change, checked in full before anything runs. */
    private plan(operation: Operation, instance: Body, params: Body): Plan {
        const stackName = stackNameOf(String(instance.id));
        const stored = instance.__stackConfig as Record<string, unknown> | undefined;
        const cnf = stored?.vnfKind === "cnf";
        const current = cnf ? this.cnfs.withCurrentVim(instance, stored!) : stored;
        const check = (config: Record<string, unknown>, source: string) => {
            try {
                return configModel().parseVnfConfig(config, { stackName, baseDir: this.options.projectDir }, source).spec;
            } catch (e) {
                if (e instanceof ConfigError) throw new ProblemError(400, e.message);
                throw e;
            }
        };
        // What an update of this instance carries over: the config before (for rollback) and its VIMs.
        const keep = { previousConfig: current, vimId: instance.__vimId as string | undefined, kubernetesVimId: instance.__kubernetesVimId as string | undefined };
        // An operation of several updates: each config checked, the config before kept for rollback.
        const checked = (config: Record<string, unknown>, source: string) => (check(config, source), config);
        const staged = ({ stages, config }: { stages: Record<string, unknown>[]; config: Record<string, unknown> }, source: string): Plan => {
            for (const c of [...stages, config]) check(c, source);
            return { ...keep, stages, config };
        };
        if (cnf && ["OPERATE", "CHANGE_EXT_CONN", "CHANGE_FLAVOUR"].includes(operation)) {
            throw conflict(`VNF instance ${instance.id} is a CNF: it has no VMs (${operation.toLowerCase()}); scale, heal or terminate it`);
        }
        switch (operation) {
            case "INSTANTIATE": {
                if (cnfRequests().isCnfInstantiateRequest(params)) {
                    const planned = this.cnfs.instantiate(instance, params, stackName, check);
                    return { config: planned.config, kubernetesVimId: planned.kubernetesVimId, cnfNamespace: planned.namespace, flavourId: params.flavourId };
                }
                let converted;
                const packageDir = this.packageOf(instance);
                try {
                    converted = requestConverter().convertInstantiateRequest(params, { baseDir: this.options.projectDir, stackName, packageDir });
                } catch (e) {
                    if (e instanceof ConfigError) throw new ProblemError(400, e.message);
                    throw e;
                }
                if (!packageDir && requestConverter().namesPackageFiles(converted.config)) {
                    const where = this.options.packagesDir
                        ? `put the unpacked package in ${path.join(this.options.packagesDir, "<vnfdId>")}`
                        : "start the service with --packages DIR, DIR/<vnfdId>/ holding the unpacked package";
                    throw new ProblemError(
                        400,
                        `additionalParams names files of the VNF package (PV manifests, certificates or image archives), and this service has no package for vnfdId ${JSON.stringify(String(instance.vnfdId))}: ${where}`,
                    );
                }
                const vimId = (params.vimConnectionInfo ?? []).map((v: Body) => v.vimId).find(Boolean);
                const vim = vimId ? this.store.get("vims", vimId) : undefined;
                if (vimId && !vim) throw new ProblemError(400, `vimConnectionInfo.vimId: no VIM ${vimId} is registered with this service (POST /k8s-vnf/v1/vims)`);
                if (vim?.type === "kubernetes") throw new ProblemError(400, `vimConnectionInfo.vimId: ${vimId} is a Kubernetes VIM (${vim.name}); a cluster's VMs need an OpenStack VIM`);
                check(converted.config, "instantiate request");
                return { config: converted.config, vimId, flavourId: params.flavourId };
            }
            case "SCALE": {
                if (cnf) return { ...keep, config: checked(planCnfScale(current!, this.cnfs.vnfdOf(instance, undefined, deployedWorkloads(instance)), params), "scale request") };
                const workers = { ...((current?.workers as Body) ?? {}) };
                const aspect = workers.aspectId ?? "worker_instance";
                if (params.aspectId !== aspect) throw new ProblemError(400, `aspectId: this VNF scales ${aspect}, not ${params.aspectId}`);
                const range = (instance.__scale as Body | undefined)?.[aspect] ?? {};
                // The seeds send "numberOfSteps": "1"; the client sends a number.
                const steps = Number(params.numberOfSteps ?? 1);
                const count = (workers.count ?? range.count) + (params.type === "SCALE_OUT" ? steps : -steps);
                if (count < range.min) throw new ProblemError(400, `numberOfSteps: ${params.type} by ${steps} would leave ${count} workers, below the minimum ${range.min}`);
                if (count > range.max) throw new ProblemError(400, `numberOfSteps: ${params.type} by ${steps} would make ${count} workers, above the maximum ${range.max}`);
                const config = { ...current, workers: { ...workers, count } };
                check(config, "scale request");
                return { ...keep, config };
            }
            case "SCALE_TO_LEVEL": {
                if (cnf) return { ...keep, config: checked(planCnfScaleToLevel(current!, this.cnfs.vnfdOf(instance, undefined, deployedWorkloads(instance)), params), "scale_to_level request") };
                // SOL003 §5.4.6: a target instantiation level or a scale level per aspect. This VNF has no
                // instantiation levels (its counts are its stack config) and one scalable aspect, the workers,
                // whose level is the workers above the minimum (scaleStatus).
                if (params.instantiationLevelId !== undefined) throw new ProblemError(400, "instantiationLevelId: this VNF has no instantiation levels; give scaleInfo with the aspect's scaleLevel");
                const levels: Body[] = params.scaleInfo ?? [];
                if (levels.length === 0) throw new ProblemError(400, "scaleInfo: give the target scaleLevel of an aspect (or instantiationLevelId, which this VNF does not have)");
                const workers = { ...((current?.workers as Body) ?? {}) };
                const aspect = workers.aspectId ?? "worker_instance";
                const range = (instance.__scale as Body | undefined)?.[aspect] as { min: number; max: number } | undefined;
                if (!range) throw new ProblemError(400, "scaleInfo: this VNF has no workers to scale");
                if (levels.length > 1) throw new ProblemError(400, `scaleInfo: one entry for ${aspect}, the only aspect this VNF scales`);
                const [level] = levels;
                if (level.aspectId !== aspect) throw new ProblemError(400, `scaleInfo[0].aspectId: this VNF scales ${aspect}, not ${level.aspectId}`);
                if (level.scaleLevel > range.max - range.min) throw new ProblemError(400, `scaleInfo[0].scaleLevel: ${aspect} goes up to level ${range.max - range.min} (${range.max} workers), not ${level.scaleLevel}`);
                const count = range.min + level.scaleLevel;
                const config = { ...current, workers: { ...workers, count } };
                check(config, "scale_to_level request");
                return { ...keep, config };
            }
            case "HEAL": {
                if (cnf) return { ...keep, config: checked(planCnfHeal(current!, instance.instantiatedVnfInfo?.vnfcResourceInfo ?? [], params, new Date().toISOString()), "heal request") };
                const heal = { generation: 0, nodes: {}, ...((current?.heal as Body) ?? {}) };
                const vnfcs: Body[] = instance.instantiatedVnfInfo?.vnfcResourceInfo ?? [];
                // The client sends a list; the seed's heal body has one id as a string.
                const targets: string[] = ([] as string[]).concat(params.vnfcInstanceId ?? []);
                const nodes = { ...heal.nodes } as Record<string, number>;
                targets.forEach((vnfcId, i) => {
                    const vnfc = vnfcs.find((v) => v.id === vnfcId);
                    if (!vnfc) throw new ProblemError(400, `vnfcInstanceId[${i}]: VNF instance ${instance.id} has no VNFC ${vnfcId}`);
                    const node = /-((?:master|worker)-\d+|storage|registry)$/.exec(vnfcId)?.[1];
                    if (!node) throw new ProblemError(400, `vnfcInstanceId[${i}]: ${vnfcId} is not a Kubernetes node, the storage server or the registry; only those heal one by one`);
                    nodes[node] = (nodes[node] ?? 0) + 1;
                });
                const config = { ...current, heal: targets.length ? { ...heal, nodes } : { ...heal, generation: heal.generation + 1 } };
                check(config, "heal request");
                return { ...keep, config };
            }
            case "OPERATE": {
                const operate: Body = { vnfState: "STARTED", drained: false, ...((current?.operate as Body) ?? {}) };
                if (params.changeStateTo === "STARTED" && params.stopType !== undefined) throw new ProblemError(400, "stopType: only for changeStateTo STOPPED");
                if (params.gracefulStopTimeout !== undefined && params.stopType !== "GRACEFUL") throw new ProblemError(400, "gracefulStopTimeout: only for stopType GRACEFUL");
                if (params.changeStateTo === operate.vnfState) throw conflict(`VNF instance ${instance.id} is already ${operate.vnfState}`);
                const at = (changes: Body) => ({ ...current, operate: { ...operate, ...changes } });
                if (params.changeStateTo === "STARTED") {
                    // One update: each VM is powered on, then its node is uncordoned once Ready (if it was drained).
                    return staged({ stages: [], config: at({ vnfState: "STARTED", drained: false }) }, "operate request");
                }
                // SOL003 StopType: FORCEFUL is the default. A stop is two updates, because a VM is updated
                // before the steps that depend on it: first, with the VMs running, whatever the steps have pending
                // (a new provider version updates them too) and, for a graceful stop, the drain of every node
                // (each within gracefulStopTimeout; the stop then goes on); then the VMs are shut off, with no
                // step left to change. A registry VNF and a kubespray cluster have no membership steps to drain,
                // and a timeout of 0 leaves no time to drain: their graceful stop is a forceful one.
                const graceful = params.stopType === "GRACEFUL" && params.gracefulStopTimeout !== 0 && (current?.vnfKind ?? "cluster") === "cluster" && !current?.kubespray;
                const drain = graceful ? { drained: true, drainTimeout: params.gracefulStopTimeout ?? operate.drainTimeout ?? 60 } : {};
                return staged({ stages: [at({ vnfState: "STARTED", ...drain })], config: at({ vnfState: "STOPPED", ...drain }) }, "operate request");
            }
            case "CHANGE_EXT_CONN":
                return staged(planExtConnChange(current ?? {}, check(current ?? {}, "the instance's stack config"), params), "change_ext_conn request");
            case "CHANGE_FLAVOUR": {
                const plan = staged(planFlavourChange(current ?? {}, check(current ?? {}, "the instance's stack config"), params), "change_flavour request");
                return { ...plan, flavourId: String(plan.config!.flavour) };
            }
            case "TERMINATE":
                if (cnf) this.cnfs.assertNamespaceUnshared(instance);
                else this.cnfs.assertNoCnfOn(this.kubernetesVims.ofCluster(String(instance.id)).map((v) => String(v.id)), String(instance.id));
                return { gracefulSeconds: params.terminationType === "GRACEFUL" ? (params.gracefulTerminationTimeout ?? 0) : 0, previousConfig: current, vimId: instance.__vimId as string | undefined };
        }
    }

    /** Runs an occurrence (or its rollback) when a slot is free; records the outcome. */
    private async execute(opId: string, direction: "forward" | "back"): Promise<void> {
        const controller = new AbortController();
        this.running.set(opId, controller);
        try {
            await this.acquire();
            try {
                let op = this.find(opId);
                if (op.operationState === "ROLLED_BACK") return; // cancelled while waiting
                if (op.operationState === "STARTING" && controller.signal.aborted) {
                    this.transition(op, "ROLLED_BACK"); // cancelled while waiting for a slot: nothing ran
                    return;
                }
                op = this.transition(op, direction === "forward" ? "PROCESSING" : "ROLLING_BACK");
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
            for (const update of updates) {
                outputs = await this.runner.up(stackName, update.config ?? {}, run);
                this.recordStage(op, update.config, update.position);
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
        const plan = op.__plan as Plan;
        const instance = this.store.get("vnf_instances", String(op.vnfInstanceId)) as Body;
        const terminated = op.operation === "TERMINATE" || (direction === "back" && op.operation === "INSTANTIATE");
        const config = direction === "forward" ? plan.config : plan.previousConfig;
        const flavourId = direction === "forward" ? (plan.flavourId ?? instance.instantiatedVnfInfo?.flavourId) : instance.instantiatedVnfInfo?.flavourId;
        const cnf = (config ?? plan.previousConfig)?.vnfKind === "cnf";
        const vnfd = cnf && !terminated ? this.cnfs.vnfdOf(instance, flavourId, new Set(((outputs?.vnfcResources ?? []) as Body[]).map((v) => String(v.vduId)))) : undefined;
        const scale = vnfd ? cnfScale(config!, vnfd) : (outputs?.scale as Body | undefined);
        // A CNF's VNFCs are named by workload in the stack; the VNFD says which VDU each workload is.
        const vnfcResources = vnfd && !("problem" in vnfd) ? ((outputs?.vnfcResources ?? []) as Body[]).map((v) => ({ ...v, vduId: vnfd.vdus.find((d) => d.name === v.vduId)?.vduId ?? v.vduId })) : outputs?.vnfcResources;
        const cluster = (config?.vnfKind ?? "cluster") === "cluster";
        const links = instanceLinks(String(op.__baseUrl ?? ""), String(instance.id), terminated ? "NOT_INSTANTIATED" : "INSTANTIATED", {
            scalable: Object.keys(scale ?? {}).length > 0,
            operable: !cnf,
            portsMovable: cluster,
            flavourChangeable: cluster && (flavourId === "complex" || flavourId === "podaffinity"),
        });
        const metadata = { ...((instance.metadata as Body) ?? {}) };
        if (cnf) delete metadata.namespace;
        const namespace = plan.cnfNamespace ?? instance.__namespace;
        const vimConnectionInfo = cnf ? cnfVimConnectionInfo((config ?? plan.previousConfig)!, plan.kubernetesVimId) : vimConnectionInfoOf(plan.vimId, this.kubernetesVims.ofCluster(String(instance.id)).find((v) => !v.tenant));
        const next: Body = terminated
            ? { ...withoutKeys(instance, ["instantiatedVnfInfo", "__stackConfig", "__scale", "__vimId", "__kubernetesVimId", "__namespace", "vimConnectionInfo"]), metadata, instantiationState: "NOT_INSTANTIATED", _links: links }
            : {
                  ...instance,
                  instantiationState: "INSTANTIATED",
                  _links: links,
                  // Seed 003: the CNF's namespace is part of the instance, for its scale, heal and terminate and in GET.
                  ...(cnf ? { metadata: { ...metadata, namespace }, __namespace: namespace } : {}),
                  instantiatedVnfInfo: instantiatedInfo(flavourId, vnfStateOf(config), { ...(outputs ?? {}), scale, vnfcResources }, vimConnectionInfo[0].id),
                  __stackConfig: config,
                  __scale: scale,
                  __vimId: plan.vimId,
                  __kubernetesVimId: plan.kubernetesVimId,
                  vimConnectionInfo,
              };
        this.store.put([{ table: "vnf_instances", id: String(instance.id), body: next }]);
        this.transition(this.find(String(op.id)), direction === "forward" ? "COMPLETED" : "ROLLED_BACK");
    }

    private transition(op: Body, state: OperationState, error?: Body): Body {
        const next = { ...op, operationState: state, stateEnteredTime: new Date().toISOString(), ...(error ? { error } : {}) };
        if (!error && (state === "PROCESSING" || state === "COMPLETED")) delete next.error;
        this.store.put([{ table: "op_occs", id: String(op.id), body: next }]);
        if (state !== "PROCESSING" && state !== "ROLLING_BACK") this.notifyOp(next, "RESULT");
        this.events.emit(String(op.id), { operationState: state });
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
        const env: Record<string, string> = {
            OS_AUTH_URL: String(vim.authUrl),
            OS_USERNAME: String(vim.username),
            OS_PASSWORD: String(vim.__password),
            OS_PROJECT_NAME: String(vim.projectName),
            OS_USER_DOMAIN_NAME: String(vim.userDomainName ?? "Default"),
            OS_PROJECT_DOMAIN_NAME: String(vim.projectDomainName ?? "Default"),
        };
        if (vim.region) env.OS_REGION_NAME = String(vim.region);
        return env;
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

/** The stack of a VNF instance. */
export function stackNameOf(instanceId: string): string {
    return `vnf-${instanceId}`;
}

/**
 * A VNF instance's `_links` (SOL003 VnfInstance): itself and the tasks its state allows (scaling if it
 * scales; a port move and a flavour change between the HA flavours for clusters).
 */
export function instanceLinks(baseUrl: string, instanceId: string, state: "NOT_INSTANTIATED" | "INSTANTIATED", can: { scalable?: boolean; operable?: boolean; portsMovable?: boolean; flavourChangeable?: boolean } = {}): Body {
    const self = instanceHref(baseUrl, instanceId);
    const tasks =
        state === "NOT_INSTANTIATED"
            ? { instantiate: "instantiate" }
            : {
                  terminate: "terminate",
                  ...(can.scalable ? { scale: "scale", scaleToLevel: "scale_to_level" } : {}),
                  heal: "heal",
                  ...(can.operable !== false ? { operate: "operate" } : {}),
                  ...(can.portsMovable ? { changeExtConn: "change_ext_conn" } : {}),
                  ...(can.flavourChangeable ? { changeFlavour: "change_flavour" } : {}),
              };
    return { self: { href: self }, ...Object.fromEntries(Object.entries(tasks).map(([name, route]) => [name, { href: `${self}/${route}` }])) };
}

/**
 * The id of the instance's VIM connection, which every compute resource names (SOL003 ResourceHandle): the
 * registered VIM's id, or `default` for the service's own OS_* credentials.
 */
function vimConnectionIdOf(vimId: string | undefined): string {
    return vimId ?? "default";
}

/** The workloads a CNF instance runs (its VNFCs' resources are `Kind/name`). */
function deployedWorkloads(instance: Body): Set<string> {
    return new Set(((instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []) as Body[]).map((v) => String(v.computeResource?.resourceId).split("/")[1]));
}

/** A cluster's VIM connections: the OpenStack VIM it runs on, and the Kubernetes VIM it is (Tacker shows both). */
function vimConnectionInfoOf(vimId: string | undefined, kubernetesVim: Body | undefined): Body[] {
    return [
        { id: vimConnectionIdOf(vimId), ...(vimId ? { vimId } : {}), vimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3" },
        ...(kubernetesVim ? [{ id: `${kubernetesVim.id}-kubernetes`, vimId: kubernetesVim.id, vimType: "ETSINFV.KUBERNETES.V_1", interfaceInfo: { endpoint: kubernetesVim.authUrl } }] : []),
    ];
}

/** A CNF's VIM connection: the Kubernetes VIM it runs on (registered, or given inline: no id to name). */
function cnfVimConnectionInfo(config: Record<string, unknown>, kubernetesVimId: string | undefined): Body[] {
    const vim = (config.cnf as Body).vim;
    return [{ id: kubernetesVimId ?? "kubernetes", ...(kubernetesVimId ? { vimId: kubernetesVimId } : {}), vimType: "ETSINFV.KUBERNETES.V_1", interfaceInfo: { endpoint: vim.endpoint } }];
}

/** SOL003 VnfOperationalStateType of a stack config (`operate.vnfState`, STARTED when unset). */
function vnfStateOf(config: Record<string, unknown> | undefined): "STARTED" | "STOPPED" {
    return (config?.operate as Body | undefined)?.vnfState === "STOPPED" ? "STOPPED" : "STARTED";
}

function instantiatedInfo(flavourId: string | undefined, vnfState: "STARTED" | "STOPPED", outputs: Record<string, unknown>, vimConnectionId: string): Body {
    const scale = (outputs.scale ?? {}) as Record<string, { count: number; min: number; max: number }>;
    const vnfcs = (outputs.vnfcResources ?? []) as Body[];
    return {
        flavourId: flavourId ?? "simple",
        vnfState,
        scaleStatus: Object.entries(scale).map(([aspectId, s]) => ({ aspectId, scaleLevel: s.count - s.min })),
        maxScaleLevels: Object.entries(scale).map(([aspectId, s]) => ({ aspectId, scaleLevel: s.max - s.min })),
        vnfcResourceInfo: vnfcs.map((v) =>
            v.resourceType
                ? // A CNF's: a pod slot of a workload (its pods' names are the controller's, not the stack's).
                  { id: v.id, vduId: v.vduId, computeResource: { vimConnectionId, resourceId: v.resourceId, vimLevelResourceType: v.resourceType } }
                : {
                      id: v.id,
                      vduId: v.vduId,
                      computeResource: { vimConnectionId, resourceId: v.serverId, vimLevelResourceType: "OS::Nova::Server" },
                      vnfcCpInfo: [{ id: `${v.id}-${v.cpdId}`, cpdId: v.cpdId }],
                  },
        ),
    };
}

function withoutKeys(o: Body, keys: string[]): Body {
    return Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k)));
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
