/**
 * The stand-in API server's request path for one authenticated user: authorization (rbac.ts), validation
 * (validation.ts), admission (NamespaceLifecycle: plugin/pkg/admission/namespace/lifecycle/admission.go — content
 * in a missing namespace is `namespaces "x" not found`, in a terminating one Forbidden), RBAC's escalation check,
 * defaulting (defaults.ts), then storage (store.ts): metadata.uid, creationTimestamp, resourceVersion;
 * AlreadyExists for a taken name.
 *
 * Updates are server-side apply's: the applied configuration's fields replace the live ones, fields other
 * managers own stay (the token controller's Secret data and annotation, status)
 * (k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager). Deletion marks a Namespace (its finalizer holds it until
 * the namespace controller emptied it) and removes anything else at once.
 */
import { randomUUID } from "node:crypto";
import { UserInfo } from "./authn";
import { withDefaults } from "./defaults";
import { alreadyExists, forbidden, invalid, notFound } from "./errors";
import { KindInfo, kindNamed, qualifiedResource } from "./kinds";
import { BOOTSTRAP_CLUSTER_ROLE_BINDINGS, BOOTSTRAP_CLUSTER_ROLES, Rbac } from "./rbac";
import { Obj, ObjectStore } from "./store";
import { validate } from "./validation";

const SYSTEM_NAMESPACES = ["default", "kube-system", "kube-public", "kube-node-lease"];
/** The annotation the token controller owns on a Secret a user applies. */
const TOKEN_CONTROLLER_ANNOTATION = "kubernetes.io/service-account.uid";

