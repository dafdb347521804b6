import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import { StorageServerSpec } from "../config/spec";
import { ControlPlaneRef } from "../providers/kubernetes/kubeadm";
import { NodeProxy } from "../providers/kubernetes/nodePrep";
import { NfsServer } from "../providers/storage/nfsServer";
import { Server } from "./server";
import { exportsFile, volumeSerial } from "./storagePlan";

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
    /** Names of the PersistentVolumes registered on the exports: a heal waits while one is Bound. */
    persistentVolumes: string[];
    /** The masters, to ask for those PersistentVolumes' phases. */
    controlPlanes?: pulumi.Input<ControlPlaneRef[]>;
    /** apt's proxy on the server. */
    proxy?: pulumi.Input<NodeProxy>;
    /**
     * The cluster: when it is deleted too (terminate), the server's volumes are not unexported one by one,
     * and the PersistentVolumes left in it are no reason to wait.
     */
    cluster?: pulumi.Resource;
}

/**
 * The NFS storage server: a VM on a Neutron port of its own (its address survives a heal), Cinder volumes
 * that are resources of their own, attachments joining them, and the NfsServer step on top. Healing
 * replaces the VM, the attachments and the step, in that order back and forth: the step stops serving
 * (after checking no registered PersistentVolume is Bound), the volumes detach, a new VM boots on the same
 * port, the same volumes attach and are mounted, never formatted again.
 */
export class StorageServer extends pulumi.ComponentResource {
    readonly server: Server;
    readonly volumes: openstack.blockstorage.Volume[];
    readonly attachments: openstack.compute.VolumeAttach[];
    readonly nfs: NfsServer;

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
                replacementTrigger: String(args.healGeneration),
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
        const login = spec.server;
        this.nfs = new NfsServer(
            `${name}-nfs`,
            {
                connection: this.server.sshAddress.apply((host) => ({
                    host,
                    username: login.username,
                    ...(login.password ? { password: login.password } : {}),
                    ...(args.sshPrivateKey ? { privateKey: args.sshPrivateKey } : {}),
                })),
                // Through the attachments: replacing the VM replaces them, and so this step, in dependency order.
                vmId: pulumi.all(this.attachments.map((a) => a.instanceId)).apply((ids) => ids[0]),
                volumes: this.attachments.map((a, i) => a.volumeId.apply((id) => ({ serial: volumeSerial(id), mountTo: spec.volumes[i].mountTo }))),
                exportsFile: exportsFile(spec.exports),
                exportDirs: spec.exports.map((e) => e.dir),
                persistentVolumes: args.persistentVolumes,
                healWhileInUse: spec.healWhileInUse,
                controlPlanes: args.controlPlanes,
                proxy: args.proxy,
            },
            { parent: this, deletedWith: args.cluster },
        );
        this.registerOutputs({ address: this.server.address, volumeIds: this.volumes.map((v) => v.id) });
    }
}
