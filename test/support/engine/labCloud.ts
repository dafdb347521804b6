/**
 * STAND-IN for the OpenStack resource provider (@pulumi/openstack, the Terraform provider bridged): the
 * resources the program registers are answered from the lab. A Port takes an address of the lab's subnet
 * (the fixed IP it asks for, as Neutron gives it, or a free one) and keeps it until deleted; an Instance
 * becomes a lab host named after the VM, at its first port's address, so a replaced VM comes back at the
 * same address, as a VM on a surviving Neutron port does. An Instance's `powerState` is Nova's stop and start
 * (the provider's power_state: `active`, `shutoff`; resource_openstack_compute_instance_v2.go stops a server
 * created as `shutoff` right after its build): the host's processes end with its kubelet stopped first, its
 * filesystem stays, and at power-on it boots again with its kubelet started. A Volume is a lab volume (a loop
 * device the lab owns, so it outlives servers) with a UUID for its id, as Cinder gives; a VolumeAttach shows
 * it in the server as Nova and udev do (/dev/vdX and /dev/disk/by-id/virtio-<id cut to 20 characters>),
 * reporting the device as `device`, and a volume still attached cannot be deleted (Cinder's "Volume status
 * must be available"). Other resources get an id and echo their inputs.
 *
 * Which input changes replace a resource follows the provider's schema (ForceNew attributes in
 * terraform-provider-openstack: openstack/resource_openstack_compute_instance_v2.go,
 * resource_openstack_networking_port_v2.go, resource_openstack_networking_secgroup_rule_v2.go,
 * resource_openstack_compute_volume_attach_v2.go, resource_openstack_compute_servergroup_v2.go,
 * resource_openstack_compute_keypair_v2.go, resource_openstack_blockstorage_volume_v3.go); other changes
 * update in place.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { Lab } from "../../lab/lab";
import { applyCloudConfig } from "../openstackApi/cloudInit";
import { DiffAnswer, plain, PropertyDiff } from "./stepRules";

type Props = Record<string, unknown>;

/** A lab volume's size, whatever size was asked for: enough for ext4 and the tests' files. */
const LAB_VOLUME_MB = 64;

const FORCE_NEW: Record<string, string[]> = {
    "openstack:compute/instance:Instance": ["imageId", "imageName", "availabilityZone", "keyPair", "networks", "userData", "schedulerHints", "configDrive", "blockDevices", "personalities"],
    "openstack:networking/port:Port": ["networkId", "tenantId"],
    "openstack:networking/secGroupRule:SecGroupRule": ["direction", "ethertype", "protocol", "portRangeMin", "portRangeMax", "remoteIpPrefix", "remoteGroupId", "securityGroupId", "description"],
    "openstack:compute/volumeAttach:VolumeAttach": ["instanceId", "volumeId", "device", "multiattach"],
    "openstack:compute/serverGroup:ServerGroup": ["name", "policies", "rules"],
    "openstack:compute/keypair:Keypair": ["name", "publicKey"],
    "openstack:blockstorage/volume:Volume": ["availabilityZone", "volumeType", "imageId", "snapshotId", "sourceVolId"],
    "openstack:networking/floatingIp:FloatingIp": ["pool", "address", "subnetId"],
};

/** A server the lab started, for whoever plays Nova's scheduler (the compute host of pod-affinity labels). */
export interface LabServer {
    id: string;
    name: string;
    address: string;
}

export class LabCloud {
    /** `stack`'s servers share one stand-in cluster state (`lab.clusterState/<stack>`). */
    constructor(
        readonly lab: Lab,
        private readonly stack: string,
        private readonly onServer?: (server: LabServer) => void,
    ) {}

    handles(type: string): boolean {
        return type.startsWith("openstack:");
    }

    diff(type: string, oldInputs: Props, newInputs: Props): DiffAnswer {
        const changed = Object.keys({ ...oldInputs, ...newInputs }).filter((k) => JSON.stringify(plain(oldInputs[k])) !== JSON.stringify(plain(newInputs[k])));
        const replaces = changed.filter((k) => (FORCE_NEW[type] ?? []).includes(k));
        // The bridged provider answers with a detailed diff, one entry per changed attribute, "-replace" for a
        // ForceNew one (pulumi-terraform-bridge pkg/tfbridge/detailed_diff.go); in preview an unknown is a change.
        const detailedDiff = Object.fromEntries(
            changed.map((k) => {
                const base = oldInputs[k] === undefined || oldInputs[k] === null ? "add" : newInputs[k] === undefined || newInputs[k] === null ? "delete" : "update";
                return [k, { kind: (replaces.includes(k) ? `${base}-replace` : base) as PropertyDiff["kind"], inputDiff: false }];
            }),
        );
        return { changes: changed.length ? "some" : "none", replaces, deleteBeforeReplace: false, changedKeys: changed, detailedDiff };
    }

