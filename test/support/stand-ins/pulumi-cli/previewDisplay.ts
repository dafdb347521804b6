/**
 * How `pulumi preview` shows a preview's engine events (v3.248.0, colors off):
 * - the default, non-interactive progress view: one row per shown step, `<prefix> <type> <name> <op>`
 *   (pkg/backend/display/progress.go, rows.go; the row layout is simplified: no table alignment, no spinner);
 * - `--diff` (pkg/backend/display/diff.go `renderDiffResourcePreEvent` → `renderDiff`; object_diff.go
 *   `getResourcePropertiesSummary`, `getResourcePropertiesDetails`, `printOldNewDiffs`, `printObjectDiff`,
 *   `printPropertyValueDiff`, `printPrimitivePropertyValue`): per step a header `<prefix><type>: (<op>)`, its
 *   `[id=…]` and `[urn=…]`, then the properties: a create its new inputs, a delete its old inputs, an update or
 *   replace the diff of the old inputs against the new (keys starting `__` ignored), arrays as `[i]:` rows,
 *   objects as `key:` rows, changed primitives `old => new`, unknowns `[unknown]`, secrets `[secret]`;
 * - `--json`: the `PreviewDigest` (pkg/backend/display/json.go `ShowPreviewDigest`, pkg/display/json.go);
 * - the summary (diff.go `renderSummaryEvent`): `Resources:`, `    + N to create`, …, `    N changes. M unchanged`.
 * What is shown follows display.go `shouldShow`: sames only with `--show-sames`; the non-logical halves of a
 * replacement (create-replacement, delete-replaced) not in the diff and JSON views unless
 * `--show-replacement-steps`; the root stack always.
 */
/** The engine's unknown value as the event log carries it (`computedValuePlaceholder`, pkg/resource/stack/deployment.go). */
const UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

type Json = Record<string, any>;
export type DisplayType = "progress" | "diff" | "json";

export interface DisplayOptions {
    type: DisplayType;
    showSames: boolean;
    showReplacementSteps: boolean;
}

/** deploy.RawPrefix (pkg/resource/deploy/step.go). */
const RAW_PREFIX: Record<string, string> = {
    same: "  ",
    create: "+ ",
    delete: "- ",
    update: "~ ",
    replace: "+-",
    "create-replacement": "++",
    "delete-replaced": "--",
    read: "> ",
    refresh: "~ ",
    "remove-pending-replace": "~ ",
};
/** deploy.StepOps, the summary's order. */
const STEP_OPS = ["same", "create", "update", "delete", "replace", "create-replacement", "delete-replaced", "read", "refresh", "remove-pending-replace"];
const isReplacementStep = (op: string) => op === "create-replacement" || op === "delete-replaced" || op === "replace";
const isRootStack = (m: Json) => m.type === "pulumi:pulumi:Stack";

function shouldShow(m: Json, options: DisplayOptions): boolean {
    if (m.op === "same") return options.showSames;
    if (!options.showReplacementSteps && options.type !== "progress" && !m.logical && isReplacementStep(m.op)) return false;
    return true;
}

function indentation(indent: number, op: string, prefix: boolean): string {
    const result = "    ".repeat(indent);
    if (!prefix || !result) return result;
    return result.slice(0, -2) + RAW_PREFIX[op];
}

const isObject = (v: unknown): v is Json => !!v && typeof v === "object" && !Array.isArray(v);
const isPrimitive = (v: unknown) => v === null || v === undefined || !(typeof v === "object");

function primitive(v: unknown): string {
    if (v === null || v === undefined) return "<null>";
    if (v === UNKNOWN_VALUE) return "[unknown]";
    if (v === "[secret]") return "[secret]";
    if (typeof v === "string") return JSON.stringify(v);
    return String(v);
}

/** `shouldPrintPropertyValue`: no nulls, empty strings, empty arrays or objects; unknowns only with `outs`. */
function worthPrinting(v: unknown, outs: boolean): boolean {
    if (v === null || v === undefined || v === "") return false;
    if (Array.isArray(v) && !v.length) return false;
    if (isObject(v) && !Object.keys(v).length) return false;
    if (v === UNKNOWN_VALUE && !outs) return false;
    return true;
}

