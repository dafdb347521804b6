/**
 * The one table between Tacker's InstantiateVnfRequest and this project's stack config. It drives the
 * conversion, the translation of problems back to Tacker field paths, and the configuration reference in
 * the docs (`k8s-vnf config-reference`).
 *
 * Paths use `[]` for "every element of this list"; a mapping's `config` path has the same `[]` positions.
 */

const K = "additionalParams.k8s_cluster_installation_param";
const R = "additionalParams.private_registry_installation_param";

export interface FieldMapping {
    tacker: string;
    /** Stack config path the value is copied to (after `convert`). */
    config?: string;
    /** Turns the Tacker value into the config value; `undefined` means "not set". */
    convert?: (value: unknown) => unknown;
    /** How the value is used, when it is not a plain copy; or why it is ignored. */
    note?: string;
    /** Accepted for compatibility and not used. */
    ignored?: true;
}

const noProxyList = (v: unknown): unknown => (typeof v === "string" ? v.split(",").map((s) => s.trim()).filter(Boolean) : v);
const connectionType = (v: unknown): unknown => ({ "0": "http", "1": "https" })[String(v)] ?? v;
const hostsEntry = (v: unknown): unknown => {
    const [ip, hostname, ...rest] = String(v).trim().split(/\s+/);
    return rest.length === 0 && hostname ? { ip, hostname } : v;
};
const packageFile = (v: unknown): unknown => (typeof v === "string" ? v.replace(/^(\.\/)+/, "") : v);
const portNumber = (v: unknown): unknown => (typeof v === "string" && /^\d+$/.test(v) ? Number(v) : v);
/** Tacker's samples leave placeholders ("", "0.0.0.0") where the operator had nothing to say. */
export const isPlaceholder = (v: unknown): boolean => v === "" || v === "0.0.0.0";
const unlessPlaceholder = (v: unknown): unknown => (isPlaceholder(v) ? undefined : v);

const nodeGroup = (tackerNode: string, configGroup: string, vnfd: string): FieldMapping[] => [
    { tacker: `${K}.${tackerNode}.aspect_id`, config: `${configGroup}.aspectId` },
    { tacker: `${K}.${tackerNode}.nic_cp_name`, config: `${configGroup}.connectionPoint`, note: `its extVirtualLinks entry gives ${configGroup}.networkId (and fixedIps/subnetId from cpConfig); default ${vnfd}` },
    { tacker: `${K}.${tackerNode}.ssh_cp_name`, note: `same as nic_cp_name in every sample; stands in for nic_cp_name when that is absent (reach nodes through a floating IP with ${configGroup}.floatingIpPool)` },
    { tacker: `${K}.${tackerNode}.username`, config: `${configGroup}.username` },
    { tacker: `${K}.${tackerNode}.password`, config: `${configGroup}.password`, note: "secret" },
];

