import * as pulumi from "@pulumi/pulumi";
import { VnfSpec } from "../config/spec";
import { ComputeApi } from "../providers/kubernetes/computeHost";
import { KubernetesCluster } from "./cluster";
import { CnfVnfcResource, ContainerizedVnf } from "./cnf";
import { PrivateRegistry } from "./registry";
import { VnfcResource } from "./vnfc";

/** What a stack exports; the LCM service reads these as the VNF's resources. */
export interface VnfOutputs {
    vnfKind: string;
    vnfcResources: pulumi.Output<VnfcResource[] | CnfVnfcResource[]>;
    [key: string]: unknown;
}

/** What the program knows besides the VNF's own configuration. */
export interface VnfEnvironment {
    /** OpenStack credentials for the compute-host lookups of pod-affinity labels. */
    compute?: pulumi.Input<ComputeApi>;
}

/** Builds the components of one VNF and returns the stack outputs. */
export function buildVnf(spec: VnfSpec, environment: VnfEnvironment = {}, opts?: pulumi.ComponentResourceOptions): VnfOutputs {
    if (spec.kind === "registry") {
        const registry = new PrivateRegistry(spec.name, { spec }, opts);
        return { vnfKind: spec.kind, registryEndpoint: registry.endpoint, vnfcResources: registry.vnfcResources };
    }
    if (spec.kind === "cnf") {
        const cnf = new ContainerizedVnf(spec.name, { spec }, opts);
        return { vnfKind: spec.kind, namespace: spec.namespace, createdNamespace: spec.createNamespace, vnfcResources: cnf.vnfcResources };
    }
    const cluster = new KubernetesCluster(spec.name, { spec, compute: environment.compute }, opts);
    const vim = cluster.vim;
    return {
        vnfKind: spec.kind,
        flavour: spec.flavour,
        controlPlaneEndpoint: cluster.controlPlaneEndpoint,
        kubeconfig: cluster.kubeadm?.kubeconfig ?? cluster.kubespray?.kubeconfig,
        vip: cluster.vipPort?.allFixedIps.apply((ips) => ips[0]),
        masterAddresses: pulumi.all(cluster.masters.nodes.map((n) => n.address)),
        workerAddresses: pulumi.all(cluster.workers.nodes.map((n) => n.address)),
        storageServerAddress: cluster.storageServer?.server.address,
        externalLoadBalancerAddress: cluster.externalLoadBalancer?.sshAddress,
        ansibleServerAddress: cluster.ansibleServer?.address,
        scale: {
            [spec.masters.aspectId]: { count: spec.masters.count, min: spec.masters.minCount, max: spec.masters.maxCount },
            [spec.workers.aspectId]: { count: spec.workers.count, min: spec.workers.minCount, max: spec.workers.maxCount },
        },
        vnfcResources: cluster.vnfcResources,
        // The cluster as a Kubernetes VIM (what the LCM service registers under tacker.vimName) and its tenants'.
        vim: vim && { endpoint: vim.access.endpoint, caCertificate: vim.access.caCertificate },
        vimToken: vim?.access.token,
        tenants: vim && Object.entries(vim.tenants).map(([name, t]) => ({ name, role: t.role, namespaces: t.namespaces })),
        tenantTokens: vim && pulumi.secret(pulumi.all(Object.fromEntries(Object.entries(vim.tenants).map(([name, t]) => [name, t.token])))),
    };
}
