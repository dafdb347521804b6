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
    image: openstackRef.optional().describe("Glance image name or ID."),
    flavor: openstackRef.optional().describe("Nova flavor name or ID."),
    networkId: openstackRef.optional().describe("Neutron network ID (or name) of the node's port."),
    subnetId: openstackRef.optional().describe("Subnet of the fixed IP, when the network has several."),
    fixedIps: z.array(ipAddress).optional().describe("Fixed IPs, one per VM in index order; left out, Neutron allocates them."),
    floatingIpPool: openstackRef.optional().describe("External network to allocate a floating IP from for each VM (SSH goes through it)."),
    availabilityZone: openstackRef.optional().describe("Nova availability zone."),
    username: username.default("ubuntu").describe("Login user on the VM."),
    password: secretText.optional().describe("Login password (secret). Needed unless an SSH key is configured under `ssh`."),
    enablePasswordLogin: z.boolean().default(false).describe("Set the password with cloud-init and allow SSH password login (for images that lock passwords)."),
};

const placementSchema = z.object(placement).strict();

const SERVER_GROUP_POLICIES = ["anti-affinity", "soft-anti-affinity"] as const;

export const NodeGroupBase = {
    ...placement,
    aspectId: identifier.optional().describe("Tacker scaling aspect of this group (`scaleStatus[].aspectId`)."),
    connectionPoint: identifier.optional().describe("Tacker connection point descriptor of the node port (`extCpInfo[].cpdId`)."),
    vduId: identifier.optional().describe("Tacker VDU ID of the nodes (`vnfcResourceInfo[].vduId`)."),
};

export const MastersSchema = z
    .object({
        ...NodeGroupBase,
        count: z.number().int().min(1).optional().describe("Number of control-plane VMs: 1, or an odd number >= 3 for HA."),
    })
    .strict();

export const WorkersSchema = z
    .object({
        ...NodeGroupBase,
        count: z.number().int().min(0).optional().describe("Number of worker VMs now. Scale = change this number."),
        minCount: z.number().int().min(0).optional().describe("Lowest count a scale-in may reach."),
        maxCount: z.number().int().min(0).optional().describe("Highest count a scale-out may reach."),
        portMove: z
            .object({
                from: z
                    .object({
                        networkId: openstackRef.describe("The network the workers leave."),
                        subnetId: openstackRef.optional().describe("Its subnet."),
                        fixedIps: z.array(ipAddress).optional().describe("The workers' addresses there, in index order."),
                    })
                    .strict()
                    .describe("Where the workers not yet moved still have their ports."),
                moved: z.number().int().min(0).describe("How many workers, from index 0, have moved."),
            })
            .strict()
            .optional().describe("A move of the workers' ports under way (change_ext_conn), one worker per update: workers from index `moved` on still have the ports of `from`; the others have this group's network and addresses."),
    })
    .strict();

/**
 * A kubeadm cluster's Kubernetes version: the one config names, else the release the lab's real Kubernetes is
 * built at (tools/build.sh reads the default from this line). kubespray's default is its release's own.
 */
export const KubeadmVersionSchema = z.object({ version: kubernetesVersion.default("1.31.4") });

/** The Kubernetes version kubeadm installs when config names none. */
export const DEFAULT_KUBERNETES_VERSION = KubeadmVersionSchema.parse({}).version;

export const KubernetesSchema = z
    .object({
        podCidr: cidr.default("192.168.0.0/16").describe("Pod network CIDR (kubeadm `--pod-network-cidr`)."),
        serviceCidr: cidr.default("10.96.0.0/12").describe("Service CIDR (kubeadm `--service-cidr`; Tacker's `cluster_cidr`)."),
        version: kubernetesVersion.optional().describe("Kubernetes version installed on every node. A running cluster keeps its version. kubeadm: 1.31 or later, default 1.31.4. kubespray: one the release installs (its checksums; v2.31.0: 1.33.0–1.33.11, 1.34.0–1.34.7, 1.35.0–1.35.4), written as its `kube_version`; left out, the release's own default."),
        packageRepository: proxyUrl.default("https://pkgs.k8s.io/core:/stable:").describe("Base URL of the Kubernetes package repository (a mirror of pkgs.k8s.io works); kubeadm's, a kubespray stack refuses another."),
        imageRepository: imageRepository.optional().describe("Registry (and path) the control-plane, etcd, CoreDNS and pause images are pulled from instead of registry.k8s.io, e.g. a private registry of an air-gapped site (kubeadm's `imageRepository`; containerd's sandbox image comes from it too). Its TLS CA comes from `privateRegistries`; it must answer pulls without a login (kubeadm's preflight and containerd's sandbox pull send none). Fixed for a running cluster: a change takes an entire-cluster heal."),
        cniManifest: z
            .string()
            .regex(/^(https?:\/\/[A-Za-z0-9._~%!*+,=:@[\]/-]+|\/[A-Za-z0-9._/-]+)$/, "must be an http(s) URL or an absolute path on the first master")
            .refine((v) => !/^https?:\/\/[^/]*@/.test(v), "must not carry credentials (user:password@): kubectl is given it on its command line; put the manifest on the masters and give its path")
            .default("https://raw.githubusercontent.com/projectcalico/calico/v3.29.1/manifests/calico.yaml").describe("CNI manifest applied after `kubeadm init` (URL, or an absolute path on the first master); a kubespray stack refuses another (`kubespray.vars.kube_network_plugin`)."),
        drainTimeout: z.number().int().min(1).max(86_400).default(300).describe("Seconds a worker's drain may take before its removal fails (and the node stays)."),
    })
    .strict();

