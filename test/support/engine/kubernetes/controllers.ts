/**
 * The controllers of kube-controller-manager, the scheduler and the kubelets, level-triggered: `reconcile` runs
 * every one over the stored objects until nothing changes, and the stand-in calls it before each read an awaiter
 * makes, so a cluster converges while it is watched, as a real one does while the provider waits.
 *
 * - namespace controller (pkg/controller/namespace/deletion/namespaced_resources_deleter.go): a Namespace being
 *   deleted loses all its content, then its `kubernetes` finalizer, then is gone;
 * - token controller (pkg/controller/serviceaccount/tokens_controller.go syncSecret, generateTokenIfNeeded): a
 *   `kubernetes.io/service-account-token` Secret of an existing ServiceAccount gets data.token, data["ca.crt"] (the
 *   cluster CA), data.namespace and the `kubernetes.io/service-account.uid` annotation; one whose ServiceAccount is
 *   missing (or has another UID) is deleted (deleteToken);
 * - deployment controller (pkg/controller/deployment: sync.go getNewReplicaSet with the pod-template-hash of
 *   controller_utils.go ComputeHash, rolling.go, recreate.go, progress.go, util/deployment_util.go conditions);
 * - replicaset controller (pkg/controller/replicaset/replica_set.go manageReplicas: pods `<rs>-<5 chars>`,
 *   surplus pods deleted unscheduled/pending/unready first, then newest);
 * - statefulset controller (pkg/controller/statefulset/stateful_set_control.go: OrderedReady creation by ordinal,
 *   scale-down from the highest ordinal, RollingUpdate replacing pods from the highest ordinal one at a time,
 *   currentRevision := updateRevision once every replica is updated and ready; PVCs of volumeClaimTemplates);
 * - daemonset controller (one pod per schedulable node, pkg/controller/daemon);
 * - scheduler (pkg/scheduler: Ready, schedulable nodes whose taints the pod tolerates — kubeadm taints
 *   control-plane nodes node-role.kubernetes.io/control-plane:NoSchedule, the node lifecycle controller taints
 *   NotReady ones node.kubernetes.io/not-ready, cordoned ones node.kubernetes.io/unschedulable — and whose labels
 *   match the pod's nodeSelector; the fewest pods first; none: PodScheduled False, Unschedulable, with the
 *   scheduler's "0/N nodes are available" message);
 * - kubelet: a pod bound to a Ready node runs and is Ready; on a NotReady node it is not Ready (node lifecycle
 *   controller MarkPodsNotReady); a pod whose node is gone is deleted (pod GC);
 * - endpoints controller (pkg/controller/endpoint/endpoints_controller.go): for each Service with a selector, an
 *   Endpoints object of the same name with ready pods in addresses and unready ones in notReadyAddresses;
 * - garbage collector: a dependent whose owners are all gone is deleted.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { deleteWithDependents, randomSuffix } from "./apiServer";
import { defaultPodSpec } from "./defaults";
import { KindInfo, KINDS, kindNamed } from "./kinds";
import { Node, Obj, ObjectStore } from "./store";
import { selectorMatches } from "./validation";

const POD = kindNamed("Pod");
const RS = kindNamed("ReplicaSet");
const REVISION = "deployment.kubernetes.io/revision";

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const now = () => new Date().toISOString();

export function podReady(pod: Obj): boolean {
    return pod.status?.phase === "Running" && (pod.status?.conditions ?? []).some((c: Obj) => c.type === "Ready" && c.status === "True");
}

const controllerOf = (o: Obj) => (o.metadata.ownerReferences ?? []).find((r: Obj) => r.controller);
const ownedBy = (o: Obj, owner: Obj) => controllerOf(o)?.uid === owner.metadata.uid;
const alive = (o: Obj) => !o.metadata.deletionTimestamp;

export function ownerReference(owner: Obj): Obj {
    return { apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true };
}

export class Controllers {
    private changed = false;

    constructor(private readonly store: ObjectStore) {}

    reconcile(): void {
        for (let pass = 0; pass < 25; pass++) {
            this.changed = false;
            this.namespaces();
            this.tokens();
            this.deployments();
            this.replicaSets();
            this.statefulSets();
            this.daemonSets();
            this.garbage();
            this.schedule();
            this.kubelets();
            this.endpoints();
            if (!this.changed) return;
        }
    }

    // ---- writes that count as a change ----

    private write(kind: KindInfo, next: Obj, previous?: Obj): Obj {
        const strip = (o: Obj | undefined) => o && { ...o, metadata: { ...o.metadata, resourceVersion: undefined } };
        if (previous && same(strip(previous), strip(next))) return previous;
        this.changed = true;
        return this.store.put(kind, next);
    }

    private createObject(kind: KindInfo, object: Obj): Obj {
        return this.write(kind, { ...object, metadata: { ...object.metadata, uid: randomUUID(), creationTimestamp: now() } });
    }

    private remove(kind: KindInfo, object: Obj): void {
        this.changed = true;
        deleteWithDependents(this.store, kind, object);
    }

    // ---- namespace controller ----

    private namespaces(): void {
        for (const ns of this.store.list(kindNamed("Namespace")).filter((n) => !alive(n))) {
            for (const { resource, object } of this.store.allIn(ns.metadata.name)) {
                const kind = KINDS.find((k) => k.resource === resource && k.namespaced);
                if (kind) this.remove(kind, object);
            }
            this.remove(kindNamed("Namespace"), ns);
        }
    }

    // ---- token controller ----

    private tokens(): void {
        const SECRET = kindNamed("Secret");
        for (const secret of this.store.list(SECRET).filter((s) => s.type === "kubernetes.io/service-account-token" && alive(s))) {
            const namespace = secret.metadata.namespace;
            const saName = secret.metadata.annotations?.["kubernetes.io/service-account.name"];
            const sa = saName ? this.store.get(kindNamed("ServiceAccount"), namespace, saName) : undefined;
            const wantedUid = secret.metadata.annotations?.["kubernetes.io/service-account.uid"];
            if (!sa || (wantedUid && wantedUid !== sa.metadata.uid)) {
                this.remove(SECRET, secret);
                continue;
            }
            const data = { ...secret.data };
            data["ca.crt"] = Buffer.from(this.store.caPem()).toString("base64");
            data.namespace ||= Buffer.from(namespace).toString("base64");
            data.token ||= Buffer.from(serviceAccountToken(namespace, secret.metadata.name, saName, sa.metadata.uid)).toString("base64");
            const annotations = { ...secret.metadata.annotations, "kubernetes.io/service-account.uid": sa.metadata.uid };
            this.write(SECRET, { ...secret, data, metadata: { ...secret.metadata, annotations } }, secret);
        }
    }

    // ---- deployment controller ----

    private deployments(): void {
        const DEPLOY = kindNamed("Deployment");
        for (const d of this.store.list(DEPLOY).filter(alive)) {
            const namespace = d.metadata.namespace;
            const replicaSets = this.store.list(RS, namespace).filter((rs) => ownedBy(rs, d));
            const hash = templateHash(d.spec.template);
            const maxRevision = Math.max(0, ...replicaSets.map((rs) => Number(rs.metadata.annotations?.[REVISION] ?? 0)));
            let current = replicaSets.find((rs) => rs.metadata.labels?.["pod-template-hash"] === hash);
            const old = replicaSets.filter((rs) => rs !== current);
            const replicas = d.spec.replicas ?? 1;
            const recreate = d.spec.strategy?.type === "Recreate";
            const oldPods = old.reduce((n, rs) => n + (rs.status?.replicas ?? 0), 0);
            const currentRevision = current && Number(current.metadata.annotations?.[REVISION] ?? 0) === maxRevision ? maxRevision : maxRevision + 1;
            const rsAnnotations = { [REVISION]: String(currentRevision), "deployment.kubernetes.io/desired-replicas": String(replicas), "deployment.kubernetes.io/max-replicas": String(replicas + surge(d, replicas)) };
            // Recreate: the old pods go before the new replica set scales up (recreate.go).
            const currentReplicas = recreate && oldPods > 0 ? 0 : replicas;
            if (!current) {
                current = this.createObject(RS, {
                    apiVersion: "apps/v1",
                    kind: "ReplicaSet",
                    metadata: { name: `${d.metadata.name}-${hash}`, namespace, labels: { ...d.spec.template.metadata?.labels, "pod-template-hash": hash }, annotations: rsAnnotations, ownerReferences: [ownerReference(d)], generation: 1 },
                    spec: {
                        replicas: currentReplicas,
                        minReadySeconds: d.spec.minReadySeconds ?? 0,
                        selector: { ...d.spec.selector, matchLabels: { ...d.spec.selector.matchLabels, "pod-template-hash": hash } },
                        template: { ...d.spec.template, metadata: { ...d.spec.template.metadata, labels: { ...d.spec.template.metadata?.labels, "pod-template-hash": hash } } },
                    },
                });
            } else if (current.spec.replicas !== currentReplicas || !same(pick(current.metadata.annotations, Object.keys(rsAnnotations)), rsAnnotations)) {
                const generation = current.spec.replicas !== currentReplicas ? current.metadata.generation + 1 : current.metadata.generation;
                current = this.write(RS, { ...current, metadata: { ...current.metadata, generation, annotations: { ...current.metadata.annotations, ...rsAnnotations } }, spec: { ...current.spec, replicas: currentReplicas } }, current);
            }
            // RollingUpdate: the old replica sets scale down once the new one is available (rolling.go, simplified
            // to whole steps); Recreate: at once.
            const currentAvailable = (current.status?.availableReplicas ?? 0) >= replicas && (current.status?.observedGeneration ?? 0) >= current.metadata.generation;
            for (const rs of old) {
                if ((recreate || currentAvailable) && rs.spec.replicas !== 0) {
                    this.write(RS, { ...rs, metadata: { ...rs.metadata, generation: rs.metadata.generation + 1 }, spec: { ...rs.spec, replicas: 0 } }, rs);
                }
            }
            this.deploymentStatus(d, current, old, replicas);
        }
    }

    private deploymentStatus(d: Obj, current: Obj, old: Obj[], replicas: number): void {
        const all = [current, ...old.map((rs) => this.store.get(RS, rs.metadata.namespace, rs.metadata.name) ?? rs)];
        const sum = (field: string) => all.reduce((n, rs) => n + (rs.status?.[field] ?? 0), 0);
        const available = sum("availableReplicas");
        const total = sum("replicas");
        const updated = current.status?.replicas ?? 0;
        const minAvailable = replicas - (d.spec.strategy?.type === "Recreate" ? 0 : unavailableAllowed(d, replicas));
        const complete = updated === replicas && total === replicas && available === replicas && (current.status?.observedGeneration ?? 0) >= current.metadata.generation;
        const previous = (d.status?.conditions ?? []) as Obj[];
        const rsName = current.metadata.name;
        const progressing = previous.find((c) => c.type === "Progressing");
        const deadline = (d.spec.progressDeadlineSeconds ?? 600) * 1000;
        const stalled = !complete && progressing && progressing.reason !== "NewReplicaSetAvailable" && Date.now() - Date.parse(progressing.lastUpdateTime) > deadline;
        const conditions = [
            condition(previous, "Available", available >= minAvailable, available >= minAvailable ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable", available >= minAvailable ? "Deployment has minimum availability." : "Deployment does not have minimum availability."),
            complete
                ? condition(previous, "Progressing", true, "NewReplicaSetAvailable", `ReplicaSet "${rsName}" has successfully progressed.`)
                : stalled
                  ? condition(previous, "Progressing", false, "ProgressDeadlineExceeded", `ReplicaSet "${rsName}" has timed out progressing.`)
                  : condition(previous, "Progressing", true, "ReplicaSetUpdated", `ReplicaSet "${rsName}" is progressing.`),
        ];
        const status = {
            observedGeneration: d.metadata.generation,
            replicas: total,
            updatedReplicas: updated,
            readyReplicas: sum("readyReplicas"),
            availableReplicas: available,
            ...(replicas - available > 0 ? { unavailableReplicas: replicas - available } : {}),
            conditions,
        };
        const annotations = { ...d.metadata.annotations, [REVISION]: current.metadata.annotations[REVISION] };
        this.write(kindNamed("Deployment"), { ...d, metadata: { ...d.metadata, annotations }, status }, d);
    }

    // ---- replicaset controller ----

    private replicaSets(): void {
        for (const rs of this.store.list(RS).filter(alive)) {
            const pods = this.store.list(POD, rs.metadata.namespace).filter((p) => ownedBy(p, rs) && alive(p));
            const wanted = rs.spec.replicas ?? 1;
            for (let i = pods.length; i < wanted; i++) {
                pods.push(this.createPod(rs, `${rs.metadata.name}-${randomSuffix()}`, rs.spec.template, {}));
            }
            const surplus = [...pods].sort(deletionOrder).slice(0, Math.max(0, pods.length - wanted));
            for (const pod of surplus) this.remove(POD, pod);
            const kept = pods.filter((p) => !surplus.includes(p)).map((p) => this.store.get(POD, p.metadata.namespace, p.metadata.name) ?? p);
            const ready = kept.filter(podReady).length;
            const status = { replicas: kept.length, fullyLabeledReplicas: kept.length, readyReplicas: ready, availableReplicas: ready, observedGeneration: rs.metadata.generation };
            this.write(RS, { ...rs, status }, rs);
        }
    }

    private createPod(owner: Obj, name: string, template: Obj, extra: { labels?: Obj; spec?: Obj; nodeName?: string }): Obj {
        return this.createObject(POD, {
            apiVersion: "v1",
            kind: "Pod",
            metadata: { name, namespace: owner.metadata.namespace, ...(owner.kind !== "StatefulSet" ? { generateName: `${owner.metadata.name}-` } : {}), labels: { ...template.metadata?.labels, ...extra.labels }, annotations: template.metadata?.annotations, ownerReferences: [ownerReference(owner)] },
            spec: { ...defaultPodSpec(template.spec), ...extra.spec, ...(extra.nodeName ? { nodeName: extra.nodeName } : {}) },
            status: { phase: "Pending", qosClass: "BestEffort" },
        });
    }

    // ---- statefulset controller ----

    private statefulSets(): void {
        const STS = kindNamed("StatefulSet");
        for (const sts of this.store.list(STS).filter(alive)) {
            const namespace = sts.metadata.namespace;
            const name = sts.metadata.name;
            const updateRevision = `${name}-${templateHash(sts.spec.template)}`;
            let currentRevision = sts.status?.currentRevision ?? updateRevision;
            const replicas = sts.spec.replicas ?? 1;
            const parallel = sts.spec.podManagementPolicy === "Parallel";
            const pods = () => this.store.list(POD, namespace).filter((p) => ownedBy(p, sts));
            const ordinalOf = (p: Obj) => Number(p.metadata.name.slice(name.length + 1));
            for (let ordinal = 0; ordinal < replicas; ordinal++) {
                const podName = `${name}-${ordinal}`;
                const existing = pods().find((p) => p.metadata.name === podName);
                if (!existing) {
                    this.createStatefulPod(sts, podName, ordinal, updateRevision);
                    if (!parallel) break;
                } else if (!podReady(existing) && !parallel) break;
            }
            const present = pods();
            const allReady = present.filter((p) => ordinalOf(p) < replicas).every(podReady) && present.length >= replicas;
            const condemned = present.filter((p) => ordinalOf(p) >= replicas).sort((a, b) => ordinalOf(b) - ordinalOf(a));
            if (condemned.length && (allReady || parallel)) {
                for (const pod of parallel ? condemned : condemned.slice(0, 1)) this.remove(POD, pod);
            } else if (allReady && sts.spec.updateStrategy?.type !== "OnDelete") {
                const partition = sts.spec.updateStrategy?.rollingUpdate?.partition ?? 0;
                const stale = present
                    .filter((p) => ordinalOf(p) < replicas && ordinalOf(p) >= partition && p.metadata.labels?.["controller-revision-hash"] !== updateRevision)
                    .sort((a, b) => ordinalOf(b) - ordinalOf(a));
                if (stale.length) this.remove(POD, stale[0]);
            }
            const now = pods().filter(alive);
            const ready = now.filter(podReady).length;
            const updated = now.filter((p) => p.metadata.labels?.["controller-revision-hash"] === updateRevision).length;
            if (updated === replicas && ready === replicas && now.length === replicas) currentRevision = updateRevision;
            const status = {
                observedGeneration: sts.metadata.generation,
                replicas: now.length,
                readyReplicas: ready,
                availableReplicas: ready,
                currentReplicas: now.filter((p) => p.metadata.labels?.["controller-revision-hash"] === currentRevision).length,
                updatedReplicas: updated,
                currentRevision,
                updateRevision,
                collisionCount: 0,
            };
            this.write(STS, { ...sts, status }, sts);
        }
    }

    private createStatefulPod(sts: Obj, podName: string, ordinal: number, revision: string): void {
        const PVC = kindNamed("PersistentVolumeClaim");
        const claims = (sts.spec.volumeClaimTemplates ?? []) as Obj[];
        for (const template of claims) {
            const claimName = `${template.metadata.name}-${podName}`;
            if (!this.store.get(PVC, sts.metadata.namespace, claimName)) {
                this.createObject(PVC, { apiVersion: "v1", kind: "PersistentVolumeClaim", metadata: { name: claimName, namespace: sts.metadata.namespace, labels: sts.spec.selector?.matchLabels }, spec: template.spec, status: { phase: "Pending" } });
            }
        }
        const volumes = [...(sts.spec.template.spec?.volumes ?? []), ...claims.map((t) => ({ name: t.metadata.name, persistentVolumeClaim: { claimName: `${t.metadata.name}-${podName}` } }))];
        this.createPod(sts, podName, sts.spec.template, {
            labels: { "controller-revision-hash": revision, "statefulset.kubernetes.io/pod-name": podName, "apps.kubernetes.io/pod-index": String(ordinal) },
            spec: { hostname: podName, ...(sts.spec.serviceName ? { subdomain: sts.spec.serviceName } : {}), ...(volumes.length ? { volumes } : {}) },
        });
    }

    // ---- daemonset controller ----

    private daemonSets(): void {
        const DS = kindNamed("DaemonSet");
        const nodes = this.store.nodes();
        for (const ds of this.store.list(DS).filter(alive)) {
            const hash = templateHash(ds.spec.template);
            const eligible = nodes.filter((n) => tolerated(n, ds.spec.template.spec, true) && nodeSelected(n, ds.spec.template.spec));
            let pods = this.store.list(POD, ds.metadata.namespace).filter((p) => ownedBy(p, ds) && alive(p));
            for (const pod of pods) {
                const stale = pod.metadata.labels?.["controller-revision-hash"] !== hash;
                if (stale || !eligible.some((n) => n.name === pod.spec.nodeName)) this.remove(POD, pod);
            }
            pods = this.store.list(POD, ds.metadata.namespace).filter((p) => ownedBy(p, ds) && alive(p));
            for (const node of eligible.filter((n) => !pods.some((p) => p.spec.nodeName === n.name))) {
                this.createPod(ds, `${ds.metadata.name}-${randomSuffix()}`, ds.spec.template, { labels: { "controller-revision-hash": hash }, nodeName: node.name });
            }
            pods = this.store.list(POD, ds.metadata.namespace).filter((p) => ownedBy(p, ds) && alive(p));
            const ready = pods.filter(podReady).length;
            const status = { observedGeneration: ds.metadata.generation, desiredNumberScheduled: eligible.length, currentNumberScheduled: pods.length, updatedNumberScheduled: pods.length, numberReady: ready, numberAvailable: ready, numberMisscheduled: 0 };
            this.write(DS, { ...ds, status }, ds);
        }
    }

    // ---- garbage collector ----

    private garbage(): void {
        for (const kind of KINDS.filter((k) => k.namespaced)) {
            for (const object of this.store.list(kind)) {
                const owners = (object.metadata.ownerReferences ?? []) as Obj[];
                if (owners.length === 0) continue;
                const ownerGone = owners.every((r) => {
                    const ownerKind = KINDS.find((k) => k.kind === r.kind);
                    const owner = ownerKind && this.store.get(ownerKind, ownerKind.namespaced ? object.metadata.namespace : undefined, r.name);
                    return !owner || owner.metadata.uid !== r.uid;
                });
                if (ownerGone) this.remove(kind, object);
            }
        }
    }

    // ---- scheduler ----

    private schedule(): void {
        const nodes = this.store.nodes();
        const pods = this.store.list(POD);
        for (const pod of pods.filter((p) => !p.spec.nodeName && alive(p))) {
            const reasons = new Map<string, number>();
            const feasible = nodes.filter((n) => {
                const why = unfit(n, pod.spec);
                if (why) reasons.set(why, (reasons.get(why) ?? 0) + 1);
                return !why;
            });
            const unbound = this.unboundClaim(pod);
            if (feasible.length === 0 || unbound) {
                const detail = unbound ? "pod has unbound immediate PersistentVolumeClaims" : [...reasons].sort().map(([why, n]) => `${n} ${why}`).join(", ");
                const message = `0/${nodes.length} nodes are available: ${detail}. preemption: 0/${nodes.length} nodes are available: ${nodes.length} Preemption is not helpful for scheduling.`;
                const conditions = [condition(pod.status?.conditions ?? [], "PodScheduled", false, "Unschedulable", message)];
                this.write(POD, { ...pod, status: { ...pod.status, phase: "Pending", conditions } }, pod);
                continue;
            }
            const load = (n: Node) => pods.filter((p) => p.spec.nodeName === n.name).length;
            const node = [...feasible].sort((a, b) => load(a) - load(b) || a.name.localeCompare(b.name))[0];
            const conditions = [condition([], "PodScheduled", true)];
            const bound = this.write(POD, { ...pod, spec: { ...pod.spec, nodeName: node.name }, status: { ...pod.status, conditions } }, pod);
            pods.splice(pods.indexOf(pod), 1, bound);
        }
    }

    private unboundClaim(pod: Obj): boolean {
        return ((pod.spec.volumes ?? []) as Obj[]).some((v) => v.persistentVolumeClaim && this.store.get(kindNamed("PersistentVolumeClaim"), pod.metadata.namespace, v.persistentVolumeClaim.claimName)?.status?.phase !== "Bound");
    }

    // ---- kubelets ----

    private kubelets(): void {
        const nodes = new Map(this.store.nodes().map((n) => [n.name, n]));
        const podCidr = (this.store.cluster().pods || "10.244.0.0/16").split("/")[0].split(".");
        for (const pod of this.store.list(POD).filter((p) => p.spec.nodeName)) {
            const node = nodes.get(pod.spec.nodeName);
            if (!node) {
                this.remove(POD, pod);
                continue;
            }
            const previous = (pod.status?.conditions ?? []) as Obj[];
            const ready = node.ready;
            const startTime = pod.status?.startTime ?? now();
            const podIP = pod.status?.podIP ?? (pod.spec.hostNetwork ? node.address : `${podCidr[0]}.${podCidr[1]}.${[...nodes.keys()].indexOf(node.name) % 256}.${2 + Math.floor(Math.random() * 250)}`);
            const containerStatuses = (pod.spec.containers as Obj[]).map((c) => {
                const before = (pod.status?.containerStatuses ?? []).find((s: Obj) => s.name === c.name);
                return { name: c.name, image: c.image, imageID: "", containerID: before?.containerID ?? `containerd://${randomBytes(32).toString("hex")}`, ready, started: true, restartCount: 0, state: { running: { startedAt: before?.state?.running?.startedAt ?? startTime } } };
            });
            const status = {
                ...pod.status,
                phase: "Running",
                hostIP: node.address,
                hostIPs: [{ ip: node.address }],
                podIP,
                podIPs: [{ ip: podIP }],
                startTime,
                containerStatuses,
                conditions: [
                    condition(previous, "PodReadyToStartContainers", true),
                    condition(previous, "Initialized", true),
                    condition(previous, "Ready", ready),
                    condition(previous, "ContainersReady", ready),
                    condition(previous, "PodScheduled", true),
                ],
            };
            this.write(POD, { ...pod, status }, pod);
        }
    }

    // ---- endpoints controller ----

    private endpoints(): void {
        const ENDPOINTS = kindNamed("Endpoints");
        const services = this.store.list(kindNamed("Service"));
        for (const svc of services) {
            const selector = svc.spec?.selector as Record<string, string> | undefined;
            if (!selector || Object.keys(selector).length === 0 || svc.spec.type === "ExternalName") continue;
            const namespace = svc.metadata.namespace;
            const pods = this.store.list(POD, namespace).filter((p) => alive(p) && p.status?.podIP && selectorMatches({ matchLabels: selector }, p.metadata.labels ?? {}));
            const address = (p: Obj) => ({ ip: p.status.podIP, nodeName: p.spec.nodeName, targetRef: { kind: "Pod", namespace, name: p.metadata.name, uid: p.metadata.uid } });
            const publishAll = svc.spec.publishNotReadyAddresses === true;
            const addresses = pods.filter((p) => publishAll || podReady(p)).map(address);
            const notReadyAddresses = pods.filter((p) => !publishAll && !podReady(p)).map(address);
            const ports = ((svc.spec.ports ?? []) as Obj[]).map((port) => ({ ...(port.name ? { name: port.name } : {}), port: targetPortOf(port, pods[0]), protocol: port.protocol ?? "TCP" }));
            const subsets = addresses.length || notReadyAddresses.length ? [{ ...(addresses.length ? { addresses } : {}), ...(notReadyAddresses.length ? { notReadyAddresses } : {}), ports }] : [];
            const existing = this.store.get(ENDPOINTS, namespace, svc.metadata.name);
            const next = { apiVersion: "v1", kind: "Endpoints", metadata: { ...existing?.metadata, name: svc.metadata.name, namespace, labels: svc.metadata.labels }, subsets };
            if (existing) this.write(ENDPOINTS, next, existing);
            else this.createObject(ENDPOINTS, next);
        }
        for (const ep of this.store.list(ENDPOINTS)) {
            if (!services.some((s) => s.metadata.namespace === ep.metadata.namespace && s.metadata.name === ep.metadata.name)) this.remove(ENDPOINTS, ep);
        }
    }
}

function targetPortOf(port: Obj, pod: Obj | undefined): number {
    const target = port.targetPort ?? port.port;
    if (typeof target === "number") return target;
    const named = ((pod?.spec.containers ?? []) as Obj[]).flatMap((c) => c.ports ?? []).find((p: Obj) => p.name === target);
    return named?.containerPort ?? port.port;
}

/** A pod condition, keeping its transition time while its status stays. */
function condition(previous: Obj[], type: string, status: boolean, reason?: string, message?: string): Obj {
    const before = previous.find((c) => c.type === type);
    const value = status ? "True" : "False";
    const unchanged = before && before.status === value && before.reason === reason;
    const time = unchanged ? before.lastTransitionTime : now();
    return { type, status: value, ...(reason ? { reason } : {}), ...(message ? { message } : {}), lastTransitionTime: time, ...(type === "Available" || type === "Progressing" ? { lastUpdateTime: unchanged ? (before.lastUpdateTime ?? time) : time } : {}) };
}

