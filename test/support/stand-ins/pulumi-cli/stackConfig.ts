/**
 * A stack's config file (`Pulumi.<stack>.yaml` under the project's stackConfigDir) as the Pulumi CLI keeps
 * it (v3.248.0): `encryptionsalt` for the passphrase secrets manager, `config` with fully qualified keys,
 * maps and lists stored as YAML, encrypted leaves as `{secure: v1:…}` — never a plaintext secret. Paths
 * follow sdk/go/common/resource/config/map.go (`Set`, `Remove`, `parseKeyPath`) and object.go (`Set`,
 * `coerce`); keys follow pkg/cmd/pulumi/config/config.go (`ParseConfigKey`).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { Crypter, crypterFromState, newPassphraseState, readPassphrase } from "./passphrase";
import { fullKey, Project, stackFilePath, StackValue } from "./project";

export type Segment = string | number;

export const isSecure = (v: unknown): v is { secure: string } =>
    !!v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length === 1 && typeof (v as Record<string, unknown>).secure === "string";
const isMap = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v) && !isSecure(v);

/** `resource.ParsePropertyPathStrict`: `a.b[0]["c.d"]`. */
export function parsePropertyPath(text: string): Segment[] {
    const segments: Segment[] = [];
    let i = 0;
    const fail = (why: string) => {
        throw new Error(`invalid config key path: ${why} in ${JSON.stringify(text)}`);
    };
    while (i < text.length) {
        if (text[i] === "[") {
            const close = text.indexOf("]", i);
            if (close < 0) fail("missing closing bracket");
            const inner = text.slice(i + 1, close);
            if (/^\d+$/.test(inner)) segments.push(Number(inner));
            else if (/^"(?:[^"\\]|\\.)*"$/.test(inner)) segments.push(JSON.parse(inner) as string);
            else fail(`bad index ${inner}`);
            i = close + 1;
            if (text[i] === ".") i++;
        } else {
            let end = i;
            while (end < text.length && text[end] !== "." && text[end] !== "[") end++;
            if (end === i) fail("empty segment");
            segments.push(text.slice(i, end));
            i = end;
            if (text[i] === ".") {
                i++;
                if (i === text.length) fail("trailing dot");
            }
        }
    }
    return segments;
}

/** `ParseConfigKey`: `ns:name` (no namespace: the project's); with `--path` the name is a property path. */
export function parseConfigKey(project: Project, text: string, usePath: boolean): { key: string; path: Segment[] } {
    const full = fullKey(project, text);
    const colon = full.indexOf(":");
    const namespace = full.slice(0, colon);
    const name = full.slice(colon + 1);
    if (!usePath) return { key: full, path: [] };
    const segments = parsePropertyPath(name);
    if (!segments.length) throw new Error("empty config key path");
    if (typeof segments[0] !== "string") throw new Error("first path segement of config key must be a string");
    return { key: `${namespace}:${segments[0]}`, path: segments.slice(1) };
}

const formatPath = (segments: Segment[]) => segments.map((s, i) => (typeof s === "number" ? `[${s}]` : i ? `.${s}` : s)).join("");

/** `object.Set`: sets `leaf` at `rest` below `node`, creating containers; `prefix` is the path to `node`. */
function setAt(node: unknown, prefix: Segment[], rest: Segment[], leaf: unknown): unknown {
    if (!rest.length) return leaf;
    const [head, ...tail] = rest;
    let container = node;
    if (container === undefined || container === null) container = typeof head === "number" ? [] : {};
    else if (!Array.isArray(container) && !isMap(container)) {
        // COMPAT in object.go: directly below the key a scalar is replaced; deeper it is an error.
        if (prefix.length === 1) container = typeof head === "number" ? [] : {};
        else throw new Error(`${formatPath(prefix)}: expected ${typeof head === "number" ? "an array" : "a map"}`);
    }
    const here = [...prefix, head];
    if (Array.isArray(container)) {
        if (typeof head !== "number") throw new Error(`${formatPath(here)}: key for an array must be an int`);
        if (head < 0 || head > container.length) throw new Error(`${formatPath(here)}: array index out of range`);
        const copy = [...container];
        copy[head] = setAt(copy[head], here, tail, leaf);
        return copy;
    }
    const map = container as Record<string, unknown>;
    if (typeof head !== "string") throw new Error(`${formatPath(here)}: key for a map must be a string`);
    if (!tail.length && Object.keys(map).length === 0 && head === "secure" && typeof leaf === "string") throw new Error('"secure" key in maps of length 1 are reserved');
    return { ...map, [head]: setAt(map[head], here, tail, leaf) };
}

function removeAt(node: unknown, rest: Segment[]): unknown {
    const [head, ...tail] = rest;
    if (Array.isArray(node) && typeof head === "number") {
        if (!tail.length) return node.filter((_, i) => i !== head);
        return node.map((v, i) => (i === head ? removeAt(v, tail) : v));
    }
    if (isMap(node) && typeof head === "string" && head in node) {
        if (!tail.length) return Object.fromEntries(Object.entries(node).filter(([k]) => k !== head));
        return { ...node, [head]: removeAt(node[head], tail) };
    }
    return node;
}

