/**
 * The configuration model of one VNF, as stack config (`stacks/Pulumi.<env>.yaml`, namespace `k8s-vnf:`).
 *
 * Each top-level key of {@link StackConfigSchema} is one Pulumi config key. Keys holding passwords or keys
 * must be Pulumi secrets (`pulumi config set --secret --path masters.password ...`); `load.ts` enforces it.
 * Shapes and formats are checked here; relations between fields (CIDR overlaps, counts per flavour, files
 * in the package) are checked in `semantics.ts`.
 */
import { z } from "zod";
import {
    cidr, endpoint, hostOrIp, identifier, imageReference, imageRepository, ipAddress, kubernetesApiUrl, kubernetesLabelName, kubernetesVersion, openstackRef, packagePath, port, proxyUrl, remotePath, secretText, username,
} from "./fields";

/** Where one VM goes and how it is reached. Fields left out fall back to the top-level `image`, `flavor`, `network`. */
const placement = {
    /** Glance image name or ID. */
    image: openstackRef.optional(),
    /** Nova flavor name or ID. */
    flavor: openstackRef.optional(),
    /** Neutron network ID (or name) of the node's port. */
    networkId: openstackRef.optional(),
    /** Subnet of the fixed IP, when the network has several. */
    subnetId: openstackRef.optional(),
    /** Fixed IPs, one per VM in index order; left out, Neutron allocates them. */
    fixedIps: z.array(ipAddress).optional(),
    /** External network to allocate a floating IP from for each VM (SSH goes through it). */
    floatingIpPool: openstackRef.optional(),
    /** Nova availability zone. */
    availabilityZone: openstackRef.optional(),
    /** Login user on the VM. */
    username: username.default("ubuntu"),
    /** Login password (secret). Needed unless an SSH key is configured under `ssh`. */
    password: secretText.optional(),
    /** Set the password with cloud-init and allow SSH password login (for images that lock passwords). */
    enablePasswordLogin: z.boolean().default(false),
};

const placementSchema = z.object(placement).strict();

const SERVER_GROUP_POLICIES = ["anti-affinity", "soft-anti-affinity"] as const;

export const NodeGroupBase = {
    ...placement,
    /** Tacker scaling aspect of this group (`scaleStatus[].aspectId`). */
    aspectId: identifier.optional(),
    /** Tacker connection point descriptor of the node port (`extCpInfo[].cpdId`). */
    connectionPoint: identifier.optional(),
    /** Tacker VDU ID of the nodes (`vnfcResourceInfo[].vduId`). */
    vduId: identifier.optional(),
};

export const MastersSchema = z
    .object({
        ...NodeGroupBase,
        /** Number of control-plane VMs: 1, or an odd number >= 3 for HA. */
        count: z.number().int().min(1).optional(),
    })
    .strict();

export const WorkersSchema = z
    .object({
        ...NodeGroupBase,
        /** Number of worker VMs now. Scale = change this number. */
        count: z.number().int().min(0).optional(),
        /** Lowest count a scale-in may reach. */
        minCount: z.number().int().min(0).optional(),
        /** Highest count a scale-out may reach. */
        maxCount: z.number().int().min(0).optional(),
        /**
         * A move of the workers' ports under way (change_ext_conn), one worker per update: workers from index
         * `moved` on still have the ports of `from`; the others have this group's network and addresses.
         */
        portMove: z
            .object({
                from: z.object({ networkId: openstackRef, subnetId: openstackRef.optional(), fixedIps: z.array(ipAddress).optional() }).strict(),
                moved: z.number().int().min(0),
            })
            .strict()
            .optional(),
    })
    .strict();

/** The Kubernetes version kubeadm installs when config names none. */
export const DEFAULT_KUBERNETES_VERSION = "1.31.4";

