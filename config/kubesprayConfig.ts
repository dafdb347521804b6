/**
 * What a kubespray stack's configuration may say, checked before anything is created (resolve.ts calls it):
 * - `kubernetes.version`, which kubespray gets as `kube_version`: one the release installs;
 * - `kubespray.vars`, the inventory's group_vars/all: names the release documents (where k8s-vnf has read the
 *   release), and none that k8s-vnf writes into the inventory itself, since one of the two would be ignored
 *   without a word (the inventory's group_vars/k8s_cluster and host_vars win over group_vars/all, and of two
 *   files of group_vars/all the last read does): the refusal names the config key that sets it;
 * - keys of the stack that a kubespray cluster would ignore without a word: refused, naming what to use.
 */
import { installsKubernetes, KubesprayRelease, kubeVersionRanges } from "./kubesprayReleases";
import { KubernetesSchema, StackConfig } from "./schema";

/** Where the checks report (resolve.ts's checker). */
export interface ProblemSink {
    fail(path: string, message: string): void;
    warn(path: string, message: string): void;
}

/** A variable k8s-vnf writes: the config key it comes from, or what it is when no key sets it. */
interface ProgramVariable {
    key?: string;
    what?: string;
    /** Written only with the stack's external load balancer: without one, the name is the operator's. */
    withLoadBalancer?: true;
}

/**
 * The variables k8s-vnf writes into a kubespray inventory (components/kubesprayPlan.ts, providers/kubespray/
 * kubesprayCluster.ts and playbooks.ts; test/kubesprayConfig.spec.ts checks that this list covers them).
 */
export const PROGRAM_VARIABLES: Record<string, ProgramVariable> = {
    kube_version: { key: "kubernetes.version" },
    kube_pods_subnet: { key: "kubernetes.podCidr" },
    kube_service_addresses: { key: "kubernetes.serviceCidr" },
    kube_apiserver_port: { key: "controlPlane.apiServerPort" },
    loadbalancer_apiserver: { key: "externalLoadBalancer", withLoadBalancer: true },
    loadbalancer_apiserver_localhost: { key: "externalLoadBalancer", withLoadBalancer: true },
    supplementary_addresses_in_ssl_keys: { key: "externalLoadBalancer", withLoadBalancer: true },
    http_proxy: { key: "proxy.httpProxy" },
    https_proxy: { key: "proxy.httpsProxy" },
    additional_no_proxy: { key: "proxy.noProxy" },
    calico_mtu: { what: "the node network's MTU, read on the first master" },
    calico_veth_mtu: { what: "the node network's MTU, read on the first master" },
    ansible_ssh_common_args: { what: "the inventory's own known_hosts file" },
    ansible_ssh_private_key_file: { key: "ssh.privateKey" },
    ansible_password: { key: "masters.password and workers.password" },
    ansible_become_password: { key: "masters.password and workers.password" },
    ansible_user: { key: "masters.username and workers.username" },
    ansible_host: { what: "each node's address, in hosts.yaml" },
    ip: { what: "each node's address, in hosts.yaml" },
    access_ip: { what: "each node's address, in hosts.yaml" },
};

/** An Ansible variable name (a Python identifier; Ansible refuses others). */
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Checks a kubespray stack (`config.kubespray` set) against its release (undefined: a release k8s-vnf does
 * not drive, reported at kubespray.version already). Returns `kube_version` as the release spells
 * `kubernetes.version`, when that is given.
 */
