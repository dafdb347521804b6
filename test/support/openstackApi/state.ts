/**
 * The lab OpenStack API's state, kept in memory in the test process, and what every service module shares:
 * the request and reply shapes, the error bodies each service answers with, ids and timestamps.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { Lab } from "../../lab/lab";
import { labTenantNetworks, TenantNetwork } from "./tenantNetworks";

export type { TenantNetwork };

/** A request as a handler sees it: the path's captures, the parsed JSON body, the microversion asked for. */
export interface ApiRequest {
    method: string;
    path: string;
    params: string[];
    query: URLSearchParams;
    headers: Record<string, string | string[] | undefined>;
    body: any;
    /** The compute or volume microversion of the request (`2.1` / `3.0` when none was sent). */
    microversion: Microversion;
}

export interface ApiReply {
    status: number;
    body?: unknown;
    headers?: Record<string, string>;
}

export type Handler = (req: ApiRequest) => ApiReply | Promise<ApiReply>;

export interface Route {
    method: string;
    path: RegExp;
    handler: Handler;
    /** Version documents and the token request itself need no token. */
    open?: boolean;
    /** Which microversion header the route's service reads. */
    service?: "compute" | "volume";
}

/** A refusal: a handler throws it and the server answers with its status and body. */
export class ApiError extends Error {
    constructor(
        readonly status: number,
        readonly body: unknown,
    ) {
        super(`${status}`);
        this.message = `${status} ${JSON.stringify(body)}`;
    }
}

export class Microversion {
    constructor(
        readonly major: number,
        readonly minor: number,
    ) {}
    static parse(text: string): Microversion | undefined {
        const m = /^(\d+)\.(\d+)$/.exec(text.trim());
        return m ? new Microversion(Number(m[1]), Number(m[2])) : undefined;
    }
    atLeast(text: string): boolean {
        const other = Microversion.parse(text)!;
        return this.major > other.major || (this.major === other.major && this.minor >= other.minor);
    }
    toString(): string {
        return `${this.major}.${this.minor}`;
    }
}

// Error bodies, as each service's WSGI layer writes them.
/** Nova's faults (nova/api/openstack/wsgi.py Fault: {"badRequest": {"code", "message"}}). */
export function novaError(status: number, message: string): ApiError {
    const key = { 400: "badRequest", 403: "forbidden", 404: "itemNotFound", 409: "conflictingRequest", 406: "notAcceptable" }[status] ?? "computeFault";
    return new ApiError(status, { [key]: { code: status, message } });
}
/** Cinder's faults (cinder/api/openstack/wsgi.py Fault, same shape as Nova's). */
export function cinderError(status: number, message: string): ApiError {
    const key = { 400: "badRequest", 404: "itemNotFound", 409: "conflictingRequest" }[status] ?? "computeFault";
    return new ApiError(status, { [key]: { code: status, message } });
}
/** Neutron's faults (neutron_lib/api/faults.py: {"NeutronError": {"type", "message", "detail"}}). */
export function neutronError(status: number, type: string, message: string): ApiError {
    return new ApiError(status, { NeutronError: { type, message, detail: "" } });
}
/** Keystone's errors (keystone/exception.py: {"error": {"code", "message", "title"}}). */
export function keystoneError(status: number, title: string, message: string): ApiError {
    return new ApiError(status, { error: { code: status, message, title } });
}
/** Glance's errors (webob HTML-less JSON: Glance v2 answers plain text; the client shows the status line). */
export function glanceError(status: number, message: string): ApiError {
    return new ApiError(status, `${status} ${status === 404 ? "Not Found" : "Bad Request"}\n\n${message}\n\n   `);
}

/** Nova's and Neutron's timestamp format (seconds, Z). */
export function isoNow(): string {
    return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}
/** Cinder's (microseconds, no zone). */
export function cinderNow(): string {
    return new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000");
}

export interface Port {
    id: string;
    name: string;
    description: string;
    network_id: string;
    mac_address: string;
    admin_state_up: boolean;
    status: "ACTIVE" | "DOWN";
    device_id: string;
    device_owner: string;
    fixed_ips: { subnet_id: string; ip_address: string }[];
    allowed_address_pairs: { ip_address: string; mac_address: string }[];
    security_groups: string[];
    port_security_enabled: boolean;
    created_at: string;
    updated_at: string;
    revision_number: number;
    /** The lab host indexes of its fixed IPs (address `subnet.(10+index)`), held until the port is deleted. */
    indexes: number[];
}

export interface SecurityGroupRule {
    id: string;
    security_group_id: string;
    direction: string;
    ethertype: string;
    protocol: string | null;
    port_range_min: number | null;
    port_range_max: number | null;
    remote_ip_prefix: string | null;
    remote_group_id: string | null;
    description: string;
    created_at: string;
    updated_at: string;
}

export interface SecurityGroup {
    id: string;
    name: string;
    description: string;
    created_at: string;
    updated_at: string;
    revision_number: number;
}