export const KubernetesSchema = z
    .object({
        /** Pod network CIDR (kubeadm `--pod-network-cidr`). */
        podCidr: cidr.default("192.168.0.0/16"),
        /** Service CIDR (kubeadm `--service-cidr`; Tacker's `cluster_cidr`). */
        serviceCidr: cidr.default("10.96.0.0/12"),
        /**
         * Kubernetes version installed on every node. A running cluster keeps its version. kubeadm: 1.31 or
         * later, default 1.31.4. kubespray: one the release installs (its checksums; v2.31.0: 1.33.0–1.33.11,
         * 1.34.0–1.34.7, 1.35.0–1.35.4), written as its `kube_version`; left out, the release's own default.
         */
        version: kubernetesVersion.optional(),
        /** Base URL of the Kubernetes package repository (a mirror of pkgs.k8s.io works); kubeadm's, a kubespray stack refuses another. */
        packageRepository: proxyUrl.default("https://pkgs.k8s.io/core:/stable:"),
        /**
         * Registry (and path) the control-plane, etcd, CoreDNS and pause images are pulled from instead of
         * registry.k8s.io, e.g. a private registry of an air-gapped site (kubeadm's `imageRepository`; containerd's
         * sandbox image comes from it too). Its TLS CA comes from `privateRegistries`; it must answer pulls
         * without a login (kubeadm's preflight and containerd's sandbox pull send none). Fixed for a running
         * cluster: a change takes an entire-cluster heal.
         */
        imageRepository: imageRepository.optional(),
        /** CNI manifest applied after `kubeadm init` (URL, or an absolute path on the first master); a kubespray stack refuses another (`kubespray.vars.kube_network_plugin`). */
        cniManifest: z
            .string()
            .regex(/^(https?:\/\/[A-Za-z0-9._~%!*+,=:@[\]/-]+|\/[A-Za-z0-9._/-]+)$/, "must be an http(s) URL or an absolute path on the first master")
            .refine((v) => !/^https?:\/\/[^/]*@/.test(v), "must not carry credentials (user:password@): kubectl is given it on its command line; put the manifest on the masters and give its path")
            .default("https://raw.githubusercontent.com/projectcalico/calico/v3.29.1/manifests/calico.yaml"),
        /** Seconds a worker's drain may take before its removal fails (and the node stays). */
        drainTimeout: z.number().int().min(1).max(86_400).default(300),
    })
    .strict();

export const HealSchema = z
    .object({
        /** Raise to rebuild the entire cluster: every master and worker VM is replaced and kubeadm init runs again. */
        generation: z.number().int().min(0).default(0),
        /**
         * Per node (`master-<i>`, `worker-<i>`): raise to replace that node's VM, which then rejoins; `storage`:
         * raise to replace the storage server's VM, which gets the same volumes and address back; `registry` (a
         * registry VNF): the same for the registry's VM, its images kept on their volume.
         */
        nodes: z.record(z.string().regex(/^((master|worker)-\d+|storage|registry)$/, "must be master-<index>, worker-<index>, storage or registry"), z.number().int().min(0)).default({}),
    })
    .strict();

/**
 * The VNF's operational state (SOL003 operate). A graceful stop is two updates: `drained: true` with the VMs
 * running, then `vnfState: STOPPED`; a start sets both back in one update (VMs on, then each node uncordoned
 * once Ready).
 */
export const OperateSchema = z
    .object({
        /** STARTED: every VM of the VNF runs. STOPPED: every VM is shut off (Nova stop); disks and ports stay. */
        vnfState: z.enum(["STARTED", "STOPPED"]).default("STARTED"),
        /** Every Kubernetes node cordoned and drained (the first half of a graceful stop); back to false uncordons them. */
        drained: z.boolean().default(false),
        /** Seconds the drain of a graceful stop may take; when they run out the stop goes on (SOL003 gracefulStopTimeout). */
        drainTimeout: z.number().int().min(1).max(86_400).default(60),
    })
    .strict();

/**
 * A change between the HA flavours under way (change_flavour), one node per update: the nodes in `moved`
 * have the VNF's `flavour` (in or out of its server group); the others still have `from`'s.
 */
