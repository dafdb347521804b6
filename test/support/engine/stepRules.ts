/**
 * Pulumi's rules for turning a registration into steps, as pure functions over the checkpoint. Each cites
 * the engine source at tag v3.248.0 (github.com/pulumi/pulumi, pkg/resource/deploy/step_generator.go unless
 * said otherwise).
 */
import { ResourceState } from "./state";

export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
const SECRET_SIG = "4dabf18193072939515e22adb298388d";
const SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270";

export const isSecretValue = (v: unknown): v is { value: unknown } => !!v && typeof v === "object" && (v as Record<string, unknown>)[SECRET_SIG] === SECRET_VALUE;
export const secretValue = (value: unknown) => ({ [SECRET_SIG]: SECRET_VALUE, value });

/** Strips secret wrappers (a dynamic provider gets plaintext: the host answers `acceptSecrets: false`). */
export function plain(v: unknown): unknown {
    if (isSecretValue(v)) return plain(v.value);
    if (Array.isArray(v)) return v.map(plain);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
    return v;
}

/** `PropertyValue.ContainsSecrets`. */
export function containsSecret(v: unknown): boolean {
    if (isSecretValue(v)) return true;
    if (Array.isArray(v)) return v.some(containsSecret);
    if (v && typeof v === "object") return Object.values(v).some(containsSecret);
    return false;
}

export function containsUnknown(v: unknown): boolean {
    if (v === UNKNOWN) return true;
    if (Array.isArray(v)) return v.some(containsUnknown);
    if (v && typeof v === "object") return Object.values(v).some(containsUnknown);
    return false;
}

/**
 * `shouldTriggerReplace`: unknowns always count as a change; a null old or new trigger is "no trigger", so
 * a trigger's first value replaces nothing; otherwise any difference replaces.
 */
export function shouldTriggerReplace(next: unknown, old: unknown): boolean {
    const n = plain(next);
    const o = plain(old);
    if (containsUnknown(o) || containsUnknown(n)) return true;
    if (o === null || o === undefined || n === null || n === undefined) return false;
    return JSON.stringify(n) !== JSON.stringify(o);
}

export interface DiffAnswer {
    changes: "some" | "none" | "unknown";
    replaces: string[];
    deleteBeforeReplace: boolean;
    /** `DiffResult.ChangedKeys` (the provider's `diffs`); a dynamic provider returns none. */
    changedKeys?: string[];
    /** `DiffResult.DetailedDiff`, by property path; undefined when the provider returned none (`hasDetailedDiff` false). */
    detailedDiff?: Record<string, PropertyDiff>;
}

/** `plugin.PropertyDiff` as the events carry it (sdk/go/common/apitype/events.go `PropertyDiff`). */
export interface PropertyDiff {
    kind: "add" | "add-replace" | "delete" | "delete-replace" | "update" | "update-replace";
    inputDiff: boolean;
}

const pathOf = (prefix: string, key: string | number) => (typeof key === "number" ? `${prefix}[${key}]` : prefix ? `${prefix}.${key}` : key);

/**
 * `PropertyMap.Diff` then `plugin.NewDetailedDiffFromObjectDiff(diff, inputDiff)` (sdk/go/common/resource/properties_diff.go,
 * sdk/go/common/resource/plugin/provider.go): the changed top-level keys and one entry per changed leaf path
 * (`a.b[0]`), arrays and objects compared element by element; unknowns differ from everything.
 */
