import * as pulumi from "@pulumi/pulumi";
import { kubesprayRelease, KubesprayRelease } from "../config/kubesprayReleases";
import { ClusterSpec, KubesprayAnsibleSpec } from "../config/spec";
import { ControlPlaneRef } from "../providers/kubernetes/kubeadm";
import { AnsibleServer, ReleaseArchive } from "../providers/kubespray/ansibleServer";
import { ExternalLoadBalancer } from "../providers/kubespray/externalLoadBalancer";
import { KubesprayCluster, KubesprayNode } from "../providers/kubespray/kubesprayCluster";
import { KubesprayWorker } from "../providers/kubespray/kubesprayWorker";
import { AnsibleLogins } from "../providers/kubespray/playbooks";
import { SshTarget } from "../providers/transport/ssh";
import { hostPort, kubeconfigAt } from "./kubeadmPlan";
import { clusterVarsYaml, ExternalApiEndpoint, inventoryHosts, kubesprayVarsFile, proxyVarsYaml } from "./kubesprayPlan";
import { sha256Of } from "./fileDigest";
import { Server } from "./server";

/** Kubernetes' default NodePort range, which kubespray keeps (`kube_apiserver_node_port_range`). */
const NODE_PORT_RANGE: [number, number] = [30000, 32767];

export interface KubesprayInstallArgs {
    /** The resolved cluster configuration; `spec.kubespray` is set. */
    spec: ClusterSpec;
    /** Master VMs in index order: kube_control_plane and etcd. */
    masters: Server[];
    /** Worker VMs in index order: kube_node. */
    workers: Server[];
    /** The Ansible server VM the stack made; absent when `spec.kubespray.host` names one. */
    ansibleServer?: Server;
    /** The external load-balancer VM (its second port is on the cluster network), when the VNF has one. */
    externalLoadBalancer?: Server;
}

/**
 * Kubernetes on the cluster's VMs with kubespray, run from the Ansible server. The chain: the release on the
 * Ansible server (AnsibleServer) and HAProxy on the external load balancer (ExternalLoadBalancer, before the
 * install, so kubespray puts its address in the API certificate) → the cluster (KubesprayCluster: inventory
 * from the stack, cluster.yml; new workers get facts.yml and `scale.yml --limit`) → one KubesprayWorker per
 * worker VM, whose delete drains and runs remove-node.yml for that node alone. A worker's VM replaced (heal)
 * replaces its membership delete-first: remove-node, then the new VM, then scale.yml for it.
 */
export class KubesprayInstall extends pulumi.ComponentResource {
    readonly ansible: AnsibleServer;
    readonly loadBalancer?: ExternalLoadBalancer;
    readonly cluster: KubesprayCluster;
    readonly workerMembers: KubesprayWorker[];
    /** `host:port` this machine reaches the API at: the load balancer's outside address, else the first master. */
    readonly apiAccessEndpoint: pulumi.Output<string>;
    /** `host:port` the nodes reach the API at: the load balancer's cluster-network address, else the first master. */
    readonly controlPlaneEndpoint: pulumi.Output<string>;
    /** The admin kubeconfig pointed at `apiAccessEndpoint`, the cluster's CA kept (secret). */
    readonly kubeconfig: pulumi.Output<string>;

    constructor(name: string, args: KubesprayInstallArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:kubernetes:KubesprayInstall", name, {}, opts);
        const built = buildKubesprayInstall(name, args, this);
        this.ansible = built.ansible;
        this.loadBalancer = built.loadBalancer;
        this.cluster = built.cluster;
        this.workerMembers = built.workerMembers;
        this.apiAccessEndpoint = built.apiAccessEndpoint;
        this.controlPlaneEndpoint = built.controlPlaneEndpoint;
        this.kubeconfig = built.kubeconfig;
        this.registerOutputs({ apiAccessEndpoint: this.apiAccessEndpoint });
    }
}

