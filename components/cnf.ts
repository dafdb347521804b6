import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { INSTANCE_LABEL, KubernetesObject } from "../config/cnfManifests";
import { CnfSpec } from "../config/spec";
import { kubernetesSdk } from "./kubeadmCluster";

/** What a heal re-creates: no template change rolls their pods (a Pod has none, a ReplicaSet does not roll). */
const RECREATED_KINDS: ReadonlySet<string> = new Set(["Pod", "ReplicaSet"]);
/** Their replacement trigger until their first heal. */
const NOT_RESTARTED = "not restarted";

export interface ContainerizedVnfArgs {
    /** The resolved CNF: its objects already in their namespace, labelled, with replicas and restart marks. */
    spec: CnfSpec;
}

/** One VDU's workload as the LCM service reports it (`vnfcResourceInfo`): a pod slot of a Kubernetes resource. */
export interface CnfVnfcResource {
    id: string;
    /** The workload's name: the VNFD's VDU whose `properties.name` it is. */
    vduId: string;
    /** `Kind/name` of the workload, in the CNF's namespace. */
    resourceId: string;
    resourceType: string;
}

/**
 * A CNF on a Kubernetes VIM: a provider from the VIM's endpoint, CA and token, the namespace when the CNF
 * owns it, and the objects of its manifests as typed resources (the v1 ConfigGroup's `objs`, parsed by us:
 * typed children, visible in previews and under mocks). Files are created in their order, as Tacker does.
 * A healed Pod or ReplicaSet is re-created (no template change rolls their pods); a healed Deployment's,
 * StatefulSet's or DaemonSet's restart mark is already in its pod template, so its controller rolls its pods.
 */
export class ContainerizedVnf extends pulumi.ComponentResource {
    readonly provider: k8s.Provider;
    readonly namespace?: k8s.core.v1.Namespace;
    readonly vnfcResources: pulumi.Output<CnfVnfcResource[]>;

    constructor(name: string, args: ContainerizedVnfArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:kubernetes:ContainerizedVnf", name, {}, opts);
        const { spec } = args;
        const sdk = kubernetesSdk();
        this.provider = new sdk.Provider(
            `${name}-vim`,
            // Once the cluster is gone, so are the objects: a terminate after the cluster's does not hang on it.
            { kubeconfig: pulumi.secret(pulumi.output(spec.vim).apply(vimKubeconfig)), deleteUnreachable: true },
            { parent: this },
        );
        const child = { parent: this, provider: this.provider };
        if (spec.createNamespace) {
            this.namespace = new sdk.core.v1.Namespace(`${name}-namespace`, { metadata: { name: spec.namespace, labels: { [INSTANCE_LABEL]: spec.instanceId } } }, child);
        }
        let before: pulumi.Resource[] = this.namespace ? [this.namespace] : [];
        const files = [...new Set(spec.objects.map((o) => o.fileIndex))].sort((a, b) => a - b);
        for (const fileIndex of files) {
            const dependsOn = before;
            const restarts = new Map(spec.workloads.filter((w) => RECREATED_KINDS.has(w.kind) && w.restart).map((w) => [`${w.kind}/${w.name}`, w.restart!]));
            const group = new sdk.yaml.ConfigGroup(
                `${name}-file-${fileIndex}`,
                {
                    objs: spec.objects.filter((o) => o.fileIndex === fileIndex).map((o) => o.object),
                    transformations: [
                        (object: KubernetesObject, objectOpts: pulumi.CustomResourceOptions) => {
                            // The group's children carry no dependsOn of their own (yaml.js getChildOpts): these are all.
                            objectOpts.dependsOn = dependsOn;
                            // Always a trigger: the engine takes a trigger's first value as no change (shouldTriggerReplace).
                            // Delete-first: the new object has the old one's name, and the API refuses a second.
                            if (RECREATED_KINDS.has(object.kind)) {
                                Object.assign(objectOpts, { replacementTrigger: restarts.get(`${object.kind}/${object.metadata.name}`) ?? NOT_RESTARTED, deleteBeforeReplace: true });
                            }
                        },
                    ],
                },
                child,
            );
            before = [group];
        }
        this.vnfcResources = pulumi.output(spec.workloads.flatMap((w) =>
            Array.from({ length: w.replicas ?? 1 }, (_, i) => ({ id: `${spec.name}-${w.name}-${i}`, vduId: w.name, resourceId: `${w.kind}/${w.name}`, resourceType: w.kind })),
        ));
        this.registerOutputs({ vnfcResources: this.vnfcResources });
    }
}

/** A kubeconfig for the VIM's token; without a CA the server's certificate goes unchecked, as Tacker does then. */
export function vimKubeconfig(vim: CnfSpec["vim"]): string {
    const cluster = vim.caCertificate ? { server: vim.endpoint, "certificate-authority-data": Buffer.from(vim.caCertificate).toString("base64") } : { server: vim.endpoint, "insecure-skip-tls-verify": true };
    return YAML.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "vim", cluster }],
        users: [{ name: "vim", user: { token: vim.token } }],
        contexts: [{ name: "vim", context: { cluster: "vim", user: "vim" } }],
        "current-context": "vim",
    });
}
