/**
 * pulumi-kubernetes v4.32.0's readiness awaiters (provider/pkg/await/awaiters.go table), each as a predicate over
 * the live objects the stand-in's informers would deliver, with its timeout and its errors:
 * - Deployment (deployment.go): the controller observed the generation; `Available` True; `Progressing` True with
 *   reason NewReplicaSetAvailable (not required while the revision is "1"); the ReplicaSet of the Deployment's
 *   revision has readyReplicas ≥ its replicas and, when the change triggered a rollout, is a new revision;
 * - StatefulSet (statefulset.go): observedGeneration ≥ generation; replicas = status.replicas = readyReplicas =
 *   currentReplicas; currentRevision = updateRevision;
 * - DaemonSet (daemonset.go): observed, every desired pod updated and available;
 * - Pod (pod.go, checker/pod): Running and Ready, or Succeeded;
 * - Service (service.go): a ClusterIP/NodePort Service with a selector is ready once its Endpoints settled (no
 *   change for 10 s) with no not-ready address; headless, ExternalName and selector-less ones at once; a
 *   LoadBalancer needs status.loadBalancer.ingress, which no stand-in cloud gives;
 * - Secret of type kubernetes.io/service-account-token (added by pulumi-kubernetes PR #2048,
 *   untilCoreV1SecretInitialized): data allocated within 5 s, else "Timeout occurred polling for '<name>'";
 * - ServiceAccount: nothing to wait for on Kubernetes ≥ 1.24 (untilCoreV1ServiceAccountInitialized);
 * - ReplicaSet, Namespace, ConfigMap, RBAC kinds, Endpoints: no awaiter.
 * The default timeout is 10 minutes (await.go Creation/Update), errors (error.go) "'<name>' timed out waiting to
 * be Ready" with the awaiter's sub-errors.
 */
import { kindNamed } from "./kinds";
import { podReady } from "./controllers";
import { Obj, ObjectStore } from "./store";

export const DEFAULT_TIMEOUT_MS = 10 * 60_000;

export interface AwaitState {
    /** The object before an update (the awaiters' lastOutputs); undefined on create. */
    lastOutputs?: Obj;
    startedAt: number;
    /** For the Service awaiter: the Endpoints resourceVersion seen last and when it changed. */
    endpointsVersion?: string;
    endpointsChangedAt?: number;
}

export interface Awaiter {
    timeoutMs: number;
    ready(live: Obj, store: ObjectStore, state: AwaitState, settleMs: number): boolean;
    /** The error when the timeout passes (a watcher's timeout or the awaiter's timeoutError with sub-errors). */
    timeoutError(live: Obj, store: ObjectStore): string;
    /** The Service awaiter's timeout succeeds when the service is ready and no endpoint is pending. */
    readyAtTimeout?(live: Obj, store: ObjectStore): boolean;
}

const timedOut = (name: string, subErrors: string[]) => [`'${name}' timed out waiting to be Ready`, ...subErrors.map((e) => `\t* ${e}`)].join("\n");
const conditionOf = (o: Obj, type: string) => ((o.status?.conditions ?? []) as Obj[]).find((c) => c.type === type);

const deploymentAwaiter: Awaiter = {
    timeoutMs: DEFAULT_TIMEOUT_MS,
    ready(d, store, state) {
        if (d.status?.observedGeneration !== d.metadata.generation) return false;
        const revision = d.metadata.annotations?.["deployment.kubernetes.io/revision"];
        if (!revision) return false;
        const available = conditionOf(d, "Available")?.status === "True";
        const progressing = conditionOf(d, "Progressing");
        const replicaSetAvailable = progressing?.status === "True" && progressing.reason === "NewReplicaSetAvailable";
        const rs = store.list(kindNamed("ReplicaSet"), d.metadata.namespace).find((r) => (r.metadata.ownerReferences ?? []).some((o: Obj) => o.uid === d.metadata.uid) && r.metadata.annotations?.["deployment.kubernetes.io/revision"] === revision);
        if (!rs) return false;
        const specReplicas = rs.spec.replicas ?? 1;
        const doneWaiting = rs.status?.readyReplicas !== undefined ? rs.status.readyReplicas >= specReplicas : specReplicas === 0;
        const lastRevision = state.lastOutputs?.metadata.annotations?.["deployment.kubernetes.io/revision"];
        const changeTriggeredRollout = !state.lastOutputs || revision !== lastRevision;
        const updatedReplicaSetReady = changeTriggeredRollout ? lastRevision !== revision && doneWaiting : doneWaiting;
        return revision === "1" ? available && updatedReplicaSetReady : available && replicaSetAvailable && updatedReplicaSetReady;
    },
    timeoutError(d, store) {
        const errors = ((d.status?.conditions ?? []) as Obj[]).filter((c) => c.status !== "True" && c.reason).map((c) => `[${c.reason}] ${c.message}`);
        const pods = store.list(kindNamed("Pod"), d.metadata.namespace).filter((p) => !podReady(p) && p.metadata.labels?.["pod-template-hash"]);
        if (pods.length) errors.push("Minimum number of live Pods was not attained");
        return timedOut(d.metadata.name, errors);
    },
};