function getAt(node: unknown, rest: Segment[]): unknown {
    let at = node;
    for (const segment of rest) {
        if (Array.isArray(at) && typeof segment === "number") at = at[segment];
        else if (isMap(at) && typeof segment === "string") at = at[segment];
        else return undefined;
    }
    return at;
}

/** `coerce`: "true"/"false" and base-10 integers without a leading zero become booleans and numbers. */
export function coerce(text: string): unknown {
    if (text === "true") return true;
    if (text === "false") return false;
    if (text.length > 1 && text[0] === "0") return text;
    if (/^[+-]?\d+$/.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
    return text;
}

function containsSecure(v: unknown): boolean {
    if (isSecure(v)) return true;
    if (Array.isArray(v)) return v.some(containsSecure);
    if (isMap(v)) return Object.values(v).some(containsSecure);
    return false;
}

function decrypt(v: unknown, crypter: Crypter): unknown {
    if (isSecure(v)) return crypter.decrypt(v.secure);
    if (Array.isArray(v)) return v.map((x) => decrypt(x, crypter));
    if (isMap(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, decrypt(x, crypter)]));
    return v;
}

/** With every encrypted leaf shown as "[secret]" (the CLI's blinding decrypter). */
function blind(v: unknown): unknown {
    if (isSecure(v)) return "[secret]";
    if (Array.isArray(v)) return v.map(blind);
    if (isMap(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, blind(x)]));
    return v;
}

export class StackConfigFile {
    private constructor(
        readonly file: string,
        private readonly doc: YAML.Document,
        readonly existed: boolean,
    ) {}

    static load(project: Project, stack: string): StackConfigFile {
        return StackConfigFile.loadFile(stackFilePath(project, stack));
    }

    /**
     * A stack config file named by `--config-file` (pkg/cmd/pulumi/stack/io.go `LoadProjectStack`:
     * `workspace.LoadProjectStack(sink, project, configFile)`, the path as given, relative to the working
     * directory); its own `encryptionsalt` keys its secrets. A missing file is an empty one.
     */
    static loadFile(file: string): StackConfigFile {
        if (!fs.existsSync(file)) return new StackConfigFile(file, new YAML.Document({}), false);
        return new StackConfigFile(file, YAML.parseDocument(fs.readFileSync(file, "utf8")), true);
    }

    keys(): string[] {
        return Object.keys((this.doc.get("config") as YAML.YAMLMap | undefined)?.toJSON() ?? {});
    }

    /** The stored value of a key, encrypted leaves as `{secure}`. */
    raw(key: string): unknown {
        const node = this.doc.getIn(["config", key], true) as YAML.Node | undefined;
        return node === undefined ? undefined : (node.toJSON() as unknown);
    }

    /** `Map.Set`: the whole key, or (with a path) one leaf inside it. */
    set(key: string, pathBelowKey: Segment[], leaf: unknown): void {
        const value = pathBelowKey.length ? setAt(this.raw(key), [key.slice(key.indexOf(":") + 1)], pathBelowKey, leaf) : leaf;
        if (!this.doc.has("config")) this.doc.set("config", this.doc.createNode({}));
        this.doc.setIn(["config", key], this.doc.createNode(value));
    }

    /** `Map.Remove`: an absent key or leaf is no error. */
    remove(key: string, pathBelowKey: Segment[]): void {
        if (!this.doc.hasIn(["config", key])) return;
        if (!pathBelowKey.length) this.doc.deleteIn(["config", key]);
        else this.doc.setIn(["config", key], this.doc.createNode(removeAt(this.raw(key), pathBelowKey)));
    }

    get(key: string, pathBelowKey: Segment[]): unknown {
        return getAt(this.raw(key), pathBelowKey);
    }

    hasSecrets(): boolean {
        return this.keys().some((k) => containsSecure(this.raw(k)));
    }

    /**
     * The stack's crypter (`GetEncrypter`): from its `encryptionsalt` and the passphrase, or, when the stack
     * has none yet, a new passphrase secrets manager whose salt is written to the file.
     */
    crypter(env: NodeJS.ProcessEnv): Crypter {
        const salt = this.doc.get("encryptionsalt") as string | undefined;
        if (salt) return crypterFromState(readPassphrase(env), salt);
        const created = newPassphraseState(readPassphrase(env));
        this.doc.set("encryptionsalt", created.state);
        return created.crypter;
    }

    /** Every key's value, decrypted (or blinded without a crypter), with whether it is a map or list and secret. */
    values(crypter: Crypter | undefined): Map<string, StackValue> {
        const out = new Map<string, StackValue>();
        for (const key of this.keys()) {
            const raw = this.raw(key);
            const value = crypter ? decrypt(raw, crypter) : blind(raw);
            out.set(key, { value, object: Array.isArray(raw) || isMap(raw), secret: containsSecure(raw) });
        }
        return out;
    }

    save(): void {
        fs.mkdirSync(path.dirname(this.file), { recursive: true });
        const tmp = `${this.file}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, this.doc.toString());
        fs.renameSync(tmp, this.file);
    }
}
