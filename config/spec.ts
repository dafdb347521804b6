/**
 * The resolved VNF specification the components are built from: every default applied, every fallback
 * (image, flavor, network) filled in, CIDRs normalized. Produced only from a configuration that passed
 * all checks, so components never re-validate.
 */
import type { CnfWorkload, PlannedObject } from "./cnfManifests";

/** How one VM is created and logged into. */
export interface ServerSpec {
    image: string;
    flavor: string;
    networkId: string;
    subnetId?: string;
    /** Fixed address of a single VM (node groups keep theirs per index in `fixedIps`). */
    fixedIp?: string;
    floatingIpPool?: string;
    availabilityZone?: string;
    username: string;
    /** Plain text here; components wrap it as a Pulumi secret before it reaches any resource. */
    password?: string;
    enablePasswordLogin: boolean;
    /** Nova power state the VM is kept in: the VNF's `operate.vnfState`. */
    powerState: "active" | "shutoff";
}

export type NodeRole = "master" | "worker";

export interface NodeGroupSpec {
    role: NodeRole;
    count: number;
    minCount: number;
    maxCount: number;
    /** Fixed IPs by node index; shorter than `count` only when none were given. */
    fixedIps: string[];
    aspectId: string;
    connectionPoint: string;
    vduId: string;
    server: ServerSpec;
    /** Ports not moved yet (change_ext_conn): nodes from index `moved` on keep the placement of `from`. */
    portMove?: { from: { networkId: string; subnetId?: string; fixedIps: string[] }; moved: number };
}

export interface NfsExportSpec {
    /** Without a trailing slash. */
    dir: string;
    /** A normalized CIDR. */
    exportTo: string;
    squash: "root" | "all" | "none";
    insecure: boolean;
}

export interface StorageServerSpec {
    server: ServerSpec;
    connectionPoint: string;
    /** `mountTo` without a trailing slash. */
    volumes: { name: string; sizeGb: number; volumeType?: string; mountTo: string }[];
    exports: NfsExportSpec[];
    healWhileInUse: boolean;
}

/** A PersistentVolume manifest from the VNF package. */
export interface PersistentVolumeSpec {
    /** Absolute path of the manifest. */
    manifestFile: string;
    /** Its `metadata.name`. */
    name: string;
    /** The manifest as parsed (checked: a PersistentVolume with a name and an NFS path). */
    manifest: Record<string, unknown>;
}

/** An image tar of the VNF package pushed into the registry VNF. */
export interface PreloadImageSpec {
    /** Absolute path of the tar. */
    file: string;
    format: "docker-archive" | "oci-archive";
    /** `repository:tag` in the registry. */
    image: string;
}

export interface PrivateRegistryConnectionSpec {
    protocol: "http" | "https";
    server: string;
    username?: string;
    password?: string;
    /** Absolute path of the CA certificate on the machine running Pulumi. */
    caCertificateFile?: string;
    /** Its text (PEM). */
    caCertificate?: string;
    hostsEntry?: { ip: string; hostname: string };
    /** Registry names (`docker.io`) whose images the nodes pull from this one instead. */
    mirrorOf: string[];
}

export interface KubesprayAnsibleSpec {
    /** Existing Ansible server; undefined when the stack creates `ansibleServer`. */
    host?: string;
    username: string;
    password?: string;
    kubesprayRoot: string;
    /** The release tag, `v2.31.0`. */
    version: string;
    /** Absolute path of the release archive on this machine; undefined: downloaded from GitHub by the Ansible server. */
    releaseFile?: string;
    playbookTimeoutMinutes: number;
    inventoryPath: string;
    /** The Ansible server VM the stack creates when no host was given. */
    server?: ServerSpec;
    /** `kubernetes.version` as given (`1.31.4`); undefined: the release's own default. */
    kubernetesVersion?: string;
    /** `kube_version` as the release spells that version (`v1.29.5` up to v2.27). */
    kubeVersion?: string;
    /** `kubespray.vars`: group_vars for every host, checked against the release's variable names. */
    vars: Record<string, unknown>;
}

export interface ExternalLoadBalancerSpec {
    /** `server.networkId` is the outside-facing network. */
    server: ServerSpec;
    internalNetworkId: string;
    connectionPoint: string;
    apiPort: number;
}

export interface SshSpec {
    publicKey?: string;
    privateKey?: string;
}

export interface TackerSpec {
    vimName?: string;
    vimId?: string;
    vimConnectionId?: string;
}

