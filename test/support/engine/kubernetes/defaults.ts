/**
 * What the API server fills in on create and keeps on update: the defaulting functions of pkg/apis/*\/v1/defaults.go
 * that show in live objects (Deployment: replicas 1, RollingUpdate 25%/25%, revisionHistoryLimit 10,
 * progressDeadlineSeconds 600; StatefulSet: replicas 1, OrderedReady, RollingUpdate partition 0; pod templates:
 * restartPolicy Always, dnsPolicy ClusterFirst, schedulerName default-scheduler, terminationGracePeriodSeconds 30,
 * containers' imagePullPolicy by tag and terminationMessagePath; Service: ClusterIP with an IP from the service
 * range (pkg/registry/core/service/ipallocator), TCP ports, targetPort = port; Secret: Opaque, stringData folded into
 * data (pkg/apis/core/v1/conversion.go Convert_v1_Secret_To_core_Secret)).
 */
import { randomInt } from "node:crypto";
import { Obj } from "./store";

function defaultContainers(containers: Obj[] | undefined): Obj[] | undefined {
    return containers?.map((c) => {
        const tag = String(c.image ?? "").split("/").pop()!.split("@")[0].split(":")[1];
        return {
            terminationMessagePath: "/dev/termination-log",
            terminationMessagePolicy: "File",
            imagePullPolicy: tag === undefined || tag === "latest" ? "Always" : "IfNotPresent",
            resources: {},
            ...c,
            ports: c.ports?.map((p: Obj) => ({ protocol: "TCP", ...p })),
        };
    });
}

export function defaultPodSpec(spec: Obj | undefined): Obj {
    return {
        restartPolicy: "Always",
        dnsPolicy: "ClusterFirst",
        schedulerName: "default-scheduler",
        terminationGracePeriodSeconds: 30,
        securityContext: {},
        ...spec,
        containers: defaultContainers(spec?.containers),
        ...(spec?.initContainers ? { initContainers: defaultContainers(spec.initContainers) } : {}),
    };
}

const withTemplate = (spec: Obj) => ({ ...spec, template: { ...spec.template, metadata: { ...spec.template?.metadata }, spec: defaultPodSpec(spec.template?.spec) } });

/** A free address of the service range (the `services=` CIDR kubeadm init recorded), as ipallocator picks one. */
function allocateClusterIP(servicesCidr: string, taken: Set<string>): string {
    const [base] = (servicesCidr || "10.96.0.0/12").split("/");
    const octets = base.split(".").map(Number);
    for (;;) {
        const ip = `${octets[0]}.${octets[1]}.${randomInt(0, 16)}.${randomInt(2, 255)}`;
        if (!taken.has(ip)) return ip;
    }
}

/** The object with the server's defaults; `live` is the stored object on update (its server-set fields stay). */
export function withDefaults(kind: string, object: Obj, context: { servicesCidr: string; clusterIPs: Set<string>; live?: Obj }): Obj {
    const spec = object.spec ?? {};
    switch (kind) {
        case "Deployment":
            return {
                ...object,
                spec: withTemplate({
                    replicas: 1,
                    revisionHistoryLimit: 10,
                    progressDeadlineSeconds: 600,
                    ...spec,
                    strategy: spec.strategy?.type === "Recreate" ? spec.strategy : { type: "RollingUpdate", rollingUpdate: { maxUnavailable: "25%", maxSurge: "25%", ...spec.strategy?.rollingUpdate } },
                }),
            };
        case "StatefulSet":
            return {
                ...object,
                spec: withTemplate({
                    replicas: 1,
                    podManagementPolicy: "OrderedReady",
                    revisionHistoryLimit: 10,
                    updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition: 0 } },
                    persistentVolumeClaimRetentionPolicy: { whenDeleted: "Retain", whenScaled: "Retain" },
                    ...spec,
                }),
            };
        case "ReplicaSet":
        case "DaemonSet":
            return { ...object, spec: withTemplate({ ...(kind === "ReplicaSet" ? { replicas: 1 } : {}), ...spec }) };
        case "Pod":
            return { ...object, spec: defaultPodSpec(spec) };
        case "Service": {
            const type = spec.type ?? "ClusterIP";
            const clusterIP = type === "ExternalName" ? undefined : (context.live?.spec?.clusterIP ?? spec.clusterIP ?? allocateClusterIP(context.servicesCidr, context.clusterIPs));
            return {
                ...object,
                spec: {
                    sessionAffinity: "None",
                    internalTrafficPolicy: "Cluster",
                    ...(clusterIP ? { clusterIP, clusterIPs: [clusterIP], ipFamilies: ["IPv4"], ipFamilyPolicy: "SingleStack" } : {}),
                    ...spec,
                    type,
                    ports: spec.ports?.map((p: Obj) => ({ protocol: "TCP", targetPort: p.port, ...p })),
                },
                status: { loadBalancer: {} },
            };
        }
        case "Secret": {
            const data = { ...object.data };
            for (const [k, v] of Object.entries((object.stringData ?? {}) as Record<string, string>)) data[k] = Buffer.from(v).toString("base64");
            const { stringData: _folded, ...rest } = object;
            return { ...rest, type: object.type ?? "Opaque", ...(Object.keys(data).length ? { data } : {}) };
        }
        case "Namespace":
            return { ...object, spec: { finalizers: ["kubernetes"] }, status: { phase: "Active" } };
        default:
            return object;
    }
}