export const TACKER_FIELDS: FieldMapping[] = [
    { tacker: "flavourId", config: "flavour", note: "simple | complex | podaffinity; sets the default counts of Tacker's sample VNFD (masters 1 or 3, workers 2 within 2..4)" },
    { tacker: "instantiationLevelId", ignored: true, note: "counts are masters.count / workers.count" },
    { tacker: "extVirtualLinks[].resourceId", note: "network of each role whose connection point is listed in extCps[].cpdId" },
    { tacker: "extVirtualLinks[].extCps[].cpdId", note: "matched against the *_cp_name parameters" },
    { tacker: "extVirtualLinks[].extCps[].cpConfig[].cpProtocolData[].ipOverEthernet.ipAddresses[].fixedAddresses", note: "<role>.fixedIps, in order" },
    { tacker: "extVirtualLinks[].extCps[].cpConfig[].cpProtocolData[].ipOverEthernet.ipAddresses[].subnetId", note: "<role>.subnetId" },
    { tacker: "extManagedVirtualLinks", ignored: true, note: "the stack creates no internal networks" },
    { tacker: "vimConnectionInfo[].id", config: "tacker.vimConnectionId" },
    { tacker: "vimConnectionInfo[].vimId", config: "tacker.vimId", note: "the LCM service resolves it to OpenStack credentials; with the Pulumi CLI use `openstack:*` config or OS_* variables" },
    { tacker: "vimConnectionInfo[].vimType", note: "must be openstack (or ETSINFV.OPENSTACK_KEYSTONE.V_2/V_3)" },
    { tacker: "vimConnectionInfo[].accessInfo", ignored: true, note: "credentials are never copied into stack config" },
    { tacker: "vimConnectionInfo[].interfaceInfo", ignored: true },
    { tacker: "additionalParams.tenants", config: "tenants", note: "k8s-vnf's own: the cluster's tenants [{name, namespaces, role: admin | user}], each a Kubernetes VIM of its own" },
    { tacker: "additionalParams.lcm-kubernetes-def-files[]", note: "a CNF (Kubernetes VIM): cnf.manifests, created in order" },
    { tacker: "additionalParams.namespace", note: "a CNF (Kubernetes VIM): cnf.namespace, lower-cased (seed 003 sends namespaceA); left out, the manifests' own" },
    { tacker: "additionalParams.lcm-operation-user-data", ignored: true, note: "Heat user data: the stack builds the VMs itself" },
    { tacker: "additionalParams.lcm-operation-user-data-class", ignored: true },
    { tacker: `${K}.script_path`, ignored: true, note: "the project ships its own install steps" },
    { tacker: `${K}.helm_installation_script_path`, ignored: true, note: "Helm is not installed by this project" },
    { tacker: `${K}.vim_name`, config: "tacker.vimName" },
    ...nodeGroup("master_node", "masters", "masterNode_CP1"),
    { tacker: `${K}.master_node.pod_cidr`, config: "kubernetes.podCidr", note: "host bits are cleared with a warning (Tacker refused 192.168.3.0/16)" },
    { tacker: `${K}.master_node.cluster_cidr`, config: "kubernetes.serviceCidr" },
    { tacker: `${K}.master_node.cluster_cp_name`, config: "controlPlane.vipConnectionPoint", note: "when it differs from nic_cp_name it names the VIP port (HA flavours); otherwise the master's own address is the endpoint" },
    { tacker: `${K}.master_node.cluster_fip_name`, ignored: true, note: "floating IPs come from masters.floatingIpPool" },
    ...nodeGroup("worker_node", "workers", "workerNode_CP2"),
    { tacker: `${K}.proxy.http_proxy`, config: "proxy.httpProxy", note: "secret when it carries credentials" },
    { tacker: `${K}.proxy.https_proxy`, config: "proxy.httpsProxy", note: "secret when it carries credentials" },
    { tacker: `${K}.proxy.no_proxy`, config: "proxy.noProxy", convert: noProxyList, note: "comma-separated text becomes a list" },
    { tacker: `${K}.proxy.k8s_node_cidr`, config: "proxy.k8sNodeCidr", note: "added to no_proxy as one CIDR, not one entry per address" },
    { tacker: `${K}.storage_server.ssh_cp_name`, config: "storageServer.connectionPoint", note: "its extVirtualLinks entry gives storageServer.networkId" },
    { tacker: `${K}.storage_server.nic_cp_name`, ignored: true, note: "the storage server has one port" },
    { tacker: `${K}.storage_server.username`, config: "storageServer.username" },
    { tacker: `${K}.storage_server.password`, config: "storageServer.password", note: "secret" },
    { tacker: `${K}.storage_server.cinder_volume_setup_params[].volume_resource_id`, config: "storageServer.volumes[].name", note: "size from storageServer.volumes[].sizeGb (default 5, as Tacker's HOT)" },
    { tacker: `${K}.storage_server.cinder_volume_setup_params[].mount_to`, config: "storageServer.volumes[].mountTo" },
    { tacker: `${K}.storage_server.nfs_server_setup_params[].export_dir`, config: "storageServer.exports[].dir" },
    { tacker: `${K}.storage_server.nfs_server_setup_params[].export_to`, config: "storageServer.exports[].exportTo" },
    { tacker: `${K}.pv_registration_params[].pv_manifest_file_path`, config: "persistentVolumes[].manifestFile", convert: packageFile },
    { tacker: `${K}.pv_registration_params[].nfs_server_cp`, note: "must name storage_server.ssh_cp_name: the storage server's address replaces the manifest's NFS server" },
    { tacker: `${K}.private_registry_connection_info[].connection_type`, config: "privateRegistries[].protocol", convert: connectionType, note: "0 → http, 1 → https" },
    { tacker: `${K}.private_registry_connection_info[].server`, config: "privateRegistries[].server" },
    { tacker: `${K}.private_registry_connection_info[].username`, config: "privateRegistries[].username" },
    { tacker: `${K}.private_registry_connection_info[].password`, config: "privateRegistries[].password", note: "secret" },
    { tacker: `${K}.private_registry_connection_info[].certificate_path`, config: "privateRegistries[].caCertificateFile", convert: packageFile },
    { tacker: `${K}.private_registry_connection_info[].hosts_string`, config: "privateRegistries[].hostsEntry", convert: hostsEntry, note: "\"<IP> <FQDN>\" becomes {ip, hostname}" },
    { tacker: `${K}.private_registry_connection_info[].mirror_of`, config: "privateRegistries[].mirrorOf", note: "k8s-vnf's own: registry names (docker.io) the nodes pull from this registry instead" },
    { tacker: `${K}.ansible.ip_address`, config: "kubespray.host", convert: unlessPlaceholder, note: "\"\" or 0.0.0.0: the stack creates the Ansible server VM" },
    { tacker: `${K}.ansible.username`, config: "kubespray.username" },
    { tacker: `${K}.ansible.password`, config: "kubespray.password", note: "secret" },
    { tacker: `${K}.ansible.kubespray_root_path`, config: "kubespray.kubesprayRoot", convert: unlessPlaceholder, note: "\"\": /opt/kubespray" },
    { tacker: `${K}.ansible.transferring_inventory_path`, config: "kubespray.inventoryPath", convert: unlessPlaceholder, note: "\"\": /var/lib/k8s-vnf/inventory/<vnf name>" },
    { tacker: `${K}.external_lb_param.ssh_cp_name`, note: "its extVirtualLinks entry (or externalLB_CP1's) gives externalLoadBalancer.networkId" },
    { tacker: `${K}.external_lb_param.ssh_username`, config: "externalLoadBalancer.username" },
    { tacker: `${K}.external_lb_param.ssh_password`, config: "externalLoadBalancer.password", note: "secret" },
    { tacker: `${K}.external_lb_param.script_path`, ignored: true, note: "the project ships its own load-balancer step" },
    { tacker: `${R}.ssh_cp_name`, config: "registry.connectionPoint", note: "its extVirtualLinks entry gives registry.networkId" },
    { tacker: `${R}.ssh_username`, config: "registry.username" },
    { tacker: `${R}.ssh_password`, config: "registry.password", note: "secret" },
    { tacker: `${R}.image_path`, config: "registry.imageFile", convert: packageFile },
    { tacker: `${R}.port_no`, config: "registry.port", convert: portNumber, note: "default 5000" },
];

