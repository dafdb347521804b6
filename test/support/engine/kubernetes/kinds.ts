/**
 * The built-in kinds the stand-in API server serves: each kind's group, version, resource (plural) and scope, as
 * `kubectl api-resources` lists them for Kubernetes 1.31. A kind outside this table is answered as the API server
 * answers a kind it does not serve: the client's RESTMapper "no matches for kind" error
 * (k8s.io/apimachinery/pkg/api/meta/errors.go NoKindMatchError), which pulumi-kubernetes turns into its "apiVersion
 * for this resource does not exist" message (provider/pkg/provider/provider.go Create).
 */
export interface KindInfo {
    group: string;
    version: string;
    kind: string;
    /** The resource (plural) RBAC rules and URLs name. */
    resource: string;
    namespaced: boolean;
}

const TABLE: [apiVersion: string, kind: string, resource: string, namespaced: boolean][] = [
    ["v1", "Namespace", "namespaces", false],
    ["v1", "Node", "nodes", false],
    ["v1", "PersistentVolume", "persistentvolumes", false],
    ["v1", "PersistentVolumeClaim", "persistentvolumeclaims", true],
    ["v1", "Pod", "pods", true],
    ["v1", "Service", "services", true],
    ["v1", "Endpoints", "endpoints", true],
    ["v1", "ServiceAccount", "serviceaccounts", true],
    ["v1", "Secret", "secrets", true],
    ["v1", "ConfigMap", "configmaps", true],
    ["v1", "LimitRange", "limitranges", true],
    ["v1", "ResourceQuota", "resourcequotas", true],
    ["apps/v1", "Deployment", "deployments", true],
    ["apps/v1", "ReplicaSet", "replicasets", true],
    ["apps/v1", "StatefulSet", "statefulsets", true],
    ["apps/v1", "DaemonSet", "daemonsets", true],
    ["apps/v1", "ControllerRevision", "controllerrevisions", true],
    ["batch/v1", "Job", "jobs", true],
    ["batch/v1", "CronJob", "cronjobs", true],
    ["policy/v1", "PodDisruptionBudget", "poddisruptionbudgets", true],
    ["networking.k8s.io/v1", "NetworkPolicy", "networkpolicies", true],
    ["networking.k8s.io/v1", "Ingress", "ingresses", true],
    ["storage.k8s.io/v1", "StorageClass", "storageclasses", false],
    ["rbac.authorization.k8s.io/v1", "Role", "roles", true],
    ["rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", true],
    ["rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", false],
    ["rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "clusterrolebindings", false],
];

export const KINDS: KindInfo[] = TABLE.map(([apiVersion, kind, resource, namespaced]) => {
    const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
    return { group, version, kind, resource, namespaced };
});

export const apiVersionOf = (k: KindInfo) => (k.group ? `${k.group}/${k.version}` : k.version);

/** `kubernetes:apps/v1:Deployment` → the kind; the SDK's type tokens name the core group `core`. */
export function kindOfType(type: string): KindInfo {
    const match = /^kubernetes:([^:]+)\/([^/:]+):(\w+)$/.exec(type);
    if (!match) throw new Error(`not a Kubernetes object type: ${type}`);
    const [, group, version, kind] = match;
    const found = KINDS.find((k) => k.kind === kind && k.version === version && k.group === (group === "core" ? "" : group));
    if (!found) throw new Error(`no matches for kind "${kind}" in version "${group === "core" ? version : `${group}/${version}`}"`);
    return found;
}

export function kindNamed(kind: string): KindInfo {
    const found = KINDS.find((k) => k.kind === kind);
    if (!found) throw new Error(`the stand-in API server has no kind ${kind}`);
    return found;
}

/** A group and resource as the API server names them in errors: `deployments.apps`, `secrets` (schema.GroupResource.String). */
export const qualifiedResource = (k: KindInfo) => (k.group ? `${k.resource}.${k.group}` : k.resource);
