/**
 * Reads the VNFD of a CNF package (the TOSCA files under `Definitions/`) into what deploying and scaling a CNF
 * needs: which VDU is which Kubernetes workload, the scaling aspects with their per-VDU deltas, and each VDU's
 * initial number of instances. It reads the package the way Tacker's v2 VNFM does
 * (tacker/sol_refactored/common/vnfd_utils.py), and refuses what Tacker would trip over later, naming the file
 * and the field.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { ConfigError, ConfigProblem } from "./spec";
import { MIB, readRegularFile } from "./untrustedFile";

/** What a CNF's VNFD says about its VDUs and their scaling, for one deployment flavour. */
export interface CnfVnfd {
    /** The deployment flavour read (`substitution_mappings.properties.flavour_id`). */
    flavourId: string;
    /** `tosca.nodes.nfv.Vdu.Compute` node templates; `name` is the Kubernetes workload's `metadata.name`. */
    vdus: { vduId: string; name: string }[];
    /** `tosca.policies.nfv.ScalingAspects`, each with the VDUs its `VduScalingAspectDeltas` scale by one step. */
    aspects: { aspectId: string; maxScaleLevel: number; deltas: { vduId: string; instances: number }[] }[];
    /** vduId → `tosca.policies.nfv.VduInitialDelta` number_of_instances. */
    initialInstances: Record<string, number>;
}

/**
 * Largest VNFD file read. ETSI's SOL001 VNFD types file, the largest file of Tacker's sample packages, is
 * 66 KiB; a file over 1 MiB is no VNFD and is refused unread.
 */
export const VNFD_FILE_LIMIT = MIB;
/** Most YAML files under `Definitions/`; Tacker's sample packages have 3 to 6. */
export const VNFD_FILE_COUNT_LIMIT = 64;

const VDU_TYPE = "tosca.nodes.nfv.Vdu.Compute";
const SCALING_ASPECTS = "tosca.policies.nfv.ScalingAspects";
const ASPECT_DELTAS = "tosca.policies.nfv.VduScalingAspectDeltas";
const INITIAL_DELTA = "tosca.policies.nfv.VduInitialDelta";

/** RFC 1123 subdomain: what Kubernetes accepts as the name of a Pod, Deployment, StatefulSet, ReplicaSet or DaemonSet. */
const K8S_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Reads the VNFD of the package in `packageDir`, for `flavourId` or, when not given, for the package's only
 * deployment flavour. Returns undefined when the package has no `Definitions/` folder; throws a
 * {@link ConfigError} listing every problem, each with the file and field, when the VNFD cannot be used.
 */
export function readCnfVnfd(packageDir: string, flavourId?: string): CnfVnfd | undefined {
    const files = readDefinitions(packageDir);
    if (files === undefined) return undefined;
    const flavour = selectFlavour(files, flavourId);
    const problems: ConfigProblem[] = [];
    const vnfd = readFlavour(flavour.file, flavour.id, flavour.topology, problems);
    if (problems.length) throw vnfdError(problems);
    return vnfd;
}

type Mapping = Record<string, unknown>;

interface DefinitionFile {
    /** `Definitions/<name>`, as problems name it. */
    file: string;
    doc: Mapping;
}

function vnfdError(problems: ConfigProblem[]): ConfigError {
    return new ConfigError(problems, "VNFD of the VNF package");
}

