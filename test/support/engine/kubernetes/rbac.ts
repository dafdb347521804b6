/**
 * Authorization as the API server's chain for a kubeadm cluster (--authorization-mode=Node,RBAC): members of
 * system:masters are allowed everything (authorizerfactory.NewPrivilegedGroups, pkg/kubeapiserver/authorizer),
 * everyone else by RBAC (plugin/pkg/auth/authorizer/rbac/rbac.go RuleAllows; pkg/registry/rbac/validation/rule.go
 * VisitRulesFor: ClusterRoleBindings, then the RoleBindings of the request's namespace, each to its Role or
 * ClusterRole; pkg/apis/rbac/v1/evaluation_helpers.go for `*` in verbs, groups, resources, `*\/sub` and
 * resourceNames).
 *
 * Denials read as the API server writes them (k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go
 * forbiddenMessage). Creating or updating a Role, ClusterRole or binding goes through RBAC's escalation check
 * (pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased/storage.go,
 * escalation_check.go, validation/rule.go ConfirmNoEscalation, component-helpers/auth/rbac/validation Covers,
 * policy_compact.go CompactRules, pkg/apis/rbac/v1/helpers.go CompactString).
 */
import { forbidden, StatusError } from "./errors";
import { KindInfo, kindNamed, qualifiedResource } from "./kinds";
import { Obj, ObjectStore } from "./store";
import { UserInfo } from "./authn";

export interface Rule {
    verbs: string[];
    apiGroups?: string[];
    resources?: string[];
    resourceNames?: string[];
    nonResourceURLs?: string[];
}

export interface Attributes {
    user: UserInfo;
    verb: string;
    group: string;
    resource: string;
    namespace: string;
    name: string;
}

const RBAC_GROUP = "rbac.authorization.k8s.io";
const READ = ["get", "list", "watch"];
const WRITE = ["create", "delete", "deletecollection", "patch", "update"];

// The aggregated admin/edit/view roles, cut to the resources a VNF deploys
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go ClusterRoles, their aggregate-to-* parts).
const VIEWABLE: Rule[] = [
    { apiGroups: [""], resources: ["pods", "pods/log", "pods/status", "services", "services/status", "endpoints", "configmaps", "persistentvolumeclaims", "persistentvolumeclaims/status", "serviceaccounts", "replicationcontrollers", "events", "limitranges", "resourcequotas", "namespaces", "namespaces/status"], verbs: READ },
    { apiGroups: ["apps"], resources: ["deployments", "deployments/scale", "deployments/status", "replicasets", "replicasets/scale", "replicasets/status", "statefulsets", "statefulsets/scale", "statefulsets/status", "daemonsets", "daemonsets/status", "controllerrevisions"], verbs: READ },
    { apiGroups: ["batch"], resources: ["jobs", "jobs/status", "cronjobs", "cronjobs/status"], verbs: READ },
    { apiGroups: ["networking.k8s.io"], resources: ["ingresses", "ingresses/status", "networkpolicies"], verbs: READ },
    { apiGroups: ["policy"], resources: ["poddisruptionbudgets", "poddisruptionbudgets/status"], verbs: READ },
];
const EDITABLE: Rule[] = [
    { apiGroups: [""], resources: ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "services", "services/proxy", "endpoints", "configmaps", "secrets", "persistentvolumeclaims", "serviceaccounts", "replicationcontrollers"], verbs: WRITE },
    { apiGroups: [""], resources: ["secrets", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "services/proxy"], verbs: READ },
    { apiGroups: [""], resources: ["serviceaccounts"], verbs: ["impersonate"] },
    { apiGroups: [""], resources: ["serviceaccounts/token"], verbs: ["create"] },
    { apiGroups: ["apps"], resources: ["deployments", "deployments/scale", "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale", "daemonsets"], verbs: WRITE },
    { apiGroups: ["batch"], resources: ["jobs", "cronjobs"], verbs: WRITE },
    { apiGroups: ["networking.k8s.io"], resources: ["ingresses", "networkpolicies"], verbs: WRITE },
    { apiGroups: ["policy"], resources: ["poddisruptionbudgets"], verbs: WRITE },
];
const ADMINISTRABLE: Rule[] = [
    { apiGroups: [RBAC_GROUP], resources: ["roles", "rolebindings"], verbs: [...WRITE, ...READ] },
    { apiGroups: ["authorization.k8s.io"], resources: ["localsubjectaccessreviews"], verbs: ["create"] },
];

