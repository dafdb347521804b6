/**
 * What an LCM operation will do to its instance's stack, planned and checked in full before the operation is
 * accepted (lifecycle.ts runs it): the stack configs it applies in turn, the config before (for rollback), its
 * VIMs. A request that cannot be planned is refused (400, 409) before anything runs.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { ConfigError } from "../config/spec";
import { planCnfHeal, planCnfScale, planCnfScaleToLevel } from "./cnfOperations";
import { CnfPlanner } from "./cnfPlanner";
import { planExtConnChange } from "./extConn";
import { planFlavourChange } from "./flavourChange";
import { KubernetesVims } from "./kubernetesVims";
import { conflict, ProblemError } from "./problem";
import { Store } from "./store";
import { defaultVim } from "./vimUsers";

type Body = Record<string, any>;

/** The configuration model and the request converter, loaded with the first operation, not at start. */
const configModel = () => require("../config/load") as typeof import("../config/load");
const requestConverter = () => require("../config/tacker") as typeof import("../config/tacker");
const cnfRequests = () => require("../config/tackerCnf") as typeof import("../config/tackerCnf");

export type Operation = "INSTANTIATE" | "SCALE" | "SCALE_TO_LEVEL" | "HEAL" | "OPERATE" | "CHANGE_EXT_CONN" | "CHANGE_FLAVOUR" | "TERMINATE";

/** What an occurrence will do, fixed when it is accepted. */
export interface Plan {
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

export interface PlannerOptions {
    /** The project directory: request conversion resolves paths there. */
    projectDir: string;
    /** VNF packages, one unpacked folder per vnfdId: where a request's package files are found. */
    packagesDir?: string;
}

export class OperationPlanner {
    readonly cnfs: CnfPlanner;

    constructor(
        private readonly store: Store,
        private readonly kubernetesVims: KubernetesVims,
        private readonly options: PlannerOptions,
    ) {
        this.cnfs = new CnfPlanner(store, { projectDir: options.projectDir, packagesDir: options.packagesDir, packageOf: (instance) => this.packageOf(instance) });
    }

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

    /** What the operation will change, checked in full before anything runs. */
    async plan(operation: Operation, instance: Body, params: Body): Promise<Plan> {
        const stackName = stackNameOf(String(instance.id));
        const stored = instance.__stackConfig as Record<string, unknown> | undefined;
        const cnf = stored?.vnfKind === "cnf";
        const current = cnf ? await this.cnfs.withCurrentVim(instance, stored!) : stored;
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
                    const planned = await this.cnfs.instantiate(instance, params, stackName, check);
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
                // Naming no VIM: the OpenStack VIM registered with --is-default, else the service's own OS_* credentials.
                const vimId = (params.vimConnectionInfo ?? []).map((v: Body) => v.vimId).find(Boolean) ?? (await defaultVim(this.store, "openstack"))?.id;
                const vim = vimId ? await this.store.get("vims", vimId) : undefined;
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
                if (cnf) await this.cnfs.assertNamespaceUnshared(instance);
                else await this.cnfs.assertNoCnfOn((await this.kubernetesVims.ofCluster(String(instance.id))).map((v) => String(v.id)), String(instance.id));
                return { gracefulSeconds: params.terminationType === "GRACEFUL" ? (params.gracefulTerminationTimeout ?? 0) : 0, previousConfig: current, vimId: instance.__vimId as string | undefined };
        }
    }

}

/** The stack of a VNF instance. */
export function stackNameOf(instanceId: string): string {
    return `vnf-${instanceId}`;
}

/** The workloads a CNF instance runs (its VNFCs' resources are `Kind/name`). */
function deployedWorkloads(instance: Body): Set<string> {
    return new Set(((instance.instantiatedVnfInfo?.vnfcResourceInfo ?? []) as Body[]).map((v) => String(v.computeResource?.resourceId).split("/")[1]));
}