function isMapping(v: unknown): v is Mapping {
    return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Every `.yaml`/`.yml` file directly in `Definitions/`, as Tacker lists them (`Vnfd._init_vnfd`: no subfolders). */
function readDefinitions(packageDir: string): DefinitionFile[] | undefined {
    const dir = path.join(packageDir, "Definitions");
    let stat: fs.Stats;
    try {
        stat = fs.statSync(dir);
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw vnfdError([{ path: "Definitions", message: `cannot be read (${(e as NodeJS.ErrnoException).code})` }]);
    }
    if (!stat.isDirectory()) throw vnfdError([{ path: "Definitions", message: "is not a folder" }]);

    const names = fs.readdirSync(dir).filter((n) => n.endsWith(".yaml") || n.endsWith(".yml")).sort();
    if (names.length === 0) throw vnfdError([{ path: "Definitions", message: "holds no .yaml or .yml file" }]);
    if (names.length > VNFD_FILE_COUNT_LIMIT) {
        throw vnfdError([{ path: "Definitions", message: `holds ${names.length} YAML files, more than the ${VNFD_FILE_COUNT_LIMIT} a VNFD may have` }]);
    }
    const root = fs.realpathSync(packageDir);
    const problems: ConfigProblem[] = [];
    const files: DefinitionFile[] = [];
    for (const name of names) {
        const file = `Definitions/${name}`;
        const doc = readDefinitionFile(root, path.join(dir, name));
        if ("problem" in doc) problems.push({ path: file, message: doc.problem });
        else if (doc.doc !== undefined) files.push({ file, doc: doc.doc });
    }
    if (problems.length) throw vnfdError(problems);
    return files;
}

/** One file's document; `doc` is undefined for an empty file, which Tacker loads as None and skips. */
function readDefinitionFile(root: string, full: string): { doc?: Mapping } | { problem: string } {
    let real: string;
    try {
        real = fs.realpathSync(full);
    } catch (e) {
        return { problem: `cannot be read (${(e as NodeJS.ErrnoException).code})` };
    }
    // A link out of the package would let a YAML error message quote a line of any file on this host.
    if (!real.startsWith(root + path.sep)) return { problem: "leads outside the package directory" };
    const read = readRegularFile(real, { whole: VNFD_FILE_LIMIT });
    if ("problem" in read) return read;
    let doc: unknown;
    try {
        // YAML 1.1, as PyYAML (Tacker, tosca-parser) reads it: `yes` is a boolean, `010` is octal.
        doc = YAML.parse(read.bytes.toString("utf8"), { version: "1.1" });
    } catch (e) {
        return { problem: `is not valid YAML (${(e as Error).message.split("\n")[0]})` };
    }
    if (doc === null || doc === undefined) return {};
    if (!isMapping(doc)) return { problem: "is not a TOSCA service template (its document is not a mapping)" };
    return { doc };
}

interface Flavour {
    id: string;
    file: string;
    topology: Mapping;
}

/**
 * The file whose `topology_template.substitution_mappings.properties.flavour_id` is the flavour: Tacker takes
 * that file's whole topology as the flavour's (`Vnfd.get_vnfd_flavour`), whatever the top-level VNFD imports.
 */
function selectFlavour(files: DefinitionFile[], wanted: string | undefined): Flavour {
    const problems: ConfigProblem[] = [];
    const flavours: Flavour[] = [];
    for (const { file, doc } of files) {
        if (doc.topology_template === undefined) continue;
        if (!isMapping(doc.topology_template)) {
            problems.push({ path: `${file}: topology_template`, message: "must be a mapping" });
            continue;
        }
        const mappings = doc.topology_template.substitution_mappings;
        if (mappings === undefined) continue;
        const field = `${file}: topology_template.substitution_mappings.properties.flavour_id`;
        const id = isMapping(mappings) && isMapping(mappings.properties) ? mappings.properties.flavour_id : undefined;
        if (typeof id !== "string" || id === "") {
            problems.push({ path: field, message: "must name the deployment flavour this file describes" });
            continue;
        }
        const same = flavours.find((f) => f.id === id);
        if (same) problems.push({ path: field, message: `flavour "${id}" is described by ${same.file} too` });
        else flavours.push({ id, file, topology: doc.topology_template });
    }
    if (problems.length) throw vnfdError(problems);

    const known = flavours.map((f) => `"${f.id}" (${f.file})`).join(", ");
    if (flavours.length === 0) {
        throw vnfdError([{
            path: "Definitions",
            message: "no file describes a deployment flavour (topology_template.substitution_mappings.properties.flavour_id)",
        }]);
    }
    if (wanted !== undefined) {
        const found = flavours.find((f) => f.id === wanted);
        if (!found) throw vnfdError([{ path: "Definitions", message: `no deployment flavour "${wanted}": the VNFD has ${known}` }]);
        return found;
    }
    if (flavours.length > 1) throw vnfdError([{ path: "Definitions", message: `has several deployment flavours, name one: ${known}` }]);
    return flavours[0];
}

/** A named policy of `topology_template.policies`, with where it was written. */
interface Policy {
    field: string;
    name: string;
    body: Mapping;
}

function readFlavour(file: string, flavourId: string, topology: Mapping, problems: ConfigProblem[]): CnfVnfd {
    const fail = (field: string, message: string) => problems.push({ path: `${file}: ${field}`, message });
    const { vdus, vduIds } = readVdus(topology, fail);
    const policies = listPolicies(topology, fail);
    const ofType = (type: string) => policies.filter((p) => p.body.type === type);

    const initialInstances = readInitialDeltas(ofType(INITIAL_DELTA), vduIds, fail);
    const aspects = readAspects(ofType(SCALING_ASPECTS), fail);
    const scaledBy = new Map<string, string>();
    for (const policy of ofType(ASPECT_DELTAS)) {
        readAspectDeltas(policy, aspects, vduIds, scaledBy, fail);
    }
    for (const policy of ofType(ASPECT_DELTAS)) {
        const targets = policy.body.targets;
        if (!Array.isArray(targets)) continue;
        targets.forEach((vduId, i) => {
            // Tacker counts a VDU's scale level from its initial delta: (replicas - initial) / delta.
            if (typeof vduId === "string" && scaledBy.has(vduId) && initialInstances[vduId] === undefined) {
                fail(`${policy.field}.targets[${i}]`, `${vduId} is scaled but has no ${INITIAL_DELTA} policy giving its initial number of instances`);
            }
        });
    }
    return {
        flavourId,
        vdus,
        aspects: [...aspects.values()].map(({ aspectId, maxScaleLevel, deltas }) => ({ aspectId, maxScaleLevel, deltas })),
        initialInstances,
    };
}

type Fail = (field: string, message: string) => void;

/**
 * `tosca.nodes.nfv.Vdu.Compute` node templates, by exact type as Tacker matches them (`Vnfd.get_vdu_nodes`);
 * `vduIds` has those refused for their name too, so that policies naming them are not refused as well.
 */
function readVdus(topology: Mapping, fail: Fail): { vdus: CnfVnfd["vdus"]; vduIds: Set<string> } {
    const vdus: CnfVnfd["vdus"] = [];
    const vduIds = new Set<string>();
    const nodes = topology.node_templates;
    if (nodes === undefined) return { vdus, vduIds };
    if (!isMapping(nodes)) {
        fail("topology_template.node_templates", "must be a mapping of node template names to node templates");
        return { vdus, vduIds };
    }
    const byName = new Map<string, string>();
    for (const [vduId, node] of Object.entries(nodes)) {
        const field = `topology_template.node_templates.${vduId}`;
        if (!isMapping(node) || typeof node.type !== "string") {
            fail(field, "must be a node template with a `type`");
            continue;
        }
        if (node.type !== VDU_TYPE) continue;
        vduIds.add(vduId);
        const name = isMapping(node.properties) ? node.properties.name : undefined;
        if (typeof name !== "string" || name === "") {
            fail(`${field}.properties.name`, "must be the name of the Kubernetes workload (Deployment, StatefulSet, ReplicaSet, DaemonSet or Pod) this VDU is");
            continue;
        }
        if (name.length > 253 || !K8S_NAME.test(name)) {
            fail(`${field}.properties.name`, `"${name}" can never match a Kubernetes workload: names are lower case letters, digits, '-' and '.' (RFC 1123), at most 253 characters`);
            continue;
        }
        const other = byName.get(name);
        if (other !== undefined) {
            fail(`${field}.properties.name`, `"${name}" is the name of VDU ${other} too: a workload can be only one VDU`);
            continue;
        }
        byName.set(name, vduId);
        vdus.push({ vduId, name });
    }
    return { vdus, vduIds };
}

/** `topology_template.policies`: a list of one-key mappings, or one mapping, which Tacker takes as a list of it. */
function listPolicies(topology: Mapping, fail: Fail): Policy[] {
    const raw = topology.policies;
    if (raw === undefined) return [];
    const entries = Array.isArray(raw)
        ? raw.map((entry, i) => ({ field: `topology_template.policies[${i}]`, entry }))
        : [{ field: "topology_template.policies", entry: raw }];
    const policies: Policy[] = [];
    for (const { field, entry } of entries) {
        if (!isMapping(entry)) {
            fail(field, "must be a mapping of a policy name to the policy");
            continue;
        }
        for (const [name, body] of Object.entries(entry)) {
            if (!isMapping(body) || typeof body.type !== "string") fail(`${field}.${name}`, "must be a policy with a `type`");
            else policies.push({ field: `${field}.${name}`, name, body });
        }
    }
    return policies;
}

/** A whole number of at least `min`, or the reason it is not. */
function count(value: unknown, min: number): string | undefined {
    if (typeof value === "number" && Number.isSafeInteger(value) && value >= min) return undefined;
    const shown = typeof value === "string" ? `"${value}"` : value === undefined ? "missing" : JSON.stringify(value);
    return `must be a whole number of at least ${min}, not ${shown}`;
}

/** The `targets` of a policy: VDU ids of this flavour, at least one. */
function vduTargets(policy: Policy, vduIds: Set<string>, fail: Fail): string[] {
    const targets = policy.body.targets;
    const field = `${policy.field}.targets`;
    if (!Array.isArray(targets) || targets.length === 0) {
        fail(field, `must list the VDUs this ${policy.body.type} applies to`);
        return [];
    }
    const found: string[] = [];
    targets.forEach((t, i) => {
        if (typeof t === "string" && vduIds.has(t)) found.push(t);
        else fail(`${field}[${i}]`, `${JSON.stringify(t)} is not a ${VDU_TYPE} node template of this flavour`);
    });
    return found;
}

function readInitialDeltas(policies: Policy[], vduIds: Set<string>, fail: Fail): Record<string, number> {
    const initial: Record<string, number> = {};
    const setBy = new Map<string, string>();
    for (const policy of policies) {
        const delta = isMapping(policy.body.properties) ? policy.body.properties.initial_delta : undefined;
        const instances = isMapping(delta) ? delta.number_of_instances : undefined;
        const field = `${policy.field}.properties.initial_delta.number_of_instances`;
        const bad = count(instances, 0);
        if (bad) fail(field, bad);
        for (const vduId of vduTargets(policy, vduIds, fail)) {
            const other = setBy.get(vduId);
            // Tacker v1 takes the last such policy and v2 the first: which one applies is unclear.
            if (other !== undefined) fail(`${policy.field}.targets`, `${vduId} already has an initial delta in ${other}`);
            else if (!bad) {
                setBy.set(vduId, policy.name);
                initial[vduId] = instances as number;
            }
        }
    }
    return initial;
}

interface Aspect {
    aspectId: string;
    maxScaleLevel: number;
    /** The scaling delta id every step applies: `step_deltas[0]`. */
    stepDelta?: string;
    deltas: { vduId: string; instances: number }[];
}

function readAspects(policies: Policy[], fail: Fail): Map<string, Aspect> {
    const aspects = new Map<string, Aspect>();
    for (const policy of policies) {
        const field = `${policy.field}.properties.aspects`;
        const declared = isMapping(policy.body.properties) ? policy.body.properties.aspects : undefined;
        if (!isMapping(declared) || Object.keys(declared).length === 0) {
            fail(field, "must be a mapping of aspect ids to scaling aspects (at least one)");
            continue;
        }
        for (const [aspectId, value] of Object.entries(declared)) {
            const at = `${field}.${aspectId}`;
            if (aspects.has(aspectId)) {
                fail(at, `aspect ${aspectId} is declared twice`);
                continue;
            }
            if (!isMapping(value)) {
                fail(at, "must be a scaling aspect (name, description, max_scale_level, step_deltas)");
                continue;
            }
            const bad = count(value.max_scale_level, 0);
            if (bad) fail(`${at}.max_scale_level`, bad);
            aspects.set(aspectId, {
                aspectId,
                maxScaleLevel: bad ? 0 : (value.max_scale_level as number),
                stepDelta: readStepDelta(value.step_deltas, `${at}.step_deltas`, fail),
                deltas: [],
            });
        }
    }
    return aspects;
}

/**
 * Tacker scales every step by `step_deltas[0]` ("Tacker does not support non-uniform deltas",
 * `Vnfd.get_scale_vdu_and_num`); a list naming different deltas is refused rather than half applied.
 */
function readStepDelta(stepDeltas: unknown, field: string, fail: Fail): string | undefined {
    if (!Array.isArray(stepDeltas) || stepDeltas.length === 0 || !stepDeltas.every((d) => typeof d === "string" && d !== "")) {
        fail(field, "must list the scaling delta id (e.g. [delta_1]) each step applies");
        return undefined;
    }
    if (new Set(stepDeltas).size > 1) {
        fail(field, `names different deltas (${stepDeltas.join(", ")}): only uniform steps, one delta id, are supported, as in Tacker`);
        return undefined;
    }
    return stepDeltas[0] as string;
}

function readAspectDeltas(policy: Policy, aspects: Map<string, Aspect>, vduIds: Set<string>, scaledBy: Map<string, string>, fail: Fail): void {
    const props = isMapping(policy.body.properties) ? policy.body.properties : {};
    const field = `${policy.field}.properties`;
    const aspectId = props.aspect;
    const aspect = typeof aspectId === "string" ? aspects.get(aspectId) : undefined;
    if (aspect === undefined) {
        const known = [...aspects.keys()].join(", ") || "none";
        fail(`${field}.aspect`, `${JSON.stringify(aspectId ?? null)} is not an aspect of ${SCALING_ASPECTS} (declared: ${known})`);
    }
    const deltas = props.deltas;
    if (!isMapping(deltas) || Object.keys(deltas).length === 0) {
        fail(`${field}.deltas`, "must be a mapping of scaling delta ids to {number_of_instances}");
        vduTargets(policy, vduIds, fail);
        return;
    }
    let badDelta = false;
    for (const [deltaId, delta] of Object.entries(deltas)) {
        const bad = count(isMapping(delta) ? delta.number_of_instances : undefined, 0);
        if (bad) fail(`${field}.deltas.${deltaId}.number_of_instances`, bad);
        badDelta ||= bad !== undefined;
    }
    const targets = vduTargets(policy, vduIds, fail);
    if (aspect === undefined || aspect.stepDelta === undefined || badDelta) return;

    const step = deltas[aspect.stepDelta];
    if (step === undefined) {
        // Tacker only finds this out when scaling (DeltaMissingInVnfd).
        fail(`${field}.deltas`, `has no delta ${aspect.stepDelta}, the step delta of aspect ${aspect.aspectId}`);
        return;
    }
    const instances = (step as Mapping).number_of_instances as number;
    if (instances === 0) {
        // Tacker divides by it to find a VDU's scale level.
        fail(`${field}.deltas.${aspect.stepDelta}.number_of_instances`, `is the step of aspect ${aspect.aspectId}: it must be at least 1`);
        return;
    }
    for (const vduId of targets) {
        const other = scaledBy.get(vduId);
        if (other !== undefined) {
            // Tacker finds a VDU's scale level from the first aspect scaling it (kubernetes_common.py _calc_scale_level).
            fail(`${policy.field}.targets`, `${vduId} is already scaled by aspect ${other}: a VDU belongs to one aspect`);
            continue;
        }
        scaledBy.set(vduId, aspect.aspectId);
        aspect.deltas.push({ vduId, instances });
    }
}