export const HealSchema = z
    .object({
        generation: z.number().int().min(0).default(0).describe("Raise to rebuild the entire cluster: every master and worker VM is replaced and kubeadm init runs again."),
        nodes: z.record(z.string().regex(/^((master|worker)-\d+|storage|registry)$/, "must be master-<index>, worker-<index>, storage or registry"), z.number().int().min(0)).default({}).describe("Per node (`master-<i>`, `worker-<i>`): raise to replace that node's VM, which then rejoins; `storage`: raise to replace the storage server's VM, which gets the same volumes and address back; `registry` (a registry VNF): the same for the registry's VM, its images kept on their volume."),
    })
    .strict();

/**
 * The VNF's operational state (SOL003 operate). A graceful stop is two updates: `drained: true` with the VMs
 * running, then `vnfState: STOPPED`; a start sets both back in one update (VMs on, then each node uncordoned
 * once Ready).
 */
export const OperateSchema = z
    .object({
        vnfState: z.enum(["STARTED", "STOPPED"]).default("STARTED").describe("STARTED: every VM of the VNF runs. STOPPED: every VM is shut off (Nova stop); disks and ports stay."),
        drained: z.boolean().default(false).describe("Every Kubernetes node cordoned and drained (the first half of a graceful stop); back to false uncordons them."),
        drainTimeout: z.number().int().min(1).max(86_400).default(60).describe("Seconds the drain of a graceful stop may take; when they run out the stop goes on (SOL003 gracefulStopTimeout)."),
    })
    .strict();

/**
 * A change between the HA flavours under way (change_flavour), one node per update: the nodes in `moved`
 * have the VNF's `flavour` (in or out of its server group); the others still have `from`'s.
 */
export const FlavourChangeSchema = z
    .object({
        from: z.enum(["complex", "podaffinity"]).describe("The flavour the VNF is changing from."),
        fromServerGroupPolicy: z.enum(SERVER_GROUP_POLICIES).optional().describe("`podAffinity.serverGroupPolicy` of `from`, when it is podaffinity."),
        moved: z.array(z.string().regex(/^(master|worker)-\d+$/, "must be master-<index> or worker-<index>")).default([]).describe("Nodes (`master-<i>`, `worker-<i>`) that have the new flavour."),
    })
    .strict();

export const ControlPlaneSchema = z
    .object({
        vip: ipAddress.optional().describe("Fixed VIP address for HA; left out, Neutron allocates it on the masters' network."),
        vipConnectionPoint: identifier.default("vip_CP").describe("Tacker connection point of the VIP port (`cluster_cp_name`)."),
        haproxyPort: port.default(16443).describe("HAProxy frontend port on the VIP (HA)."),
        apiServerPort: port.default(6443).describe("kube-apiserver port on each master."),
    })
    .strict();

export const ProxySchema = z
    .object({
        httpProxy: proxyUrl.optional().describe("Proxy for HTTP (apt, containerd, kubelet, kubectl); a secret when it carries credentials."),
        httpsProxy: proxyUrl.optional().describe("Proxy for HTTPS; a secret when it carries credentials."),
        noProxy: z.array(z.string()).default([]).describe("Hosts, IPs, CIDRs or `.domain` suffixes that bypass the proxy."),
        k8sNodeCidr: cidr.optional().describe("CIDR of the node network; added to no_proxy as one entry."),
    })
    .strict();