export interface FloatingIp {
    id: string;
    floating_network_id: string;
    floating_ip_address: string;
    port_id: string | null;
    fixed_ip_address: string | null;
    description: string;
    created_at: string;
    updated_at: string;
}

/** A router: its gateway on an external network and its interfaces (by subnet); the lab routes nothing itself. */
export interface Router {
    id: string;
    name: string;
    gatewayNetworkId: string;
    gatewayIp: string;
    subnetIds: string[];
    /** The interface port's id per subnet (Neutron's network:router_interface port; not listed by the lab). */
    interfacePorts: Record<string, string>;
}

export type ServerStatus = "BUILD" | "ACTIVE" | "SHUTOFF" | "ERROR" | "DELETED" | "MIGRATING";

export interface Server {
    id: string;
    name: string;
    status: ServerStatus;
    task_state: string | null;
    flavorId: string;
    imageId: string;
    keyName: string | null;
    metadata: Record<string, string>;
    availabilityZone: string;
    /** Port ids in NIC order (the ones Nova made itself for a `uuid` network are deleted with it). */
    ports: string[];
    ownPorts: string[];
    securityGroups: string[];
    group?: string;
    computeHost: string | null;
    fault?: { code: number; message: string; created: string };
    userData?: string;
    created: string;
    updated: string;
    launchedAt: string | null;
    /** Volume ids attached, with their device. */
    volumes: { volumeId: string; device: string }[];
    /** The lab host this server is, once its build started. */
    hostName?: string;
    /** Whatever the server is doing now (build, power, delete), awaited by the next action and by stop(). */
    busy: Promise<void>;
}

export interface ServerGroup {
    id: string;
    name: string;
    policy: string;
    rules: { max_server_per_host?: number };
    members: string[];
}

export interface Keypair {
    name: string;
    public_key: string;
    fingerprint: string;
    type: string;
    created_at: string;
}

export type VolumeStatus = "creating" | "available" | "attaching" | "in-use" | "detaching" | "deleting" | "error";

export interface Volume {
    id: string;
    name: string;
    description: string;
    size: number;
    status: VolumeStatus;
    availability_zone: string;
    volume_type: string;
    metadata: Record<string, string>;
    created_at: string;
    updated_at: string;
    attachment?: { serverId: string; device: string; attachedAt: string; attachmentId: string };
}

export interface Identity {
    domain: { id: string; name: string };
    project: { id: string; name: string };
    user: { id: string; name: string };
    password: string;
    region: string;
}

/**
 * What an operator set up in the cloud before a request names it: the network's id, the image's name, more
 * flavors (a seed's body names Tacker's sample network, image and flavor).
 */
export interface CloudOptions {
    zones?: readonly string[];
    volumeTypes?: readonly string[];
    networkId?: string;
    /** The id of the lab's second tenant network (change_ext_conn's target), random by default. */
    otherNetworkId?: string;
    imageName?: string;
    flavorNames?: readonly string[];
    /** A lab volume's size in MB, whatever size was asked for (64 by default: enough for ext4 and most tests' files). */
    volumeMb?: number;
}

/** Everything the API knows, in memory; the lab holds the hosts, addresses and volumes themselves. */
export class CloudState {
    readonly identity: Identity;
    readonly tokens = new Map<string, { expires: number }>();
    /**
     * `lab-net` (CloudOptions.networkId, the seeds' network) on .0/25, its pool .10-.126, and `lab-net-2`
     * (CloudOptions.otherNetworkId) on .128/25, its pool .130-.249: lab host addresses are .10-.249.
     */
    readonly tenantNetworks: readonly TenantNetwork[];
    /** CloudOptions.volumeMb. */
    readonly volumeMb: number;
    /** The floating IP pool (router:external) and its subnet, devstack's 172.24.4.0/24: no lab host answers there (no NAT). */
    readonly publicNetwork = { id: randomUUID(), name: "public" };
    readonly publicSubnet = { id: randomUUID(), name: "public-subnet", prefix: "172.24.4" };
    /** devstack's router1: gateway on `public`, an interface on each tenant subnet (what a floating IP association needs). */
    readonly router: Router;
    /** Nova's and Cinder's availability zones, and Cinder's volume types (name, id). */
    readonly zones: readonly string[];
    readonly volumeTypes: readonly { name: string; id: string }[];
    readonly image: { id: string; name: string; created: string };
    readonly flavors: { id: string; name: string; vcpus: number; ram: number; disk: number }[];
    readonly ports = new Map<string, Port>();
    readonly secGroups = new Map<string, SecurityGroup>();
    readonly rules = new Map<string, SecurityGroupRule>();
    readonly floatingIps = new Map<string, FloatingIp>();
    readonly servers = new Map<string, Server>();
    readonly serverGroups = new Map<string, ServerGroup>();
    readonly keypairs = new Map<string, Keypair>();
    readonly volumes = new Map<string, Volume>();
    readonly computeHosts: string[];
    /** Addresses of ports deleted under a running server: released when its host goes. */
    readonly orphanIndexes = new Map<string, number[]>();
    readonly defaultSecGroupId = randomUUID();
    /** What the API does in the background (builds, power actions, volume work), awaited by stop(). */
    readonly pending = new Set<Promise<unknown>>();

