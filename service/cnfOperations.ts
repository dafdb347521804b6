/**
 * What SOL003 operations mean for a CNF (vnfKind cnf), as stack config changes. Scale sets the replicas of the
 * workloads an aspect's VDUs name (Tacker: `replicas` of Deployment, StatefulSet, ReplicaSet) by the VNFD's
 * deltas, within its levels; heal gives the named VNFCs' workloads (or all) a new restart mark, so their pods
 * are made again and waited for. Pure: the VNFD and the instance are read by the caller.
 */
import type { CnfVnfd } from "../config/vnfd";
import { ProblemError } from "./problem";

type Body = Record<string, any>;
type Config = Record<string, unknown>;

/** The VNFD a CNF is scaled by, or the reason it cannot be. */
export type VnfdLookup = CnfVnfd | { problem: string };

/** Replicas of a VDU's workload now: set by an earlier operation, else the VNFD's initial delta. */
function replicasOf(config: Config, vnfd: CnfVnfd, vduId: string): number {
    const name = workloadOf(vnfd, vduId);
    const set = ((config.cnf as Body)?.replicas ?? {})[name];
    return Number(set ?? vnfd.initialInstances[vduId] ?? 1);
}

function workloadOf(vnfd: CnfVnfd, vduId: string): string {
    return vnfd.vdus.find((v) => v.vduId === vduId)?.name ?? vduId;
}

/** An aspect's level: steps above the initial replicas of its first VDU. */
function levelOf(config: Config, vnfd: CnfVnfd, aspect: CnfVnfd["aspects"][number]): number {
    const [delta] = aspect.deltas;
    if (!delta || delta.instances === 0) return 0;
    return Math.round((replicasOf(config, vnfd, delta.vduId) - (vnfd.initialInstances[delta.vduId] ?? 1)) / delta.instances);
}

/** Replicas per workload name at instantiation: each VDU's initial delta. */
export function initialReplicas(vnfd: CnfVnfd | undefined): Record<string, number> {
    if (!vnfd) return {};
    const scaled = new Set(vnfd.aspects.flatMap((a) => a.deltas.map((d) => d.vduId)));
    return Object.fromEntries(vnfd.vdus.filter((v) => scaled.has(v.vduId) && vnfd.initialInstances[v.vduId] !== undefined).map((v) => [v.name, vnfd.initialInstances[v.vduId]]));
}

/** The config at an aspect's new level. */
function atLevel(config: Config, vnfd: CnfVnfd, aspect: CnfVnfd["aspects"][number], level: number): Config {
    const cnf = config.cnf as Body;
    const replicas = { ...(cnf.replicas ?? {}) };
    for (const d of aspect.deltas) replicas[workloadOf(vnfd, d.vduId)] = (vnfd.initialInstances[d.vduId] ?? 1) + level * d.instances;
    return { ...config, cnf: { ...cnf, replicas } };
}

function aspectOf(vnfd: VnfdLookup, aspectId: unknown, field: string): { vnfd: CnfVnfd; aspect: CnfVnfd["aspects"][number] } {
    if ("problem" in vnfd) throw new ProblemError(400, `${field}: ${vnfd.problem}`);
    const aspect = vnfd.aspects.find((a) => a.aspectId === aspectId);
    if (!aspect) throw new ProblemError(400, `${field}: the VNFD scales ${vnfd.aspects.map((a) => a.aspectId).join(", ") || "no aspect"}, not ${String(aspectId)}`);
    return { vnfd, aspect };
}

/** SCALE: numberOfSteps of the aspect's deltas out or in. */
export function planCnfScale(config: Config, lookup: VnfdLookup, params: Body): Config {
    const { vnfd, aspect } = aspectOf(lookup, params.aspectId, "aspectId");
    const steps = Number(params.numberOfSteps ?? 1);
    const level = levelOf(config, vnfd, aspect) + (params.type === "SCALE_OUT" ? steps : -steps);
    if (level < 0) throw new ProblemError(400, `numberOfSteps: ${params.type} by ${steps} would take ${aspect.aspectId} below its initial replicas`);
    if (level > aspect.maxScaleLevel) throw new ProblemError(400, `numberOfSteps: ${params.type} by ${steps} would take ${aspect.aspectId} to level ${level}, above its max_scale_level ${aspect.maxScaleLevel}`);
    return atLevel(config, vnfd, aspect, level);
}

/** SCALE_TO_LEVEL with scaleInfo. */
export function planCnfScaleToLevel(config: Config, lookup: VnfdLookup, params: Body): Config {
    if (params.instantiationLevelId !== undefined) throw new ProblemError(400, "instantiationLevelId: give scaleInfo with each aspect's scaleLevel");
    const levels: Body[] = params.scaleInfo ?? [];
    if (levels.length === 0) throw new ProblemError(400, "scaleInfo: give the target scaleLevel of an aspect");
    let next = config;
    levels.forEach((l, i) => {
        const { vnfd, aspect } = aspectOf(lookup, l.aspectId, `scaleInfo[${i}].aspectId`);
        if (!(l.scaleLevel >= 0 && l.scaleLevel <= aspect.maxScaleLevel)) throw new ProblemError(400, `scaleInfo[${i}].scaleLevel: ${aspect.aspectId} goes from level 0 to ${aspect.maxScaleLevel}, not ${l.scaleLevel}`);
        next = atLevel(next, vnfd, aspect, l.scaleLevel);
    });
    return next;
}

/** HEAL: a new restart mark for the workloads of the named VNFCs (all of them without vnfcInstanceId). */
export function planCnfHeal(config: Config, vnfcs: Body[], params: Body, now: string): Config {
    const targets: string[] = ([] as string[]).concat(params.vnfcInstanceId ?? []);
    const names = targets.length
        ? targets.map((id, i) => {
              const vnfc = vnfcs.find((v) => v.id === id);
              if (!vnfc) throw new ProblemError(400, `vnfcInstanceId[${i}]: this CNF has no VNFC ${id}`);
              return String(vnfc.computeResource.resourceId).split("/")[1];
          })
        : vnfcs.map((v) => String(v.computeResource.resourceId).split("/")[1]);
    const cnf = config.cnf as Body;
    const restarts = { ...(cnf.restarts ?? {}) };
    for (const name of new Set(names)) restarts[name] = now;
    return { ...config, cnf: { ...cnf, restarts } };
}

/** Each aspect's current and highest level, in the form the stack's `scale` output has (count − min = level). */
export function cnfScale(config: Config, lookup: VnfdLookup): Record<string, { count: number; min: number; max: number }> {
    if ("problem" in lookup) return {};
    return Object.fromEntries(lookup.aspects.map((a) => [a.aspectId, { count: levelOf(config, lookup, a), min: 0, max: a.maxScaleLevel }]));
}
