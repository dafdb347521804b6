/**
 * Every stack config key at every depth, from the schema itself (config/schema.ts, through zod's JSON Schema
 * of what a user writes): its type, default, allowed values and description, and an example from the example
 * stacks (`stacks/Pulumi.*.yaml`) where one of them sets it. docs/configuration.md holds what this prints.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { z } from "zod";
import { StackConfigSchema } from "../config/schema";

type JsonSchema = {
    type?: string | string[];
    description?: string;
    default?: unknown;
    enum?: unknown[];
    const?: unknown;
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
    properties?: Record<string, JsonSchema>;
    additionalProperties?: JsonSchema | boolean;
    items?: JsonSchema;
    anyOf?: JsonSchema[];
    oneOf?: JsonSchema[];
};

/** One documented key. */
export interface KeyRow {
    /** `masters.count`, `storageServer.volumes[].sizeGb`, `heal.nodes.<name>`. */
    path: string;
    type: string;
    default?: unknown;
    allowed?: string;
    description?: string;
}

/** The schema as the user writes config (defaults are optional there), as JSON Schema. */
function stackConfigJsonSchema(): JsonSchema {
    return z.toJSONSchema(StackConfigSchema, { io: "input", unrepresentable: "any" }) as JsonSchema;
}

function alternatives(node: JsonSchema): JsonSchema[] {
    return node.anyOf ?? node.oneOf ?? [node];
}

function typeOf(node: JsonSchema): string {
    const kinds = alternatives(node).map((n) => {
        if (n.enum) return typeof n.enum[0];
        if (n.const !== undefined) return typeof n.const;
        if (n.type === "array") return `array of ${n.items ? typeOf(n.items) : "any"}`;
        if (n.type === "object" && !n.properties && typeof n.additionalProperties === "object") return `map of ${typeOf(n.additionalProperties)}`;
        return Array.isArray(n.type) ? n.type.join(" or ") : (n.type ?? "any");
    });
    return [...new Set(kinds)].join(" or ");
}

function allowedOf(node: JsonSchema): string | undefined {
    const values = alternatives(node).flatMap((n) => n.enum ?? (n.const !== undefined ? [n.const] : []));
    if (values.length) return values.map((v) => `\`${String(v)}\``).join(", ");
    const low = node.minimum ?? node.exclusiveMinimum;
    if (low !== undefined || node.maximum !== undefined) return [low !== undefined ? `≥ ${low}` : "", node.maximum !== undefined ? `≤ ${node.maximum}` : ""].filter(Boolean).join(", ");
    return undefined;
}

/**
 * Every key of the stack config, depth first, each object before its fields; a top-level key's description is
 * Pulumi.yaml's where the schema has none (the project's config block describes each one).
 */
export function stackConfigKeys(projectDir: string): KeyRow[] {
    const project = YAML.parse(fs.readFileSync(path.join(projectDir, "Pulumi.yaml"), "utf8")) as { config: Record<string, { description?: string }> };
    return keyRows(stackConfigJsonSchema()).map((r) => (r.description || r.path.includes(".") ? r : { ...r, description: project.config[r.path]?.description }));
}

/** Every key under `node`, depth first, each object before its fields. */
function keyRows(node: JsonSchema, prefix = ""): KeyRow[] {
    const rows: KeyRow[] = [];
    for (const [name, child] of Object.entries(node.properties ?? {})) {
        const at = prefix ? `${prefix}.${name}` : name;
        rows.push({ path: at, type: typeOf(child), default: child.default, allowed: allowedOf(child), description: child.description });
        for (const alternative of alternatives(child)) {
            if (alternative.properties) rows.push(...keyRows(alternative, at));
            if (alternative.type === "array" && alternative.items?.properties) rows.push(...keyRows(alternative.items, `${at}[]`));
            if (!alternative.properties && typeof alternative.additionalProperties === "object" && alternative.additionalProperties.properties) rows.push(...keyRows(alternative.additionalProperties, `${at}.<name>`));
        }
    }
    return rows;
}

/** The first example stack that sets `dotted` (the first element of a list standing for `[]`), and its value. */
function exampleOf(stacks: { file: string; config: Record<string, unknown> }[], dotted: string): string | undefined {
    for (const { file, config } of stacks) {
        let value: unknown = config;
        for (const part of dotted.split(".")) {
            const [key, list] = [part.replace(/\[\]$/, ""), part.endsWith("[]")];
            value = value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
            if (list) value = Array.isArray(value) ? value[0] : undefined;
        }
        if (value === undefined || (value && typeof value === "object")) continue;
        const shown = JSON.stringify(value);
        return `\`${shown.length > 40 ? `${shown.slice(0, 37)}...` : shown}\` (${file})`;
    }
    return undefined;
}

function exampleStacks(projectDir: string): { file: string; config: Record<string, unknown> }[] {
    const dir = path.join(projectDir, "stacks");
    return fs
        .readdirSync(dir)
        .filter((f) => /^Pulumi\..+\.yaml$/.test(f))
        .sort()
        .map((file) => {
            const config = ((YAML.parse(fs.readFileSync(path.join(dir, file), "utf8")) ?? {}).config ?? {}) as Record<string, unknown>;
            // Secret values are `{ secure: ... }` objects, never shown.
            return { file, config: Object.fromEntries(Object.entries(config).filter(([k]) => k.startsWith("k8s-vnf:")).map(([k, v]) => [k.slice("k8s-vnf:".length), v])) };
        });
}

/** Text as one Markdown table cell: its pipes escaped, on one line. */
export const cell = (text: string) => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The reference of every key: a table per top-level key. */
export function schemaReference(projectDir: string): string {
    const stacks = exampleStacks(projectDir);
    const rows = stackConfigKeys(projectDir);
    const out: string[] = [];
    for (const top of rows.filter((r) => !r.path.includes(".") && !r.path.includes("["))) {
        out.push(`### \`k8s-vnf:${top.path}\``, "", cell(top.description ?? ""), "");
        out.push("| key | type | default | allowed | description | example |", "|---|---|---|---|---|---|");
        for (const r of rows.filter((x) => x.path === top.path || x.path.startsWith(`${top.path}.`) || x.path.startsWith(`${top.path}[]`))) {
            const shownDefault = r.default === undefined || (typeof r.default === "object" && r.default !== null && Object.keys(r.default).length === 0) ? "" : `\`${JSON.stringify(r.default)}\``;
            out.push(`| \`${r.path}\` | ${cell(r.type)} | ${cell(shownDefault)} | ${cell(r.allowed ?? "")} | ${cell(r.description ?? "")} | ${cell(exampleOf(stacks, r.path) ?? "")} |`);
        }
        out.push("");
    }
    return out.join("\n");
}