export const FlavourChangeSchema = z
    .object({
        /** The flavour the VNF is changing from. */
        from: z.enum(["complex", "podaffinity"]),
        /** `podAffinity.serverGroupPolicy` of `from`, when it is podaffinity. */
        fromServerGroupPolicy: z.enum(SERVER_GROUP_POLICIES).optional(),
        /** Nodes (`master-<i>`, `worker-<i>`) that have the new flavour. */
        moved: z.array(z.string().regex(/^(master|worker)-\d+$/, "must be master-<index> or worker-<index>")).default([]),
    })
    .strict();

export const ControlPlaneSchema = z
    .object({
        /** Fixed VIP address for HA; left out, Neutron allocates it on the masters' network. */
        vip: ipAddress.optional(),
        /** Tacker connection point of the VIP port (`cluster_cp_name`). */
        vipConnectionPoint: identifier.default("vip_CP"),
        /** HAProxy frontend port on the VIP (HA). */
        haproxyPort: port.default(16443),
        /** kube-apiserver port on each master. */
        apiServerPort: port.default(6443),
    })
    .strict();

export const ProxySchema = z
    .object({
        httpProxy: proxyUrl.optional(),
        httpsProxy: proxyUrl.optional(),
        /** Hosts, IPs, CIDRs or `.domain` suffixes that bypass the proxy. */
        noProxy: z.array(z.string()).default([]),
        /** CIDR of the node network; added to no_proxy as one entry. */
        k8sNodeCidr: cidr.optional(),
    })
    .strict();

export const SecurityRuleSchema = z
    .object({
        protocol: z.union([z.enum(["tcp", "udp", "icmp"]), z.number().int().min(0).max(255)]),
        portRangeMin: port.optional(),
        portRangeMax: port.optional(),
        remoteIpPrefix: cidr.default("0.0.0.0/0"),
        description: z.string().max(255).optional(),
    })
    .strict();

export const SecurityGroupSchema = z
    .object({
        /** Outside sources allowed to reach SSH, the API and NodePorts (the cluster's own nodes always reach the API). */
        allowedCidrs: z.array(cidr).min(1).default(["0.0.0.0/0"]),
        /** Rules added to the node security group. */
        extraRules: z.array(SecurityRuleSchema).default([]),
    })
    .strict();

export const PodAffinitySchema = z
    .object({
        /** Nova server-group policy for the workers (and masters). */
        serverGroupPolicy: z.enum(SERVER_GROUP_POLICIES).default("anti-affinity"),
    })
    .strict();

export const SshSchema = z
    .object({
        /** Public key installed on every VM through a Nova key pair. */
        publicKey: z.string().regex(/^(ssh-(rsa|ed25519)|ecdsa-sha2-nistp\d+) [A-Za-z0-9+/=]+( [^\n]*)?$/, "must be an OpenSSH public key line").optional(),
        /** Private key the remote steps log in with (secret). */
        privateKey: secretText.optional(),
    })
    .strict();

export const StorageServerSchema = z
    .object({
        ...placement,
        connectionPoint: identifier.default("storage_server_CP"),
        /** Cinder volumes, each formatted ext4 and mounted. */
        volumes: z
            .array(
                z
                    .object({
                        /** Name of the volume (Tacker `volume_resource_id`). */
                        name: identifier,
                        sizeGb: z.number().int().min(1).default(5),
                        volumeType: openstackRef.optional(),
                        /** Mount point on the storage server. */
                        mountTo: remotePath,
                    })
                    .strict(),
            )
            .min(1),
        /** NFS exports (NFSv4): each directory must lie on a mounted volume. */
        exports: z
            .array(
                z
                    .object({
                        /** Directory exported; created (owned by the anonymous ids) when missing. */
                        dir: remotePath,
                        /** Clients allowed to mount it. */
                        exportTo: cidr,
                        /**
                         * Whose ids are mapped to the anonymous user: `root` (root_squash, the default), `all`
                         * (all_squash, what Tacker's driver exported) or `none` (no_root_squash).
                         */
                        squash: z.enum(["root", "all", "none"]).default("root"),
                        /** Accept clients from unprivileged source ports (Tacker's `insecure`). */
                        insecure: z.boolean().default(false),
                    })
                    .strict(),
            )
            .min(1),
        /**
         * Heal (replace) the storage server even while a registered PersistentVolume is Bound: the clients'
         * I/O pauses until the new VM serves the same volumes at the same address, as across a server reboot.
         */
        healWhileInUse: z.boolean().default(false),
    })
    .strict();

