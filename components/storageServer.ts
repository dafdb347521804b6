import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import { StorageServerSpec } from "../config/spec";
import { ControlPlaneRef } from "../providers/kubernetes/kubeadm";
import { NodeProxy } from "../providers/kubernetes/nodePrep";
import { NfsServer } from "../providers/storage/nfsServer";
import { StorageHealCheck } from "../providers/storage/storageHealCheck";
import { SshTarget } from "../providers/transport/ssh";
import { Server } from "./server";
import { exportsFile, serverIdentity, volumeSerial } from "./storagePlan";

export interface StorageServerArgs {
    /** Prefix of the Nova and Cinder names. */
    vnfName: string;
    /** VM, volumes and exports. */
    spec: StorageServerSpec;
    /** Security groups of the server's port (nodes' group for SSH, NFS group for the exports). */
    securityGroupIds: pulumi.Input<string>[];
    /** Nova key pair of the login user. */
    keyPairName?: pulumi.Input<string>;
    /** Private key the step logs in with (else the password). */
    sshPrivateKey?: string;
    /** Raising it replaces the VM (a storage heal); its first value replaces nothing. */
    healGeneration: number;
    /** apt's proxy on the server. */
    proxy?: pulumi.Input<NodeProxy>;
    /**
     * The PersistentVolumes registered on the exports, and the masters to ask for their phases: a heal is
     * refused while one is Bound (unless `spec.healWhileInUse`). Absent: nothing to wait for.
     */
    inUse?: { persistentVolumes: string[]; controlPlanes: pulumi.Input<ControlPlaneRef[]>; firstMaster: pulumi.Input<SshTarget> };
}

/**
 * The NFS storage server: a VM on a Neutron port of its own (its address survives a heal), Cinder volumes
 * that are resources of their own, attachments joining them, and the NfsServer step on top. A heal passes
 * the StorageHealCheck first (no registered PersistentVolume Bound), which the VM depends on; then the step
 * stops serving, the volumes detach, a new VM boots on the same port, the
 * same volumes attach and are mounted, never formatted again.
 */
export class StorageServer extends pulumi.ComponentResource {
    readonly server: Server;
    readonly volumes: openstack.blockstorage.Volume[];
    readonly attachments: openstack.compute.VolumeAttach[];
    readonly nfs: NfsServer;
    readonly healCheck?: StorageHealCheck;

    constructor(name: string, args: StorageServerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:openstack:StorageServer", name, {}, opts);
        const { spec } = args;
        this.healCheck =
            args.inUse &&
            new StorageHealCheck(
                `${name}-heal-check`,
                {
                    connection: args.inUse.firstMaster,
                    healGeneration: args.healGeneration,
                    serverIdentity: serverIdentity(spec.server),
                    persistentVolumes: args.inUse.persistentVolumes,
                    healWhileInUse: spec.healWhileInUse,
                    controlPlanes: args.inUse.controlPlanes,
                },
                { parent: this },
            );
        this.server = new Server(
            `${name}-server`,
            {
                vmName: `${args.vnfName}-storage`,
                spec: spec.server,
                ports: [{ networkId: spec.server.networkId, subnetId: spec.server.subnetId, fixedIp: spec.server.fixedIp, securityGroupIds: args.securityGroupIds }],
                keyPairName: args.keyPairName,
                metadata: { "k8s-vnf-role": "storage", "k8s-vnf-cp": spec.connectionPoint },
                replacementTrigger: String(args.healGeneration),
                // The gate's update (the PVs' check) comes before any replacement of the VM.
                dependsOn: this.healCheck && [this.healCheck],
            },
            { parent: this },
        );
        this.volumes = spec.volumes.map(
            (v) =>
                new openstack.blockstorage.Volume(
                    `${name}-volume-${v.name}`,
                    { name: `${args.vnfName}-${v.name}`, size: v.sizeGb, volumeType: v.volumeType, availabilityZone: spec.server.availabilityZone },
                    // Either would replace the volume (ForceNew), leaving an empty one and deleting the data: kept as
                    // they were made (a volume moves zone or type with Cinder's own migrate or retype, not here).
                    { parent: this, ignoreChanges: ["availabilityZone", "volumeType"] },
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
        this.nfs = new NfsServer(
            `${name}-nfs`,
            {
                connection: this.server.sshTarget(args.sshPrivateKey),
                // Through the attachments: replacing the VM replaces them, and so this step, in dependency order.
                vmId: pulumi.all(this.attachments.map((a) => a.instanceId)).apply((ids) => ids[0]),
                volumes: this.attachments.map((a, i) => a.volumeId.apply((id) => ({ serial: volumeSerial(id), mountTo: spec.volumes[i].mountTo }))),
                exportsFile: exportsFile(spec.exports),
                exportDirs: spec.exports.map((e) => e.dir),
                proxy: args.proxy,
            },
            { parent: this },
        );
        this.registerOutputs({ address: this.server.address, volumeIds: this.volumes.map((v) => v.id) });
    }
}
