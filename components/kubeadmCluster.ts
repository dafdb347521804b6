import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { ClusterSpec, NodeGroupSpec, PrivateRegistryConnectionSpec } from "../config/spec";
import { ApiLoadBalancer } from "../providers/kubernetes/apiLoadBalancer";
import { ComputeApi } from "../providers/kubernetes/computeHost";
import { ControlPlaneMember } from "../providers/kubernetes/controlPlaneMember";
import { ControlPlaneRef } from "../providers/kubernetes/kubeadm";
import { KubeadmInit } from "../providers/kubernetes/kubeadmInit";
import { NodeLabels } from "../providers/kubernetes/nodeLabels";
import { KubernetesNode } from "../providers/kubernetes/nodePrep";
import { PodNetwork } from "../providers/kubernetes/podNetwork";
import { RegistryConnections } from "../providers/kubernetes/registryConnections";
import { WorkerMember } from "../providers/kubernetes/workerMember";
import { NfsClient } from "../providers/storage/nfsClient";
import { SshTarget } from "../providers/transport/ssh";
import { NodeProxy } from "../providers/kubernetes/nodePrep";
import { apiAccessEndpoint, apiCertSans, clusterSettings, controlPlaneEndpoint, hostsEntries, kubeconfigAt, nodeProxy, PlannedNode, vrrpPriority, vrrpRouterId, workerLabels } from "./kubeadmPlan";
import { kubeletCredentials, registryDirectories, registryHostsLines } from "./registryPlan";
import { Server } from "./server";

export interface KubeadmClusterArgs {
    /** The resolved cluster configuration. */
    spec: ClusterSpec;
    /** Master VMs in index order; the first one runs `kubeadm init`. */
    masters: Server[];
    /** Worker VMs in index order. */
    workers: Server[];
    /** The control-plane VIP (HA only). */
    vip?: pulumi.Input<string>;
    /** OpenStack credentials for reading each worker's compute host (pod affinity). */
    compute?: pulumi.Input<ComputeApi>;
}

/**
 * Kubernetes on the cluster's VMs with kubeadm. Per VM a chain VM → KubernetesNode (→ NfsClient, with a
 * storage server) (→ RegistryConnections, with private registries) → membership (→ labels), each taking its parent's VM id as an input, so replacing a VM
 * replaces its chain in order (the membership's delete drains first). After the init the masters join one
 * at a time, and the pod network is applied, after which the workers join in parallel.
 */
export class KubeadmCluster extends pulumi.ComponentResource {
    readonly init: KubeadmInit;
    readonly podNetwork: PodNetwork;
    readonly masterMembers: ControlPlaneMember[];
    readonly workerMembers: WorkerMember[];
    readonly endpoint: pulumi.Output<string>;
    readonly kubeconfig: pulumi.Output<string>;
    /** Every master with its login, pinned to its current host key (secret), for steps that run kubectl. */
    readonly controlPlanes: pulumi.Output<ControlPlaneRef[]>;
    /** The nodes' proxy settings. */
    readonly proxy: pulumi.Output<NodeProxy>;
    /** How to log into the first master (secret). */
    readonly firstMasterConnection: pulumi.Output<SshTarget>;
    /** The admin kubeconfig with the server this machine reaches the API at (secret). */
    readonly apiKubeconfig: pulumi.Output<string>;
    /** `host:port` this machine reaches the API at (a floating IP when the first master has one). */
    readonly apiAccessEndpoint: pulumi.Output<string>;
    private provider?: k8s.Provider;

    constructor(
        private readonly name: string,
        args: KubeadmClusterArgs,
        opts?: pulumi.ComponentResourceOptions,
    ) {
        super("k8s-vnf:kubernetes:KubeadmCluster", name, {}, opts);
        const built = buildKubeadmCluster(name, args, this);
        this.init = built.init;
        this.podNetwork = built.podNetwork;
        this.masterMembers = built.masterMembers;
        this.workerMembers = built.workerMembers;
        this.endpoint = built.endpoint;
        this.kubeconfig = built.init.kubeconfig;
        this.controlPlanes = built.controlPlanes;
        this.proxy = built.proxy;
        this.firstMasterConnection = pulumi.secret(built.firstMasterConnection);
        const first = args.masters[0];
        const access = pulumi.all([first.address, first.sshAddress, this.endpoint]).apply(([address, sshAddress, endpoint]) => apiAccessEndpoint(args.spec, { address, sshAddress }, endpoint));
        this.apiAccessEndpoint = access;
        this.apiKubeconfig = pulumi.secret(pulumi.all([this.kubeconfig, access]).apply(([kubeconfig, endpoint]) => kubeconfigAt(kubeconfig, endpoint)));
        this.registerOutputs({ endpoint: this.endpoint, kubeconfig: this.kubeconfig });
    }