const statefulSetAwaiter: Awaiter = {
    timeoutMs: DEFAULT_TIMEOUT_MS,
    ready(s) {
        if (!s.metadata.generation || (s.status?.observedGeneration ?? 0) < s.metadata.generation) return false;
        const replicas = s.spec.replicas ?? 1;
        const st = s.status ?? {};
        if (s.metadata.generation > 1 && s.spec.updateStrategy?.type === "OnDelete") return replicas === st.replicas && replicas === st.readyReplicas;
        return !!st.currentRevision && st.currentRevision === st.updateRevision && replicas === st.replicas && replicas === st.readyReplicas && replicas === st.currentReplicas;
    },
    timeoutError(s) {
        const st = s.status ?? {};
        const errors = [`${st.readyReplicas ?? 0} out of ${s.spec.replicas ?? 1} expected Pods are ready`];
        if (st.currentRevision !== st.updateRevision) errors.push("StatefulSet is waiting on the update to roll out: .status.currentRevision does not match .status.updateRevision");
        return timedOut(s.metadata.name, errors);
    },
};

const daemonSetAwaiter: Awaiter = {
    timeoutMs: DEFAULT_TIMEOUT_MS,
    ready(ds) {
        const st = ds.status ?? {};
        return st.observedGeneration === ds.metadata.generation && st.updatedNumberScheduled === st.desiredNumberScheduled && st.numberAvailable === st.desiredNumberScheduled;
    },
    timeoutError: (ds) => timedOut(ds.metadata.name, []),
};

const podAwaiter: Awaiter = {
    timeoutMs: DEFAULT_TIMEOUT_MS,
    ready: (p) => podReady(p) || p.status?.phase === "Succeeded",
    timeoutError(p) {
        const scheduled = conditionOf(p, "PodScheduled");
        const errors = scheduled?.status === "False" ? [`[Pod ${p.metadata.namespace}/${p.metadata.name}]: ${scheduled.message}`] : [`[Pod ${p.metadata.namespace}/${p.metadata.name}]: containers with unready status: [${(p.spec.containers as Obj[]).map((c) => c.name).join(" ")}]`];
        return timedOut(p.metadata.name, errors);
    },
};

const waitsForPods = (s: Obj) => s.spec.type !== "ExternalName" && s.spec.clusterIP !== "None" && Object.keys(s.spec.selector ?? {}).length > 0;
const endpointsOf = (s: Obj, store: ObjectStore) => store.get(kindNamed("Endpoints"), s.metadata.namespace, s.metadata.name);
const pending = (ep: Obj | undefined) => ((ep?.subsets ?? []) as Obj[]).some((sub) => (sub.notReadyAddresses ?? []).length > 0);
const hasAddresses = (ep: Obj | undefined) => ((ep?.subsets ?? []) as Obj[]).some((sub) => (sub.addresses ?? []).length > 0);

const serviceAwaiter: Awaiter = {
    timeoutMs: DEFAULT_TIMEOUT_MS,
    ready(s, store, state, settleMs) {
        const serviceReady = s.spec.type !== "LoadBalancer" || (s.status?.loadBalancer?.ingress ?? []).length > 0;
        if (!waitsForPods(s)) return serviceReady;
        const ep = endpointsOf(s, store);
        if (!ep) return false;
        if (ep.metadata.resourceVersion !== state.endpointsVersion) {
            state.endpointsVersion = ep.metadata.resourceVersion;
            state.endpointsChangedAt = Date.now();
        }
        const settled = Date.now() - (state.endpointsChangedAt ?? Date.now()) >= settleMs;
        return serviceReady && settled && !pending(ep);
    },
    readyAtTimeout: (s, store) => (s.spec.type !== "LoadBalancer" || (s.status?.loadBalancer?.ingress ?? []).length > 0) && !pending(endpointsOf(s, store)),
    timeoutError(s, store) {
        const errors: string[] = [];
        if (waitsForPods(s) && !hasAddresses(endpointsOf(s, store))) errors.push("Service does not target any Pods. Selected Pods may not be ready, or field '.spec.selector' may not match labels on any Pods");
        if (s.spec.type === "LoadBalancer" && !(s.status?.loadBalancer?.ingress ?? []).length) errors.push("Service was not allocated an IP address; does your cloud provider support this?");
        return timedOut(s.metadata.name, errors);
    },
};

const serviceAccountTokenAwaiter: Awaiter = {
    timeoutMs: 5_000,
    ready: (s) => Object.keys(s.data ?? {}).length > 0,
    timeoutError: (s) => `Timeout occurred polling for '${s.metadata.name}'`,
};

/** The awaiter of a live object, undefined for kinds the provider does not wait for. */
export function awaiterFor(live: Obj): Awaiter | undefined {
    switch (live.kind) {
        case "Deployment":
            return deploymentAwaiter;
        case "StatefulSet":
            return statefulSetAwaiter;
        case "DaemonSet":
            return daemonSetAwaiter;
        case "Pod":
            return podAwaiter;
        case "Service":
            return serviceAwaiter;
        case "Secret":
            return live.type === "kubernetes.io/service-account-token" ? serviceAccountTokenAwaiter : undefined;
        default:
            return undefined;
    }
}
