/**
 * What a kubespray cluster's inventory holds, computed from the stack: hosts.yaml with kubespray's groups and
 * the group variables. Pure functions; the KubesprayCluster step writes the files (and the logins, which never
 * go into these).
 */
import * as YAML from "yaml";
import { findSecretLeaves, maskSecrets } from "../config/secrets";
import { ClusterSpec } from "../config/spec";

/** A node as the inventory lists it. */
export interface InventoryNode {
    /** Kubernetes node name (the VM name). */
    name: string;
    /** Its address on the cluster network: where the Ansible server reaches it and what Kubernetes uses. */
    address: string;
}

/** The external load balancer as kubespray's `loadbalancer_apiserver` sees it. */
export interface ExternalApiEndpoint {
    /** Its address on the cluster network (the nodes reach the API there). */
    address: string;
    port: number;
    /** Further addresses it is reached at (outside port, floating IP): in the API server certificate too. */
    otherAddresses: string[];
}

const HEADER = "# Written by k8s-vnf from the stack; changes here are overwritten.\n";

/**
 * hosts.yaml in kubespray's YAML inventory layout (docs/ansible/inventory.md): every node under all.hosts,
 * masters in kube_control_plane and etcd, workers in kube_node, k8s_cluster made of both (and calico_rr).
 * `users` gives each node's login user; no credential goes in here.
 */
export function inventoryHosts(masters: InventoryNode[], workers: InventoryNode[], users: Record<string, string>): string {
    const host = (n: InventoryNode) => ({ ansible_host: n.address, ip: n.address, access_ip: n.address, ansible_user: users[n.name] });
    const names = (nodes: InventoryNode[]) => Object.fromEntries(nodes.map((n) => [n.name, null]));
    const inventory = {
        all: {
            hosts: Object.fromEntries([...masters, ...workers].map((n) => [n.name, host(n)])),
            children: {
                kube_control_plane: { hosts: names(masters) },
                etcd: { hosts: names(masters) },
                kube_node: { hosts: names(workers) },
                calico_rr: { hosts: {} },
                k8s_cluster: { children: { kube_control_plane: null, kube_node: null, calico_rr: null } },
            },
        },
    };
    return HEADER + YAML.stringify(inventory, { nullStr: "" });
}

/**
 * group_vars/k8s_cluster: the Kubernetes version when one is given (where kubespray's sample inventory has it,
 * group_vars/k8s_cluster/k8s-cluster.yml; left out, the release's own default applies), the CIDRs and the
 * external load balancer, none of them secret.
 */
export function clusterVarsYaml(spec: ClusterSpec, lb: ExternalApiEndpoint | undefined): string {
    const kubeVersion = spec.kubespray?.kubeVersion;
    const vars = {
        ...(kubeVersion ? { kube_version: kubeVersion } : {}),
        kube_pods_subnet: spec.kubernetes.podCidr,
        kube_service_addresses: spec.kubernetes.serviceCidr,
        kube_apiserver_port: spec.controlPlane.apiServerPort,
        ...(lb
            ? {
                  // kubespray puts this address in the API server certificate and every kubeconfig it writes
                  // (docs/operations/ha-mode.md); setting it also turns off the per-node nginx proxy.
                  loadbalancer_apiserver: { address: lb.address, port: lb.port },
                  loadbalancer_apiserver_localhost: false,
                  supplementary_addresses_in_ssl_keys: lb.otherAddresses,
              }
            : {}),
    };
    return HEADER + YAML.stringify(vars);
}

/**
 * group_vars/all with the proxy: http and https each keep their own value (Tacker's driver gave both the
 * http one). Kubespray makes `no_proxy` from the inventory itself and appends `additional_no_proxy`. Secret:
 * a proxy URL may carry credentials. Undefined without a proxy.
 */
export function proxyVarsYaml(spec: ClusterSpec): string | undefined {
    const proxy = spec.proxy;
    if (!proxy || (!proxy.httpProxy && !proxy.httpsProxy)) return undefined;
    const noProxy = [...proxy.noProxy, ...(proxy.k8sNodeCidr ? [proxy.k8sNodeCidr] : [])];
    return (
        HEADER +
        YAML.stringify({
            ...(proxy.httpProxy ? { http_proxy: proxy.httpProxy } : {}),
            ...(proxy.httpsProxy ? { https_proxy: proxy.httpsProxy } : {}),
            ...(noProxy.length ? { additional_no_proxy: noProxy.join(",") } : {}),
        })
    );
}

/**
 * The operator's kubespray.vars: group_vars/all/k8s-vnf-vars.yml with the values in it that the project's
 * secrets rule finds (config/secrets.ts), to keep out of what the playbooks print; and the vars with those
 * masked, for the diff and the plan. Undefined without vars (the step then writes a file that sets none).
 */
export function kubesprayVarsFile(spec: ClusterSpec): { file: { yaml: string; secrets: string[] }; masked: Record<string, unknown> } | undefined {
    const vars = spec.kubespray?.vars ?? {};
    if (Object.keys(vars).length === 0) return undefined;
    // Ansible reads YAML 1.1 (PyYAML): written as 1.1, a string "yes", "on" or "2024-01-01" stays a string.
    const yaml = HEADER + YAML.stringify(vars, { version: "1.1" });
    return { file: { yaml, secrets: findSecretLeaves(vars).map((leaf) => leaf.value) }, masked: maskSecrets(vars) };
}
