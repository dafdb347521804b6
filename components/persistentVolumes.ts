import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ClusterTies, clusterObjectOptions } from "./clusterObjects";
import { kubernetesSdk } from "./kubeadmCluster";
import { PersistentVolumeSpec } from "../config/spec";
import { persistentVolumeFor } from "./storagePlan";

export interface PersistentVolumesArgs extends ClusterTies {
    /** The PersistentVolume manifests of the VNF package. */
    volumes: PersistentVolumeSpec[];
    /** The storage server's address (its own port's, kept across a heal): every PV's NFS server. */
    serverAddress: pulumi.Input<string>;
    /** The exports the PVs point at: registered once they are served. */
    exports: pulumi.Resource;
}

/**
 * The PersistentVolumes of the VNF package, registered with @pulumi/kubernetes: each manifest's NFS server
 * replaced by the storage server's address; the provider waits until each is Available (or Bound).
 */
export class PersistentVolumes extends pulumi.ComponentResource {
    readonly volumes: k8s.core.v1.PersistentVolume[];

    constructor(name: string, args: PersistentVolumesArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:kubernetes:PersistentVolumes", name, {}, opts);
        this.volumes = args.volumes.map((pv) => {
            const object = pulumi.output(args.serverAddress).apply((address) => persistentVolumeFor(pv.manifest, address));
            return new (kubernetesSdk().core.v1.PersistentVolume)(
                `${name}-${pv.name}`,
                { metadata: object.metadata, spec: object.spec },
                clusterObjectOptions(args, this, [args.exports]),
            );
        });
        this.registerOutputs({ names: this.volumes.map((v) => v.metadata.name) });
    }
}
