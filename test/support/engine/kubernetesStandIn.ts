/**
 * STAND-IN for the Kubernetes resource provider (pulumi-kubernetes v4.32.0, the source read while @pulumi/kubernetes
 * was pinned at 4.34.2; the pin is now 4.25.0, whose real plugin tools/build.sh builds, and which the real-engine
 * suites run against a real API server) and the API server and controllers behind it (./kubernetes/: each file cites
 * what it stands in for). It stays for the suites that run the program on the test engine and lab hosts: there a
 * cluster is a Kubernetes VIM, so the stand-in models that VIM's objects (Namespaces with their deletion, the
 * ServiceAccount, its token Secret the token controller fills, ClusterRoleBinding, Role, RoleBinding, with
 * authentication, RBAC and its escalation check) and the package's PersistentVolumes, nothing else: any other kind
 * is refused (kubernetes/kinds.ts), since CNF workloads run on a real cluster (test/realKubelet.lab.spec.ts).
 * Objects go into the stand-in cluster state the lab's kubeadm and kubectl stand-ins keep
 * (test/lab/stand-ins/common.sh): `objects/<namespace|_cluster>/<resource>/<name>.json`, PersistentVolumes under
 * `pvs/` (kubernetes/persistentVolumes.ts).
 *
 * What follows the real provider (provider/pkg/provider/provider.go, provider/pkg/await/await.go):
 * - Configure: the cluster is the one the kubeconfig's current server names (a cluster state whose `endpoint=` it
 *   is); a kubeconfig the client refuses, a server that refuses connections, a TLS failure or a 401 on the schema
 *   fetch make the cluster "unreachable", and Create/Update/Read fail with "configured Kubernetes cluster is
 *   unreachable: <reason>" (Configure's unreachableCluster, getResources);
 * - Check: a named object keeps its name, an unnamed one is autonamed `<urn name>-<hex>` with the annotation
 *   `pulumi.com/autonamed` (provider/pkg/metadata/naming.go);
 * - Diff: the forceNew fields of diff.go replace (kubernetes/diff.ts), delete-first when the object is named, not
 *   autonamed, and keeps its name and namespace; a namespaced object without a namespace is in "default";
 * - DiffConfig: the provider is replaced when the kubeconfig's active cluster changes (provider.go 490-560);
 * - Create: a POST (server-side apply mode creates with Create unless upsertExistingObjects), retried on NotFound
 *   (a namespace created in parallel) 5 times with waits of 1, 2, 4, 8, 16 and 32 s (provider/pkg/retry); AlreadyExists
 *   with the provider's advice; then the kind's awaiter while the controllers run (kubernetes/controllers.ts): of
 *   the modelled kinds only a service-account-token Secret and a PersistentVolume have one (awaiters.go); the id is
 *   `<namespace>/<name>` or `<name>` (fqObjName);
 * - Update: a read of the live object, a server-side apply of the new inputs, then the awaiter;
 * - Delete: foreground propagation (metadata.DeletionPropagation's default), then waiting until the object is gone
 *   (10 minutes, "timed out waiting for the condition"); an object already gone is deleted; an unreachable
 *   cluster fails it unless the provider says `deleteUnreachable`;
 * - Read (refresh): the live object, undefined when it is gone.
 * The provider's own errors name the resource's URN; the engine's calls do not pass it, so the stand-in names the
 * object instead unless given one.
 */
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { Lab } from "../../lab/lab";
import { ApiServer, bootstrap } from "./kubernetes/apiServer";
import { activeConfig, authenticate, clientRefusal, isUnauthorized } from "./kubernetes/authn";
import { Controllers } from "./kubernetes/controllers";
import { replacingChanges } from "./kubernetes/diff";
import { invalid, isNotFound, StatusError } from "./kubernetes/errors";
import { KindInfo, kindOfType } from "./kubernetes/kinds";
import { applyPersistentVolume, createPersistentVolume, livePersistentVolume, persistentVolumePhase, PV_AWAIT_LIMIT_MS, removePersistentVolume } from "./kubernetes/persistentVolumes";
import { kv, ObjectStore } from "./kubernetes/store";
import { validate } from "./kubernetes/validation";
import { containsUnknown, DiffAnswer, plain } from "./stepRules";

export { listObjects } from "./kubernetes/store";