export const SecurityRuleSchema = z
    .object({
        protocol: z.union([z.enum(["tcp", "udp", "icmp"]), z.number().int().min(0).max(255)]).describe("`tcp`, `udp`, `icmp`, or an IP protocol number."),
        portRangeMin: port.optional().describe("First port of the range (tcp, udp)."),
        portRangeMax: port.optional().describe("Last port of the range; default: the first."),
        remoteIpPrefix: cidr.default("0.0.0.0/0").describe("Where the traffic may come from."),
        description: z.string().max(255).optional().describe("The rule's description in Neutron."),
    })
    .strict();

export const SecurityGroupSchema = z
    .object({
        allowedCidrs: z.array(cidr).min(1).default(["0.0.0.0/0"]).describe("Outside sources allowed to reach SSH, the API and NodePorts (the cluster's own nodes always reach the API)."),
        extraRules: z.array(SecurityRuleSchema).default([]).describe("Rules added to the node security group."),
    })
    .strict();

export const PodAffinitySchema = z
    .object({
        serverGroupPolicy: z.enum(SERVER_GROUP_POLICIES).default("anti-affinity").describe("Nova server-group policy for the workers (and masters)."),
    })
    .strict();

export const SshSchema = z
    .object({
        publicKey: z.string().regex(/^(ssh-(rsa|ed25519)|ecdsa-sha2-nistp\d+) [A-Za-z0-9+/=]+( [^\n]*)?$/, "must be an OpenSSH public key line").optional().describe("Public key installed on every VM through a Nova key pair."),
        privateKey: secretText.optional().describe("Private key the remote steps log in with (secret)."),
    })
    .strict();

export const StorageServerSchema = z
    .object({
        ...placement,
        connectionPoint: identifier.default("storage_server_CP").describe("Tacker connection point of the storage server's port."),
        volumes: z
            .array(
                z
                    .object({
                        name: identifier.describe("Name of the volume (Tacker `volume_resource_id`)."),
                        sizeGb: z.number().int().min(1).default(5).describe("Size of the Cinder volume in GB."),
                        volumeType: openstackRef.optional().describe("Cinder volume type; default: the cloud's."),
                        mountTo: remotePath.describe("Mount point on the storage server."),
                    })
                    .strict(),
            )
            .min(1).describe("Cinder volumes, each formatted ext4 and mounted."),
        exports: z
            .array(
                z
                    .object({
                        dir: remotePath.describe("Directory exported; created (owned by the anonymous ids) when missing."),
                        exportTo: cidr.describe("Clients allowed to mount it."),
                        squash: z.enum(["root", "all", "none"]).default("root").describe("Whose ids are mapped to the anonymous user: `root` (root_squash, the default), `all` (all_squash, what Tacker's driver exported) or `none` (no_root_squash)."),
                        insecure: z.boolean().default(false).describe("Accept clients from unprivileged source ports (Tacker's `insecure`)."),
                    })
                    .strict(),
            )
            .min(1).describe("NFS exports (NFSv4): each directory must lie on a mounted volume."),
        healWhileInUse: z.boolean().default(false).describe("Heal (replace) the storage server even while a registered PersistentVolume is Bound: the clients' I/O pauses until the new VM serves the same volumes at the same address, as across a server reboot."),
    })
    .strict();

export const PersistentVolumeSchema = z
    .object({
        manifestFile: packagePath.describe("PersistentVolume manifest in the package; its NFS server address is replaced with the storage server's."),
    })
    .strict();

export const PrivateRegistrySchema = z
    .object({
        protocol: z.enum(["http", "https"]).describe("How the nodes reach the registry."),
        server: endpoint.describe("`host[:port]` of the registry."),
        username: username.optional().describe("Login the kubelet and containerd pull with."),
        password: secretText.optional().describe("Its password (secret)."),
        caCertificateFile: packagePath.optional().describe("CA certificate (PEM) in the package, for HTTPS registries."),
        hostsEntry: z.object({ ip: ipAddress.describe("Address of the registry."), hostname: hostOrIp.describe("Name the registry's certificate and `server` use.") }).strict().optional().describe("Entry added to /etc/hosts on every node."),
        mirrorOf: z.array(endpoint).default([]).describe("Registries this one mirrors, by the name images use (`docker.io`, `quay.io`, `registry.example:5000`): the nodes pull those names' images from it, with its CA and login, and never from the original (an air-gapped site's images, `nginx` or `docker.io/library/nginx` pulled as `library/nginx`)."),
    })
    .strict();

/** The kubespray release installed when config names none: the newest at the time of writing (2026-04). */
export const DEFAULT_KUBESPRAY_VERSION = "v2.31.0";