/** What the API server reconciles at start (bootstrappolicy ClusterRoles, ClusterRoleBindings) and kubeadm creates. */
export const BOOTSTRAP_CLUSTER_ROLES: Record<string, Rule[]> = {
    "cluster-admin": [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }, { nonResourceURLs: ["*"], verbs: ["*"] }],
    admin: [...VIEWABLE, ...EDITABLE, ...ADMINISTRABLE],
    edit: [...VIEWABLE, ...EDITABLE],
    view: VIEWABLE,
};
/**
 * `cluster-admin` to system:masters (bootstrappolicy ClusterRoleBindings); `kubeadm:cluster-admins` to the group
 * of that name, which kubeadm ≥ 1.29 puts admin.conf's certificate in (cmd/kubeadm/app/phases/kubeconfig/
 * kubeconfig.go EnsureAdminClusterRoleBinding, constants.go ClusterAdminsGroupAndClusterRoleBinding).
 */
export const BOOTSTRAP_CLUSTER_ROLE_BINDINGS: Record<string, string> = {
    "cluster-admin": "system:masters",
    "kubeadm:cluster-admins": "kubeadm:cluster-admins",
};

const has = (set: string[] | undefined, value: string) => (set ?? []).includes(value);

/** RuleAllows: verb, group, resource (with `*` and `*\/sub`) and resourceName. */
export function ruleAllows(a: Omit<Attributes, "user" | "namespace">, rule: Rule): boolean {
    const subresource = a.resource.split("/")[1];
    const resourceMatches = (rule.resources ?? []).some((r) => r === "*" || r === a.resource || (subresource !== undefined && r === `*/${subresource}`));
    return (
        (has(rule.verbs, "*") || has(rule.verbs, a.verb)) &&
        (has(rule.apiGroups, "*") || has(rule.apiGroups, a.group)) &&
        resourceMatches &&
        ((rule.resourceNames ?? []).length === 0 || has(rule.resourceNames, a.name))
    );
}

export class Rbac {
    constructor(private readonly store: ObjectStore) {}

    /** Every rule that applies to the user in the namespace ("" for cluster scope): VisitRulesFor. */
    rulesFor(user: UserInfo, namespace: string): Rule[] {
        const rules: Rule[] = [];
        for (const binding of this.store.list(kindNamed("ClusterRoleBinding"))) {
            if (appliesTo(user, binding.subjects, "")) rules.push(...(this.roleReferenceRules(binding.roleRef, "") ?? []));
        }
        if (namespace) {
            for (const binding of this.store.list(kindNamed("RoleBinding"), namespace)) {
                if (appliesTo(user, binding.subjects, namespace)) rules.push(...(this.roleReferenceRules(binding.roleRef, namespace) ?? []));
            }
        }
        return rules;
    }

    /** GetRoleReferenceRules; undefined when the role is missing (the resolver's NotFound). */
    roleReferenceRules(roleRef: Obj, bindingNamespace: string): Rule[] | undefined {
        const role = roleRef?.kind === "Role" ? this.store.get(kindNamed("Role"), bindingNamespace, roleRef.name) : this.store.get(kindNamed("ClusterRole"), undefined, roleRef?.name);
        return role ? ((role.rules ?? []) as Rule[]) : undefined;
    }

    allowed(a: Attributes): boolean {
        if (a.user.groups.includes("system:masters")) return true;
        return this.rulesFor(a.user, a.namespace).some((rule) => ruleAllows(a, rule));
    }

    /** The authorization filter: Forbidden, in the API server's words, unless allowed. */
    authorize(a: Attributes, kind: KindInfo): void {
        if (this.allowed(a)) return;
        const scope = a.namespace ? `in the namespace "${a.namespace}"` : "at the cluster scope";
        throw forbidden(qualifiedResource(kind), a.name, `User "${a.user.name}" cannot ${a.verb} resource "${a.resource}" in API group "${a.group}" ${scope}`);
    }

    /** The policybased storages' check on creating or updating a Role, ClusterRole or binding. */
    confirmNoEscalation(user: UserInfo, kind: KindInfo, object: Obj): void {
        // EscalationAllowed: system:masters may always.
        if (user.groups.includes("system:masters")) return;
        const namespace = kind.namespaced ? String(object.metadata.namespace) : "";
        const name = String(object.metadata.name);
        let granted: Rule[];
        if (kind.kind === "Role" || kind.kind === "ClusterRole") {
            // RoleEscalationAuthorized: `escalate` on roles/clusterroles (the request names no object on create).
            if (this.allowed({ user, verb: "escalate", group: RBAC_GROUP, resource: kind.resource, namespace, name: "" })) return;
            granted = (object.rules ?? []) as Rule[];
        } else {
            // BindingAuthorized: `bind` on the referenced role, in the binding's namespace.
            const roleRef = object.roleRef ?? {};
            const roleResource = roleRef.kind === "Role" ? "roles" : "clusterroles";
            if (this.allowed({ user, verb: "bind", group: roleRef.apiGroup ?? RBAC_GROUP, resource: roleResource, namespace, name: roleRef.name })) return;
            const rules = this.roleReferenceRules(roleRef, namespace);
            if (!rules) throw new StatusError("NotFound", `${roleResource}.${RBAC_GROUP} "${roleRef.name}" not found`, roleResource);
            granted = rules;
        }
        const missing = uncovered(this.rulesFor(user, namespace), granted);
        if (missing.length === 0) return;
        const described = [...new Set(compact(missing).map(compactString))].sort();
        throw forbidden(qualifiedResource(kind), name, `user ${JSON.stringify(user.name)} (groups=${goStrings(user.groups)}) is attempting to grant RBAC permissions not currently held:\n${described.join("\n")}`);
    }
}

