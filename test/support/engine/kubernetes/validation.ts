/**
 * The API server's validation of what this project's manifests can get wrong, with its field errors' text
 * (k8s.io/apimachinery/pkg/util/validation/field/errors.go): names by kind (ValidateObjectMeta with the kind's
 * name function: pkg/apis/core/validation/validation.go ValidateNamespaceName = a DNS-1123 label,
 * ValidateServiceName = a DNS-1035 label, most others a DNS-1123 subdomain, RBAC names a path segment:
 * pkg/apis/rbac/validation ValidateRBACName), pod templates (ValidateDeployment's selector-matches-labels check,
 * containers' name and image), Services' ports, PersistentVolumes (ValidatePersistentVolume: capacity, access
 * modes, exactly one volume source; ValidateNFSVolumeSource).
 */
import { KindInfo } from "./kinds";
import { Obj } from "./store";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

// The messages of k8s.io/apimachinery/pkg/util/validation/validation.go.
const LABEL_MSG = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const LABEL_1035_MSG = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

export const PV_SOURCES = ["awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume"];

const invalidValue = (field: string, value: unknown, detail: string) => `${field}: Invalid value: ${JSON.stringify(value)}: ${detail}`;
const required = (field: string, detail?: string) => `${field}: Required value${detail ? `: ${detail}` : ""}`;

function nameProblems(field: string, name: string, rule: "label" | "label1035" | "subdomain" | "pathSegment"): string[] {
    if (rule === "pathSegment") {
        if (name === "." || name === "..") return [invalidValue(field, name, `may not be '${name}'`)];
        return ["/", "%"].filter((c) => name.includes(c)).map((c) => invalidValue(field, name, `may not contain '${c}'`));
    }
    const [max, pattern, msg] = rule === "subdomain" ? [253, DNS_SUBDOMAIN, SUBDOMAIN_MSG] : rule === "label" ? [63, DNS_LABEL, LABEL_MSG] : [63, DNS_1035_LABEL, LABEL_1035_MSG];
    return [...(name.length > max ? [invalidValue(field, name, `must be no more than ${max} characters`)] : []), ...(pattern.test(name) ? [] : [invalidValue(field, name, msg)])];
}

function nameRule(kind: KindInfo): "label" | "label1035" | "subdomain" | "pathSegment" {
    if (kind.kind === "Namespace") return "label";
    if (kind.kind === "Service") return "label1035";
    if (kind.group === "rbac.authorization.k8s.io") return "pathSegment";
    return "subdomain";
}

/** Go's %#v of a map[string]string, as the selector-mismatch message prints the labels. */
const goMap = (m: Record<string, string>) => `map[string]string{${Object.keys(m).sort().map((k) => `"${k}":"${m[k]}"`).join(", ")}}`;

function selectorMatches(selector: Obj | undefined, labels: Record<string, string>): boolean {
    const matchLabels = (selector?.matchLabels ?? {}) as Record<string, string>;
    const byLabels = Object.entries(matchLabels).every(([k, v]) => labels[k] === v);
    const byExpressions = ((selector?.matchExpressions ?? []) as Obj[]).every((e) => {
        const has = e.key in labels;
        switch (e.operator) {
            case "In": return has && (e.values ?? []).includes(labels[e.key]);
            case "NotIn": return !has || !(e.values ?? []).includes(labels[e.key]);
            case "Exists": return has;
            case "DoesNotExist": return !has;
            default: return false;
        }
    });
    return byLabels && byExpressions;
}

export { selectorMatches };

function podSpecProblems(field: string, spec: Obj | undefined): string[] {
    const containers = (spec?.containers ?? []) as Obj[];
    if (containers.length === 0) return [required(`${field}.containers`)];
    return containers.flatMap((c, i) => [
        ...(c.name ? nameProblems(`${field}.containers[${i}].name`, c.name, "label") : [required(`${field}.containers[${i}].name`)]),
        ...(c.image ? [] : [required(`${field}.containers[${i}].image`)]),
    ]);
}

function workloadProblems(object: Obj): string[] {
    const spec = object.spec ?? {};
    if (!spec.selector) return [required("spec.selector"), ...podSpecProblems("spec.template.spec", spec.template?.spec)];
    const labels = (spec.template?.metadata?.labels ?? {}) as Record<string, string>;
    const empty = Object.keys(spec.selector.matchLabels ?? {}).length === 0 && (spec.selector.matchExpressions ?? []).length === 0;
    return [
        ...(empty ? [invalidValue("spec.selector", spec.selector, "empty selector is invalid for deployment")] : []),
        ...(!empty && !selectorMatches(spec.selector, labels) ? [`spec.template.metadata.labels: Invalid value: ${goMap(labels)}: \`selector\` does not match template \`labels\``] : []),
        ...(spec.replicas !== undefined && spec.replicas < 0 ? [invalidValue("spec.replicas", spec.replicas, "must be greater than or equal to 0")] : []),
        ...podSpecProblems("spec.template.spec", spec.template?.spec),
    ];
}

function persistentVolumeProblems(pv: Obj): string[] {
    const problems: string[] = [];
    if (!pv.spec?.capacity?.storage) problems.push(required("spec.capacity"));
    if (!Array.isArray(pv.spec?.accessModes) || pv.spec.accessModes.length === 0) problems.push(required("spec.accessModes"));
    const sources = PV_SOURCES.filter((s) => pv.spec?.[s] !== undefined);
    if (sources.length !== 1) problems.push(sources.length ? `spec.${sources[1]}: Forbidden: may not specify more than 1 volume type` : "spec: Required value: must specify a volume type");
    const nfs = pv.spec?.nfs;
    if (nfs) {
        if (!nfs.server) problems.push(required("spec.nfs.server"));
        if (!nfs.path) problems.push(required("spec.nfs.path"));
        else if (!String(nfs.path).startsWith("/")) problems.push(invalidValue("spec.nfs.path", nfs.path, "must be an absolute path"));
    }
    return problems;
}

/** The field errors of a create or update; [] when the object is valid. */
export function validate(kind: KindInfo, object: Obj): string[] {
    const name = object.metadata?.name;
    const problems = typeof name === "string" && name !== "" ? nameProblems("metadata.name", name, nameRule(kind)) : [required("metadata.name", "name or generateName is required")];
    switch (kind.kind) {
        case "Deployment":
        case "ReplicaSet":
        case "StatefulSet":
        case "DaemonSet":
            problems.push(...workloadProblems(object));
            break;
        case "Pod":
            problems.push(...podSpecProblems("spec", object.spec));
            break;
        case "Service": {
            const headless = object.spec?.clusterIP === "None";
            if (object.spec?.type !== "ExternalName" && !headless && !(object.spec?.ports ?? []).length) problems.push(required("spec.ports"));
            break;
        }
        case "RoleBinding":
        case "ClusterRoleBinding":
            if (!object.roleRef?.name) problems.push(required("roleRef.name"));
            if (!["Role", "ClusterRole"].includes(object.roleRef?.kind)) problems.push(`roleRef.kind: Unsupported value: ${JSON.stringify(object.roleRef?.kind ?? "")}: supported values: "ClusterRole", "Role"`);
            if (kind.kind === "ClusterRoleBinding" && object.roleRef?.kind === "Role") problems.push(`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`);
            break;
        case "PersistentVolume":
            problems.push(...persistentVolumeProblems(object));
            break;
    }
    return problems;
}