function pick(o: Obj | undefined, keys: string[]): Obj {
    return Object.fromEntries(keys.map((k) => [k, o?.[k]]));
}

/** The taints a node carries in the stand-in (see the header). */
function taintsOf(node: Node): string[] {
    return [...(node.role === "control-plane" ? ["node-role.kubernetes.io/control-plane"] : []), ...(!node.ready ? ["node.kubernetes.io/not-ready"] : []), ...(node.unschedulable ? ["node.kubernetes.io/unschedulable"] : [])];
}

const tolerates = (tolerations: Obj[], taint: string) => tolerations.some((t) => (t.operator === "Exists" && (!t.key || t.key === taint)) || t.key === taint);

/** The daemonset controller adds a toleration of node.kubernetes.io/unschedulable to its pods (pkg/controller/daemon/util). */
function tolerated(node: Node, spec: Obj, daemon = false): boolean {
    const tolerations = [...((spec?.tolerations ?? []) as Obj[]), ...(daemon ? [{ key: "node.kubernetes.io/unschedulable", operator: "Exists" }] : [])];
    return taintsOf(node).every((taint) => tolerates(tolerations, taint));
}

function nodeSelected(node: Node, spec: Obj): boolean {
    return Object.entries((spec?.nodeSelector ?? {}) as Record<string, string>).every(([k, v]) => node.labels[k] === v);
}