/** `a.b[].c` → matcher of `a.b[3].c` (and of anything below it), capturing the list indices. */
function patternOf(path: string): RegExp {
    const parts = path.split("[]").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    return new RegExp(`^${parts.join("\\[(\\d+)\\]")}(?=$|[.[])`);
}

/** Puts list indices into the `[]` positions of a path. */
export function fillIndices(path: string, indices: ReadonlyArray<string | number>): string {
    let i = 0;
    return path.replace(/\[\]/g, () => `[${indices[i++]}]`);
}

/** The Tacker path a stack-config path came from, if the table knows it. */
export function tackerPathOf(configPath: string): string | undefined {
    for (const m of TACKER_FIELDS) {
        if (!m.config) continue;
        const match = patternOf(m.config).exec(configPath);
        // A value copied as it is keeps its shape: a field inside it is the same field inside the request's.
        if (match) return fillIndices(m.tacker, match.slice(1)) + (m.convert ? "" : configPath.slice(match[0].length));
    }
    return undefined;
}

export type PathSegment = string | number;

/** Splits `a.b[2].c` into segments; `[]` becomes `"[]"`. */
export function splitPath(path: string): PathSegment[] {
    const out: PathSegment[] = [];
    for (const part of path.split(".")) {
        const m = /^([^[]*)((?:\[\d*\])*)$/.exec(part)!;
        if (m[1]) out.push(m[1]);
        for (const idx of m[2].match(/\[\d*\]/g) ?? []) out.push(idx === "[]" ? "[]" : Number(idx.slice(1, -1)));
    }
    return out;
}

/** Every value at a `[]` path, with the indices it was found at. */
export function valuesAt(root: unknown, path: string): { indices: number[]; value: unknown }[] {
    const results: { indices: number[]; value: unknown }[] = [];
    const walk = (node: unknown, segments: PathSegment[], indices: number[]): void => {
        if (node === undefined || node === null) return;
        if (segments.length === 0) {
            results.push({ indices, value: node });
            return;
        }
        const [head, ...rest] = segments;
        if (head === "[]") {
            if (Array.isArray(node)) node.forEach((item, i) => walk(item, rest, [...indices, i]));
        } else if (typeof node === "object") {
            walk((node as Record<string, unknown>)[String(head)], rest, indices);
        }
    };
    walk(root, splitPath(path), []);
    return results;
}

/** Sets a value at a `[]` path, using `indices` for the list positions; creates objects and lists on the way. */
export function setAt(root: Record<string, unknown>, path: string, indices: number[], value: unknown): void {
    const segments = splitPath(path);
    let node: Record<string | number, unknown> = root;
    let next = 0;
    segments.forEach((seg, i) => {
        const key = seg === "[]" ? indices[next++] : seg;
        if (i === segments.length - 1) {
            node[key] = value;
            return;
        }
        if (node[key] === undefined) node[key] = segments[i + 1] === "[]" || typeof segments[i + 1] === "number" ? [] : {};
        node = node[key] as Record<string | number, unknown>;
    });
}