/** The stand-in cluster state directory (under the lab's clusterState) whose control-plane endpoint is `host:port`. */
export function clusterDirFor(clusterStateRoot: string, endpoint: string): string | undefined {
    const states = fs.existsSync(clusterStateRoot) ? fs.readdirSync(clusterStateRoot).map((d) => path.join(clusterStateRoot, d)) : [];
    const matching = states.filter((d) => fs.existsSync(path.join(d, "cluster")) && kv(path.join(d, "cluster")).endpoint === endpoint);
    // A destroyed cluster's state stays behind; only the cluster initialized last at an address answers there
    // (a lab address is handed out again once its host is gone).
    const initialized = (d: string) => fs.statSync(path.join(d, "cluster")).mtimeMs;
    return matching.sort((a, b) => initialized(b) - initialized(a))[0];
}

type Props = Record<string, any>;

export const KUBERNETES_PROVIDER = "pulumi:providers:kubernetes";

export interface KubernetesTimings {
    /** How often an awaiter looks (the real ones watch; polling faster only shortens the wait). */
    pollMs: number;
    /** The create retry's first wait (provider/pkg/retry SleepingRetry: 1 s, doubling). */
    createRetryBaseMs: number;
    /** How long the service-account-token Secret awaiter waits for its data (awaiters.go: 5 s). */
    serviceAccountTokenWaitMs: number;
}

const REAL_TIMINGS: KubernetesTimings = { pollMs: 100, createRetryBaseMs: 1000, serviceAccountTokenWaitMs: 5_000 };
const DELETE_LIMIT_MS = 10 * 60_000;
const CREATE_RETRIES = 5;

const same = (a: unknown, b: unknown) => JSON.stringify(plain(a)) === JSON.stringify(plain(b));

interface Connection {
    store: ObjectStore;
    api: ApiServer;
    controllers: Controllers;
}

class Unreachable extends Error {}

export class KubernetesStandIn {
    readonly timings: KubernetesTimings;

    constructor(
        private readonly lab: Pick<Lab, "clusterState">,
        timings: Partial<KubernetesTimings> = {},
    ) {
        this.timings = { ...REAL_TIMINGS, ...timings };
    }

    // ---- the provider resource (CheckConfig, DiffConfig, Configure) ----------------------------------

    /**
     * A kubeconfig not known yet replaces the provider ("the conservative choice"); else it is replaced when
     * the active cluster changed, except from an old config that had none. A `clusterIdentifier` decides alone
     * once set: a new one replaces, the same one never does; adding or removing it does not (provider.go
     * DiffConfig).
     */
    diffConfig(olds: Props, news: Props): DiffAnswer {
        const changed = Object.keys({ ...olds, ...news }).filter((k) => !same(olds[k], news[k]));
        const changes = changed.length ? "some" : "none";
        const [oldId, newId] = [plain(olds.clusterIdentifier), plain(news.clusterIdentifier)];
        if (oldId !== undefined && newId !== undefined) return { changes, replaces: same(oldId, newId) ? [] : ["clusterIdentifier"], deleteBeforeReplace: false };
        const cluster = (k: unknown) => (typeof k === "string" && k !== "" ? activeConfig(k).cluster : undefined);
        const oldCluster = cluster(plain(olds.kubeconfig));
        const replace = containsUnknown(news.kubeconfig) || (oldCluster !== undefined && !same(oldCluster, cluster(plain(news.kubeconfig))));
        return { changes, replaces: replace ? ["kubeconfig"] : [], deleteBeforeReplace: false };
    }

    // ---- objects ------------------------------------------------------------------------------------

    check(type: string, urn: string, inputs: Props): Props {
        kindOfType(type);
        const metadata = { ...(plain(inputs.metadata) as Props) };
        if (!metadata.name && !metadata.generateName) {
            metadata.name = `${urn.split("::").pop()}-${randomBytes(4).toString("hex")}`;
            metadata.annotations = { ...metadata.annotations, "pulumi.com/autonamed": "true" };
            return { ...inputs, metadata };
        }
        return inputs;
    }

