/**
 * The stand-in's etcd: every object as JSON under the cluster state directory the lab's kubeadm and kubectl
 * stand-ins keep (test/lab/stand-ins/common.sh), `objects/<namespace, or _cluster>/<resource>/<name>.json`.
 * resourceVersion is one counter per cluster (`objects/.resourceVersion`), as etcd's revision is one per cluster.
 * The cluster's CA (`cluster`'s cahash) is read from the same directory.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parseReport } from "../../../../providers/kubernetes/scripts";
import { apiVersionOf, KindInfo, kindNamed } from "./kinds";

export type Obj = Record<string, any>;

export const CLUSTER_SCOPE = "_cluster";

export function objectFile(clusterDir: string, kind: KindInfo, namespace: string | undefined, name: string): string {
    return path.join(clusterDir, "objects", kind.namespaced ? String(namespace) : CLUSTER_SCOPE, kind.resource, `${name}.json`);
}

/** Every stored object of a kind, in one namespace or all (sorted by name); for tests as for the controllers. */
export function listObjects(clusterDir: string, selector: { kind: string; namespace?: string }): Obj[] {
    const kind = kindNamed(selector.kind);
    const root = path.join(clusterDir, "objects");
    const scopes = !kind.namespaced ? [CLUSTER_SCOPE] : selector.namespace !== undefined ? [selector.namespace] : readdir(root).filter((d) => d !== CLUSTER_SCOPE);
    return scopes.flatMap((scope) =>
        readdir(path.join(root, scope, kind.resource))
            .filter((f) => f.endsWith(".json"))
            .sort()
            .map((f) => readJson(path.join(root, scope, kind.resource, f)))
            .filter((o): o is Obj => o !== undefined),
    );
}

export class ObjectStore {
    constructor(readonly clusterDir: string) {}

    get(kind: KindInfo, namespace: string | undefined, name: string): Obj | undefined {
        return readJson(objectFile(this.clusterDir, kind, namespace, name));
    }

    list(kind: KindInfo, namespace?: string): Obj[] {
        return listObjects(this.clusterDir, { kind: kind.kind, namespace });
    }

    /** Writes the object with a new resourceVersion; what a create or update through the API server stores. */
    put(kind: KindInfo, object: Obj): Obj {
        const stored = { apiVersion: apiVersionOf(kind), kind: kind.kind, ...object, metadata: { ...object.metadata, resourceVersion: this.nextResourceVersion() } };
        const file = objectFile(this.clusterDir, kind, object.metadata.namespace, object.metadata.name);
        fs.mkdirSync(path.dirname(file), { recursive: true });
        writeAtomically(file, JSON.stringify(stored, null, 1));
        return stored;
    }

    remove(kind: KindInfo, namespace: string | undefined, name: string): void {
        fs.rmSync(objectFile(this.clusterDir, kind, namespace, name), { force: true });
    }

    /** Every namespaced object in a namespace, of any kind (what the namespace controller deletes). */
    allIn(namespace: string): { resource: string; object: Obj }[] {
        const dir = path.join(this.clusterDir, "objects", namespace);
        return readdir(dir).flatMap((resource) =>
            readdir(path.join(dir, resource))
                .filter((f) => f.endsWith(".json"))
                .map((f) => ({ resource, object: readJson(path.join(dir, resource, f)) }))
                .filter((e): e is { resource: string; object: Obj } => e.object !== undefined),
        );
    }

    /** The stand-in CA certificate, as the kubeadm stand-in writes /etc/kubernetes/pki/ca.crt. */
    caPem(): string {
        return caPemOf(kv(path.join(this.clusterDir, "cluster")).cahash ?? "");
    }

    private nextResourceVersion(): string {
        const file = path.join(this.clusterDir, "objects", ".resourceVersion");
        fs.mkdirSync(path.dirname(file), { recursive: true });
        const next = (Number(fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "0") || 0) + 1;
        writeAtomically(file, String(next));
        return String(next);
    }
}

/** Must stay the text bin/kubeadm's write_node_files puts in ca.crt. */
export const caPemOf = (cahash: string) => `-----BEGIN CERTIFICATE-----\nstand-in CA ${cahash}\n-----END CERTIFICATE-----\n`;

/** A stand-in state file's `key=value` lines ({} when it is gone), read as the node scripts' reports are. */
export function kv(file: string): Record<string, string> {
    return fs.existsSync(file) ? parseReport(fs.readFileSync(file, "utf8")) : {};
}

export function writeAtomically(file: string, content: string): void {
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, content);
    fs.renameSync(tmp, file);
}

function readdir(dir: string): string[] {
    return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => !f.startsWith(".")) : [];
}

function readJson(file: string): Obj | undefined {
    try {
        return JSON.parse(fs.readFileSync(file, "utf8")) as Obj;
    } catch {
        return undefined;
    }
}