function appliesTo(user: UserInfo, subjects: Obj[] | undefined, namespace: string): boolean {
    return (subjects ?? []).some((s) => {
        switch (s.kind) {
            case "User":
                return user.name === s.name;
            case "Group":
                return user.groups.includes(s.name);
            case "ServiceAccount": {
                const ns = s.namespace || namespace;
                return ns !== "" && user.name === `system:serviceaccount:${ns}:${s.name}`;
            }
            default:
                return false;
        }
    });
}

/** BreakdownRule: one rule per group × resource × verb (× resourceName), one per nonResourceURL × verb. */
function breakdown(rule: Rule): Rule[] {
    const out: Rule[] = [];
    for (const group of rule.apiGroups ?? []) {
        for (const resource of rule.resources ?? []) {
            for (const verb of rule.verbs) {
                if ((rule.resourceNames ?? []).length) for (const n of rule.resourceNames!) out.push({ apiGroups: [group], resources: [resource], resourceNames: [n], verbs: [verb] });
                else out.push({ apiGroups: [group], resources: [resource], verbs: [verb] });
            }
        }
    }
    for (const url of rule.nonResourceURLs ?? []) for (const verb of rule.verbs) out.push({ nonResourceURLs: [url], verbs: [verb] });
    return out;
}

function resourceCovers(owner: string[], requested: string): boolean {
    if (owner.includes("*") || owner.includes(requested)) return true;
    const [resource, sub] = requested.split("/");
    return sub !== undefined && (owner.includes(`*/${sub}`) || owner.includes(`${resource}/*`));
}

function ruleCovers(owner: Rule, sub: Rule): boolean {
    const verbs = has(owner.verbs, "*") || sub.verbs.every((v) => has(owner.verbs, v));
    if (sub.nonResourceURLs?.length) {
        const urls = sub.nonResourceURLs.every((u) => (owner.nonResourceURLs ?? []).some((o) => o === "*" || o === u || (o.endsWith("*") && u.startsWith(o.slice(0, -1)))));
        return verbs && urls;
    }
    const groups = has(owner.apiGroups, "*") || (sub.apiGroups ?? []).every((g) => has(owner.apiGroups, g));
    const resources = (sub.resources ?? []).every((r) => resourceCovers(owner.resources ?? [], r));
    const names = (owner.resourceNames ?? []).length === 0 || (sub.resourceNames ?? []).every((n) => has(owner.resourceNames, n));
    return verbs && groups && resources && names;
}

function uncovered(ownerRules: Rule[], requested: Rule[]): Rule[] {
    return requested.flatMap(breakdown).filter((sub) => !ownerRules.some((owner) => ruleCovers(owner, sub)));
}

/** CompactRules: simple rules (one group, one resource, at most one name) that differ only by verb are merged. */
function compact(rules: Rule[]): Rule[] {
    const simple = new Map<string, Rule>();
    const out: Rule[] = [];
    for (const r of rules) {
        if (r.apiGroups?.length === 1 && r.resources?.length === 1 && !r.nonResourceURLs?.length && (r.resourceNames ?? []).length <= 1) {
            const key = JSON.stringify([r.apiGroups[0], r.resources[0], r.resourceNames?.[0] ?? ""]);
            const existing = simple.get(key);
            if (existing) existing.verbs.push(...r.verbs);
            else simple.set(key, { ...r, verbs: [...r.verbs] });
        } else out.push(r);
    }
    return [...out, ...simple.values()];
}

/** Go's %q of a []string: `["a" "b"]`. */
const goStrings = (values: string[]) => `[${values.map((v) => JSON.stringify(v)).join(" ")}]`;

function compactString(r: Rule): string {
    const parts: string[] = [];
    if (r.apiGroups?.length) parts.push(`APIGroups:${goStrings(r.apiGroups)}`);
    if (r.resources?.length) parts.push(`Resources:${goStrings(r.resources)}`);
    if (r.nonResourceURLs?.length) parts.push(`NonResourceURLs:${goStrings(r.nonResourceURLs)}`);
    if (r.resourceNames?.length) parts.push(`ResourceNames:${goStrings(r.resourceNames)}`);
    if (r.verbs.length) parts.push(`Verbs:${goStrings(r.verbs)}`);
    return `{${parts.join(", ")}}`;
}