    diff(type: string, olds: Props, news: Props): DiffAnswer {
        const kind = kindOfType(type);
        const o = canonicalNamespace(kind, plain(olds) as Props);
        const n = canonicalNamespace(kind, plain(news) as Props);
        const replaces = replacingChanges(kind, o, n);
        const changed = !same(o, n);
        const named = !n.metadata?.annotations?.["pulumi.com/autonamed"] && !!n.metadata?.name;
        const keepsIdentity = same(o.metadata?.name, n.metadata?.name) && same(o.metadata?.namespace, n.metadata?.namespace);
        return { changes: changed ? "some" : "none", replaces, deleteBeforeReplace: replaces.length > 0 && named && keepsIdentity };
    }

    async create(type: string, kubeconfig: string, inputs: Props, urn?: string): Promise<{ id: string; outputs: Props }> {
        const kind = kindOfType(type);
        const object = canonicalNamespace(kind, withoutUndefined(plain(inputs)) as Props);
        const c = this.reachable(kubeconfig, "create");
        const label = urn ?? fqName(kind, object);
        if (kind.kind === "PersistentVolume") return this.createPersistentVolume(c, kind, object, label);
        let created: Props | undefined;
        for (let attempt = 0; ; attempt++) {
            try {
                // Server-side apply, as pulumi-kubernetes creates with it on by default: a PATCH of the apply type
                // (provider/pkg/await/await.go `Creation`, `client.Patch(..., types.ApplyPatchType, ...)`).
                created = c.api.create(kind, object, { byApply: true });
                break;
            } catch (e) {
                if (isNotFound(e) && attempt < CREATE_RETRIES) {
                    await sleep(this.timings.createRetryBaseMs * 2 ** attempt);
                    continue;
                }
                if (isNotFound(e)) await sleep(this.timings.createRetryBaseMs * 2 ** attempt);
                throw new Error(`resource "${label}" was not successfully created by the Kubernetes API server: ${describe(e)}`);
            }
        }
        try {
            const live = await this.awaitReady(c, kind, created);
            return { id: fqName(kind, live), outputs: live };
        } catch (e) {
            throw new Error(`resource "${label}" was successfully created, but the Kubernetes API server reported that it failed to fully initialize or become live: ${describe(e)}`);
        }
    }

    async update(type: string, kubeconfig: string, id: string, inputs: Props): Promise<Props> {
        const kind = kindOfType(type);
        const object = canonicalNamespace(kind, withoutUndefined(plain(inputs)) as Props);
        const c = this.reachable(kubeconfig, "update");
        const { namespace, name } = parseId(kind, id);
        if (kind.kind === "PersistentVolume") {
            c.api.authorize("patch", kind, undefined, name);
            const problems = validate(kind, { ...object, metadata: { ...object.metadata, name } });
            if (problems.length) throw new Error(`update of resource "${id}" failed: ${invalid(kind, name, problems).message}`);
            applyPersistentVolume(c.store.clusterDir, name, object);
            await this.awaitPersistentVolume(c.store.clusterDir, name);
            return livePersistentVolume(c.store.clusterDir, name)!;
        }
        let applied: Props;
        try {
            c.api.get(kind, namespace, name);
            applied = c.api.apply(kind, namespace, name, object);
        } catch (e) {
            throw new Error(`update of resource "${id}" failed: ${describe(e)}`);
        }
        try {
            return await this.awaitReady(c, kind, applied);
        } catch (e) {
            throw new Error(`the Kubernetes API server reported that "${id}" failed to fully initialize or become live: ${describe(e)}`);
        }
    }

    async delete(type: string, provider: { kubeconfig: string; deleteUnreachable: boolean }, id: string): Promise<void> {
        const kind = kindOfType(type);
        let c: Connection;
        try {
            c = this.connect(provider.kubeconfig);
        } catch (e) {
            if (!(e instanceof Unreachable)) throw e;
            if (!provider.deleteUnreachable) {
                throw new Error(`configured Kubernetes cluster is unreachable. If the cluster was deleted, you can remove this resource from Pulumi state by rerunning the operation with the PULUMI_K8S_DELETE_UNREACHABLE environment variable set to "true"`);
            }
            console.log(`configured Kubernetes cluster is unreachable and the \`deleteUnreachable\` option is enabled. Deleting the unreachable resource from Pulumi state: ${id}`);
            return;
        }
        const { namespace, name } = parseId(kind, id);
        if (kind.kind === "PersistentVolume") return this.deletePersistentVolume(c, kind, name);
        try {
            c.api.delete(kind, namespace, name);
        } catch (e) {
            if (isNotFound(e)) return; // nilIfGVKDeleted: gone already
            throw new Error(describe(e));
        }
        const started = Date.now();
        for (;;) {
            c.controllers.reconcile();
            const live = c.store.get(kind, namespace, name);
            if (!live) return;
            if (Date.now() - started > DELETE_LIMIT_MS) {
                const finalizers = [...(live.metadata.finalizers ?? []), ...(live.spec?.finalizers ?? [])];
                throw new Error(`${finalizers.length ? `finalizers might be preventing deletion (${finalizers.join(", ")}): ` : ""}timed out waiting for the condition`);
            }
            await sleep(this.timings.pollMs);
        }
    }

