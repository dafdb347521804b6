import * as openstack from "@pulumi/openstack";
import * as pulumi from "@pulumi/pulumi";
import { ClusterSpec } from "../config/spec";
import { ComputeApi } from "../providers/kubernetes/computeHost";
import { KubeadmCluster } from "./kubeadmCluster";
import { KubesprayInstall } from "./kubesprayInstall";
import { caCertificateOf, controlPlaneEndpoint } from "./kubeadmPlan";
import { KubernetesVim } from "./kubernetesVim";
import { NodeGroup } from "./nodeGroup";
import { NFS_RULES, nodeRules, SecurityGroup, sshAndPortRules, VRRP_RULES } from "./securityGroups";
import { Server } from "./server";
import { PersistentVolumes } from "./persistentVolumes";
import { StorageServer } from "./storageServer";
import { VnfcResource, vnfcOf } from "./vnfc";

export interface KubernetesClusterArgs {
    /** The resolved cluster specification (see `config/`). */
    spec: ClusterSpec;
    /** OpenStack credentials for reading each worker's compute host (pod affinity). */
    compute?: pulumi.Input<ComputeApi>;
}

/**
 * The OpenStack side of a Kubernetes cluster VNF: security groups, masters (with a VIP port for HA),
 * workers, and the optional storage server, external load balancer and Ansible server.
 */
export class KubernetesCluster extends pulumi.ComponentResource {
    readonly masters: NodeGroup;
    readonly workers: NodeGroup;
    readonly vipPort?: openstack.networking.Port;
    /** Address the Kubernetes API is reached on: the VIP with HAProxy's port (HA) or the master's API port. */
    readonly controlPlaneEndpoint: pulumi.Output<string>;
    readonly storageServer?: StorageServer;
    /** The PersistentVolumes of the VNF package, on the storage server's exports. */
    readonly persistentVolumes?: PersistentVolumes;
    readonly externalLoadBalancer?: Server;
    readonly ansibleServer?: Server;
    /** Kubernetes installed with kubeadm (absent when kubespray installs it). */
    readonly kubeadm?: KubeadmCluster;
    /** Kubernetes installed by kubespray from the Ansible server. */
    readonly kubespray?: KubesprayInstall;
    /** The cluster as a Kubernetes VIM, with its tenants (a kubeadm cluster's). */
    readonly vim?: KubernetesVim;
    /** Every VM with its ports, by stable VNFC id (the VM name). */
    readonly vnfcResources: pulumi.Output<VnfcResource[]>;