export const KubesprayAnsibleSchema = z
    .object({
        host: hostOrIp.optional().describe("Address of an existing Ansible server; left out, the stack creates one."),
        username: username.default("ansible").describe("Login user on the Ansible server."),
        password: secretText.optional().describe("Its password (secret)."),
        kubesprayRoot: remotePath.default("/opt/kubespray").describe("Kubespray checkout on the Ansible server."),
        version: z
            .string()
            .regex(/^v?\d+\.\d+\.\d+$/, "must be a kubespray release tag such as v2.31.0")
            .transform((v) => (v.startsWith("v") ? v : `v${v}`))
            .default(DEFAULT_KUBESPRAY_VERSION).describe("Kubespray release installed there (a tag, `v2.31.0`)."),
        releaseFile: packagePath.optional().describe("That release's archive (GitHub's `kubespray-<version>.tar.gz`) in the package, for sites without access to GitHub."),
        playbookTimeoutMinutes: z.number().int().min(5).max(24 * 60).default(60).describe("Minutes one playbook run may take before its step fails."),
        inventoryPath: remotePath.optional().describe("Where the generated inventory goes; default `/var/lib/k8s-vnf/inventory/<vnf name>`."),
        server: placementSchema.optional().describe("Where the Ansible server VM goes when the stack creates it."),
        vars: z.record(z.string(), z.json()).default({}).describe("Kubespray variables for every host (the inventory's group_vars/all), by name, each value as YAML gives it (a string, number, boolean, list or map; Ansible templates `{{ }}` in it as in any inventory): `{kube_network_plugin: cilium, kube_proxy_mode: iptables}`. Each name must be one the release documents (its role defaults and sample group_vars; Ansible's own `ansible_*` pass), and not one k8s-vnf sets itself: `kube_version` is `kubernetes.version`, the CIDRs `kubernetes.podCidr` and `kubernetes.serviceCidr`, the proxy `proxy`, and so on (the refusal names the key). Values whose name says secret (`*_password`, `*_token`) must be Pulumi secrets, and stay out of logs."),
    })
    .strict();

/** The load balancer VM; its `networkId` is the outside-facing port's network (`externalLB_CP1`). */
export const ExternalLoadBalancerSchema = z
    .object({
        ...placement,
        internalNetworkId: openstackRef.optional().describe("Network of the cluster-facing port (`externalLB_CP2`); default: the masters' network."),
        connectionPoint: identifier.default("externalLB_CP1").describe("Tacker connection point of the load balancer's external port."),
        apiPort: port.default(8383).describe("Port the load balancer serves the Kubernetes API on."),
    })
    .strict();

export const RegistryVnfSchema = z
    .object({
        ...placement,
        connectionPoint: identifier.default("CP1").describe("Tacker connection point of the registry's port."),
        port: port.default(5000).describe("Port the registry listens on."),
        imageFile: packagePath.optional().describe("The registry image (`docker save` or OCI tar) in the package, run on containerd; left out, Debian's and Ubuntu's `docker-registry` package runs the registry (no Docker on the VM either way)."),
        volume: z
            .object({
                sizeGb: z.number().int().min(1).default(20).describe("Size of the Cinder volume in GB."),
                volumeType: z.string().min(1).max(255).optional().describe("Cinder volume type; default: the cloud's."),
            })
            .strict()
            .prefault({}).describe("The Cinder volume the images are kept on: a heal keeps it, and so the images."),
        tls: z
            .object({
                certificateFile: packagePath.optional().describe("The certificate in the package."),
                certificate: z.string().max(1_048_576).optional().describe("The certificate itself (PEM)."),
                privateKeyFile: packagePath.optional().describe("Its private key in the package (read as a secret)."),
                privateKey: secretText.optional().describe("Its private key (PEM)."),
            })
            .strict()
            .optional().describe("Serve HTTPS with this certificate (PEM, the chain after it) and key; left out, plain HTTP."),
        users: z
            .array(
                z
                    .object({
                        username: username.describe("The login's name."),
                        // bcrypt reads 72 bytes of a password: a longer one would also accept its first 72.
                        password: secretText
                            .refine((v) => !v.includes("\n"), "must be one line")
                            .refine((v) => Buffer.byteLength(v) <= 72, "must be at most 72 bytes (bcrypt reads no more)")
                            .describe("Its password (secret), one line of at most 72 bytes."),
                    })
                    .strict(),
            )
            .default([]).describe("htpasswd logins (bcrypt): with any, every request needs one. Registry logins belong on HTTPS."),
        preloadImages: z
            .array(
                z
                    .object({
                        file: packagePath.describe("A `docker save` (docker-archive) or OCI image layout tar in the package."),
                        image: imageReference.describe("Where it goes in the registry: `repository:tag`, e.g. `library/nginx:1.27`."),
                    })
                    .strict(),
            )
            .default([]).describe("Images in the package pushed into the registry (an air-gapped site's CNF images, or kubeadm's)."),
    })
    .strict();