export const PersistentVolumeSchema = z
    .object({
        /** PersistentVolume manifest in the package; its NFS server address is replaced with the storage server's. */
        manifestFile: packagePath,
    })
    .strict();

export const PrivateRegistrySchema = z
    .object({
        protocol: z.enum(["http", "https"]),
        /** `host[:port]` of the registry. */
        server: endpoint,
        username: username.optional(),
        password: secretText.optional(),
        /** CA certificate (PEM) in the package, for HTTPS registries. */
        caCertificateFile: packagePath.optional(),
        /** Entry added to /etc/hosts on every node. */
        hostsEntry: z.object({ ip: ipAddress, hostname: hostOrIp }).strict().optional(),
        /**
         * Registries this one mirrors, by the name images use (`docker.io`, `quay.io`, `registry.example:5000`):
         * the nodes pull those names' images from it, with its CA and login, and never from the original (an
         * air-gapped site's images, `nginx` or `docker.io/library/nginx` pulled as `library/nginx`).
         */
        mirrorOf: z.array(endpoint).default([]),
    })
    .strict();

/** The kubespray release installed when config names none: the newest at the time of writing (2026-04). */
export const DEFAULT_KUBESPRAY_VERSION = "v2.31.0";

export const KubesprayAnsibleSchema = z
    .object({
        /** Address of an existing Ansible server; left out, the stack creates one. */
        host: hostOrIp.optional(),
        username: username.default("ansible"),
        password: secretText.optional(),
        /** Kubespray checkout on the Ansible server. */
        kubesprayRoot: remotePath.default("/opt/kubespray"),
        /** Kubespray release installed there (a tag, `v2.31.0`). */
        version: z
            .string()
            .regex(/^v?\d+\.\d+\.\d+$/, "must be a kubespray release tag such as v2.31.0")
            .transform((v) => (v.startsWith("v") ? v : `v${v}`))
            .default(DEFAULT_KUBESPRAY_VERSION),
        /** That release's archive (GitHub's `kubespray-<version>.tar.gz`) in the package, for sites without access to GitHub. */
        releaseFile: packagePath.optional(),
        /** Minutes one playbook run may take before its step fails. */
        playbookTimeoutMinutes: z.number().int().min(5).max(24 * 60).default(60),
        /** Where the generated inventory goes; default `/var/lib/k8s-vnf/inventory/<vnf name>`. */
        inventoryPath: remotePath.optional(),
        /** Where the Ansible server VM goes when the stack creates it. */
        server: placementSchema.optional(),
        /**
         * Kubespray variables for every host (the inventory's group_vars/all), by name, each value as YAML
         * gives it (a string, number, boolean, list or map; Ansible templates `{{ }}` in it as in any
         * inventory): `{kube_network_plugin: cilium, kube_proxy_mode: iptables}`. Each name must be one the
         * release documents (its role defaults and sample group_vars; Ansible's own `ansible_*` pass), and not
         * one k8s-vnf sets itself: `kube_version` is `kubernetes.version`, the CIDRs `kubernetes.podCidr` and
         * `kubernetes.serviceCidr`, the proxy `proxy`, and so on (the refusal names the key). Values whose name
         * says secret (`*_password`, `*_token`) must be Pulumi secrets, and stay out of logs.
         */
        vars: z.record(z.string(), z.json()).default({}),
    })
    .strict();

/** The load balancer VM; its `networkId` is the outside-facing port's network (`externalLB_CP1`). */
export const ExternalLoadBalancerSchema = z
    .object({
        ...placement,
        /** Network of the cluster-facing port (`externalLB_CP2`); default: the masters' network. */
        internalNetworkId: openstackRef.optional(),
        connectionPoint: identifier.default("externalLB_CP1"),
        /** Port the load balancer serves the Kubernetes API on. */
        apiPort: port.default(8383),
    })
    .strict();