    async create(type: string, urn: string, inputs: Props): Promise<{ id: string; outputs: Props }> {
        const suffix = randomBytes(4).toString("hex");
        switch (type) {
            case "openstack:networking/port:Port": {
                const index = this.portIndex(urn, inputs);
                return { id: `port-${index}-${suffix}`, outputs: { ...inputs, allFixedIps: [this.lab.addressOf(index)], macAddress: `02:6b:76:00:00:${index.toString(16).padStart(2, "0")}` } };
            }
            case "openstack:compute/instance:Instance": {
                const name = String(inputs.name);
                const index = this.firstPortIndex(inputs);
                await this.lab.startAt(name, index, this.stack);
                // A VM's further ports (an external LB's cluster-side port) are more addresses of the same host:
                // the lab has one network, so each goes on its one interface.
                for (const more of this.otherPortIndexes(inputs)) await this.lab.inside(name, `ip addr add ${this.lab.addressOf(more)}/24 dev eth0`);
                const userData = plain(inputs.userData);
                if (typeof userData === "string") await applyCloudConfig(this.lab, name, userData);
                const id = `server-${name}-${suffix}`;
                if (inputs.powerState === "shutoff") await this.power(name, "shutoff");
                const address = this.lab.addressOf(index);
                this.onServer?.({ id, name, address });
                return { id, outputs: { ...inputs, accessIpV4: address } };
            }
            case "openstack:blockstorage/volume:Volume": {
                const id = randomUUID();
                await this.lab.createVolume(id, LAB_VOLUME_MB);
                return { id, outputs: { ...inputs } };
            }
            case "openstack:compute/volumeAttach:VolumeAttach": {
                const host = this.serverName(String(inputs.instanceId));
                const device = await this.lab.attachVolume(host, String(inputs.volumeId));
                return { id: `${inputs.instanceId}/${inputs.volumeId}`, outputs: { ...inputs, device } };
            }
            case "openstack:networking/floatingIp:FloatingIp":
                // No NAT in the lab: the "floating" address is the port's own.
                return { id: `fip-${suffix}`, outputs: { ...inputs, address: this.lab.addressOf(this.indexOfPortId(String(inputs.portId))) } };
            default:
                return { id: `${type.split(":").pop()!.toLowerCase()}-${suffix}`, outputs: { ...inputs } };
        }
    }

    async update(type: string, _id: string, olds: Props, inputs: Props): Promise<Props> {
        if (type === "openstack:compute/instance:Instance" && (olds.powerState ?? "active") !== (inputs.powerState ?? "active")) {
            await this.power(String(inputs.name), String(inputs.powerState ?? "active"));
        }
        const computed = Object.fromEntries(Object.entries(olds).filter(([k]) => !(k in inputs)));
        return { ...computed, ...inputs };
    }

    async delete(type: string, id: string, outputs: Props): Promise<void> {
        if (type === "openstack:networking/port:Port") this.lab.releaseIndex(this.indexOfPortId(id));
        if (type === "openstack:blockstorage/volume:Volume") await this.lab.deleteVolume(id);
        if (type === "openstack:compute/volumeAttach:VolumeAttach") {
            const host = this.serverName(String(outputs.instanceId));
            if (this.lab.hostNames().includes(host)) await this.lab.detachVolume(host, String(outputs.volumeId));
        }
        if (type === "openstack:compute/instance:Instance" && this.lab.hostNames().includes(String(outputs.name))) await this.lab.stopHost(String(outputs.name));
    }

    /** Refresh: a server whose host is gone is gone. */
    async read(type: string, id: string, outputs: Props): Promise<{ id: string; outputs: Props }> {
        if (type === "openstack:compute/instance:Instance" && !this.lab.hostNames().includes(String(outputs.name))) return { id: "", outputs: {} };
        return { id, outputs };
    }

    /** Nova's stop (a shutdown: the kubelet stops, then every process ends) and start (a boot). */
    private async power(name: string, state: string): Promise<void> {
        if (state === "shutoff") {
            await this.lab.inside(name, "/etc/init.d/kubelet stop");
            await this.lab.killSshd(name);
        } else if (state === "active") {
            await this.lab.startSshd(name);
            await this.lab.inside(name, "/etc/init.d/kubelet start");
        } else {
            throw new Error(`the lab's cloud cannot put a server in power state ${state}`);
        }
    }

    /** Neutron gives a port the fixed IP it asks for, when it is free and in the subnet; else a free one. */
    private portIndex(urn: string, inputs: Props): number {
        const wanted = (plain(inputs.fixedIps) as { ipAddress?: string }[] | undefined)?.[0]?.ipAddress;
        if (!wanted) return this.lab.allocateIndex(urn);
        const prefix = `${this.lab.subnet}.`;
        const host = Number(wanted.slice(prefix.length));
        if (!wanted.startsWith(prefix) || !Number.isInteger(host) || host < 10 || host >= 250) {
            throw new Error(`Invalid input for operation: IP address ${wanted} is not a valid IP for the specified subnet.`);
        }
        if (!this.lab.claimIndex(host - 10, urn)) throw new Error(`IP address ${wanted} already allocated in subnet`);
        return host - 10;
    }

    /** The server (lab host) an Instance id names. */
    private serverName(instanceId: string): string {
        const m = /^server-(.+)-[0-9a-f]{8}$/.exec(instanceId);
        if (!m) throw new Error(`Instance ${instanceId} could not be found.`);
        return m[1];
    }

    private firstPortIndex(inputs: Props): number {
        const networks = plain(inputs.networks) as { port?: string }[] | undefined;
        const port = networks?.[0]?.port;
        if (!port) throw new Error("the lab starts servers on a port only (networks[0].port)");
        return this.indexOfPortId(port);
    }

    private otherPortIndexes(inputs: Props): number[] {
        const networks = (plain(inputs.networks) as { port?: string }[] | undefined) ?? [];
        return networks.slice(1).map((n) => this.indexOfPortId(String(n.port)));
    }

    private indexOfPortId(id: string): number {
        const m = /^port-(\d+)-/.exec(id);
        if (!m) throw new Error(`no such port ${id}`);
        return Number(m[1]);
    }
}