    constructor(
        readonly lab: Lab,
        readonly cluster: string,
        computeHosts: number,
        options: CloudOptions = {},
    ) {
        this.tenantNetworks = labTenantNetworks(options.networkId, options.otherNetworkId);
        this.image = { id: randomUUID(), name: options.imageName ?? "debian-12-lab", created: isoNow() };
        this.flavors = [
            { id: randomUUID(), name: "lab.small", vcpus: 2, ram: 2048, disk: 20 },
            { id: randomUUID(), name: "lab.medium", vcpus: 4, ram: 8192, disk: 40 },
            ...(options.flavorNames ?? []).map((name) => ({ id: randomUUID(), name, vcpus: 2, ram: 4096, disk: 40 })),
        ];
        this.zones = [...(options.zones ?? ["nova", "az-1", "az-2"])];
        this.volumeMb = options.volumeMb ?? 64;
        this.volumeTypes = (options.volumeTypes ?? ["__DEFAULT__", "lvmdriver-1"]).map((name) => ({ name, id: randomUUID() }));
        const subnetIds = this.tenantNetworks.map((n) => n.subnet.id);
        this.router = { id: randomUUID(), name: "router1", gatewayNetworkId: this.publicNetwork.id, gatewayIp: `${this.publicSubnet.prefix}.2`, subnetIds, interfacePorts: Object.fromEntries(subnetIds.map((id) => [id, randomUUID()])) };
        this.identity = {
            domain: { id: "default", name: "Default" },
            project: { id: randomBytes(16).toString("hex"), name: "admin" },
            user: { id: randomBytes(16).toString("hex"), name: "admin" },
            password: `os-${randomBytes(12).toString("base64url")}`,
            region: "RegionOne",
        };
        this.computeHosts = Array.from({ length: computeHosts }, (_, i) => `compute-${i + 1}`);
        const now = isoNow();
        this.secGroups.set(this.defaultSecGroupId, { id: this.defaultSecGroupId, name: "default", description: "Default security group", created_at: now, updated_at: now, revision_number: 1 });
        this.addDefaultEgressRules(this.defaultSecGroupId);
    }

    /** Runs `work` in the background; its failure is the caller's to record (a status), never an unhandled rejection. */
    track(work: Promise<unknown>): void {
        const tracked: Promise<unknown> = work.catch(() => undefined).finally(() => this.pending.delete(tracked));
        this.pending.add(tracked);
    }

    /** The seeds' network, lab-net. */
    get network(): TenantNetwork {
        return this.tenantNetworks[0];
    }

    get subnet(): { id: string; name: string } {
        return this.network.subnet;
    }

    tenantNetwork(id: string): TenantNetwork | undefined {
        return this.tenantNetworks.find((n) => n.id === id);
    }

    /** The next free address of the public subnet's pool (.2-.254, the router's gateway first), else undefined. */
    allocateFloatingAddress(): string | undefined {
        const taken = new Set([this.router.gatewayIp, ...[...this.floatingIps.values()].map((f) => f.floating_ip_address)]);
        for (let last = 2; last <= 254; last++) if (!taken.has(`${this.publicSubnet.prefix}.${last}`)) return `${this.publicSubnet.prefix}.${last}`;
        return undefined;
    }

    /** Neutron gives every new security group an egress rule per ethertype (neutron/db/securitygroups_db.py). */
    addDefaultEgressRules(groupId: string): void {
        for (const ethertype of ["IPv4", "IPv6"]) {
            const now = isoNow();
            const rule: SecurityGroupRule = { id: randomUUID(), security_group_id: groupId, direction: "egress", ethertype, protocol: null, port_range_min: null, port_range_max: null, remote_ip_prefix: null, remote_group_id: null, description: "", created_at: now, updated_at: now };
            this.rules.set(rule.id, rule);
        }
    }

    /** The MAC lab.sh gives the veth of host index `index` (a VM keeps its port's MAC). */
    macOf(index: number): string {
        const hex = (n: number) => n.toString(16).padStart(2, "0");
        return `02:6b:76:00:${hex(Math.floor(index / 256))}:${hex(index % 256)}`;
    }
}

/** Keeps the items whose named fields equal the query's values (Neutron's and Glance's list filters). */
export function filterBy<T>(items: T[], query: URLSearchParams, fields: string[]): T[] {
    return items.filter((item) =>
        fields.every((field) => {
            const wanted = query.getAll(field);
            if (!wanted.length) return true;
            const value = (item as Record<string, unknown>)[field];
            return wanted.some((w) => String(value) === w);
        }),
    );
}