/**
 * A user of the cluster: a ServiceAccount with its own token, registered as its own Kubernetes VIM. An admin is
 * bound to the ClusterRole cluster-admin; a user gets a Role (everything in the namespace) and its RoleBinding in
 * each of its namespaces, so its token acts there only.
 */
export const TenantSchema = z
    .object({
        name: kubernetesLabelName.refine((v) => v.length <= 48, "must be at most 48 characters (it is part of the ServiceAccount name)").describe("The tenant's name: its ServiceAccount is `k8s-vnf-tenant-<name>` in kube-system."),
        namespaces: z.array(kubernetesLabelName).default([]).describe("Namespaces the cluster creates for the tenant (a user's are the only ones its token acts in)."),
        role: z.enum(["admin", "user"]).default("user").describe("admin: cluster-wide (ClusterRoleBinding to cluster-admin); user: its namespaces only (Role and RoleBinding)."),
    })
    .strict();

/** A Kubernetes VIM: what a CNF stack reaches its cluster with. */
export const KubernetesVimSchema = z
    .object({
        endpoint: kubernetesApiUrl.describe("The API server's URL (the cluster's `vim.endpoint` output)."),
        caCertificate: z.string().min(1).optional().describe("The cluster CA (PEM) the API server's certificate is checked against."),
        token: secretText.describe("A ServiceAccount's bearer token (secret): the cluster's `vim.token` output or a tenant's."),
    })
    .strict();

/** A CNF: the Kubernetes objects of a VNF package's manifests, in one namespace of a Kubernetes VIM. */
export const CnfSchema = z
    .object({
        manifests: z.array(packagePath).min(1, "name at least one manifest").describe("The manifests in the package (Tacker `lcm-kubernetes-def-files`), created in this order."),
        namespace: kubernetesLabelName.optional().describe("Every namespaced object goes here (Tacker `additionalParams.namespace`); left out: the manifests' own, else `default`."),
        createNamespace: z.boolean().default(false).describe("Whether this CNF creates its namespace (and deletes it on terminate)."),
        instanceId: z.string().regex(/^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/, "must be a Kubernetes label value (letters, digits, '-', '_', '.'; at most 63)").optional().describe("The value of the `tacker_vnf_instance_id` label on every object; default: the stack name."),
        replicas: z.record(z.string(), z.number().int("must be a whole number").min(0, "must be 0 or more")).default({}).describe("Replicas per workload name (Deployment, StatefulSet, ReplicaSet): what a scale sets."),
        restarts: z.record(z.string(), z.string().max(63)).default({}).describe("A restart mark per workload name: a new value restarts its pods (a heal), as `kubectl rollout restart` does."),
        vim: KubernetesVimSchema.describe("The Kubernetes VIM the CNF runs on."),
    })
    .strict();

export const TackerSchema = z
    .object({
        vimName: z.string().max(255).optional().describe("VIM name to register the cluster under (Tacker `vim_name`)."),
        vimId: z.string().max(255).optional().describe("VIM the VNF runs on (Tacker `vimConnectionInfo[].vimId`)."),
        vimConnectionId: z.string().max(255).optional().describe("vimConnectionInfo id."),
    })
    .strict();

/** Every `k8s-vnf:` stack config key. */
export const StackConfigSchema = z
    .object({
        vnfKind: z.enum(["cluster", "registry", "cnf"]).default("cluster").describe("What this stack deploys: a Kubernetes cluster, a private registry, or a CNF on a Kubernetes VIM."),
        flavour: z.enum(["simple", "complex", "podaffinity"]).default("simple").describe("Tacker deployment flavour: simple (1 master), complex (HA), podaffinity (HA + anti-affinity)."),
        vnfName: z.string().regex(/^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/, "must be lower-case letters, digits and '-' (at most 40)").optional().describe("Prefix of the VM names; default: the stack name."),
        image: openstackRef.optional().describe("Default image of every VM."),
        flavor: openstackRef.optional().describe("Default flavor of every VM."),
        packageDir: z.string().min(1).optional().describe("Folder holding the package files (PV manifests, CA certificates, image tars), relative to the project."),
        network: z.object({ networkId: openstackRef.describe("Neutron network ID (or name)."), subnetId: openstackRef.optional().describe("Subnet of the fixed IPs, when the network has several.") }).strict().optional().describe("Default network of every VM."),
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
