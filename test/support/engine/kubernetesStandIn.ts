/**
 * STAND-IN for the Kubernetes resource provider (pulumi-kubernetes v4.32.0, the source read for @pulumi/kubernetes
 * 4.34.2 whose provider code is unchanged there) and the API server behind it, for the kinds this project
 * registers (PersistentVolume). Objects go into the stand-in cluster state that the lab's kubeadm and kubectl
 * stand-ins keep (test/lab/stand-ins/common.sh): `$STATE/pvs/NAME/state` holds `phase=`, `claim=`, `uid=` lines
 * (what the kubectl stand-in lists), `$STATE/pvs/NAME/object.json` the object's metadata and spec.
 *
 * What follows the real provider:
 * - the cluster is the one the kubeconfig's current server names (a cluster state whose `endpoint=` it is);
 *   none: the client's "connection refused";
 * - Check: a named object keeps its name, an unnamed one is autonamed `<urn name>-<hex>` with the annotation
 *   `pulumi.com/autonamed` (provider/pkg/metadata/naming.go);
 * - Diff: `.metadata.name` and every PV volume source (`.spec.nfs`, …) force a replacement, delete-first
 *   when the object is named and keeps its name (provider/pkg/provider/diff.go, provider.go Diff);
 * - DiffConfig: the provider is replaced when the kubeconfig's active cluster changes (provider.go 490-560);
 * - Create: the API server's validation (below), then the PV awaiter: done at phase Available or Bound,
 *   polled every 0.5 s for a fixed 5 minutes, "Timeout occurred polling for '<name>'" otherwise
 *   (provider/pkg/await/awaiters.go untilCoreV1PersistentVolumeInitialized, watcher.go);
 * - Delete: waits until the object is gone; a Bound PV keeps its `kubernetes.io/pv-protection` finalizer, and
 *   the delete fails after 10 minutes with "timed out waiting for the condition" (await.go, condition/deleted.go);
 *   a cluster that cannot be reached fails it, unless the provider says `deleteUnreachable`, when the object is
 *   taken as gone (provider.go Delete, clusterUnreachable).
 *
 * The API server's part: PersistentVolume validation as kubernetes pkg/apis/core/validation
 * (ValidatePersistentVolume: a DNS-1123 subdomain name, capacity.storage, accessModes, exactly one volume
 * source; ValidateNFSVolumeSource: server required, path required and absolute), AlreadyExists, the
 * pv-protection finalizer added on create (storageobjectinuseprotection admission). The PV controller's part:
 * a new PV with no claim becomes Available (pkg/controller/volume/persistentvolume/pv_controller.go syncVolume).
 */