class Printer {
    constructor(
        private readonly out: string[],
        readonly indent: number,
        readonly op: string,
        readonly prefix: boolean,
        readonly planning: boolean,
    ) {}

    with(changes: Partial<{ indent: number; op: string; prefix: boolean }>): Printer {
        return new Printer(this.out, changes.indent ?? this.indent, changes.op ?? this.op, changes.prefix ?? this.prefix, this.planning);
    }

    write(text: string): void {
        this.out.push(text);
    }

    indented(text: string): void {
        this.write(indentation(this.indent, this.op, this.prefix) + text);
    }

    unprefixed(text: string): void {
        this.write(indentation(this.indent, this.op, false) + text);
    }

    title(name: string, align: number): void {
        this.indented(`${name.padEnd(align)}: `);
    }

    value(v: unknown): void {
        this.valueRecurse(v);
        this.write("\n");
    }

    valueRecurse(v: unknown): void {
        if (isPrimitive(v) || v === UNKNOWN_VALUE) this.write(primitive(v));
        else if (Array.isArray(v)) {
            if (!v.length) return this.write("[]");
            this.write("[\n");
            v.forEach((elem, i) => {
                this.indented(`    [${i}]: `);
                this.with({ indent: this.indent + 1 }).value(elem);
            });
            this.unprefixed("]");
        } else {
            const keys = Object.keys(v as Json);
            if (!keys.length) return this.write("{}");
            this.write("{\n");
            this.with({ indent: this.indent + 1 }).object(v as Json);
            this.unprefixed("}");
        }
    }

    object(props: Json): void {
        const keys = Object.keys(props).filter((k) => !k.startsWith("__")).sort();
        const align = Math.max(0, ...keys.map((k) => k.length));
        for (const k of keys) {
            this.title(k, align);
            this.value(props[k]);
        }
    }

    add(v: unknown, title: (p: Printer) => void): void {
        const p = this.with({ op: "create", prefix: true });
        title(p);
        p.value(v);
    }

    delete(v: unknown, title: (p: Printer) => void): void {
        const p = this.with({ op: "delete", prefix: true });
        title(p);
        p.value(v);
    }

    /** `printObjectDiff` over `PropertyMap.Diff` (internal `__` keys ignored). */
    objectDiff(olds: Json, news: Json, include?: string[]): void {
        let keys = [...new Set([...Object.keys(olds), ...Object.keys(news)])].filter((k) => !k.startsWith("__")).sort();
        if (include) keys = keys.filter((k) => include.includes(k));
        const entries = keys.map((k) => ({ k, ...classify(olds[k], news[k]) })).filter((e) => e.kind !== "none");
        const align = Math.max(0, ...entries.map((e) => e.k.length));
        for (const e of entries) {
            const title = (p: Printer) => p.title(e.k, align);
            if (e.kind === "add") this.add(news[e.k], title);
            else if (e.kind === "delete") this.delete(olds[e.k], title);
            else if (e.kind === "update") this.valueDiff(title, olds[e.k], news[e.k]);
            else if (worthPrinting(olds[e.k], this.planning)) {
                const p = this.with({ op: "same", prefix: false });
                p.title(e.k, align);
                p.value(olds[e.k]);
            }
        }
    }

    /** `printPropertyValueDiff`. */
    valueDiff(title: (p: Printer) => void, old: unknown, next: unknown): void {
        const p = this.with({ op: "update", prefix: true });
        if (Array.isArray(old) && Array.isArray(next)) {
            title(p);
            p.write("[\n");
            for (let i = 0; i < Math.max(old.length, next.length); i++) {
                const elem = p.with({ indent: p.indent + 2 });
                const elemTitle = (q: Printer) => q.with({ indent: q.indent - 1 }).indented(`[${i}]: `);
                if (i >= old.length) elem.add(next[i], elemTitle);
                else if (i >= next.length) elem.delete(old[i], elemTitle);
                else if (differs(old[i], next[i])) elem.valueDiff(elemTitle, old[i], next[i]);
                else {
                    const same = elem.with({ op: "same", prefix: false });
                    elemTitle(same);
                    same.value(old[i]);
                }
            }
            p.unprefixed("]\n");
        } else if (isObject(old) && isObject(next) && old !== null && next !== null) {
            title(p);
            p.write("{\n");
            p.with({ indent: p.indent + 1 }).objectDiff(old, next);
            p.unprefixed("}\n");
        } else {
            const printOld = worthPrinting(old, false) || old === UNKNOWN_VALUE;
            const printNew = worthPrinting(next, false) || next === UNKNOWN_VALUE;
            if (printOld && printNew && isPrimitive(old) && isPrimitive(next)) {
                title(p);
                p.write(`${primitive(old)} => ${primitive(next)}\n`);
                return;
            }
            if (printOld) p.delete(old, title);
            if (printNew) p.add(next, title);
        }
    }
}