    /** Refresh: the live object, or undefined when it is gone. */
    read(type: string, kubeconfig: string, id: string): Props | undefined {
        const kind = kindOfType(type);
        const c = this.reachable(kubeconfig, "read");
        const { namespace, name } = parseId(kind, id);
        if (kind.kind === "PersistentVolume") {
            c.api.authorize("get", kind, undefined, name);
            return livePersistentVolume(c.store.clusterDir, name);
        }
        c.controllers.reconcile();
        try {
            return c.api.get(kind, namespace, name);
        } catch (e) {
            if (isNotFound(e)) return undefined;
            throw new Error(describe(e));
        }
    }

    // ---- the cluster ------------------------------------------------------------------------------

    /** Configure's view of the kubeconfig: the cluster, the client's checks, the user it authenticates as. */
    private connect(kubeconfig: string): Connection {
        const config = activeConfig(kubeconfig);
        const hostPort = config.server.replace(/^https:\/\//, "").replace(/\/$/, "");
        const schemaUrl = `${config.server.replace(/\/$/, "")}/openapi/v2?timeout=32s`;
        const dir = clusterDirFor(this.lab.clusterState, hostPort);
        if (!dir) throw new Unreachable(`unable to load schema information from the API server: Get "${schemaUrl}": dial tcp ${hostPort}: connect: connection refused`);
        const store = new ObjectStore(dir);
        const refusal = clientRefusal(config, store.caPem(), schemaUrl);
        if (refusal?.startsWith("specifying") || refusal?.startsWith("client-cert-data")) {
            throw new Unreachable(`unable to load Kubernetes client configuration from kubeconfig file. Make sure you have: \n\n \t • set up the provider as per https://www.pulumi.com/registry/packages/kubernetes/installation-configuration/ \n\n ${refusal}`);
        }
        if (refusal) throw new Unreachable(`unable to load schema information from the API server: ${refusal}`);
        bootstrap(store);
        try {
            const user = authenticate(config, store);
            return { store, api: new ApiServer(store, user), controllers: new Controllers(store) };
        } catch (e) {
            // The schema request's 401 as client-go words a response it cannot decode as a Status (apimachinery
            // api/errors NewGenericServerResponse); seen from the real plugin against the real API server.
            if (isUnauthorized(e)) throw new Unreachable("unable to load schema information from the API server: the server has asked for the client to provide credentials");
            throw e;
        }
    }

    private reachable(kubeconfig: string, operation: "create" | "update" | "read"): Connection {
        try {
            return this.connect(kubeconfig);
        } catch (e) {
            if (!(e instanceof Unreachable)) throw e;
            if (operation === "read") throw new Error(`failed to read resource state due to unreachable cluster. If the cluster was deleted, you can remove this resource from Pulumi state by rerunning the operation with the PULUMI_K8S_DELETE_UNREACHABLE environment variable set to "true"`);
            throw new Error(`configured Kubernetes cluster is unreachable: ${e.message}`);
        }
    }

    /**
     * The provider's awaiters for the modelled kinds other than PersistentVolumes: a service-account-token Secret
     * waits for its data (untilCoreV1SecretInitialized, pulumi-kubernetes PR #2048); the others, a ServiceAccount too
     * on Kubernetes ≥ 1.24 (untilCoreV1ServiceAccountInitialized), wait for nothing.
     */
    private async awaitReady(c: Connection, kind: KindInfo, created: Props): Promise<Props> {
        const { namespace, name } = created.metadata;
        const started = Date.now();
        let live = created;
        for (;;) {
            c.controllers.reconcile();
            live = c.store.get(kind, namespace, name) ?? live;
            if (kind.kind !== "Secret" || live.type !== "kubernetes.io/service-account-token" || Object.keys(live.data ?? {}).length > 0) return live;
            if (Date.now() - started > this.timings.serviceAccountTokenWaitMs) throw new Error(`Timeout occurred polling for '${name}'`);
            await sleep(this.timings.pollMs);
        }
    }

    // ---- PersistentVolumes (their own layout) ----------------------------------------------------------

    private async createPersistentVolume(c: Connection, kind: KindInfo, pv: Props, label: string): Promise<{ id: string; outputs: Props }> {
        const name = String(pv.metadata?.name ?? "");
        try {
            c.api.authorize("create", kind, undefined, "");
            const problems = validate(kind, pv);
            if (problems.length) throw invalid(kind, name, problems);
            createPersistentVolume(c.store.clusterDir, pv);
        } catch (e) {
            throw new Error(`resource "${label}" was not successfully created by the Kubernetes API server: ${describe(e)}`);
        }
        await this.awaitPersistentVolume(c.store.clusterDir, name);
        return { id: name, outputs: livePersistentVolume(c.store.clusterDir, name)! };
    }

    private async awaitPersistentVolume(dir: string, name: string): Promise<void> {
        const started = Date.now();
        for (;;) {
            const phase = persistentVolumePhase(dir, name);
            if (phase === "Available" || phase === "Bound") return;
            if (Date.now() - started > PV_AWAIT_LIMIT_MS) {
                throw new Error(`the Kubernetes API server reported that it failed to fully initialize or become live: Timeout occurred polling for '${name}'`);
            }
            await sleep(this.timings.pollMs);
        }
    }

    private async deletePersistentVolume(c: Connection, kind: KindInfo, name: string): Promise<void> {
        c.api.authorize("delete", kind, undefined, name);
        const started = Date.now();
        // The pv-protection finalizer holds a Bound volume until its claim is gone.
        while (persistentVolumePhase(c.store.clusterDir, name) === "Bound") {
            if (Date.now() - started > DELETE_LIMIT_MS) {
                throw new Error(`finalizers might be preventing deletion (kubernetes.io/pv-protection): timed out waiting for the condition`);
            }
            await sleep(this.timings.pollMs);
        }
        removePersistentVolume(c.store.clusterDir, name);
    }
}

/** A namespaced object without a namespace is in "default"; a cluster-scoped one has none (Diff, Create). */
function canonicalNamespace(kind: KindInfo, object: Props): Props {
    const { namespace: _dropped, ...metadata } = object.metadata ?? {};
    return { ...object, metadata: kind.namespaced ? { ...metadata, namespace: object.metadata?.namespace || "default" } : metadata };
}

/** fqObjName: `<namespace>/<name>`, or `<name>` for a cluster-scoped object. */
const fqName = (kind: KindInfo, o: Props) => (kind.namespaced ? `${o.metadata.namespace}/${o.metadata.name}` : String(o.metadata.name));

function parseId(kind: KindInfo, id: string): { namespace?: string; name: string } {
    if (!kind.namespaced) return { name: id };
    const [namespace, name] = id.includes("/") ? id.split("/") : ["default", id];
    return { namespace, name };
}

function withoutUndefined(v: unknown): unknown {
    return JSON.parse(JSON.stringify(v ?? {}));
}

/** An API error's text; AlreadyExists with the provider's advice (await.go Creation). */
function describe(e: unknown): string {
    const message = e instanceof Error ? e.message : String(e);
    if (e instanceof StatusError && e.reason === "AlreadyExists") {
        return `${message}\n\nThe resource already exists in the cluster. This can happen when:\n\n  - Renaming a Pulumi resource: use an alias to preserve the identity,\n    or use deleteBeforeReplace if the resource needs replacement.\n  - Managing an existing resource: use a Patch resource (e.g. NamespacePatch)\n    to manage specific fields without owning the resource lifecycle.\n  - Adopting a resource into Pulumi: use \`pulumi import\`. Note that\n    protected resources (e.g. kube-system) cannot be deleted on destroy.\n  - Intentional upsert: set upsertExistingObjects on the provider to allow\n    server-side apply to update existing objects on create.`;
    }
    return message;
}

function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
}
