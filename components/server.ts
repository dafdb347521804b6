import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import * as YAML from "yaml";
import { UUID_RE } from "../config/fields";
import { ServerSpec } from "../config/spec";
import { SshTarget } from "../providers/transport/ssh";

/** One Neutron port of a server. */
export interface ServerPortArgs {
    /** Network the port is on. */
    networkId: pulumi.Input<string>;
    /** Subnet of the fixed IP (required by Neutron when `fixedIp` is given). */
    subnetId?: pulumi.Input<string>;
    /** Fixed address; left out, Neutron allocates one. */
    fixedIp?: pulumi.Input<string>;
    /** Security groups of the port. */
    securityGroupIds: pulumi.Input<string>[];
    /** Extra addresses the port may answer for (the HA VIP on masters). */
    allowedAddresses?: pulumi.Input<string>[];
}

export interface ServerArgs {
    /** Nova server name (also the Kubernetes node name for cluster nodes). */
    vmName: string;
    /** Image, flavor, zone, floating-IP pool and login of the VM. */
    spec: ServerSpec;
    /** Ports in NIC order; the first one is the management port SSH goes to. */
    ports: ServerPortArgs[];
    /** Nova key pair installed for the login user. */
    keyPairName?: pulumi.Input<string>;
    /** Nova server group the VM is scheduled into (anti-affinity). */
    serverGroupId?: pulumi.Input<string>;
    /** Nova metadata: role, VDU and connection point, so the VM explains itself in `openstack server show`. */
    metadata?: Record<string, string>;
    /** A change of this value replaces the VM (heal); its first value does not. */
    replacementTrigger?: pulumi.Input<string>;
    /** Resources whose steps run before any step of the VM (a check a replacement must pass). */
    dependsOn?: pulumi.Resource[];
}

/** A VM with its ports and, optionally, a floating IP. */
export class Server extends pulumi.ComponentResource {
    /** Nova server name. */
    readonly vmName: string;
    /** Nova server. */
    readonly instance: openstack.compute.Instance;
    /** Ports in NIC order. */
    readonly ports: openstack.networking.Port[];
    /** Fixed address of the first port. */
    readonly address: pulumi.Output<string>;
    /** Where SSH goes: the floating IP when there is one, else `address`. */
    readonly sshAddress: pulumi.Output<string>;

    /** The login the VM is created with. */
    private readonly login: ServerSpec;

    constructor(name: string, args: ServerArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:openstack:Server", name, {}, opts);
        this.vmName = args.vmName;
        this.login = args.spec;
        const created = createServer(name, args, this);
        this.instance = created.instance;
        this.ports = created.ports;
        this.address = created.address;
        this.sshAddress = created.sshAddress;
        this.registerOutputs({ address: this.address, sshAddress: this.sshAddress, serverId: this.instance.id });
    }

    /** How remote steps log into the VM: its login user, with `privateKey` when given, else the password. */
    sshTarget(privateKey?: string): pulumi.Output<SshTarget> {
        const { username, password } = this.login;
        return this.sshAddress.apply((host) => ({ host, username, ...(password ? { password } : {}), ...(privateKey ? { privateKey } : {}) }));
    }
}

function createServer(name: string, args: ServerArgs, parent: pulumi.Resource) {
    const { spec } = args;
    const ports = args.ports.map(
        (p, i) =>
            new openstack.networking.Port(
                `${name}-port${i === 0 ? "" : `-${i}`}`,
                {
                    name: `${args.vmName}${i === 0 ? "" : `-${i}`}`,
                    networkId: p.networkId,
                    adminStateUp: true,
                    fixedIps: p.subnetId ? [{ subnetId: p.subnetId, ipAddress: p.fixedIp }] : undefined,
                    securityGroupIds: p.securityGroupIds,
                    allowedAddressPairs: p.allowedAddresses?.map((ipAddress) => ({ ipAddress })),
                },
                // Neutron changes a port's fixed IP in place, under the running VM, before the VM's node could
                // be drained: a new address is a new port instead (made first), and so a new VM.
                { parent, replacementTrigger: p.fixedIp ?? "allocated" },
            ),
    );
    const floatingIp =
        spec.floatingIpPool === undefined
            ? undefined
            : new openstack.networking.FloatingIp(`${name}-fip`, { pool: spec.floatingIpPool, portId: ports[0].id }, { parent });

    const instance = new openstack.compute.Instance(
        `${name}-vm`,
        {
            name: args.vmName,
            ...(UUID_RE.test(spec.image) ? { imageId: spec.image } : { imageName: spec.image }),
            ...(UUID_RE.test(spec.flavor) ? { flavorId: spec.flavor } : { flavorName: spec.flavor }),
            availabilityZone: spec.availabilityZone,
            keyPair: args.keyPairName,
            networks: ports.map((p) => ({ port: p.id })),
            schedulerHints: args.serverGroupId ? [{ group: args.serverGroupId }] : undefined,
            userData: spec.enablePasswordLogin && spec.password ? pulumi.secret(passwordLoginCloudConfig(spec.username, spec.password)) : undefined,
            metadata: args.metadata,
            powerState: spec.powerState,
        },
        // The ports outlive a replacement (heal keeps the node's address), and a port binds to one server at a time.
        { parent, deleteBeforeReplace: true, replacementTrigger: args.replacementTrigger, dependsOn: args.dependsOn },
    );
    const address = ports[0].allFixedIps.apply((ips) => ips[0]);
    return { instance, ports, address, sshAddress: floatingIp ? floatingIp.address : address };
}

/**
 * cloud-init user data that sets the login user's password and allows SSH password login, which Tacker's
 * guide did by editing the image with guestfish.
 */
export function passwordLoginCloudConfig(username: string, password: string): string {
    const config = {
        ssh_pwauth: true,
        users: ["default", { name: username, lock_passwd: false, shell: "/bin/bash", sudo: "ALL=(ALL) NOPASSWD:ALL" }],
        chpasswd: { expire: false, users: [{ name: username, password, type: "text" }] },
    };
    return `#cloud-config\n${YAML.stringify(config)}`;
}
