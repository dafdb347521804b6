import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import { StorageServerSpec } from "../config/spec";
import { Server } from "./server";

export interface StorageServerArgs {
    /** Prefix of the Nova and Cinder names. */
    vnfName: string;
    /** VM, volumes and exports. */
    spec: StorageServerSpec;
    /** Security groups of the server's port (nodes' group for SSH, NFS group for the exports). */
    securityGroupIds: pulumi.Input<string>[];
    /** Nova key pair of the login user. */
    keyPairName?: pulumi.Input<string>;
}

/**
 * The NFS storage server: a VM and its Cinder volumes, joined by attachments. The volumes are resources of
 * their own, so healing (replacing) the VM re-attaches the same volumes instead of creating empty ones.
 */
export class StorageServer extends pulumi.ComponentResource {
    readonly server: Server;
    readonly volumes: openstack.blockstorage.Volume[];
    readonly attachments: openstack.compute.VolumeAttach[];

    constructor(name: string, args: StorageServerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:openstack:StorageServer", name, {}, opts);
        const { spec } = args;
        this.server = new Server(
            `${name}-server`,
            {
                vmName: `${args.vnfName}-storage`,
                spec: spec.server,
                ports: [{ networkId: spec.server.networkId, subnetId: spec.server.subnetId, fixedIp: spec.server.fixedIp, securityGroupIds: args.securityGroupIds }],
                keyPairName: args.keyPairName,
                metadata: { "k8s-vnf-role": "storage", "k8s-vnf-cp": spec.connectionPoint },
            },
            { parent: this },
        );
        this.volumes = spec.volumes.map(
            (v) =>
                new openstack.blockstorage.Volume(
                    `${name}-volume-${v.name}`,
                    { name: `${args.vnfName}-${v.name}`, size: v.sizeGb, volumeType: v.volumeType, availabilityZone: spec.server.availabilityZone },
                    { parent: this },
                ),
        );
        // A volume attaches to one server at a time: the old attachment must go before a new one is made.
        this.attachments = this.volumes.map(
            (volume, i) =>
                new openstack.compute.VolumeAttach(
                    `${name}-attach-${spec.volumes[i].name}`,
                    { instanceId: this.server.instance.id, volumeId: volume.id },
                    { parent: this, deleteBeforeReplace: true },
                ),
        );
        this.registerOutputs({ address: this.server.address, volumeIds: this.volumes.map((v) => v.id) });
    }
}