export function inputDiff(olds: Record<string, unknown>, news: Record<string, unknown>): { changedKeys: string[]; detailedDiff: Record<string, PropertyDiff> } {
    const detailed: Record<string, PropertyDiff> = {};
    const walk = (prefix: string, o: unknown, n: unknown): boolean => {
        const a = plain(o);
        const b = plain(n);
        if (Array.isArray(a) && Array.isArray(b)) {
            let any = false;
            for (let i = 0; i < Math.max(a.length, b.length); i++) {
                if (i >= a.length) detailed[pathOf(prefix, i)] = { kind: "add", inputDiff: true };
                else if (i >= b.length) detailed[pathOf(prefix, i)] = { kind: "delete", inputDiff: true };
                else if (!walk(pathOf(prefix, i), a[i], b[i])) continue;
                any = true;
            }
            return any;
        }
        if (a && b && typeof a === "object" && typeof b === "object" && !Array.isArray(a) && !Array.isArray(b)) {
            let any = false;
            for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
                const x = (a as Record<string, unknown>)[k];
                const y = (b as Record<string, unknown>)[k];
                if (x === undefined || x === null) {
                    if (y === undefined || y === null) continue;
                    detailed[pathOf(prefix, k)] = { kind: "add", inputDiff: true };
                } else if (y === undefined || y === null) detailed[pathOf(prefix, k)] = { kind: "delete", inputDiff: true };
                else if (!walk(pathOf(prefix, k), x, y)) continue;
                any = true;
            }
            return any;
        }
        if (a !== UNKNOWN && b !== UNKNOWN && JSON.stringify(a) === JSON.stringify(b)) return false;
        detailed[prefix] = { kind: "update", inputDiff: true };
        return true;
    };
    const changedKeys = [...new Set([...Object.keys(olds), ...Object.keys(news)])].sort().filter((k) => {
        const before = Object.keys(detailed).length;
        walk("", { [k]: olds[k] }, { [k]: news[k] });
        return Object.keys(detailed).length > before;
    });
    return { changedKeys, detailedDiff: detailed };
}

export type Decision = { op: "same" } | { op: "update" } | { op: "replace"; deleteBeforeReplace: boolean };

/**
 * `continueStepsFromDiff`: a replace when the diff names replace keys or a trigger fired; an update for
 * other changes; the resource option `deleteBeforeReplace`, when set, overrides the provider's answer.
 * `diffResource` turns an unknown answer into "some" when the inputs differ.
 */
export function decide(diff: DiffAnswer, triggerReplace: boolean, deleteBeforeReplaceOption: boolean | undefined, inputsDiffer: boolean): Decision {
    const changes = diff.changes === "unknown" ? (inputsDiffer ? "some" : "none") : diff.changes;
    if (changes !== "some" && !triggerReplace) return { op: "same" };
    if (diff.replaces.length > 0 || triggerReplace) return { op: "replace", deleteBeforeReplace: deleteBeforeReplaceOption ?? diff.deleteBeforeReplace };
    return { op: "update" };
}

/** The URN of a provider reference `<urn>::<id>` (providers.ParseReference, pkg/resource/deploy/providers/reference.go). */
export function providerUrn(reference: string): string {
    return reference.slice(0, reference.lastIndexOf("::"));
}

/** `State.GetAllDependencies` (sdk/go/common/resource/resource_state.go): its provider first; without the parent. */
function dependencyUrns(r: ResourceState): string[] {
    return [...(r.provider ? [providerUrn(r.provider)] : []), ...r.dependencies, ...Object.values(r.propertyDependencies).flat(), ...(r.deletedWith ? [r.deletedWith] : [])].filter(Boolean);
}

/**
 * `DependencyGraph.DependingOn` (pkg/resource/graph/dependency_graph.go) without children: every resource
 * after `root` in the checkpoint's (topological) order that depends on it directly or through another
 * dependent, in that order. `ignore` skips resources already operated on in this run.
 */
export function dependingOn(resources: ResourceState[], root: ResourceState, ignore: Set<string>): ResourceState[] {
    const set = new Set([root.urn]);
    const out: ResourceState[] = [];
    for (const candidate of resources.slice(resources.indexOf(root) + 1)) {
        if (ignore.has(candidate.urn)) continue;
        if (dependencyUrns(candidate).some((u) => set.has(u))) {
            out.push(candidate);
            set.add(candidate.urn);
        }
    }
    return out;
}

/**
 * `calculateDependentReplacements`: of the root's dependents, those whose provider is being replaced, and
 * those whose inputs take a property from a resource being replaced and whose provider's Diff, with those
 * inputs unknown, answers replace. Returned in dependency order; they are deleted in reverse before the root.
 */
