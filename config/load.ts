/**
 * Reads a VNF configuration: from the Pulumi config map (the program) or from plain objects (the converter,
 * the LCM service, tests). Every problem is collected and thrown as one {@link ConfigError}.
 */
import { z } from "zod";
import { formatPath } from "./fields";
import { resolveVnf, ResolveOptions } from "./resolve";
import { findSecretLeaves, isSecretName } from "./secrets";
import { SCALAR_KEYS, StackConfig, StackConfigSchema } from "./schema";
import { ConfigError, ConfigProblem, VnfSpec } from "./spec";

export const PROJECT = "k8s-vnf";

export interface LoadedVnf {
    spec: VnfSpec;
    config: StackConfig;
    warnings: ConfigProblem[];
}

/** A leaf of the configuration that holds a secret. */
export interface SecretLocation {
    /** Top-level config key (`masters`). */
    key: string;
    /** Full path (`masters.password`). */
    path: string;
    value: string;
}

/** Every secret in a configuration object, by the project's one rule (./secrets). */
export function findSecrets(config: Record<string, unknown>): SecretLocation[] {
    return findSecretLeaves(config).map(({ trail, value }) => ({ key: String(trail[0]), path: formatPath(trail), value }));
}

/**
 * Maps zod issues to problems; one problem per unknown key so each names its own path. A field that is not
 * there is "missing"; `missingSecret` says how to set one that holds a secret.
 */
export function zodProblems(error: z.ZodError, missingSecret: (path: string) => string = () => "missing"): ConfigProblem[] {
    return error.issues.flatMap((issue): ConfigProblem[] => {
        if (issue.code === "unrecognized_keys") {
            return issue.keys.map((k) => ({ path: formatPath([...issue.path, k]), message: "unknown field" }));
        }
        if (isMissing(issue)) {
            const path = formatPath(issue.path);
            return [{ path, message: isSecretName(String(issue.path.at(-1))) ? missingSecret(path) : "missing: this field is required" }];
        }
        if (issue.code === "invalid_union" || issue.code === "invalid_value" || issue.code === "invalid_type") {
            // zod's own wording is fine for these, but never echo the received value.
            return [{ path: formatPath(issue.path), message: issue.message.replace(/, received .*$/, "") }];
        }
        return [{ path: formatPath(issue.path), message: issue.message }];
    });
}

/** Tells whether Pulumi holds a full config key (`k8s-vnf:masters`) encrypted. */
export type SecretKeyTest = (fullKey: string) => boolean;

export interface ParseOptions extends ResolveOptions {
    /** Checks that secrets are Pulumi secrets; left out (the converter) the check is skipped. */
    isSecretKey?: SecretKeyTest;
}

/**
 * {@link parseVnfConfig} of a config converted from a request: its problems are named by `rename` (the request's
 * own field paths) before they are thrown.
 */
export function parseConvertedConfig(raw: Record<string, unknown>, options: ParseOptions, source: string, rename: (p: ConfigProblem) => ConfigProblem): LoadedVnf {
    try {
        return parseVnfConfig(raw, options, source);
    } catch (e) {
        if (e instanceof ConfigError) throw new ConfigError(e.problems.map(rename), source);
        throw e;
    }
}

/** Validates a configuration object (keys without the `k8s-vnf:` prefix). Throws {@link ConfigError}. */
export function parseVnfConfig(raw: Record<string, unknown>, options: ParseOptions, source?: string): LoadedVnf {
    const parsed = StackConfigSchema.safeParse(raw);
    if (!parsed.success) throw new ConfigError(withTheRest(raw, parsed.error, options, source), source);
    const problems: ConfigProblem[] = [];
    if (options.isSecretKey) {
        for (const s of findSecrets(raw)) {
            if (!options.isSecretKey(`${PROJECT}:${s.key}`)) {
                problems.push({ path: s.path, message: `must be a Pulumi secret: pulumi config set --secret --path '${s.path}'` });
            }
        }
    }
    const resolved = resolveVnf(parsed.data, options);
    problems.push(...resolved.problems);
    if (problems.length || !resolved.spec) throw new ConfigError(problems, source);
    return { spec: resolved.spec, config: parsed.data, warnings: resolved.warnings };
}

