/**
 * The API server's validation of what this project's manifests can get wrong, with its field errors' text
 * (k8s.io/apimachinery/pkg/util/validation/field/errors.go): names by kind (ValidateObjectMeta with the kind's
 * name function: pkg/apis/core/validation/validation.go ValidateNamespaceName = a DNS-1123 label, most others a
 * DNS-1123 subdomain, RBAC names a path segment: pkg/apis/rbac/validation ValidateRBACName), bindings' roleRef,
 * PersistentVolumes (ValidatePersistentVolume: capacity, access modes, exactly one volume source;
 * ValidateNFSVolumeSource).
 */
import { KindInfo } from "./kinds";
import { Obj } from "./store";

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

// The messages of k8s.io/apimachinery/pkg/util/validation/validation.go.
const LABEL_MSG = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const SUBDOMAIN_MSG = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

export const PV_SOURCES = ["awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume", "flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume"];

const invalidValue = (field: string, value: unknown, detail: string) => `${field}: Invalid value: ${JSON.stringify(value)}: ${detail}`;
const required = (field: string, detail?: string) => `${field}: Required value${detail ? `: ${detail}` : ""}`;

function nameProblems(field: string, name: string, rule: "label" | "subdomain" | "pathSegment"): string[] {
    if (rule === "pathSegment") {
        if (name === "." || name === "..") return [invalidValue(field, name, `may not be '${name}'`)];
        return ["/", "%"].filter((c) => name.includes(c)).map((c) => invalidValue(field, name, `may not contain '${c}'`));
    }
    const [max, pattern, msg] = rule === "subdomain" ? [253, DNS_SUBDOMAIN, SUBDOMAIN_MSG] : [63, DNS_LABEL, LABEL_MSG];
    return [...(name.length > max ? [invalidValue(field, name, `must be no more than ${max} characters`)] : []), ...(pattern.test(name) ? [] : [invalidValue(field, name, msg)])];
}

function nameRule(kind: KindInfo): "label" | "subdomain" | "pathSegment" {
    if (kind.kind === "Namespace") return "label";
    if (kind.group === "rbac.authorization.k8s.io") return "pathSegment";
    return "subdomain";
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