export function checkKubespray(config: StackConfig, release: KubesprayRelease | undefined, c: ProblemSink): { kubeVersion?: string } {
    const k = config.kubespray!;
    refuseIgnored(config, c);
    const version = config.kubernetes.version;
    const known = release?.known;
    if (version && known && !installsKubernetes(known, version)) {
        c.fail("kubernetes.version", `kubespray ${k.version} installs Kubernetes ${kubeVersionRanges(known)}, not ${version} (its checksums): set one of those, or leave it out for the release's default`);
    }
    const unchecked = [version && "kubernetes.version", Object.keys(k.vars).length && "the names of kubespray.vars"].filter(Boolean);
    if (release && !known && unchecked.length) c.warn("kubespray.version", `k8s-vnf has not read kubespray ${k.version}: ${unchecked.join(" and ")} go to it unchecked`);
    for (const name of Object.keys(k.vars)) {
        const problem = variableProblem(name, config, known?.variables);
        if (problem) c.fail(`kubespray.vars.${name}`, problem);
    }
    return version && release ? { kubeVersion: release.kubeVersion(version) } : {};
}

/** Why `name` cannot be given in kubespray.vars, if it cannot. */
function variableProblem(name: string, config: StackConfig, names: ReadonlySet<string> | undefined): string | undefined {
    if (!NAME_RE.test(name)) return "is not an Ansible variable name (letters, digits and _, not starting with a digit)";
    const own = PROGRAM_VARIABLES[name];
    if (own && (!own.withLoadBalancer || config.externalLoadBalancer)) {
        return own.key ? `is set by k8s-vnf from ${own.key}: set that instead` : `is set by k8s-vnf (${own.what}): it cannot be given here`;
    }
    // Ansible's own (ansible_python_interpreter, ansible_port, ...): no kubespray release documents them.
    if (!names || name.startsWith("ansible_") || names.has(name)) return undefined;
    const near = closest(name, names);
    return `kubespray ${config.kubespray!.version} has no variable of this name (none of its role defaults or sample group_vars sets it)${near ? `; did you mean ${near}?` : ""}`;
}

/** The settings a kubespray cluster does not read: given, each is refused, naming what does that there. */
function refuseIgnored(config: StackConfig, c: ProblemSink): void {
    const kubeadmDefault = (key: "packageRepository" | "cniManifest") => KubernetesSchema.shape[key].parse(undefined);
    if (config.kubernetes.packageRepository !== kubeadmDefault("packageRepository")) {
        c.fail("kubernetes.packageRepository", "is where the kubeadm steps install kubelet, kubeadm and kubectl from; kubespray downloads them itself (its *_download_url and files_repo variables, in kubespray.vars)");
    }
    if (config.kubernetes.cniManifest !== kubeadmDefault("cniManifest")) {
        c.fail("kubernetes.cniManifest", "is applied by the kubeadm steps; kubespray installs the pod network itself: choose it with kubespray.vars.kube_network_plugin");
    }
    if (config.privateRegistries.length) {
        c.fail("privateRegistries", "are connected by each kubeadm node's own step; a kubespray cluster's nodes are not in this stack's steps (yet)");
    }
    if (config.kubernetes.imageRepository) {
        c.fail("kubernetes.imageRepository", "is kubeadm's, given by this stack's kubeadm steps; a kubespray cluster takes its images from kubespray's own settings");
    }
    if (config.operate.drained) c.fail("operate.drained", "kubespray installs the cluster without membership steps to drain; stop it with operate.vnfState");
}

/** The name of `names` nearest to `name`, when at most two edits away (a typo). */
function closest(name: string, names: ReadonlySet<string>): string | undefined {
    let best: string | undefined;
    let bestDistance = 3;
    for (const candidate of names) {
        if (Math.abs(candidate.length - name.length) >= bestDistance) continue;
        const d = editDistance(name, candidate, bestDistance);
        if (d < bestDistance) [best, bestDistance] = [candidate, d];
    }
    return best;
}

/** Levenshtein distance, or `limit` once it is that or more. */
function editDistance(a: string, b: string, limit: number): number {
    let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
        const row = [i];
        for (let j = 1; j <= b.length; j++) row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
        if (Math.min(...row) >= limit) return limit;
        previous = row;
    }
    return Math.min(previous[b.length], limit);
}