/** Why the scheduler filters a node out, in its plugins' words (NodeUnschedulable, TaintToleration, NodeAffinity). */
function unfit(node: Node, spec: Obj): string | undefined {
    const tolerations = (spec?.tolerations ?? []) as Obj[];
    if (node.unschedulable && !tolerates(tolerations, "node.kubernetes.io/unschedulable")) return "node(s) were unschedulable";
    const untolerated = taintsOf(node).find((t) => !tolerates(tolerations, t));
    if (untolerated) return `node(s) had untolerated taint {${untolerated}: }`;
    if (!nodeSelected(node, spec)) return "node(s) didn't match Pod's node affinity/selector";
    return undefined;
}

/** controller.ComputeHash's shape: fnv32a of the template, printed in decimal and mapped onto rand's safe alphabet. */
export function templateHash(template: Obj): string {
    let hash = 0x811c9dc5;
    for (const byte of Buffer.from(JSON.stringify(template))) {
        hash ^= byte;
        hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    const alphabet = "bcdfghjklmnpqrstvwxz2456789";
    return [...String(hash)].map((c) => alphabet[c.charCodeAt(0) % alphabet.length]).join("");
}

/** 25% (or the strategy's value) of the replicas, rounded down for maxUnavailable and up for maxSurge. */
function percentOf(value: unknown, replicas: number, roundUp: boolean): number {
    if (typeof value === "number") return value;
    const percent = Number(String(value ?? "25%").replace("%", "")) / 100;
    return roundUp ? Math.ceil(percent * replicas) : Math.floor(percent * replicas);
}
const unavailableAllowed = (d: Obj, replicas: number) => percentOf(d.spec.strategy?.rollingUpdate?.maxUnavailable, replicas, false);
const surge = (d: Obj, replicas: number) => (d.spec.strategy?.type === "Recreate" ? 0 : percentOf(d.spec.strategy?.rollingUpdate?.maxSurge, replicas, true));

/** ReplicaSet scale-down order (controller.ActivePods): unscheduled, pending, unready, then the newest first. */
function deletionOrder(a: Obj, b: Obj): number {
    const rank = (p: Obj) => (!p.spec.nodeName ? 0 : p.status?.phase === "Pending" ? 1 : !podReady(p) ? 2 : 3);
    return rank(a) - rank(b) || Date.parse(b.metadata.creationTimestamp) - Date.parse(a.metadata.creationTimestamp);
}

/** A legacy service-account token: a JWT of LegacyClaims (pkg/serviceaccount/legacy.go), signed by no real key. */
function serviceAccountToken(namespace: string, secretName: string, saName: string, saUid: string): string {
    const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const claims = {
        iss: "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/secret.name": secretName,
        "kubernetes.io/serviceaccount/service-account.name": saName,
        "kubernetes.io/serviceaccount/service-account.uid": saUid,
        sub: `system:serviceaccount:${namespace}:${saName}`,
    };
    return `${b64url({ alg: "RS256", kid: randomBytes(16).toString("base64url") })}.${b64url(claims)}.${randomBytes(256).toString("base64url")}`;
}
