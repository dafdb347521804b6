/**
 * Which changed fields replace an object: pulumi-kubernetes v4.32.0 provider/pkg/provider/diff.go forceNew table
 * (always .metadata.name and .metadata.namespace; Secret: .type, .stringData, .data unless enableSecretMutable, off
 * by default; ConfigMap: .data, .binaryData unless enableConfigMapMutable; Pod spec fields and its containers'
 * fields; selectors of Deployment, DaemonSet, StatefulSet, Job; StatefulSet podManagementPolicy,
 * revisionHistoryLimit, serviceName, volumeClaimTemplates; Service .spec.clusterIP; Job template, completions,
 * parallelism; PVC accessModes, selector, storageClassName, volumeName; PV volume sources; StorageClass
 * parameters, provisioner; RoleBinding/ClusterRoleBinding .roleRef; ResourceQuota scopes; PodDisruptionBudget
 * (policy/v1beta1) spec). A path with `[*]` compares each element.
 */
import { PV_SOURCES } from "./validation";
import { KindInfo } from "./kinds";
import { Obj } from "./store";

const CONTAINER_FIELDS = ["args", "command", "env", "image", "imagePullPolicy", "lifecycle", "livenessProbe", "ports", "readinessProbe", "resources", "securityContext", "stdin", "stdinOnce", "terminationMessagePath", "terminationMessagePolicy", "tty", "volumeDevices", "volumeMounts", "workingDir"];
const POD_FIELDS = [
    ...["affinity", "automountServiceAccountToken", "dnsConfig", "dnsPolicy", "enableServiceLinks", "hostAliases", "hostIPC", "hostNetwork", "hostPID", "hostname", "imagePullSecrets", "nodeName", "nodeSelector", "overhead", "preemptionPolicy", "priority", "priorityClassName", "readinessGates", "restartPolicy", "runtimeClassName", "schedulerName", "securityContext", "serviceAccount", "serviceAccountName", "shareProcessNamespace", "subdomain", "terminationGracePeriodSeconds", "volumes"].map((f) => `spec.${f}`),
    ...["containers", "initContainers"].flatMap((list) => CONTAINER_FIELDS.map((f) => `spec.${list}[*].${f}`)),
];
const SELECTOR = ["spec.selector"];

const FORCE_NEW: Record<string, string[]> = {
    "/PersistentVolume": PV_SOURCES.map((s) => `spec.${s}`),
    "/PersistentVolumeClaim": ["spec.accessModes", "spec.selector", "spec.storageClassName", "spec.volumeName"],
    "/Pod": POD_FIELDS,
    "/ResourceQuota": ["spec.scopes"],
    "/Secret": ["type", "stringData", "data"],
    "/ConfigMap": ["binaryData", "data"],
    "/Service": ["spec.clusterIP"],
    "apps/Deployment": SELECTOR,
    "apps/DaemonSet": SELECTOR,
    "apps/StatefulSet": ["spec.podManagementPolicy", "spec.revisionHistoryLimit", "spec.selector", "spec.serviceName", "spec.volumeClaimTemplates"],
    "batch/Job": ["spec.completions", "spec.parallelism", "spec.selector", "spec.template"],
    "rbac.authorization.k8s.io/RoleBinding": ["roleRef"],
    "rbac.authorization.k8s.io/ClusterRoleBinding": ["roleRef"],
    "storage.k8s.io/StorageClass": ["parameters", "provisioner"],
};

/** The values at a dotted path, `[*]` spreading over a list's elements. */
function valuesAt(object: unknown, path: string): unknown[] {
    let values: unknown[] = [object];
    for (const part of path.split(".")) {
        const spread = part.endsWith("[*]");
        const key = spread ? part.slice(0, -3) : part;
        values = values.flatMap((v) => {
            const next = v && typeof v === "object" ? (v as Obj)[key] : undefined;
            return spread ? (Array.isArray(next) ? next : [undefined]) : [next];
        });
    }
    return values;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The forceNew paths whose values differ between old and new inputs. */
export function replacingChanges(kind: KindInfo, olds: Obj, news: Obj): string[] {
    const paths = ["metadata.name", "metadata.namespace", ...(FORCE_NEW[`${kind.group}/${kind.kind}`] ?? [])];
    return paths.filter((p) => !same(valuesAt(olds, p), valuesAt(news, p)));
}