/** The objects the API server and kubeadm create for a new cluster; idempotent. */
export function bootstrap(store: ObjectStore): void {
    if (store.get(kindNamed("ClusterRole"), undefined, "cluster-admin")) return;
    const now = new Date().toISOString();
    const meta = (name: string, namespace?: string) => ({ name, ...(namespace ? { namespace } : {}), uid: randomUUID(), creationTimestamp: now });
    for (const ns of SYSTEM_NAMESPACES) store.put(kindNamed("Namespace"), withDefaults("Namespace", { metadata: { ...meta(ns), labels: { "kubernetes.io/metadata.name": ns } } }));
    for (const [name, rules] of Object.entries(BOOTSTRAP_CLUSTER_ROLES)) {
        store.put(kindNamed("ClusterRole"), { metadata: { ...meta(name), labels: { "kubernetes.io/bootstrapping": "rbac-defaults" }, annotations: { "rbac.authorization.kubernetes.io/autoupdate": "true" } }, rules });
    }
    for (const [name, group] of Object.entries(BOOTSTRAP_CLUSTER_ROLE_BINDINGS)) {
        store.put(kindNamed("ClusterRoleBinding"), { metadata: meta(name), roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" }, subjects: [{ apiGroup: "rbac.authorization.k8s.io", kind: "Group", name: group }] });
    }
}

export class ApiServer {
    private readonly rbac: Rbac;

    constructor(
        private readonly store: ObjectStore,
        private readonly user: UserInfo,
    ) {
        this.rbac = new Rbac(store);
    }

    /** The authorization filter alone, for kinds stored elsewhere (PersistentVolumes). */
    authorize(verb: string, kind: KindInfo, namespace: string | undefined, name: string): void {
        this.rbac.authorize({ user: this.user, verb, group: kind.group, resource: kind.resource, namespace: kind.namespaced ? String(namespace) : "", name }, kind);
    }

    get(kind: KindInfo, namespace: string | undefined, name: string): Obj {
        this.rbac.authorize({ user: this.user, verb: "get", group: kind.group, resource: kind.resource, namespace: kind.namespaced ? String(namespace) : "", name }, kind);
        const found = this.store.get(kind, namespace, name);
        if (!found) throw notFound(qualifiedResource(kind), name);
        return found;
    }

    /**
     * A POST, or with `byApply` a server-side apply (PATCH) of an object that does not exist yet, which creates it.
     * An apply is authorized as the request's verb, patch, with its name, and for a Namespace its own name as the
     * request's namespace (apiserver RequestInfo: /api/v1/namespaces/{name}); creating the object then needs
     * create too, refused without the authorizer's reason (apiserver v0.31.4 handlers/patch.go
     * `createAuthorizerAttributes`, update.go `withAuthorization`).
     */
    create(kind: KindInfo, input: Obj, options: { byApply?: boolean } = {}): Obj {
        const namespace = kind.namespaced ? (input.metadata?.namespace ?? "default") : undefined;
        let object: Obj = { ...input, metadata: { ...input.metadata, ...(namespace ? { namespace } : {}) } };
        if (!object.metadata.name && object.metadata.generateName) object.metadata.name = `${object.metadata.generateName}${randomSuffix()}`;
        const name = String(object.metadata.name ?? "");
        const request = { user: this.user, group: kind.group, resource: kind.resource };
        if (options.byApply) {
            const target = { ...request, namespace: namespace ?? (kind.kind === "Namespace" ? name : ""), name };
            this.rbac.authorize({ ...target, verb: "patch" }, kind);
            if (!this.rbac.allowed({ ...target, verb: "create" })) throw forbidden(qualifiedResource(kind), name, "");
        } else {
            this.rbac.authorize({ ...request, verb: "create", namespace: namespace ?? "", name: "" }, kind);
        }
        const problems = validate(kind, object);
        if (problems.length) throw invalid(kind, name, problems);
        if (namespace !== undefined) this.admitNamespace(kind, namespace, name);
        if (kind.group === "rbac.authorization.k8s.io") this.rbac.confirmNoEscalation(this.user, kind, object);
        if (this.store.get(kind, namespace, name)) throw alreadyExists(kind, name);
        object = withDefaults(kind.kind, object);
        return this.store.put(kind, { ...object, metadata: { ...object.metadata, uid: randomUUID(), creationTimestamp: new Date().toISOString() } });
    }

    /** Server-side apply onto the live object. */
    apply(kind: KindInfo, namespace: string | undefined, name: string, input: Obj): Obj {
        this.rbac.authorize({ user: this.user, verb: "patch", group: kind.group, resource: kind.resource, namespace: kind.namespaced ? String(namespace) : "", name }, kind);
        const live = this.store.get(kind, namespace, name);
        if (!live) throw notFound(qualifiedResource(kind), name);
        const problems = [...validate(kind, { ...input, metadata: { ...input.metadata, name } }), ...immutableProblems(kind, live, input)];
        if (problems.length) throw invalid(kind, name, problems);
        if (kind.group === "rbac.authorization.k8s.io") this.rbac.confirmNoEscalation(this.user, kind, { ...input, metadata: live.metadata });
        const kept = Object.fromEntries(Object.entries(live.metadata.annotations ?? {}).filter(([k]) => k === TOKEN_CONTROLLER_ANNOTATION));
        const annotations = { ...input.metadata?.annotations, ...kept };
        const applied: Obj = {
            ...live,
            ...input,
            metadata: { ...live.metadata, labels: input.metadata?.labels, annotations: Object.keys(annotations).length ? annotations : undefined },
            ...(live.status ? { status: live.status } : {}),
        };
        if (kind.kind === "Secret" && live.type === "kubernetes.io/service-account-token") applied.data = { ...live.data, ...input.data };
        return this.store.put(kind, withDefaults(kind.kind, applied));
    }

    delete(kind: KindInfo, namespace: string | undefined, name: string): void {
        this.rbac.authorize({ user: this.user, verb: "delete", group: kind.group, resource: kind.resource, namespace: kind.namespaced ? String(namespace) : "", name }, kind);
        const live = this.store.get(kind, namespace, name);
        if (!live) throw notFound(qualifiedResource(kind), name);
        if (kind.kind === "Namespace") {
            if (!live.metadata.deletionTimestamp) this.store.put(kind, { ...live, metadata: { ...live.metadata, deletionTimestamp: new Date().toISOString() }, status: { phase: "Terminating" } });
            return;
        }
        this.store.remove(kind, namespace, name);
    }

    private admitNamespace(kind: KindInfo, namespace: string, name: string): void {
        const ns = this.store.get(kindNamed("Namespace"), undefined, namespace);
        if (!ns) throw notFound("namespaces", namespace);
        if (ns.metadata.deletionTimestamp) throw forbidden(qualifiedResource(kind), name, `unable to create new content in namespace ${namespace} because it is being terminated`);
    }
}

/** ValidateSecretUpdate: a Secret's type is immutable. */
function immutableProblems(kind: KindInfo, live: Obj, input: Obj): string[] {
    return kind.kind === "Secret" && (input.type ?? "Opaque") !== live.type ? [`type: Invalid value: ${JSON.stringify(input.type ?? "Opaque")}: field is immutable`] : [];
}

/** names.SimpleNameGenerator: five characters of k8s.io/apimachinery/pkg/util/rand's alphabet. */
function randomSuffix(length = 5): string {
    const alphabet = "bcdfghjklmnpqrstvwxz2456789";
    return Array.from({ length }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join("");
}