    /** The @pulumi/kubernetes provider of this cluster, made with its first use. */
    kubernetesProvider(): k8s.Provider {
        // One identity for the provider whatever cluster its kubeconfig reaches, so that a new cluster
        // (entire-cluster heal) updates it and never replaces it. Each object under it is replaced by its own
        // replacementTrigger (the cluster's CA hash), delete-first: the delete goes to the new cluster, which
        // has no such object yet. A replaced provider breaks that heal under Pulumi v3.248.0: the
        // delete-before-replace of the cluster's init then deletes the objects first, and the registry's Diff
        // of the dependent provider closes the provider those deletes use ("grpc: the client connection is
        // closing"; pkg/resource/deploy/providers/registry.go Diff, `if diff.Replace() { IgnoreClose }`).
        // deleteUnreachable: a destroy after the VMs are gone.
        this.provider ??= new (kubernetesSdk().Provider)(
            `${this.name}-api`,
            { kubeconfig: this.apiKubeconfig, deleteUnreachable: true, clusterIdentifier: `k8s-vnf:${this.name}` },
            { parent: this },
        );
        return this.provider;
    }
}

/** @pulumi/kubernetes, loaded by the stacks that register Kubernetes objects only (about 0.2 s). */
export const kubernetesSdk = (): typeof k8s => require("@pulumi/kubernetes");

/** The files every node gets for the private registries (registryPlan.ts); the logins are secret. */
function registryConnectionInputs(registries: PrivateRegistryConnectionSpec[]) {
    const credentials = kubeletCredentials(registries);
    return {
        registries: registryDirectories(registries),
        hostsLines: registryHostsLines(registries),
        credentials: credentials === undefined ? undefined : pulumi.secret(credentials),
    };
}