export const RegistryVnfSchema = z
    .object({
        ...placement,
        connectionPoint: identifier.default("CP1"),
        /** Port the registry listens on. */
        port: port.default(5000),
        /**
         * The registry image (`docker save` or OCI tar) in the package, run on containerd; left out, Debian's and
         * Ubuntu's `docker-registry` package runs the registry (no Docker on the VM either way).
         */
        imageFile: packagePath.optional(),
        /** The Cinder volume the images are kept on: a heal keeps it, and so the images. */
        volume: z
            .object({
                sizeGb: z.number().int().min(1).default(20),
                volumeType: z.string().min(1).max(255).optional(),
            })
            .strict()
            .prefault({}),
        /** Serve HTTPS with this certificate (PEM, the chain after it) and key; left out, plain HTTP. */
        tls: z
            .object({
                /** The certificate in the package. */
                certificateFile: packagePath.optional(),
                /** The certificate itself (PEM). */
                certificate: z.string().max(1_048_576).optional(),
                /** Its private key in the package (read as a secret). */
                privateKeyFile: packagePath.optional(),
                /** Its private key (PEM). */
                privateKey: secretText.optional(),
            })
            .strict()
            .optional(),
        /** htpasswd logins (bcrypt): with any, every request needs one. Registry logins belong on HTTPS. */
        users: z
            .array(
                z
                    .object({
                        username,
                        // bcrypt reads 72 bytes of a password: a longer one would also accept its first 72.
                        password: secretText
                            .refine((v) => !v.includes("\n"), "must be one line")
                            .refine((v) => Buffer.byteLength(v) <= 72, "must be at most 72 bytes (bcrypt reads no more)"),
                    })
                    .strict(),
            )
            .default([]),
        /** Images in the package pushed into the registry (an air-gapped site's CNF images, or kubeadm's). */
        preloadImages: z
            .array(
                z
                    .object({
                        /** A `docker save` (docker-archive) or OCI image layout tar in the package. */
                        file: packagePath,
                        /** Where it goes in the registry: `repository:tag`, e.g. `library/nginx:1.27`. */
                        image: imageReference,
                    })
                    .strict(),
            )
            .default([]),
    })
    .strict();

/**
 * A user of the cluster: a ServiceAccount with its own token, registered as its own Kubernetes VIM. An admin is
 * bound to the ClusterRole cluster-admin; a user gets a Role (everything in the namespace) and its RoleBinding in
 * each of its namespaces, so its token acts there only.
 */
export const TenantSchema = z
    .object({
        /** The tenant's name: its ServiceAccount is `k8s-vnf-tenant-<name>` in kube-system. */
        name: kubernetesLabelName.refine((v) => v.length <= 48, "must be at most 48 characters (it is part of the ServiceAccount name)"),
        /** Namespaces the cluster creates for the tenant (a user's are the only ones its token acts in). */
        namespaces: z.array(kubernetesLabelName).default([]),
        /** admin: cluster-wide (ClusterRoleBinding to cluster-admin); user: its namespaces only (Role and RoleBinding). */
        role: z.enum(["admin", "user"]).default("user"),
    })
    .strict();

/** A Kubernetes VIM: what a CNF stack reaches its cluster with. */
export const KubernetesVimSchema = z
    .object({
        /** The API server's URL (the cluster's `vim.endpoint` output). */
        endpoint: kubernetesApiUrl,
        /** The cluster CA (PEM) the API server's certificate is checked against. */
        caCertificate: z.string().min(1).optional(),
        /** A ServiceAccount's bearer token (secret): the cluster's `vim.token` output or a tenant's. */
        token: secretText,
    })
    .strict();

