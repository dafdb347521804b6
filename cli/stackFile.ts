/**
 * Stack files (`stacks/Pulumi.<stack>.yaml`) as the CLI reads and writes them, without the Pulumi CLI:
 * encrypted values stay opaque (`{secure: …}`), and only the keys that hold them are known to be secret.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { formatPath } from "../config/fields";
import { PROJECT } from "../config/load";
import { CONFIG_KEYS } from "../config/schema";
import { escapeAboveAscii, hasUnsafeChars, printable } from "./printable";

export interface StackFile {
    path: string;
    /** Everything but `config` (e.g. `encryptionsalt`), kept as it was. */
    rest: Record<string, unknown>;
    /** Config of other namespaces (`openstack:…`), kept as it was. */
    foreign: Record<string, unknown>;
    /** `k8s-vnf:` config, keys without the prefix; encrypted leaves as `{secure: …}`. */
    config: Record<string, unknown>;
    /** The file's text before any change, or undefined when it did not exist. */
    original?: string;
}

export function stackFilePath(projectDir: string, stack: string): string {
    return path.join(projectDir, "stacks", `Pulumi.${stack}.yaml`);
}

export function readStackFile(projectDir: string, stack: string): StackFile {
    const file = stackFilePath(projectDir, stack);
    if (!fs.existsSync(file)) return { path: file, rest: {}, foreign: {}, config: {} };
    const original = fs.readFileSync(file, "utf8");
    const doc = (YAML.parse(original) ?? {}) as Record<string, unknown>;
    const { config = {}, ...rest } = doc as { config?: Record<string, unknown> };
    const own: Record<string, unknown> = {};
    const foreign: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(config ?? {})) {
        if (k.startsWith(`${PROJECT}:`)) own[k.slice(PROJECT.length + 1)] = v;
        else if (!k.includes(":")) own[k] = v;
        else foreign[k] = v;
    }
    return { path: file, rest, foreign, config: own, original };
}

const isSecure = (v: unknown): v is { secure: string } => !!v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && "secure" in v;

/** The config with encrypted leaves replaced (for validation; by field path) or removed (to start a conversion from). */
export function mapSecureLeaves(value: unknown, replace: ((path: string) => unknown) | "remove", trail: (string | number)[] = []): unknown {
    if (Array.isArray(value)) return value.map((v, i) => mapSecureLeaves(v, replace, [...trail, i]));
    if (value && typeof value === "object") {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(value)) {
            if (isSecure(v)) {
                if (replace !== "remove") out[k] = replace(formatPath([...trail, k]));
            } else out[k] = mapSecureLeaves(v, replace, [...trail, k]);
        }
        return out;
    }
    return value;
}

/** The field path (`masters.password`, `storageServer.volumes[0].x`) of every encrypted leaf. */
export function securePaths(config: Record<string, unknown>): string[] {
    const found: string[] = [];
    const walk = (v: unknown, trail: (string | number)[]) => {
        if (isSecure(v)) found.push(formatPath(trail));
        else if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...trail, i]));
        else if (v && typeof v === "object") for (const [k, x] of Object.entries(v)) walk(x, [...trail, k]);
    };
    walk(config, []);
    return found;
}

/** Top-level keys that hold at least one encrypted value. */
export function keysWithSecrets(config: Record<string, unknown>): Set<string> {
    const found = new Set<string>();
    const has = (v: unknown): boolean => isSecure(v) || (!!v && typeof v === "object" && Object.values(v).some(has));
    for (const [k, v] of Object.entries(config)) if (has(v)) found.add(k);
    return found;
}

/**
 * Renders a stack file: the header comment, what it had besides config, then the config. Each header entry
 * stays one comment line whatever it holds (a request file's name may hold line breaks, and YAML keys after them).
 */
export function renderStackFile(file: StackFile, config: Record<string, unknown>, header: string[]): string {
    const doc = {
        ...file.rest,
        config: { ...file.foreign, ...Object.fromEntries(ordered(config).map(([k, v]) => [`${PROJECT}:${k}`, v])) },
    };
    const comments = header.map((line) => `# ${printable(line)}`.trimEnd()).join("\n");
    return `${comments}\n${stringifyEscaped(doc)}`;
}

/**
 * YAML text of a document whose strings may hold DEL, C1 controls or line separators: the yaml package
 * writes them raw, which Pulumi's go-yaml refuses ("control characters are not allowed") or reads as line
 * breaks. Strings that hold them are double-quoted, where `\x9b` and `\u2028` are escapes.
 */
function stringifyEscaped(doc: unknown): string {
    const document = new YAML.Document(doc);
    let escape = false;
    YAML.visit(document, {
        Scalar(_, node) {
            if (typeof node.value === "string" && hasUnsafeChars(node.value)) {
                node.type = YAML.Scalar.QUOTE_DOUBLE;
                escape = true;
            }
        },
    });
    const text = document.toString();
    return escape ? escapeAboveAscii(text) : text;
}

/** Config entries in the order of the schema (and of docs/configuration.md). */
function ordered(config: Record<string, unknown>): [string, unknown][] {
    const rank = (k: string) => {
        const i = (CONFIG_KEYS as readonly string[]).indexOf(k);
        return i < 0 ? CONFIG_KEYS.length : i;
    };
    return Object.entries(config).sort(([a], [b]) => rank(a) - rank(b));
}

/** Writes a file through a temporary file and a rename, so a reader never sees half of it. */
export function writeAtomically(file: string, text: string): void {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
}