function buildKubesprayInstall(name: string, args: KubesprayInstallArgs, parent: pulumi.Resource) {
    const { spec } = args;
    const k = spec.kubespray!;
    const child = { parent };
    const release = kubesprayRelease(k.version) as KubesprayRelease;
    const connectionOf = (server: Server) => server.sshTarget(spec.ssh.privateKey);

    const ansibleConnection: pulumi.Output<SshTarget> = args.ansibleServer
        ? connectionOf(args.ansibleServer)
        : pulumi.output(ansibleHostLogin(k, spec.ssh.privateKey));
    const ansible = new AnsibleServer(
        `${name}-ansible`,
        {
            connection: ansibleConnection,
            vmId: args.ansibleServer?.instance.id,
            kubesprayRoot: k.kubesprayRoot,
            version: k.version,
            ansibleCore: release.ansibleCore,
            releaseArchive: k.releaseFile ? releaseArchive(k.releaseFile) : undefined,
            proxy: spec.proxy && pulumi.secret({ httpProxy: spec.proxy.httpProxy, httpsProxy: spec.proxy.httpsProxy, noProxy: spec.proxy.noProxy.join(",") || undefined }),
        },
        child,
    );

    const nodesOf = (servers: Server[]): pulumi.Output<KubesprayNode[]> =>
        pulumi.all(servers.map((s) => pulumi.all([s.address, s.instance.id]).apply(([address, vmId]) => ({ name: s.vmName, address, vmId }))));
    const masters = nodesOf(args.masters);
    const workers = nodesOf(args.workers);
    const users = Object.fromEntries([...args.masters.map((m) => [m.vmName, spec.masters.server.username]), ...args.workers.map((w) => [w.vmName, spec.workers.server.username])]);

    const lbVm = args.externalLoadBalancer;
    const lb = lbVm && spec.externalLoadBalancer;
    const loadBalancer =
        lbVm && lb
            ? new ExternalLoadBalancer(
                  `${name}-external-lb`,
                  {
                      connection: connectionOf(lbVm),
                      vmId: lbVm.instance.id,
                      apiPort: lb.apiPort,
                      apiServerPort: spec.controlPlane.apiServerPort,
                      controlPlanes: masters.apply((ns) => ns.map(({ name: n, address }) => ({ name: n, address }))),
                      workers: workers.apply((ns) => ns.map(({ name: n, address }) => ({ name: n, address }))),
                      nodePortRange: NODE_PORT_RANGE,
                  },
                  child,
              )
            : undefined;
    // The load balancer as the nodes reach it (its cluster-network port) and as everybody else does.
    const apiEndpoint: pulumi.Output<ExternalApiEndpoint | undefined> =
        lbVm && lb ? pulumi.all([lbVm.ports[1].allFixedIps, lbVm.address, lbVm.sshAddress]).apply(([inside, outside, ssh]) => ({ address: inside[0], port: lb.apiPort, otherAddresses: [...new Set([outside, ssh])] })) : pulumi.output(undefined);

    const passwordOf = (server: Server) => (args.masters.includes(server) ? spec.masters : spec.workers).server.password;
    const loginOf = (servers: Server[]): AnsibleLogins => {
        const passwords = Object.fromEntries(servers.flatMap((s) => (passwordOf(s) === undefined ? [] : [[s.vmName, passwordOf(s)!]])));
        return { ...(spec.ssh.privateKey ? { privateKey: spec.ssh.privateKey } : {}), ...(Object.keys(passwords).length ? { passwords } : {}) };
    };
    const logins = loginOf([...args.masters, ...args.workers]);
    const proxyVars = proxyVarsYaml(spec);
    const vars = kubesprayVarsFile(spec);
    const cluster = new KubesprayCluster(
        `${name}-cluster`,
        {
            connection: ansibleConnection,
            kubesprayRoot: ansible.kubesprayRoot,
            ansiblePlaybook: ansible.ansiblePlaybook,
            inventoryPath: k.inventoryPath,
            cluster: spec.name,
            timeoutMinutes: k.playbookTimeoutMinutes,
            masters,
            workers,
            generation: spec.heal.generation,
            hostsYaml: pulumi.all([masters, workers]).apply(([m, w]) => inventoryHosts(m, w, users)),
            clusterVarsYaml: apiEndpoint.apply((endpoint) => clusterVarsYaml(spec, endpoint)),
            proxyVarsYaml: proxyVars && pulumi.secret(proxyVars),
            kubernetesVersion: k.kubernetesVersion,
            vars: vars?.masked,
            varsFile: vars && pulumi.secret(vars.file),
            logins: pulumi.secret(logins),
            firstMaster: connectionOf(args.masters[0]),
            factsPlaybook: release.factsPlaybook,
        },
        { ...child, dependsOn: loadBalancer ? [loadBalancer] : [] },
    );

    const controlPlanes: pulumi.Output<ControlPlaneRef[]> = pulumi.all(args.masters.map((m) => connectionOf(m).apply((connection) => ({ name: m.vmName, connection }))));
    // A destroy or an entire heal takes the whole cluster: nothing to drain or remove node by node then.
    const workerMembers = args.workers.map(
        (server, i) =>
            new KubesprayWorker(
                `${name}-worker-${i}-member`,
                {
                    connection: ansibleConnection,
                    kubesprayRoot: ansible.kubesprayRoot,
                    ansiblePlaybook: ansible.ansiblePlaybook,
                    inventoryPath: cluster.inventoryPath,
                    cluster: cluster.cluster,
                    timeoutMinutes: k.playbookTimeoutMinutes,
                    vmId: server.instance.id,
                    nodeName: server.vmName,
                    address: server.address,
                    user: spec.workers.server.username,
                    login: pulumi.secret(loginOf([server])),
                    nodeConnection: connectionOf(server),
                    controlPlanes,
                    drainTimeoutSeconds: spec.kubernetes.drainTimeout,
                    removeNodeVars: release.removeNodeVars,
                },
                { ...child, deletedWith: cluster, dependsOn: [cluster] },
            ),
    );

    const first = args.masters[0];
    const apiAccessEndpoint: pulumi.Output<string> =
        lbVm && lb ? lbVm.sshAddress.apply((host) => hostPort(host, lb.apiPort)) : first.sshAddress.apply((host) => hostPort(host, spec.controlPlane.apiServerPort));
    const controlPlaneEndpoint: pulumi.Output<string> = pulumi
        .all([apiEndpoint, first.address])
        .apply(([lbEndpoint, master]) => (lbEndpoint ? hostPort(lbEndpoint.address, lbEndpoint.port) : hostPort(master, spec.controlPlane.apiServerPort)));
    const kubeconfig = pulumi.secret(pulumi.all([cluster.adminKubeconfig, apiAccessEndpoint]).apply(([admin, endpoint]) => kubeconfigAt(admin, endpoint)));
    return { ansible, loadBalancer, cluster, workerMembers, apiAccessEndpoint, controlPlaneEndpoint, kubeconfig };
}

/** The login to an Ansible server the request names: its user with the stack's key, else its password. */
function ansibleHostLogin(k: KubesprayAnsibleSpec, privateKey: string | undefined): SshTarget {
    return { host: k.host!, username: k.username, ...(k.password ? { password: k.password } : {}), ...(privateKey ? { privateKey } : {}) };
}

/** The release archive with its SHA-256 (the server keeps the hash of what it unpacked). */
const releaseArchive = async (file: string): Promise<ReleaseArchive> => ({ file, sha256: await sha256Of(file) });