import { randomBytes, randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { parseReport } from "../../../providers/kubernetes/scripts";
import { Lab } from "../../lab/lab";
import { containsUnknown, DiffAnswer, plain } from "./stepRules";

type Props = Record<string, any>;

export const KUBERNETES_PROVIDER = "pulumi:providers:kubernetes";
const PV = "kubernetes:core/v1:PersistentVolume";
const AWAIT_LIMIT_MS = 5 * 60_000;
const DELETE_LIMIT_MS = 10 * 60_000;
const POLL_MS = 500;
const PV_SOURCES = ["awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume"];
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const same = (a: unknown, b: unknown) => JSON.stringify(plain(a)) === JSON.stringify(plain(b));

/** The kubeconfig's current cluster (`getActiveClusterFromConfig`): what DiffConfig compares. */
function activeCluster(kubeconfig: unknown): Props | undefined {
    if (typeof kubeconfig !== "string" || kubeconfig === "") return undefined;
    const doc = YAML.parse(kubeconfig) as Props;
    const context = (doc.contexts ?? []).find((c: Props) => c.name === doc["current-context"])?.context;
    const name = context?.cluster ?? doc.clusters?.[0]?.name;
    return (doc.clusters ?? []).find((c: Props) => c.name === name)?.cluster;
}

export class KubernetesStandIn {
    constructor(private readonly lab: Lab) {}

    // ---- the provider resource (CheckConfig, DiffConfig, Configure) ----------------------------------

    /**
     * A kubeconfig not known yet replaces the provider ("the conservative choice"); else it is replaced when
     * the active cluster changed, except from an old config that had none (provider.go DiffConfig).
     */
    diffConfig(olds: Props, news: Props): DiffAnswer {
        const changed = Object.keys({ ...olds, ...news }).filter((k) => !same(olds[k], news[k]));
        const oldCluster = activeCluster(plain(olds.kubeconfig));
        const replace = containsUnknown(news.kubeconfig) || (oldCluster !== undefined && !same(oldCluster, activeCluster(plain(news.kubeconfig))));
        return { changes: changed.length ? "some" : "none", replaces: replace ? ["kubeconfig"] : [], deleteBeforeReplace: false };
    }

    // ---- objects ------------------------------------------------------------------------------------

    check(type: string, urn: string, inputs: Props): Props {
        this.kind(type);
        const metadata = { ...(plain(inputs.metadata) as Props) };
        if (!metadata.name && !metadata.generateName) {
            metadata.name = `${urn.split("::").pop()}-${randomBytes(4).toString("hex")}`;
            metadata.annotations = { ...metadata.annotations, "pulumi.com/autonamed": "true" };
            return { ...inputs, metadata };
        }
        return inputs;
    }

    diff(type: string, olds: Props, news: Props): DiffAnswer {
        this.kind(type);
        const o = plain(olds) as Props;
        const n = plain(news) as Props;
        const replaces = [
            ...(same(o.metadata?.name, n.metadata?.name) ? [] : ["metadata.name"]),
            ...PV_SOURCES.filter((s) => !same(o.spec?.[s], n.spec?.[s])).map((s) => `spec.${s}`),
        ];
        const changed = !same({ metadata: o.metadata, spec: o.spec }, { metadata: n.metadata, spec: n.spec });
        const named = !n.metadata?.annotations?.["pulumi.com/autonamed"];
        return { changes: changed ? "some" : "none", replaces, deleteBeforeReplace: replaces.length > 0 && named && same(o.metadata?.name, n.metadata?.name) };
    }

    async create(type: string, kubeconfig: string, inputs: Props): Promise<{ id: string; outputs: Props }> {
        this.kind(type);
        const dir = this.clusterOf(kubeconfig);
        const pv = plain(inputs) as Props;
        const name = String(pv.metadata?.name ?? "");
        const invalid = validatePersistentVolume(pv);
        if (invalid.length) throw new Error(`PersistentVolume "${name}" is invalid: ${invalid.join(", ")}`);
        const files = pvFiles(dir, name);
        if (fs.existsSync(files.state)) throw new Error(`persistentvolumes "${name}" already exists`);
        fs.mkdirSync(files.dir, { recursive: true });
        const metadata = { ...pv.metadata, uid: randomUUID(), creationTimestamp: new Date().toISOString(), finalizers: ["kubernetes.io/pv-protection"] };
        writeAtomically(files.object, JSON.stringify({ metadata, spec: pv.spec }));
        // The PV controller: an unclaimed volume is Available.
        writeAtomically(files.state, `phase=${pv.spec?.claimRef ? "Pending" : "Available"}\nuid=${metadata.uid}\n`);
        await this.awaitPhase(dir, name);
        return { id: name, outputs: this.live(dir, name)! };
    }

    async update(type: string, kubeconfig: string, id: string, inputs: Props): Promise<Props> {
        this.kind(type);
        const dir = this.clusterOf(kubeconfig);
        const files = pvFiles(dir, id);
        if (!fs.existsSync(files.state)) throw new Error(`persistentvolumes "${id}" not found`);
        const object = JSON.parse(fs.readFileSync(files.object, "utf8")) as Props;
        const pv = plain(inputs) as Props;
        writeAtomically(files.object, JSON.stringify({ metadata: { ...object.metadata, labels: pv.metadata?.labels, annotations: pv.metadata?.annotations }, spec: pv.spec }));
        await this.awaitPhase(dir, id);
        return this.live(dir, id)!;
    }

    async delete(type: string, provider: { kubeconfig: string; deleteUnreachable: boolean }, id: string): Promise<void> {
        this.kind(type);
        let dir: string;
        try {
            dir = this.clusterOf(provider.kubeconfig);
        } catch (e) {
            if (!provider.deleteUnreachable) throw e;
            console.log(`the Kubernetes cluster is unreachable and deleteUnreachable is set: ${id} is taken as deleted`);
            return;
        }
        const files = pvFiles(dir, id);
        const started = Date.now();
        // The pv-protection finalizer holds a Bound volume until its claim is gone.
        while (fs.existsSync(files.state) && kv(files.state).phase === "Bound") {
            if (Date.now() - started > DELETE_LIMIT_MS) {
                throw new Error(`finalizers might be preventing deletion (kubernetes.io/pv-protection): timed out waiting for the condition`);
            }
            await sleep(POLL_MS);
        }
        fs.rmSync(files.dir, { recursive: true, force: true });
    }

    /** Refresh: the live object, or undefined when it is gone. */
    read(type: string, kubeconfig: string, id: string): Props | undefined {
        this.kind(type);
        return this.live(this.clusterOf(kubeconfig), id);
    }

    private async awaitPhase(dir: string, name: string): Promise<void> {
        const started = Date.now();
        for (;;) {
            const phase = kv(pvFiles(dir, name).state).phase;
            if (phase === "Available" || phase === "Bound") return;
            if (Date.now() - started > AWAIT_LIMIT_MS) {
                throw new Error(`the Kubernetes API server reported that it failed to fully initialize or become live: Timeout occurred polling for '${name}'`);
            }
            await sleep(POLL_MS);
        }
    }

    private live(dir: string, name: string): Props | undefined {
        const files = pvFiles(dir, name);
        if (!fs.existsSync(files.state)) return undefined;
        const object = JSON.parse(fs.readFileSync(files.object, "utf8")) as Props;
        const state = kv(files.state);
        return { apiVersion: "v1", kind: "PersistentVolume", metadata: object.metadata, spec: { ...object.spec, ...(state.claim ? { claimRef: { namespace: state.claim.split("/")[0], name: state.claim.split("/")[1] } } : {}) }, status: { phase: state.phase } };
    }

    /** The stand-in cluster whose control-plane endpoint the kubeconfig's server is. */
    private clusterOf(kubeconfig: string): string {
        const server = String(activeCluster(kubeconfig)?.server ?? "");
        const hostPort = server.replace(/^https:\/\//, "").replace(/\/$/, "");
        const states = fs.existsSync(this.lab.clusterState) ? fs.readdirSync(this.lab.clusterState).map((d) => path.join(this.lab.clusterState, d)) : [];
        const found = states.find((d) => fs.existsSync(path.join(d, "cluster")) && kv(path.join(d, "cluster")).endpoint === hostPort);
        if (!found) throw new Error(`Get "${server}/api?timeout=32s": dial tcp ${hostPort}: connect: connection refused`);
        return found;
    }

    private kind(type: string): void {
        if (type !== PV) throw new Error(`the test engine's Kubernetes stand-in registers PersistentVolumes only, not ${type}; extend test/support/engine/kubernetesStandIn.ts`);
    }
}

/** The API server's checks of a PersistentVolume that this project's manifests can get wrong. */
function validatePersistentVolume(pv: Props): string[] {
    const problems: string[] = [];
    const name = pv.metadata?.name;
    if (typeof name !== "string" || name.length > 253 || !DNS_SUBDOMAIN.test(name)) problems.push(`metadata.name: Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'`);
    if (!pv.spec?.capacity?.storage) problems.push("spec.capacity: Required value");
    if (!Array.isArray(pv.spec?.accessModes) || pv.spec.accessModes.length === 0) problems.push("spec.accessModes: Required value");
    const sources = PV_SOURCES.filter((s) => pv.spec?.[s] !== undefined);
    if (sources.length !== 1) problems.push(sources.length ? `spec.${sources[1]}: Forbidden: may not specify more than 1 volume type` : "spec: Required value: must specify a volume type");
    const nfs = pv.spec?.nfs;
    if (nfs) {
        if (!nfs.server) problems.push("spec.nfs.server: Required value");
        if (!nfs.path) problems.push("spec.nfs.path: Required value");
        else if (!String(nfs.path).startsWith("/")) problems.push(`spec.nfs.path: Invalid value: "${nfs.path}": must be an absolute path`);
    }
    return problems;
}

function pvFiles(clusterDir: string, name: string) {
    const dir = path.join(clusterDir, "pvs", name);
    return { dir, state: path.join(dir, "state"), object: path.join(dir, "object.json") };
}

/** A stand-in state file's `key=value` lines ({} when it is gone), read as the node scripts' reports are. */
function kv(file: string): Record<string, string> {
    return fs.existsSync(file) ? parseReport(fs.readFileSync(file, "utf8")) : {};
}

function writeAtomically(file: string, content: string): void {
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, content);
    fs.renameSync(tmp, file);
}

function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
}