function differs(a: unknown, b: unknown): boolean {
    return a === UNKNOWN_VALUE || b === UNKNOWN_VALUE || JSON.stringify(a) !== JSON.stringify(b);
}

function classify(old: unknown, next: unknown): { kind: "add" | "delete" | "update" | "same" | "none" } {
    const hasOld = old !== undefined && old !== null;
    const hasNew = next !== undefined && next !== null;
    if (!hasOld && !hasNew) return { kind: "none" };
    if (!hasOld) return { kind: "add" };
    if (!hasNew) return { kind: "delete" };
    return { kind: differs(old, next) ? "update" : "same" };
}

/** Renders events as they come; `finish` returns what is left to print (the summary, or the JSON digest). */
export class PreviewDisplay {
    private readonly seen = new Map<string, Json>();
    private readonly digest: Json = {};
    private readonly started = Date.now();

    constructor(
        private readonly options: DisplayOptions,
        private readonly stdout: (text: string) => void,
        private readonly stderr: (text: string) => void,
    ) {}

    event(e: Json): void {
        if (e.preludeEvent) this.digest.config = e.preludeEvent.config;
        else if (e.diagnosticEvent) this.diagnostic(e.diagnosticEvent);
        else if (e.resourcePreEvent) this.step(e.resourcePreEvent.metadata, !!e.resourcePreEvent.planning);
        else if (e.summaryEvent) {
            this.digest.changeSummary = e.summaryEvent.resourceChanges;
            if (e.summaryEvent.maybeCorrupt) this.digest.maybeCorrupt = true;
            this.digest.duration = (Date.now() - this.started) * 1e6;
            if (this.options.type !== "json") this.stdout(this.summary(e.summaryEvent.resourceChanges));
        }
    }

    /** Diagnostics: in the JSON digest (`PreviewDiagnostic`); the diff view prints them to stderr (ShowDiffEvents). */
    private diagnostic(d: Json): void {
        if (this.options.type === "json") (this.digest.diagnostics ??= []).push({ ...(d.urn ? { urn: d.urn } : {}), message: d.message, severity: d.severity });
    }

    /** Whether the run prints diagnostics as they come, and where (progress: stdout, as `up` does; diff: stderr). */
    diagnosticLine(line: string): void {
        if (this.options.type === "progress") this.stdout(`${line}\n`);
        else if (this.options.type === "diff") this.stderr(`${line}\n`);
    }

    private step(m: Json, planning: boolean): void {
        this.seen.set(m.urn, m);
        if (!shouldShow(m, this.options) && !isRootStack(m)) return;
        if (this.options.type === "json") (this.digest.steps ??= []).push(previewStep(m));
        else if (this.options.type === "diff") this.stdout(this.renderDiff(m, planning));
        else {
            const name = String(m.urn).split("::").pop();
            this.stdout(` ${RAW_PREFIX[m.op] ?? "  "} ${"    ".repeat(this.indentOf(m))}${m.type} ${name} ${m.op}\n`);
        }
    }

    /** `getIndent`: one level per shown ancestor seen so far. */
    private indentOf(m: Json): number {
        let indent = 0;
        const r = m.new ?? m.old;
        for (let parent = r?.parent; parent; ) {
            const p = this.seen.get(parent);
            if (!p) break;
            if (isRootStack(p) || shouldShow(p, this.options)) indent++;
            parent = (p.new ?? p.old)?.parent;
        }
        return indent;
    }