/** A CNF: the Kubernetes objects of a VNF package's manifests, in one namespace of a Kubernetes VIM. */
export const CnfSchema = z
    .object({
        /** The manifests in the package (Tacker `lcm-kubernetes-def-files`), created in this order. */
        manifests: z.array(packagePath).min(1, "name at least one manifest"),
        /** Every namespaced object goes here (Tacker `additionalParams.namespace`); left out: the manifests' own, else `default`. */
        namespace: kubernetesLabelName.optional(),
        /** Whether this CNF creates its namespace (and deletes it on terminate). */
        createNamespace: z.boolean().default(false),
        /** The value of the `tacker_vnf_instance_id` label on every object; default: the stack name. */
        instanceId: z.string().regex(/^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/, "must be a Kubernetes label value (letters, digits, '-', '_', '.'; at most 63)").optional(),
        /** Replicas per workload name (Deployment, StatefulSet, ReplicaSet): what a scale sets. */
        replicas: z.record(z.string(), z.number().int("must be a whole number").min(0, "must be 0 or more")).default({}),
        /** A restart mark per workload name: a new value restarts its pods (a heal), as `kubectl rollout restart` does. */
        restarts: z.record(z.string(), z.string().max(63)).default({}),
        /** The Kubernetes VIM the CNF runs on. */
        vim: KubernetesVimSchema,
    })
    .strict();

export const TackerSchema = z
    .object({
        /** VIM name to register the cluster under (Tacker `vim_name`). */
        vimName: z.string().max(255).optional(),
        /** VIM the VNF runs on (Tacker `vimConnectionInfo[].vimId`). */
        vimId: z.string().max(255).optional(),
        /** vimConnectionInfo id. */
        vimConnectionId: z.string().max(255).optional(),
    })
    .strict();

/** Every `k8s-vnf:` stack config key. */
export const StackConfigSchema = z
    .object({
        /** What this stack deploys: a Kubernetes cluster, a private registry, or a CNF on a Kubernetes VIM. */
        vnfKind: z.enum(["cluster", "registry", "cnf"]).default("cluster"),
        /** Tacker deployment flavour: simple (1 master), complex (HA), podaffinity (HA + anti-affinity). */
        flavour: z.enum(["simple", "complex", "podaffinity"]).default("simple"),
        /** Prefix of the VM names; default: the stack name. */
        vnfName: z.string().regex(/^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/, "must be lower-case letters, digits and '-' (at most 40)").optional(),
        /** Default image of every VM. */
        image: openstackRef.optional(),
        /** Default flavor of every VM. */
        flavor: openstackRef.optional(),
        /** Folder holding the package files (PV manifests, CA certificates, image tars), relative to the project. */
        packageDir: z.string().min(1).optional(),
        /** Default network of every VM. */
        network: z.object({ networkId: openstackRef, subnetId: openstackRef.optional() }).strict().optional(),
        ssh: SshSchema.prefault({}),
        masters: MastersSchema.prefault({}),
        workers: WorkersSchema.prefault({}),
        kubernetes: KubernetesSchema.prefault({}),
        controlPlane: ControlPlaneSchema.prefault({}),
        heal: HealSchema.prefault({}),
        operate: OperateSchema.prefault({}),
        proxy: ProxySchema.optional(),
        securityGroup: SecurityGroupSchema.prefault({}),
        podAffinity: PodAffinitySchema.optional(),
        flavourChange: FlavourChangeSchema.optional(),
        storageServer: StorageServerSchema.optional(),
        persistentVolumes: z.array(PersistentVolumeSchema).default([]),
        privateRegistries: z.array(PrivateRegistrySchema).default([]),
        kubespray: KubesprayAnsibleSchema.optional(),
        externalLoadBalancer: ExternalLoadBalancerSchema.optional(),
        registry: RegistryVnfSchema.optional(),
        tenants: z.array(TenantSchema).default([]),
        cnf: CnfSchema.optional(),
        tacker: TackerSchema.prefault({}),
    })
    .strict();

export type StackConfigInput = z.input<typeof StackConfigSchema>;
export type StackConfig = z.output<typeof StackConfigSchema>;
export type Placement = z.output<typeof placementSchema>;

/** The config keys, in the order the docs and Pulumi.yaml list them. */
export const CONFIG_KEYS = Object.keys(StackConfigSchema.shape) as ReadonlyArray<keyof StackConfig>;

/** Keys whose values are plain strings in stack config (every other key is an object or a list). */
export const SCALAR_KEYS: ReadonlySet<string> = new Set(["vnfKind", "flavour", "vnfName", "image", "flavor", "packageDir"]);
