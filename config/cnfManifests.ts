/**
 * A CNF's Kubernetes objects from its manifests, by Tacker's rules for a Kubernetes VIM (v2 infra driver,
 * tacker/sol_refactored/infra_drivers/kubernetes/kubernetes_utils.py, and the spec of seed 003):
 * - every namespaced object goes into the request's namespace; without one, into the manifests' own (`default`
 *   when they name none), and manifests naming several namespaces are refused (Tacker's NamespaceNotUniform).
 *   Unlike Tacker, Role and RoleBinding are moved too (its SUPPORTED_NAMESPACE_KIND joins them into one string);
 * - every object, and every pod template, is labelled with the VNF instance id;
 * - a scale sets a workload's `spec.replicas`; a heal marks its pod template as `kubectl rollout restart` does
 *   (a Pod or ReplicaSet, whose pods no template change rolls, is re-created: the component's part).
 * Pure: the caller reads the files and reports the problems.
 */
import * as YAML from "yaml";
import { isDnsSubdomain } from "./fields";
import { ConfigProblem } from "./spec";

export type KubernetesObject = { apiVersion: string; kind: string; metadata: Record<string, any> } & Record<string, any>;

/** The label Tacker puts on a CNF's objects (kubernetes_utils.py); kept so Tacker-era tooling finds them. */
export const INSTANCE_LABEL = "tacker_vnf_instance_id";
/** The pod-template annotation `kubectl rollout restart` sets (kubectl pkg/polymorphichelpers/objectrestarter.go). */
export const RESTARTED_AT = "kubectl.kubernetes.io/restartedAt";

