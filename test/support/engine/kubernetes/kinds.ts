/**
 * The kinds the stand-in API server models, each with its group, version, resource (plural) and scope as
 * `kubectl api-resources` lists them for Kubernetes 1.31: a Kubernetes VIM's objects (components/kubernetesVim.ts;
 * ClusterRole for the bootstrap roles a binding names) and the package's PersistentVolumes
 * (components/persistentVolumes.ts). Any other kind is refused, whether the real API server serves it or not: CNF
 * workloads run on a real cluster (test/realKubelet.lab.spec.ts), and a test must not pass against controllers,
 * a scheduler or awaiters the stand-in no longer has.
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
    ["v1", "PersistentVolume", "persistentvolumes", false],
    ["v1", "ServiceAccount", "serviceaccounts", true],
    ["v1", "Secret", "secrets", true],
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

/** The stand-in's refusal of a kind it does not model (not the API server's answer: a real one may serve it). */
export function unmodelled(kind: string, apiVersion?: string): Error {
    const modelled = KINDS.map((k) => k.kind).join(", ");
    return new Error(
        `the Kubernetes API stand-in (test/support/engine/kubernetes/) does not model ${apiVersion ? `${apiVersion} ` : ""}${kind}: it models a Kubernetes VIM's objects and PersistentVolumes only (${modelled}); workloads run on a real cluster (test/realKubelet.lab.spec.ts)`,
    );
}

/** `kubernetes:rbac.authorization.k8s.io/v1:Role` → the kind; the SDK's type tokens name the core group `core`. */
export function kindOfType(type: string): KindInfo {
    const match = /^kubernetes:([^:]+)\/([^/:]+):(\w+)$/.exec(type);
    if (!match) throw new Error(`not a Kubernetes object type: ${type}`);
    const [, group, version, kind] = match;
    const found = KINDS.find((k) => k.kind === kind && k.version === version && k.group === (group === "core" ? "" : group));
    if (!found) throw unmodelled(kind, group === "core" ? version : `${group}/${version}`);
    return found;
}

export function kindNamed(kind: string): KindInfo {
    const found = KINDS.find((k) => k.kind === kind);
    if (!found) throw unmodelled(kind);
    return found;
}

/** A group and resource as the API server names them in errors: `roles.rbac.authorization.k8s.io`, `secrets` (schema.GroupResource.String). */
export const qualifiedResource = (k: KindInfo) => (k.group ? `${k.resource}.${k.group}` : k.resource);