export interface SecurityRuleSpec {
    protocol: "tcp" | "udp" | "icmp" | number;
    portRangeMin?: number;
    portRangeMax?: number;
    remoteIpPrefix: string;
    description?: string;
}

export interface OperateSpec {
    vnfState: "STARTED" | "STOPPED";
    drained: boolean;
    /** Seconds a graceful stop's drain may take. */
    drainTimeout: number;
}

export interface ClusterSpec {
    kind: "cluster";
    name: string;
    flavour: "simple" | "complex" | "podaffinity";
    /** More than one master: VIP port, HAProxy and keepalived. */
    ha: boolean;
    masters: NodeGroupSpec;
    workers: NodeGroupSpec;
    /** `version` is kubeadm's (the default filled in); a kubespray cluster's is `kubespray.kubernetesVersion`. */
    kubernetes: { podCidr: string; serviceCidr: string; version: string; packageRepository: string; imageRepository?: string; cniManifest: string; drainTimeout: number };
    /** Heal generations: raising one replaces the VMs it covers. */
    heal: { generation: number; nodes: Record<string, number> };
    /** The VNF's operational state: its VMs' power, and whether its nodes are drained. */
    operate: OperateSpec;
    controlPlane: { vip?: string; vipConnectionPoint: string; haproxyPort: number; apiServerPort: number };
    proxy?: { httpProxy?: string; httpsProxy?: string; noProxy: string[]; k8sNodeCidr?: string };
    securityGroup: { allowedCidrs: string[]; extraRules: SecurityRuleSpec[] };
    /** Nova server-group policy of the node groups' server groups, when they have one (pod affinity). */
    serverGroupPolicy?: "anti-affinity" | "soft-anti-affinity";
    /** A change between the HA flavours under way: the nodes (`master-<i>`, `worker-<i>`) that have `flavour`. */
    flavourChange?: { from: "complex" | "podaffinity"; moved: string[] };
    storageServer?: StorageServerSpec;
    persistentVolumes: PersistentVolumeSpec[];
    privateRegistries: PrivateRegistryConnectionSpec[];
    kubespray?: KubesprayAnsibleSpec;
    externalLoadBalancer?: ExternalLoadBalancerSpec;
    /** Users of the cluster, each with a ServiceAccount and token of its own (an admin, or a user of its namespaces). */
    tenants: TenantSpec[];
    ssh: SshSpec;
    tacker: TackerSpec;
}

export interface TenantSpec {
    name: string;
    namespaces: string[];
    role: "admin" | "user";
}

/** A CNF: the objects of its manifests, planned (namespace, labels, replicas, restarts), on a Kubernetes VIM. */
export interface CnfSpec {
    kind: "cnf";
    name: string;
    instanceId: string;
    namespace: string;
    /** Whether the CNF creates its namespace (and deletes it when destroyed). */
    createNamespace: boolean;
    objects: PlannedObject[];
    workloads: CnfWorkload[];
    vim: { endpoint: string; caCertificate?: string; token: string };
    tacker: TackerSpec;
}

export interface RegistrySpec {
    kind: "registry";
    name: string;
    server: ServerSpec;
    connectionPoint: string;
    port: number;
    /** Absolute path of the registry image tar, when given: the registry then runs on containerd. */
    imageFile?: string;
    volume: { sizeGb: number; volumeType?: string };
    /** PEM texts; the key is secret. */
    tls?: { certificate: string; privateKey: string };
    users: { username: string; password: string }[];
    preloadImages: PreloadImageSpec[];
    /** Raising it replaces the VM (a heal); the volume and the port stay. */
    healGeneration: number;
    securityGroup: { allowedCidrs: string[]; extraRules: SecurityRuleSpec[] };
    ssh: SshSpec;
    tacker: TackerSpec;
    operate: OperateSpec;
}

export type VnfSpec = ClusterSpec | RegistrySpec | CnfSpec;

/** A problem found in the configuration; `path` is the field as the user wrote it. */
export interface ConfigProblem {
    path: string;
    message: string;
}

/** Thrown when a configuration is refused; lists every problem at once. Never carries secret values. */
export class ConfigError extends Error {
    constructor(
        readonly problems: ConfigProblem[],
        readonly source = "k8s-vnf configuration",
    ) {
        super(
            `Invalid ${source} (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n` +
                problems.map((p) => `  - ${p.path || "(top level)"}: ${p.message}`).join("\n"),
        );
        this.name = "ConfigError";
    }
}