    constructor(name: string, args: KubernetesClusterArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:index:KubernetesCluster", name, {}, opts);
        const { spec } = args;
        const vnf = spec.name;
        const child = { parent: this };

        const keyPair = spec.ssh.publicKey
            ? new openstack.compute.Keypair(`${name}-keypair`, { name: vnf, publicKey: spec.ssh.publicKey }, child)
            : undefined;

        // keepalived and HAProxy on the masters are kubeadm's; kubespray's API is behind its external load balancer.
        const haBehindVip = spec.ha && !spec.kubespray;
        const nodesSg = new SecurityGroup(
            `${name}-nodes-sg`,
            {
                groupName: `${vnf}-nodes`,
                description: `Kubernetes nodes of ${vnf}`,
                rules: [
                    ...nodeRules({ ha: haBehindVip, apiServerPort: spec.controlPlane.apiServerPort, haproxyPort: spec.controlPlane.haproxyPort }),
                    { id: "ssh-members", protocol: "tcp", ports: [22, 22], from: "members" },
                ],
                allowedCidrs: spec.securityGroup.allowedCidrs,
                extraRules: spec.securityGroup.extraRules,
            },
            child,
        );
        const masterSgIds: pulumi.Input<string>[] = [nodesSg.group.id];
        if (haBehindVip) {
            const vrrpSg = new SecurityGroup(
                `${name}-control-plane-sg`,
                { groupName: `${vnf}-control-plane`, description: `VRRP between the masters of ${vnf}`, rules: VRRP_RULES, allowedCidrs: [] },
                child,
            );
            masterSgIds.push(vrrpSg.group.id);
            this.vipPort = new openstack.networking.Port(
                `${name}-vip`,
                {
                    name: `${vnf}-vip`,
                    networkId: spec.masters.server.networkId,
                    adminStateUp: true,
                    fixedIps: spec.masters.server.subnetId ? [{ subnetId: spec.masters.server.subnetId, ipAddress: spec.controlPlane.vip }] : undefined,
                    securityGroupIds: [nodesSg.group.id],
                },
                child,
            );
        }
        const vip = this.vipPort?.allFixedIps.apply((ips) => ips[0]);

        this.masters = new NodeGroup(
            `${name}-master`,
            {
                vnfName: vnf,
                spec: spec.masters,
                heal: spec.heal,
                securityGroupIds: masterSgIds,
                allowedAddresses: vip ? [vip] : undefined,
                keyPairName: keyPair?.name,
                serverGroupPolicy: spec.serverGroupPolicy,
                inServerGroup: (i) => inServerGroup(spec, `master-${i}`),
            },
            child,
        );
        this.workers = new NodeGroup(
            `${name}-worker`,
            {
                vnfName: vnf,
                spec: spec.workers,
                securityGroupIds: [nodesSg.group.id],
                keyPairName: keyPair?.name,
                serverGroupPolicy: spec.serverGroupPolicy,
                inServerGroup: (i) => inServerGroup(spec, `worker-${i}`),
                heal: spec.heal,
            },
            child,
        );
        if (!spec.kubespray) {
            this.kubeadm = new KubeadmCluster(`${name}-kubeadm`, { spec, masters: this.masters.nodes, workers: this.workers.nodes, vip, compute: args.compute }, child);
            this.vim = new KubernetesVim(
                `${name}-vim`,
                {
                    provider: this.kubeadm.kubernetesProvider(),
                    apiEndpoint: this.kubeadm.apiAccessEndpoint,
                    // The CA is no secret; the admin kubeconfig it comes from is.
                    caCertificate: pulumi.unsecret(this.kubeadm.kubeconfig.apply(caCertificateOf)),
                    tenants: spec.tenants,
                    clusterId: this.kubeadm.init.caCertHash,
                    cluster: this.kubeadm.init,
                },
                child,
            );
        }

        const vnfcs: pulumi.Output<VnfcResource>[] = [
            ...this.masters.nodes.map((n, i) => vnfcOf(n, `${vnf}-master-${i}`, spec.masters.vduId, spec.masters.connectionPoint)),
            ...this.workers.nodes.map((n, i) => vnfcOf(n, `${vnf}-worker-${i}`, spec.workers.vduId, spec.workers.connectionPoint)),
        ];

        if (spec.storageServer) {
            const nfsSg = new SecurityGroup(
                `${name}-nfs-sg`,
                { groupName: `${vnf}-nfs`, description: `NFS exports of ${vnf}`, rules: NFS_RULES, allowedCidrs: [], membersGroupId: nodesSg.group.id },
                child,
            );
            const pvs = spec.persistentVolumes;
            this.storageServer = new StorageServer(
                `${name}-storage`,
                {
                    vnfName: vnf,
                    spec: spec.storageServer,
                    securityGroupIds: [nodesSg.group.id, nfsSg.group.id],
                    keyPairName: keyPair?.name,
                    sshPrivateKey: spec.ssh.privateKey,
                    healGeneration: spec.heal.nodes.storage ?? 0,
                    proxy: this.kubeadm?.proxy,
                    inUse:
                        this.kubeadm && pvs.length
                            ? { persistentVolumes: pvs.map((pv) => pv.name), controlPlanes: this.kubeadm.controlPlanes, firstMaster: this.kubeadm.firstMasterConnection }
                            : undefined,
                },
                child,
            );
            if (this.kubeadm && pvs.length) {
                this.persistentVolumes = new PersistentVolumes(
                    `${name}-pv`,
                    {
                        volumes: pvs,
                        serverAddress: this.storageServer.server.address,
                        provider: this.kubeadm.kubernetesProvider(),
                        clusterId: this.kubeadm.init.caCertHash,
                        cluster: this.kubeadm.init,
                        exports: this.storageServer.nfs,
                    },
                    child,
                );
            }
            vnfcs.push(vnfcOf(this.storageServer.server, `${vnf}-storage`, "storage_server", spec.storageServer.connectionPoint));
        }

        if (spec.externalLoadBalancer) {
            const lb = spec.externalLoadBalancer;
            const lbSg = new SecurityGroup(
                `${name}-lb-sg`,
                {
                    groupName: `${vnf}-external-lb`,
                    description: `External load balancer of ${vnf}`,
                    rules: [...sshAndPortRules([lb.apiPort]), { id: "nodeport-tcp", protocol: "tcp", ports: [30000, 32767], from: "allowed" }],
                    allowedCidrs: spec.securityGroup.allowedCidrs,
                },
                child,
            );
            this.externalLoadBalancer = new Server(
                `${name}-external-lb`,
                {
                    vmName: `${vnf}-external-lb`,
                    spec: lb.server,
                    ports: [
                        { networkId: lb.server.networkId, subnetId: lb.server.subnetId, fixedIp: lb.server.fixedIp, securityGroupIds: [lbSg.group.id] },
                        { networkId: lb.internalNetworkId, securityGroupIds: [nodesSg.group.id] },
                    ],
                    keyPairName: keyPair?.name,
                    metadata: { "k8s-vnf-role": "external-lb", "k8s-vnf-cp": lb.connectionPoint },
                },
                child,
            );
            vnfcs.push(vnfcOf(this.externalLoadBalancer, `${vnf}-external-lb`, "externalLB", lb.connectionPoint));
        }

        if (spec.kubespray?.server) {
            this.ansibleServer = new Server(
                `${name}-ansible`,
                {
                    vmName: `${vnf}-ansible`,
                    spec: spec.kubespray.server,
                    ports: [{ networkId: spec.kubespray.server.networkId, subnetId: spec.kubespray.server.subnetId, fixedIp: spec.kubespray.server.fixedIp, securityGroupIds: [nodesSg.group.id] }],
                    keyPairName: keyPair?.name,
                    metadata: { "k8s-vnf-role": "ansible" },
                },
                child,
            );
        }
        if (spec.kubespray) {
            this.kubespray = new KubesprayInstall(
                `${name}-kubespray`,
                { spec, masters: this.masters.nodes, workers: this.workers.nodes, ansibleServer: this.ansibleServer, externalLoadBalancer: this.externalLoadBalancer },
                child,
            );
            this.controlPlaneEndpoint = this.kubespray.controlPlaneEndpoint;
        } else {
            const first = this.masters.nodes[0];
            this.controlPlaneEndpoint = pulumi.all([first.address, vip]).apply(([address, v]) => controlPlaneEndpoint(spec, [{ name: first.vmName, address }], v));
        }

        this.vnfcResources = pulumi.all(vnfcs);
        this.registerOutputs({ controlPlaneEndpoint: this.controlPlaneEndpoint, vnfcResources: this.vnfcResources });
    }
}

/**
 * Whether a node (`master-<i>`, `worker-<i>`) is in its group's server group: it has podaffinity, the
 * VNF's flavour once the node has moved (or no change is under way), else the flavour it changes from.
 */
export function inServerGroup(spec: ClusterSpec, node: string): boolean {
    const change = spec.flavourChange;
    return (!change || change.moved.includes(node) ? spec.flavour : change.from) === "podaffinity";
}