export async function dependentReplacements(
    resources: ResourceState[],
    root: ResourceState,
    operatedOn: Set<string>,
    diffWithUnknowns: (r: ResourceState, inputs: Record<string, unknown>) => Promise<DiffAnswer>,
): Promise<ResourceState[]> {
    const replaceSet = new Set([root.urn]);
    const out: ResourceState[] = [];
    for (const d of dependingOn(resources, root, operatedOn)) {
        if (!d.custom) continue;
        // "If the resource's provider is in the replace set, we must replace this resource."
        if (d.provider && replaceSet.has(providerUrn(d.provider))) {
            out.push(d);
            replaceSet.add(d.urn);
            continue;
        }
        let depends = false;
        const inputs: Record<string, unknown> = {};
        for (const [key, value] of Object.entries(d.inputs)) {
            const hit = (d.propertyDependencies[key] ?? []).some((u) => replaceSet.has(u));
            depends ||= hit;
            inputs[key] = hit ? UNKNOWN : value;
        }
        if (!depends) continue;
        if ((await diffWithUnknowns(d, inputs)).replaces.length > 0) {
            out.push(d);
            replaceSet.add(d.urn);
        }
    }
    return out;
}

/**
 * `DependencyGraph.DependenciesOf`: a resource's dependencies and its parent, and the children of a component
 * it depends on that come before it in the state (a dependency on a component is one on everything under it).
 */
function dependenciesOf(resources: ResourceState[], r: ResourceState): Set<string> {
    const direct = new Set(dependencyUrns(r));
    const out = new Set(direct);
    if (r.parent) out.add(r.parent);
    const before = resources.slice(0, resources.indexOf(r));
    for (const candidate of before) {
        if (!candidate.custom && direct.has(candidate.urn)) for (const child of descendants(before, candidate.urn)) out.add(child);
    }
    return out;
}

function descendants(resources: ResourceState[], urn: string): string[] {
    const children = resources.filter((r) => r.parent === urn).map((r) => r.urn);
    return [...children, ...children.flatMap((c) => descendants(resources, c))];
}

/**
 * `ScheduleDeletes`: the condemned resources in antichains, each deletable in parallel once the ones
 * before it are gone. A resource goes only after everything that depends on it (or is its child).
 */
export function scheduleDeletes(resources: ResourceState[], condemned: ResourceState[]): ResourceState[][] {
    const left = new Set(condemned);
    const chains: ResourceState[][] = [];
    while (left.size) {
        const urns = new Set([...left].map((r) => r.urn));
        const chain = [...left].filter((r) => ![...dependenciesOf(resources, r)].some((u) => urns.has(u) && u !== r.urn));
        if (!chain.length) throw new Error(`dependency cycle among ${[...urns].join(", ")}`);
        for (const r of chain) left.delete(r);
        chains.push(chain);
    }
    return chains.reverse();
}

/**
 * The URN of a registration (`resource.NewURN`, sdk/go/common/resource/urn.go): the parent's qualified type
 * in front of the type, except under the root stack.
 */
export function urnOf(stack: string, project: string, type: string, name: string, parentUrn: string): string {
    const parentType = parentUrn ? parentUrn.split("::")[2] : "";
    const qualified = !parentUrn || parentType === "pulumi:pulumi:Stack" ? type : `${parentType}$${type}`;
    return `urn:pulumi:${stack}::${project}::${qualified}::${name}`;
}

/** A URN's own type: the last of its qualified type's parts (`parent$child`). */
export function typeOfUrn(urn: string): string {
    return urn.split("::")[2].split("$").pop()!;
}

/**
 * `processIgnoreChanges` (pkg/resource/deploy/step_generator.go) with `PropertyPath.Reset`
 * (sdk/go/common/resource/properties_path.go): for a resource that exists, each ignored property takes its
 * old input value before Check and Diff see the new inputs, and one the old inputs lack is dropped from the
 * new ones. Top-level keys only here.
 */
export function ignoringChanges(inputs: Record<string, unknown>, oldInputs: Record<string, unknown>, ignored: string[]): Record<string, unknown> {
    const out = { ...inputs };
    for (const key of ignored) {
        if (key in oldInputs) out[key] = oldInputs[key];
        else delete out[key];
    }
    return out;
}