    private renderDiff(m: Json, planning: boolean): string {
        const out: string[] = [];
        const indent = this.indentOf(m);
        const simple = ["create", "delete", "delete-replaced"].includes(m.op) ? m.op : "same";
        out.push(`${indentation(indent, m.op, false)}${RAW_PREFIX[m.op] ?? "  "}${m.type}: (${m.op})\n`);
        if (m.old?.id) out.push(`${indentation(indent + 1, simple, false)}[id=${m.old.id}]\n`);
        out.push(`${indentation(indent + 1, simple, false)}[urn=${m.urn}]\n`);
        if (m.op !== "same") {
            const p = new Printer(out, indent + 1, m.op, false, planning);
            const { old, new: next } = m;
            if (m.detailedDiff) {
                // engine.TranslateDetailedDiff: the provider's paths over the inputs (top-level keys here).
                const include = [...new Set(Object.keys(m.detailedDiff).map((k) => k.split(/[.[]/)[0]))];
                p.with({ prefix: true }).objectDiff(old?.inputs ?? {}, next?.inputs ?? {}, include);
            } else if (!old && next) p.object(Object.keys(next.outputs ?? {}).length ? next.outputs : next.inputs);
            else if (old && !next) p.object(old.inputs);
            else if (Object.keys(next.outputs ?? {}).length) p.with({ prefix: true }).objectDiff(old.outputs, next.outputs);
            else p.with({ prefix: true }).objectDiff(old.inputs, next.inputs, m.diffs);
        }
        return out.join("");
    }

    private summary(changes: Record<string, number>): string {
        const lines = ["Resources:\n"];
        let kinds = 0;
        let total = 0;
        for (const op of STEP_OPS) {
            if (op === "same" || op === "read" || !changes[op]) continue;
            kinds++;
            total += changes[op];
            lines.push(`    ${RAW_PREFIX[op]}${changes[op]} to ${op}\n`);
        }
        const pieces = [...(kinds >= 2 ? [`${total} ${total === 1 ? "change" : "changes"}`] : []), ...(changes.same ? [`${changes.same} unchanged`] : [])];
        if (pieces.length) lines.push(`    ${pieces.join(". ")}\n`);
        return lines.join("");
    }

    /** What `--json` prints at the end: the digest, indented by four spaces (`json.MarshalIndent(&digest, "", "    ")`). */
    json(): string {
        const d = this.digest;
        const ordered = {
            ...(d.config && Object.keys(d.config).length ? { config: d.config } : {}),
            ...(d.steps?.length ? { steps: d.steps } : {}),
            ...(d.diagnostics?.length ? { diagnostics: d.diagnostics } : {}),
            ...(d.duration ? { duration: d.duration } : {}),
            ...(d.changeSummary && Object.keys(d.changeSummary).length ? { changeSummary: d.changeSummary } : {}),
            ...(d.maybeCorrupt ? { maybeCorrupt: true } : {}),
        };
        return `${JSON.stringify(ordered, null, 4)}\n`;
    }
}

/** `getPreviewMetadataStep` (pkg/backend/display/json.go): the states as `apitype.ResourceV3`, secrets `[secret]`. */
function previewStep(m: Json): Json {
    const state = (s: Json | null) =>
        s && {
            urn: s.urn,
            ...(s.custom ? { custom: true } : {}),
            ...(s.id ? { id: s.id } : {}),
            type: s.type,
            ...(Object.keys(s.inputs ?? {}).length ? { inputs: s.inputs } : {}),
            ...(Object.keys(s.outputs ?? {}).length ? { outputs: s.outputs } : {}),
            ...(s.parent ? { parent: s.parent } : {}),
        };
    return {
        op: m.op,
        urn: m.urn,
        ...(m.provider ? { provider: m.provider } : {}),
        ...(m.old ? { oldState: state(m.old) } : {}),
        ...(m.new ? { newState: state(m.new) } : {}),
        ...(m.diffs?.length ? { diffReasons: m.diffs } : {}),
        ...(m.keys?.length ? { replaceReasons: m.keys } : {}),
        detailedDiff: m.detailedDiff ?? null,
    };
}
