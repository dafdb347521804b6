/**
 * The project as the Pulumi CLI reads it (v3.248.0): Pulumi.yaml found upwards from the working directory
 * (sdk/go/common/workspace/loaders.go, `DetectProjectPath`), its `stackConfigDir`, `backend.url` and typed
 * `config:` declarations; stack config merged with the declared defaults and checked against the types
 * before an update (sdk/go/common/workspace/config.go `mergeConfig`, `validateStackConfigValue`;
 * project.go `ValidateConfigValue`, `InferFullTypeName`).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";

export interface ConfigItemsType {
    type: string;
    items?: ConfigItemsType;
}

export interface ProjectConfigType {
    type?: string;
    items?: ConfigItemsType;
    default?: unknown;
    value?: unknown;
    secret?: boolean;
}

export interface Project {
    dir: string;
    name: string;
    stackConfigDir: string;
    backendUrl?: string;
    config: Record<string, ProjectConfigType>;
}

export function findProject(cwd: string): Project {
    for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
        for (const name of ["Pulumi.yaml", "Pulumi.yml"]) {
            const file = path.join(dir, name);
            if (fs.existsSync(file)) return readProject(file);
        }
        if (dir === path.dirname(dir)) break;
    }
    throw new Error(`no Pulumi.yaml project file found (searching upwards from ${cwd}). If you have not created a project yet, use \`pulumi new\` to do so`);
}

function readProject(file: string): Project {
    const doc = (YAML.parse(fs.readFileSync(file, "utf8")) ?? {}) as Record<string, any>;
    if (!doc.name) throw new Error("project is missing a 'name' attribute");
    const config: Record<string, ProjectConfigType> = {};
    for (const [key, declared] of Object.entries((doc.config ?? {}) as Record<string, unknown>)) {
        // A scalar or list is shorthand: a default for the project's own keys, a value for other namespaces
        // (project.go, the rewrite of `config` before the project is unmarshalled).
        const shorthand = declared === null || typeof declared !== "object" || Array.isArray(declared);
        const own = !key.includes(":") || key.startsWith(`${doc.name}:`);
        config[key] = shorthand ? (own ? { default: declared } : { value: declared }) : (declared as ProjectConfigType);
    }
    return { dir: path.dirname(file), name: String(doc.name), stackConfigDir: String(doc.stackConfigDir ?? ""), backendUrl: doc.backend?.url, config };
}

/** Where a stack's config lives: `<project>/<stackConfigDir>/Pulumi.<stack>.yaml`. */
export function stackFilePath(project: Project, stack: string): string {
    return path.join(project.dir, project.stackConfigDir, `Pulumi.${stack}.yaml`);
}

/** A project key's full name: keys without a namespace belong to the project. */
export function fullKey(project: Project, key: string): string {
    return key.includes(":") ? key : `${project.name}:${key}`;
}

export interface StackValue {
    /** The value with secrets decrypted. */
    value: unknown;
    /** A map or a list (config.Value.Object()). */
    object: boolean;
    /** Whether it holds an encrypted value anywhere. */
    secret: boolean;
}

/**
 * `mergeConfig` with validation: declared defaults for keys the stack does not set, a refusal naming every
 * missing key, then each set value checked against its declared type.
 */
export function mergeAndValidate(project: Project, stack: string, values: Map<string, StackValue>): Map<string, StackValue> {
    const merged = new Map(values);
    const missing: string[] = [];
    for (const key of Object.keys(project.config).sort()) {
        const declared = project.config[key];
        const name = fullKey(project, key);
        if (merged.has(name)) continue;
        const fallback = declared.default !== undefined ? declared.default : declared.value;
        if (fallback === undefined) {
            if (name.startsWith(`${project.name}:`)) missing.push(key);
            continue;
        }
        merged.set(name, { value: fallback, object: fallback !== null && typeof fallback === "object", secret: false });
    }
    if (missing.length) throw new Error(`Stack '${stack}' is missing configuration value${missing.length > 1 ? "s" : ""} ${missing.map((k) => `'${k}'`).join(", ")}`);
    for (const key of Object.keys(project.config).sort()) {
        const declared = project.config[key];
        const stackValue = values.get(fullKey(project, key));
        if (!stackValue) continue;
        if (declared.secret && !stackValue.secret) throw new Error(`Stack '${stack}' with configuration key '${key}' must be encrypted as it's secret`);
        if (declared.type === undefined) continue;
        const content = stackValue.object ? stackValue.value : String(stackValue.value);
        if (!validateConfigValue(declared.type, declared.items, content)) {
            throw new Error(`Stack '${stack}' with configuration key '${key}' must be of type '${fullTypeName(declared.type, declared.items)}'`);
        }
    }
    return merged;
}

function validateConfigValue(type: string, items: ConfigItemsType | undefined, value: unknown): boolean {
    switch (type) {
        case "string":
            return typeof value === "string";
        case "integer":
            return (typeof value === "number" && Number.isInteger(value)) || (typeof value === "string" && /^[+-]?\d+$/.test(value));
        case "boolean":
            return typeof value === "boolean" || value === "true" || value === "false";
        case "object":
            return value !== null && typeof value === "object" && !Array.isArray(value);
        default:
            return Array.isArray(value) && items !== undefined && value.every((item) => validateConfigValue(items.type, items.items, item));
    }
}

function fullTypeName(type: string, items: ConfigItemsType | undefined): string {
    return items ? `array<${fullTypeName(items.type, items.items)}>` : type;
}