function buildKubeadmCluster(name: string, args: KubeadmClusterArgs, parent: pulumi.Resource) {
    const { spec } = args;
    const child = { parent };
    // One login Output per VM, however many steps use it (a large cluster's evaluation makes thousands).
    const logins = new Map<Server, pulumi.Output<SshTarget>>();
    const connectionOf = (server: Server) => {
        let login = logins.get(server);
        if (!login) logins.set(server, (login = server.sshTarget(spec.ssh.privateKey)));
        return login;
    };
    const vip: pulumi.Output<string | undefined> = pulumi.output(args.vip);
    const plannedMasters: pulumi.Output<PlannedNode[]> = pulumi.all(args.masters.map((m) => m.address)).apply((addresses) => addresses.map((address, i) => ({ name: args.masters[i].vmName, address })));
    const proxy = pulumi.all([plannedMasters, vip]).apply(([masters, v]) => nodeProxy(spec, masters, v));
    const endpoint = pulumi.all([plannedMasters, vip]).apply(([masters, v]) => controlPlaneEndpoint(spec, masters, v));

    const prepareNode = (server: Server, group: NodeGroupSpec, index: number) =>
        new KubernetesNode(
            `${name}-${group.role}-${index}-node`,
            {
                connection: connectionOf(server),
                vmId: server.instance.id,
                nodeName: server.vmName,
                kubernetesVersion: spec.kubernetes.version,
                packageRepository: spec.kubernetes.packageRepository,
                imageRepository: spec.kubernetes.imageRepository,
                proxy,
                hostsEntries: pulumi.all([server.address, plannedMasters]).apply(([address, masters]) => hostsEntries({ name: server.vmName, address }, masters)),
            },
            child,
        );
    const registries = spec.privateRegistries.length ? registryConnectionInputs(spec.privateRegistries) : undefined;
    // A node joins once it can mount the storage server's PersistentVolumes and pull from the private registries.
    const prepare = (server: Server, group: NodeGroupSpec, index: number) => {
        const node = prepareNode(server, group, index);
        const prefix = `${name}-${group.role}-${index}`;
        const client = spec.storageServer ? new NfsClient(`${prefix}-nfs-client`, { connection: connectionOf(server), vmId: node.vmId, nodeName: server.vmName }, child) : undefined;
        const connections =
            registries && new RegistryConnections(`${prefix}-registries`, { connection: connectionOf(server), vmId: (client ?? node).vmId, nodeName: server.vmName, ...registries }, child);
        const ready = connections ?? client ?? node;
        return Object.assign(node, { ready, readyVmId: ready.vmId });
    };

    const masterNodes = args.masters.map((server, i) => prepare(server, spec.masters, i));
    const controlPlaneRefs: pulumi.Output<ControlPlaneRef>[] = args.masters.map((server, i) =>
        pulumi.all([connectionOf(server), masterNodes[i].hostKeyFingerprint]).apply(([connection, hostKeyFingerprint]) => ({
            name: server.vmName,
            connection: { ...connection, hostKeyFingerprint },
        })),
    );

    const controlPlanes = pulumi.all(controlPlaneRefs);

    const loadBalancers = spec.ha
        ? args.masters.map(
              (server, i) =>
                  new ApiLoadBalancer(
                      `${name}-master-${i}-api-lb`,
                      {
                          connection: connectionOf(server),
                          vmId: masterNodes[i].readyVmId,
                          address: server.address,
                          vip: vip.apply((v) => v!),
                          routerId: vip.apply((v) => vrrpRouterId(v!)),
                          priority: vrrpPriority(i),
                          frontendPort: spec.controlPlane.haproxyPort,
                          apiServerPort: spec.controlPlane.apiServerPort,
                          backends: plannedMasters,
                      },
                      child,
                  ),
          )
        : [];

    const first = args.masters[0];
    const init = new KubeadmInit(
        `${name}-init`,
        {
            connection: connectionOf(first),
            nodeName: first.vmName,
            address: first.address,
            endpoint,
            // The masters' current host keys: an update, never a replacement, when a master's VM is replaced.
            controlPlanes,
            certSans: pulumi
                .all([pulumi.all(args.masters.map((m) => pulumi.all([m.address, m.sshAddress]).apply(([address, sshAddress]) => ({ address, sshAddress })))), vip])
                .apply(([masters, v]) => apiCertSans(masters, v)),
            ...clusterSettings(spec),
        },
        // Nothing from the first VM replaces the init: healing that VM must not re-create the cluster. kubeadm's
        // preflight pulls its images through the registry connections.
        { ...child, dependsOn: [masterNodes[0].ready, ...loadBalancers.slice(0, 1)] },
    );

    // A membership (and a node's labels) goes with the cluster: when the cluster itself is deleted (destroy,
    // entire-cluster heal) there is nothing to drain or take out of etcd, and doing it for every node at once
    // would race the masters' own removal. Scale-in and node heals keep the cluster, so they still drain.
    const inCluster = { ...child, deletedWith: init };

    const podNetwork = new PodNetwork(
        `${name}-pod-network`,
        { connection: connectionOf(first), cniManifest: spec.kubernetes.cniManifest, proxy, caCertHash: init.caCertHash, controlPlanes },
        inCluster,
    );

    // Control-plane joins go one at a time: etcd takes one new member (a learner) at a time, and each join
    // uploads the control-plane certificates under a new key, which voids the key of a join under way. The
    // order is master-1, master-2, …, then master-0: at instantiate master-0 is a member by the init and its
    // step only confirms it, and master-1's join starts with the pod network, before the workers' joins
    // (which wait for the network) are queued for a `--parallel` slot. Each later master's join is queued
    // when the previous one ends, behind whatever waits then. A heal that includes master-0 joins it last.
    // A graceful stop drains every node while the VMs still run; the VMs are shut off by the next update. The
    // timeout is an input only while drained, so changing it alone updates nothing (and reaches no stopped VM).
    const serviceInputs = { drained: spec.operate.drained, stopDrainTimeoutSeconds: spec.operate.drained ? spec.operate.drainTimeout : undefined };
    const joinOrder = [...args.masters.keys()].slice(1).concat(0);
    const masterMembers: ControlPlaneMember[] = new Array(args.masters.length);
    let previousJoin: ControlPlaneMember | undefined;
    for (const i of joinOrder) {
        const server = args.masters[i];
        previousJoin = masterMembers[i] =
            new ControlPlaneMember(
                `${name}-master-${i}-member`,
                {
                    connection: connectionOf(server),
                    vmId: loadBalancers[i]?.vmId ?? masterNodes[i].readyVmId,
                    nodeName: server.vmName,
                    address: server.address,
                    apiServerPort: spec.controlPlane.apiServerPort,
                    endpoint,
                    caCertHash: init.caCertHash,
                    peers: pulumi.all(controlPlaneRefs.filter((_, j) => j !== i)),
                    loadBalanced: spec.ha,
                    ...serviceInputs,
                },
                { ...inCluster, dependsOn: [init, ...(previousJoin ? [previousJoin] : [])] },
            );
    }

    const labels = workerLabels(spec);
    const workerMembers = args.workers.map((server, i) => {
        const node = prepare(server, spec.workers, i);
        const member = new WorkerMember(
            `${name}-worker-${i}-member`,
            {
                connection: connectionOf(server),
                vmId: node.readyVmId,
                nodeName: server.vmName,
                endpoint,
                caCertHash: init.caCertHash,
                controlPlanes,
                drainTimeoutSeconds: spec.kubernetes.drainTimeout,
                ...serviceInputs,
            },
            { ...inCluster, dependsOn: [podNetwork] },
        );
        if (labels) {
            new NodeLabels(
                `${name}-worker-${i}-labels`,
                {
                    connection: connectionOf(first),
                    vmId: member.vmId,
                    nodeName: server.vmName,
                    labels: labels.labels,
                    computeHostLabel: labels.computeHostLabel,
                    compute: labels.computeHostLabel ? args.compute : undefined,
                    controlPlanes,
                },
                inCluster,
            );
        }
        return member;
    });

    return { init, podNetwork, masterMembers, workerMembers, endpoint, controlPlanes, proxy, firstMasterConnection: connectionOf(first) };
}