/**
 * Reads the `k8s-vnf:` keys of the Pulumi config map (`pulumi.runtime.allConfig()`): scalar keys are plain
 * strings, structured keys JSON. Keys of other namespaces (e.g. `openstack:`) belong to their providers.
 */
export function configFromPulumiMap(all: Record<string, string>): { raw: Record<string, unknown>; problems: ConfigProblem[] } {
    const raw: Record<string, unknown> = {};
    const problems: ConfigProblem[] = [];
    const known = new Set(Object.keys(StackConfigSchema.shape));
    for (const [fullKey, text] of Object.entries(all)) {
        if (!fullKey.startsWith(`${PROJECT}:`)) continue;
        const key = fullKey.slice(PROJECT.length + 1);
        if (!known.has(key)) {
            problems.push({ path: key, message: `unknown config key ${fullKey}` });
            continue;
        }
        if (SCALAR_KEYS.has(key)) {
            // Pulumi fills the declared default "" into scalar keys the stack left out.
            if (text !== "") raw[key] = text;
            continue;
        }
        try {
            raw[key] = JSON.parse(text);
        } catch {
            problems.push({ path: key, message: "must be an object or a list (structured config)" });
        }
    }
    // Pulumi fills declared defaults (`{}`, `[]`) into keys the stack left out; treat them as absent.
    for (const [k, v] of Object.entries(raw)) {
        if (v !== null && typeof v === "object" && Object.keys(v).length === 0) delete raw[k];
    }
    return { raw, problems };
}

/** Loads and validates the stack's configuration from the Pulumi config map. */
export function loadFromPulumiConfig(all: Record<string, string>, isSecretKey: SecretKeyTest, options: ResolveOptions): LoadedVnf {
    const { raw, problems } = configFromPulumiMap(all);
    if (problems.length) throw new ConfigError(problems);
    return parseVnfConfig(raw, { ...options, isSecretKey });
}

/** A field that is not there: zod's invalid_type with nothing received. */
function isMissing(issue: z.core.$ZodIssue): boolean {
    return issue.code === "invalid_type" && / received undefined$/.test(issue.message);
}

const MISSING_SECRET = (path: string) => `missing: set it as a secret (pulumi config set --secret --path '${path}')`;
/** What stands in for a missing secret while the checks after the schema's run. */
const STAND_IN = "(missing)";

/**
 * The schema's problems, and when the only ones are secrets not set yet (an example stack as it comes), the
 * problems of the checks after the schema's too, with those secrets standing in as set: every problem in one
 * run, not one layer after another.
 */
function withTheRest(raw: Record<string, unknown>, error: z.ZodError, options: ParseOptions, source?: string): ConfigProblem[] {
    const problems = zodProblems(error, MISSING_SECRET);
    const missing = error.issues.filter((i) => isMissing(i) && isSecretName(String(i.path.at(-1))));
    if (missing.length !== error.issues.length) return problems;
    const filled = structuredClone(raw) as Record<string, unknown>;
    for (const issue of missing) setAt(filled, issue.path as (string | number)[], STAND_IN);
    const standIns = new Set(missing.map((i) => formatPath(i.path)));
    try {
        parseVnfConfig(filled, options, source);
    } catch (e) {
        if (!(e instanceof ConfigError)) throw e;
        problems.push(...e.problems.filter((p) => !standIns.has(p.path)));
    }
    return problems;
}

/** Sets `value` at `trail` (keys and indices) in `root`, which has every container on the way. */
function setAt(root: Record<string, unknown>, trail: (string | number)[], value: unknown): void {
    let node = root as Record<string | number, unknown>;
    for (const key of trail.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
    node[trail[trail.length - 1]] = value;
}
