import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import { RegistrySpec } from "../config/spec";
import { SecurityGroup, sshAndPortRules } from "./securityGroups";
import { Server } from "./server";
import { VnfcResource, vnfcOf } from "./vnfc";

export interface PrivateRegistryArgs {
    /** The resolved registry VNF specification (see `config/`). */
    spec: RegistrySpec;
}

/** The private-registry VNF: one VM reachable on SSH and the registry port. */
export class PrivateRegistry extends pulumi.ComponentResource {
    readonly server: Server;
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
            },
            child,
        );
        this.endpoint = pulumi.interpolate`${this.server.address}:${spec.port}`;
        this.vnfcResources = pulumi.all([vnfcOf(this.server, `${spec.name}-registry`, "PrivateRegistryVDU", spec.connectionPoint)]);
        this.registerOutputs({ endpoint: this.endpoint, vnfcResources: this.vnfcResources });
    }
}
