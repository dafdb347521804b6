import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import { RegistrySpec } from "../config/spec";
import { RegistryServer } from "../providers/registry/registryServer";
import { SecurityGroup, sshAndPortRules } from "./securityGroups";
import { REGISTRY_ROOT, registryConfig } from "./registryPlan";
import { sha256Of } from "./fileDigest";
import { Server } from "./server";
import { volumeSerial } from "./storagePlan";
import { VnfcResource, vnfcOf } from "./vnfc";

export interface PrivateRegistryArgs {
    /** The resolved registry VNF specification (see `config/`). */
    spec: RegistrySpec;
}

/**
 * The private-registry VNF: one VM on a port of its own, reachable on SSH and the registry port; the images
 * on a Cinder volume of their own, attached to the VM; the RegistryServer step on top. A heal replaces the VM
 * only: the step stops serving, the volume detaches, a new VM boots on the same port (same address) and
 * serves the same images from the same volume.
 */
export class PrivateRegistry extends pulumi.ComponentResource {
    readonly server: Server;
    readonly volume: openstack.blockstorage.Volume;
    readonly registry: RegistryServer;
    /** `address:port` clusters use in `privateRegistries[].server`. */
    readonly endpoint: pulumi.Output<string>;
    readonly vnfcResources: pulumi.Output<VnfcResource[]>;

    constructor(name: string, args: PrivateRegistryArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:index:PrivateRegistry", name, {}, opts);
        const { spec } = args;
        const child = { parent: this };
        const keyPair = spec.ssh.publicKey
            ? new openstack.compute.Keypair(`${name}-keypair`, { name: spec.name, publicKey: spec.ssh.publicKey }, child)
            : undefined;
        const sg = new SecurityGroup(
            `${name}-sg`,
            {
                groupName: `${spec.name}-registry`,
                description: `Private registry ${spec.name}`,
                rules: sshAndPortRules([spec.port]),
                allowedCidrs: spec.securityGroup.allowedCidrs,
                extraRules: spec.securityGroup.extraRules,
            },
            child,
        );
        this.server = new Server(
            `${name}-server`,
            {
                vmName: `${spec.name}-registry`,
                spec: spec.server,
                ports: [{ networkId: spec.server.networkId, subnetId: spec.server.subnetId, fixedIp: spec.server.fixedIp, securityGroupIds: [sg.group.id] }],
                keyPairName: keyPair?.name,
                metadata: { "k8s-vnf-role": "registry", "k8s-vnf-cp": spec.connectionPoint },
                replacementTrigger: String(spec.healGeneration),
            },
            child,
        );
        this.volume = new openstack.blockstorage.Volume(
            `${name}-volume`,
            { name: `${spec.name}-registry-images`, size: spec.volume.sizeGb, volumeType: spec.volume.volumeType, availabilityZone: spec.server.availabilityZone },
            // Either would replace the volume (ForceNew) and lose the images: kept as they were made.
            { parent: this, ignoreChanges: ["availabilityZone", "volumeType"] },
        );
        // A volume attaches to one server at a time: the old attachment goes before a new one is made.
        const attachment = new openstack.compute.VolumeAttach(`${name}-attach`, { instanceId: this.server.instance.id, volumeId: this.volume.id }, { parent: this, deleteBeforeReplace: true });
        const tls = spec.tls;
        this.registry = new RegistryServer(
            `${name}-registry`,
            {
                connection: this.server.sshTarget(spec.ssh.privateKey),
                // Through the attachment: replacing the VM replaces it, and so this step, in dependency order.
                vmId: attachment.instanceId,
                volumes: [attachment.volumeId.apply((id) => ({ serial: volumeSerial(id), mountTo: REGISTRY_ROOT }))],
                config: registryConfig({ port: spec.port, tls: !!tls, logins: spec.users.length > 0 }),
                port: spec.port,
                scheme: tls ? "https" : "http",
                certificate: tls?.certificate,
                privateKey: tls && pulumi.secret(tls.privateKey),
                logins: spec.users.length ? pulumi.secret(spec.users.map((u) => `${u.username}:${u.password}`).join("\n")) : undefined,
                registryImage: spec.imageFile ? sha256Of(spec.imageFile).then((sha256) => ({ file: spec.imageFile!, sha256 })) : undefined,
                preloadImages: spec.preloadImages.map((p) => sha256Of(p.file).then((sha256) => ({ ...p, sha256 }))),
            },
            child,
        );
        this.endpoint = pulumi.interpolate`${this.server.address}:${spec.port}`;
        this.vnfcResources = pulumi.all([vnfcOf(this.server, `${spec.name}-registry`, "PrivateRegistryVDU", spec.connectionPoint)]);
        this.registerOutputs({ endpoint: this.endpoint, vnfcResources: this.vnfcResources });
    }
}
