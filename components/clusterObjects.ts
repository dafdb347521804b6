import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";

/** What ties the Kubernetes objects the program makes to the kubeadm cluster they live in. */
export interface ClusterTies {
    /** The cluster's Kubernetes provider (KubeadmCluster.kubernetesProvider: one across cluster generations). */
    provider: k8s.Provider;
    /** The cluster itself: deleted with it, an object is not deleted on its own. */
    cluster: pulumi.Resource;
    /** What identifies the cluster (its CA hash): a new cluster (entire heal) gets the object made again. */
    clusterId: pulumi.Input<string>;
}

/**
 * The options of every object the program makes in a kubeadm cluster. The provider stays the same across a new
 * cluster, so each object is made again by its own trigger, and delete-first: a copy made first would be deleted
 * again by name (the same name, through the same provider) when the old one goes.
 */
export function clusterObjectOptions(ties: ClusterTies, parent: pulumi.Resource, dependsOn: pulumi.Input<pulumi.Resource>[] = []): pulumi.CustomResourceOptions {
    return { parent, provider: ties.provider, dependsOn, deletedWith: ties.cluster, replacementTrigger: ties.clusterId, deleteBeforeReplace: true };
}