/** Workload kinds a VDU can name (Tacker: Pod, Deployment, DaemonSet, StatefulSet, ReplicaSet). */
export const WORKLOAD_KINDS: ReadonlySet<string> = new Set(["Pod", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet"]);
/** Those whose replicas a scale sets (Tacker's SCALABLE_KIND). */
export const SCALABLE_KINDS: ReadonlySet<string> = new Set(["Deployment", "StatefulSet", "ReplicaSet"]);
/**
 * Those whose controller rolls their pods when the pod template changes: what `kubectl rollout restart`
 * restarts (kubectl pkg/polymorphichelpers/objectrestarter.go). A Pod or a ReplicaSet is re-created instead.
 */
export const ROLLED_KINDS: ReadonlySet<string> = new Set(["Deployment", "StatefulSet", "DaemonSet"]);

/** Built-in namespaced kinds (the API server's discovery: `kubectl api-resources --namespaced=true`). */
const NAMESPACED = new Set([
    "Binding", "ConfigMap", "Endpoints", "Event", "LimitRange", "PersistentVolumeClaim", "Pod", "PodTemplate", "ReplicationController",
    "ResourceQuota", "Secret", "Service", "ServiceAccount", "ControllerRevision", "DaemonSet", "Deployment", "ReplicaSet", "StatefulSet",
    "HorizontalPodAutoscaler", "CronJob", "Job", "Lease", "EndpointSlice", "Ingress", "NetworkPolicy", "PodDisruptionBudget", "Role",
    "RoleBinding", "CSIStorageCapacity",
]);
/** Built-in cluster-scoped kinds (`kubectl api-resources --namespaced=false`), Namespace aside. */
const CLUSTER_SCOPED = new Set([
    "ComponentStatus", "Node", "PersistentVolume", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding", "CustomResourceDefinition", "APIService", "CertificateSigningRequest", "FlowSchema",
    "PriorityLevelConfiguration", "IngressClass", "RuntimeClass", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "CSIDriver", "CSINode",
    "StorageClass", "VolumeAttachment",
]);

export interface ManifestFile {
    /** The config field naming the file (`cnf.manifests[0]`). */
    field: string;
    /** The file as the package names it. */
    file: string;
    text: string;
}

export interface CnfRules {
    /** The request's namespace, when given. */
    namespace?: string;
    instanceId: string;
    /** Replicas per workload name. */
    replicas: Record<string, number>;
    /** Restart marks per workload name. */
    restarts: Record<string, string>;
}

/** A workload of the CNF: one VDU's Kubernetes resource. */
export interface CnfWorkload {
    kind: string;
    name: string;
    /** The replicas it runs (1 for a Pod); undefined for a DaemonSet (one per node). */
    replicas?: number;
    /** Its restart mark, when healed. */
    restart?: string;
}

export interface PlannedObject {
    /** Index of the manifest file it came from: files are created in order. */
    fileIndex: number;
    object: KubernetesObject;
}

export interface CnfObjects {
    namespace: string;
    objects: PlannedObject[];
    workloads: CnfWorkload[];
    problems: ConfigProblem[];
}

/** The objects of the manifests with the rules applied, or the problems that stop it. */
export function planCnfObjects(files: ManifestFile[], rules: CnfRules): CnfObjects {
    const problems: ConfigProblem[] = [];
    const found: (PlannedObject & { where: string })[] = [];
    files.forEach((f, fileIndex) => {
        let documents: unknown[];
        try {
            documents = YAML.parseAllDocuments(f.text).map((d) => {
                if (d.errors.length) throw d.errors[0];
                return d.toJS();
            });
        } catch (e) {
            problems.push({ path: f.field, message: `${f.file} is not valid YAML (${(e as Error).message.split("\n")[0]})` });
            return;
        }
        documents.forEach((doc, i) => {
            if (doc === null || doc === undefined) return;
            const where = `${f.file}, document ${i + 1}`;
            const problem = objectProblem(doc);
            if (problem) problems.push({ path: f.field, message: `${where}: ${problem}` });
            else found.push({ fileIndex, object: structuredClone(doc) as KubernetesObject, where });
        });
    });
    const namespaced = found.filter((o) => NAMESPACED.has(o.object.kind));
    let namespace = rules.namespace;
    if (namespace === undefined) {
        const named = [...new Set(namespaced.map((o) => String(o.object.metadata.namespace ?? "default")))];
        if (named.length > 1) {
            problems.push({ path: "cnf.manifests", message: `the manifests name several namespaces (${named.join(", ")}); a CNF lives in one: give cnf.namespace (Tacker additionalParams.namespace)` });
        }
        namespace = named[0] ?? "default";
    }
    for (const o of namespaced) o.object.metadata.namespace = namespace;

    const seen = new Map<string, string>();
    for (const o of found) {
        const key = `${o.object.kind} ${o.object.metadata.namespace ?? ""}/${o.object.metadata.name}`;
        if (seen.has(key)) problems.push({ path: "cnf.manifests", message: `${o.where}: ${o.object.kind} ${o.object.metadata.name} is also in ${seen.get(key)}` });
        seen.set(key, o.where);
        label(o.object, rules.instanceId);
    }

    const workloads = found.filter((o) => WORKLOAD_KINDS.has(o.object.kind)).map((o) => o.object);
    const byName = (field: string, name: string, scalableOnly: boolean) => {
        const matches = workloads.filter((w) => w.metadata.name === name && (!scalableOnly || SCALABLE_KINDS.has(w.kind)));
        if (matches.length === 0) problems.push({ path: `${field}.${name}`, message: `no ${scalableOnly ? "Deployment, StatefulSet or ReplicaSet" : "workload"} named ${name} in the manifests` });
        return matches;
    };
    for (const [name, count] of Object.entries(rules.replicas)) for (const w of byName("cnf.replicas", name, true)) w.spec = { ...w.spec, replicas: count };
    for (const [name, mark] of Object.entries(rules.restarts)) {
        for (const w of byName("cnf.restarts", name, false)) {
            if (ROLLED_KINDS.has(w.kind)) w.spec.template.metadata.annotations = { ...w.spec.template.metadata.annotations, [RESTARTED_AT]: mark };
        }
    }
    return {
        namespace,
        objects: found.map(({ fileIndex, object }) => ({ fileIndex, object })),
        workloads: workloads.map((w) => ({
            kind: w.kind,
            name: String(w.metadata.name),
            replicas: w.kind === "Pod" ? 1 : w.kind === "DaemonSet" ? undefined : Number(w.spec?.replicas ?? 1),
            restart: rules.restarts[String(w.metadata.name)],
        })),
        problems,
    };
}

/** What keeps a document from being one object of a CNF, if anything. */
function objectProblem(doc: unknown): string | undefined {
    if (typeof doc !== "object" || Array.isArray(doc)) return "is not a Kubernetes object";
    const o = doc as Record<string, any>;
    if (typeof o.apiVersion !== "string" || typeof o.kind !== "string") return "has no apiVersion and kind";
    if (o.kind === "Namespace") return "is a Namespace: a CNF's namespace is cnf.namespace (Tacker additionalParams.namespace), created with cnf.createNamespace";
    if (o.kind.endsWith("List")) return `is a ${o.kind}: give its items as documents of their own`;
    if (!NAMESPACED.has(o.kind) && !CLUSTER_SCOPED.has(o.kind)) return `kind ${o.kind} is not a built-in Kubernetes kind; k8s-vnf cannot tell whether it is namespaced`;
    const name = o.metadata?.name;
    if (typeof name !== "string") return `${o.kind} has no metadata.name (Tacker matches VDUs and resources by name)`;
    if (!isDnsSubdomain(name)) return `${o.kind} name ${JSON.stringify(name)} is not a lowercase RFC 1123 subdomain`;
    if (WORKLOAD_KINDS.has(o.kind) && o.kind !== "Pod" && typeof o.spec?.template !== "object") return `${o.kind} ${name} has no spec.template`;
    return undefined;
}

function label(object: KubernetesObject, instanceId: string): void {
    object.metadata.labels = { ...object.metadata.labels, [INSTANCE_LABEL]: instanceId };
    const template = object.spec?.template;
    if (WORKLOAD_KINDS.has(object.kind) && template) {
        template.metadata = { ...template.metadata, labels: { ...template.metadata?.labels, [INSTANCE_LABEL]: instanceId } };
    }
}
