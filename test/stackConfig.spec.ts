import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Graph, readStackConfig, runProgram, withSecrets } from "./support/program";

/** The simple example stack with its passwords set as secrets. */
function simpleStack(): { config: Record<string, string>; secretKeys: string[] } {
    return withSecrets(readStackConfig("simple"), {
        masters: { password: "master-pw" },
        workers: { password: "worker-pw" },
    });
}

/** Applies `change` to the parsed value of one config key. */
function edit(config: Record<string, string>, key: string, change: (value: any) => any): Record<string, string> {
    const full = `k8s-vnf:${key}`;
    const current = config[full] === undefined ? undefined : isJson(config[full]) ? JSON.parse(config[full]) : config[full];
    const next = change(current === undefined ? undefined : structuredClone(current));
    const out = { ...config };
    if (next === undefined) delete out[full];
    else out[full] = typeof next === "string" ? next : JSON.stringify(next);
    return out;
}

function isJson(text: string): boolean {
    return text.startsWith("{") || text.startsWith("[");
}

async function refused(config: Record<string, string>, secretKeys: string[]): Promise<{ message: string; graph: Graph }> {
    const graph = new Graph();
    try {
        await runProgram("bad", config, secretKeys, graph);
    } catch (e) {
        return { message: (e as Error).message, graph };
    }
    assert.fail("the program accepted the configuration");
}

describe("stack config: bad input is refused before anything is registered", () => {
    const base = simpleStack();
    const cases: [string, () => { config: Record<string, string>; secretKeys?: string[] }, string][] = [
        ["2 masters in flavour complex", () => ({ config: edit(edit(base.config, "flavour", () => "complex"), "masters", (m) => ({ ...m, count: 2 })) }), "masters.count"],
        ["3 masters in flavour simple", () => ({ config: edit(base.config, "masters", (m) => ({ ...m, count: 3 })) }), "masters.count"],
        ["more workers than maxCount", () => ({ config: edit(base.config, "workers", (w) => ({ ...w, count: 5 })) }), "workers.maxCount"],
        ["fewer workers than minCount", () => ({ config: edit(base.config, "workers", (w) => ({ ...w, count: 1 })) }), "workers.minCount"],
        ["a misspelt config key", () => ({ config: { ...base.config, "k8s-vnf:mastrs": "{}" } }), "mastrs"],
        ["a misspelt field", () => ({ config: edit(base.config, "masters", (m) => ({ ...m, flavour: "m1.large" })) }), "masters.flavour"],
        ["a password that is not a Pulumi secret", () => ({ config: base.config, secretKeys: ["k8s-vnf:workers"] }), "masters.password"],
        ["proxy credentials that are not a Pulumi secret", () => ({ config: edit(base.config, "proxy", (p) => ({ ...p, httpProxy: "http://u:p@proxy:3128" })) }), "proxy.httpProxy"],
        ["fewer fixed IPs than masters", () => ({ config: edit(edit(edit(base.config, "flavour", () => "complex"), "masters", (m) => ({ ...m, count: 3, fixedIps: ["10.10.0.11"] })), "network", (n) => ({ ...n, subnetId: "s" })) }), "masters.fixedIps"],
        ["fixed IPs without a subnet", () => ({ config: edit(base.config, "workers", (w) => ({ ...w, fixedIps: ["10.10.0.21", "10.10.0.22"] })) }), "workers.subnetId"],
        ["one address for two VMs", () => ({ config: edit(edit(edit(base.config, "network", (n) => ({ ...n, subnetId: "s" })), "masters", (m) => ({ ...m, fixedIps: ["10.10.0.21"] })), "workers", (w) => ({ ...w, fixedIps: ["10.10.0.21", "10.10.0.22"] })) }), "workers.fixedIps[0]"],
        ["a VIP without HA", () => ({ config: edit(base.config, "controlPlane", () => ({ vip: "10.10.0.10" })) }), "controlPlane.vip"],
        ["pod affinity outside flavour podaffinity", () => ({ config: edit(base.config, "podAffinity", () => ({ serverGroupPolicy: "anti-affinity" })) }), "podAffinity"],
        ["an unknown server-group policy", () => ({ config: edit(edit(edit(base.config, "flavour", () => "podaffinity"), "masters", (m) => ({ ...m, count: 3 })), "podAffinity", () => ({ serverGroupPolicy: "affinity-please" })) }), "podAffinity.serverGroupPolicy"],
        ["ports on an ICMP rule", () => ({ config: edit(base.config, "securityGroup", () => ({ extraRules: [{ protocol: "icmp", portRangeMin: 1 }] })) }), "securityGroup.extraRules[0].protocol"],
        ["a reversed port range", () => ({ config: edit(base.config, "securityGroup", () => ({ extraRules: [{ protocol: "tcp", portRangeMin: 9000, portRangeMax: 8000 }] })) }), "securityGroup.extraRules[0].portRangeMax"],
        ["no image anywhere", () => ({ config: edit(base.config, "image", () => undefined) }), "masters.image"],
        ["no network anywhere", () => ({ config: edit(base.config, "network", () => undefined) }), "workers.networkId"],
        ["healing the only master node by node", () => ({ config: edit(base.config, "heal", () => ({ nodes: { "master-0": 1 } })) }), "heal.nodes.master-0"],
        ["healing a worker that does not exist", () => ({ config: edit(base.config, "heal", () => ({ nodes: { "worker-7": 1 } })) }), "heal.nodes.worker-7"],
        ["a heal key that names no node", () => ({ config: edit(base.config, "heal", () => ({ nodes: { "storage-0": 1 } })) }), "heal.nodes.storage-0"],
        ["a CNI manifest that is neither a URL nor a path", () => ({ config: edit(base.config, "kubernetes", (k) => ({ ...k, cniManifest: "calico.yaml; reboot" })) }), "kubernetes.cniManifest"],
        ["a CNI manifest URL with credentials (kubectl's command line would show them)", () => ({ config: edit(base.config, "kubernetes", (k) => ({ ...k, cniManifest: "https://user:pw@mirror.example/calico.yaml" })) }), "kubernetes.cniManifest"],
        ["an image repository with a scheme", () => ({ config: edit(base.config, "kubernetes", (k) => ({ ...k, imageRepository: "https://registry.example/k8s" })) }), "kubernetes.imageRepository"],
        ["an image repository whose first part names no registry (Docker Hub's path k8s/...)", () => ({ config: edit(base.config, "kubernetes", (k) => ({ ...k, imageRepository: "k8s/images" })) }), "kubernetes.imageRepository"],
        ["an image repository for a kubespray cluster (kubespray takes its own)", () => ({ config: edit(edit(base.config, "kubespray", () => ({ version: "v2.31.0", server: {} })), "kubernetes", (k) => ({ ...k, imageRepository: "registry.example/k8s" })) }), "kubernetes.imageRepository"],
        ["an image repository with shell in it", () => ({ config: edit(base.config, "kubernetes", (k) => ({ ...k, imageRepository: "registry.example/k8s;reboot" })) }), "kubernetes.imageRepository"],
        ["a drain timeout of zero", () => ({ config: edit(base.config, "kubernetes", (k) => ({ ...k, drainTimeout: 0 })) }), "kubernetes.drainTimeout"],
        ["a Kubernetes version that is not one", () => ({ config: edit(base.config, "kubernetes", (k) => ({ ...k, version: "latest" })) }), "kubernetes.version"],
        ["a Kubernetes version older than kubeadm's v1beta4 configuration (1.31)", () => ({ config: edit(base.config, "kubernetes", (k) => ({ ...k, version: "1.30.8" })) }), "kubernetes.version"],
        ["overlapping pod and service CIDRs", () => ({ config: edit(base.config, "kubernetes", () => ({ podCidr: "10.0.0.0/8", serviceCidr: "10.96.0.0/12" })) }), "kubernetes.serviceCidr"],
        ["a no_proxy entry with shell in it", () => ({ config: edit(base.config, "proxy", (p) => ({ ...p, noProxy: ["10.0.0.1", "`reboot`"] })) }), "proxy.noProxy[1]"],
        ["a public key that is not one", () => ({ config: edit(base.config, "ssh", () => ({ publicKey: "hello" })) }), "ssh.publicKey"],
        ["a structured key that is not JSON", () => ({ config: { ...base.config, "k8s-vnf:masters": "count=3" } }), "masters"],
        ["a PV manifest without packageDir", () => ({ config: edit(storageConfig(), "packageDir", () => undefined) }), "persistentVolumes[0].manifestFile"],
        ["PVs without a storage server", () => ({ config: edit(storageConfig(), "storageServer", () => undefined) }), "persistentVolumes"],
        ["a PV whose NFS path no export covers", () => ({ config: edit(storageConfig(), "storageServer", (st) => ({ ...st, exports: st.exports.slice(1) })) }), "persistentVolumes[0].manifestFile"],
        ["a storage heal without a storage server", () => ({ config: edit(base.config, "heal", () => ({ nodes: { storage: 1 } })) }), "heal.nodes.storage"],
        ["an export twice", () => ({ config: edit(storageConfig(), "storageServer", (s) => ({ ...s, exports: [s.exports[0], s.exports[0]] })) }), "storageServer.exports[1].dir"],
        ["vnfKind registry without registry settings", () => ({ config: { ...base.config, "k8s-vnf:vnfKind": "registry" } }), "registry"],
        ["a storage server on a registry VNF", () => ({ config: edit(registryConfig(), "storageServer", () => JSON.parse(storageConfig()["k8s-vnf:storageServer"])) }), "storageServer"],
        ["a registry certificate given twice (file and text)", () => ({ config: edit(registryConfig(), "registry", (r) => ({ ...r, tls: { ...r.tls, certificate: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----" } })) }), "registry.tls.certificateFile"],
        ["a registry certificate without its key", () => ({ config: edit(registryConfig(), "registry", (r) => ({ ...r, tls: { certificateFile: r.tls.certificateFile } })) }), "registry.tls.privateKey"],
        ["a registry key that is not a PEM key", () => ({ config: edit(registryConfig(), "registry", (r) => ({ ...r, tls: { ...r.tls, privateKey: "not a key" } })) }), "registry.tls.privateKey"],
        ["a registry password longer than bcrypt reads", () => ({ config: edit(registryConfig(), "registry", (r) => ({ ...r, users: [{ username: "user01", password: "p".repeat(73) }] })) }), "registry.users[0].password"],
        ["a registry login twice", () => ({ config: edit(registryConfig(), "registry", (r) => ({ ...r, users: [r.users[0], r.users[0]] })) }), "registry.users[1].username"],
        ["a preload image that is no image archive", () => ({ config: edit(registryConfig(), "registry", (r) => ({ ...r, preloadImages: [{ file: "Files/registry/tls.crt", image: "app:1" }] })) }), "registry.preloadImages[0].file"],
        ["a preload image name that is no repository:tag", () => ({ config: edit(registryConfig(), "registry", (r) => ({ ...r, preloadImages: [{ file: "Files/registry/tls.crt", image: "App Image" }] })) }), "registry.preloadImages[0].image"],
        ["a registry heal on a cluster", () => ({ config: edit(base.config, "heal", () => ({ nodes: { registry: 1 } })) }), "heal.nodes.registry"],
        ["a node heal on a registry VNF", () => ({ config: edit(registryConfig(), "heal", () => ({ nodes: { "worker-0": 1 } })) }), "heal.nodes.worker-0"],
        ["an IPv6 registry without brackets", () => ({ config: edit(base.config, "privateRegistries", () => [{ protocol: "http", server: "fd00::10" }]) }), "privateRegistries[0].server"],
        ["a registry name mirrored twice", () => ({ config: edit(base.config, "privateRegistries", () => [{ protocol: "http", server: "10.0.0.5:5000", mirrorOf: ["docker.io"] }, { protocol: "http", server: "10.0.0.6:5000", mirrorOf: ["docker.io"] }]) }), "privateRegistries[1].mirrorOf[0]"],
        ["a mirror of a registry of the list", () => ({ config: edit(base.config, "privateRegistries", () => [{ protocol: "http", server: "10.0.0.5:5000", mirrorOf: ["10.0.0.6:5000"] }, { protocol: "http", server: "10.0.0.6:5000" }]) }), "privateRegistries[0].mirrorOf[0]"],
        ["a mirrored IPv6 registry without brackets", () => ({ config: edit(base.config, "privateRegistries", () => [{ protocol: "http", server: "10.0.0.5:5000", mirrorOf: ["fd00::10"] }]) }), "privateRegistries[0].mirrorOf[0]"],
        ["a mirrored name that is no registry name", () => ({ config: edit(base.config, "privateRegistries", () => [{ protocol: "http", server: "10.0.0.5:5000", mirrorOf: ["https://docker.io"] }]) }), "privateRegistries[0].mirrorOf[0]"],
        ["a registry login without its password", () => ({ config: edit(base.config, "privateRegistries", () => [{ protocol: "https", server: "registry.example.com", username: "user01" }]) }), "privateRegistries[0].password"],
        [
            "a VIP for a kubespray cluster (its API is behind the external load balancer; keepalived is kubeadm's)",
            () => {
                const ha = kubespray({ masters: { count: 3, subnetId: "s" }, controlPlane: { vip: "10.10.0.10" } });
                return { ...ha, config: edit(ha.config, "flavour", () => "complex") };
            },
            "controlPlane.vip",
        ],
        ["a Kubernetes version the kubespray release does not install (v2.31.0: 1.33 to 1.35)", () => kubespray({ kubernetes: { version: "1.31.4" } }), "kubernetes.version"],
        ["a Kubernetes version the kubespray release does not install yet (v2.23.3: up to 1.27.10)", () => kubespray({ kubernetes: { version: "1.27.11" }, kubespray: { version: "v2.23.3" } }), "kubernetes.version"],
        ["a kubespray variable the release does not have (a typo)", () => kubespray({ kubespray: { vars: { kube_proxy_mod: "iptables" } } }), "kubespray.vars.kube_proxy_mod"],
        ["a kubespray variable the release no longer has (ingress-nginx left with v2.31)", () => kubespray({ kubespray: { vars: { ingress_nginx_enabled: true } } }), "kubespray.vars.ingress_nginx_enabled"],
        ["a kubespray variable name Ansible does not take", () => kubespray({ kubespray: { vars: { "kube-proxy-mode": "iptables" } } }), "kubespray.vars.kube-proxy-mode"],
        ["kube_version in kubespray.vars (kubernetes.version sets it)", () => kubespray({ kubespray: { vars: { kube_version: "1.34.1" } } }), "kubespray.vars.kube_version"],
        ["the pod CIDR in kubespray.vars (kubernetes.podCidr sets it)", () => kubespray({ kubespray: { vars: { kube_pods_subnet: "10.244.0.0/16" } } }), "kubespray.vars.kube_pods_subnet"],
        ["the proxy in kubespray.vars (proxy sets it)", () => kubespray({ kubespray: { vars: { http_proxy: "http://proxy.example:3128" } } }), "kubespray.vars.http_proxy"],
        ["the API load balancer in kubespray.vars when the stack makes one", () => kubespray({ kubespray: { vars: { loadbalancer_apiserver: { address: "10.10.0.99", port: 8383 } } } }), "kubespray.vars.loadbalancer_apiserver"],
        ["a node login in kubespray.vars (the host_vars k8s-vnf writes win)", () => kubespray({ kubespray: { vars: { ansible_become_password: "pw" } } }), "kubespray.vars.ansible_become_password"],
        ["a CNI manifest for a kubespray cluster (kubespray installs its own pod network)", () => kubespray({ kubernetes: { cniManifest: "https://mirror.example/calico.yaml" } }), "kubernetes.cniManifest"],
        ["a package repository for a kubespray cluster (kubespray downloads its own binaries)", () => kubespray({ kubernetes: { packageRepository: "https://mirror.example/k8s" } }), "kubernetes.packageRepository"],
        ["a node no one can log in to (no password, no SSH key)", () => ({ config: withSecrets(readStackConfig("simple"), { workers: { password: "worker-pw" } }).config, secretKeys: ["k8s-vnf:workers"] }), "masters.password"],
        ["password login without a password (an SSH key set)", () => ({ config: withSecrets(readStackConfig("simple"), { workers: { password: "worker-pw" }, ssh: { privateKey: "a-private-key-stand-in" } }).config, secretKeys: ["k8s-vnf:workers", "k8s-vnf:ssh"] }), "masters.enablePasswordLogin"],
    ];

    for (const [what, make, field] of cases) {
        it(what, async () => {
            const { config, secretKeys } = make();
            const { message, graph } = await refused(config, secretKeys ?? [...base.secretKeys, "k8s-vnf:storageServer", "k8s-vnf:registry", "k8s-vnf:privateRegistries"]);
            assert.ok(message.includes(`- ${field}:`), `expected ${field} in:\n${message}`);
            assert.equal(graph.resources.length, 0, `registered: ${graph.resources.map((r) => r.name).join(", ")}`);
        });
    }

    it("reports every problem at once", async () => {
        let config = edit(base.config, "workers", (w) => ({ ...w, count: 9 }));
        config = edit(config, "kubernetes", () => ({ podCidr: "10.0.0.0/8", serviceCidr: "10.96.0.0/12" }));
        config = edit(config, "controlPlane", () => ({ vip: "10.10.0.10" }));
        const { message } = await refused(config, base.secretKeys);
        for (const field of ["workers.maxCount", "kubernetes.serviceCidr", "controlPlane.vip"]) assert.ok(message.includes(field), message);
    });

    it("kubespray: each refusal says what to set instead; versions the release installs and its own variables are accepted", async () => {
        const refusal = async (over: Record<string, Record<string, unknown>>) => (await refused(kubespray(over).config, kubespray(over).secretKeys)).message;
        assert.match(await refusal({ kubernetes: { version: "1.31.4" } }), /kubernetes\.version: kubespray v2\.31\.0 installs Kubernetes 1\.33\.0–1\.33\.11, 1\.34\.0–1\.34\.7, 1\.35\.0–1\.35\.4, not 1\.31\.4/);
        assert.match(await refusal({ kubespray: { vars: { kube_proxy_mod: "iptables" } } }), /kubespray\.vars\.kube_proxy_mod: kubespray v2\.31\.0 has no variable of this name .*; did you mean kube_proxy_mode\?/);
        assert.match(await refusal({ kubespray: { vars: { kube_version: "1.34.1" } } }), /kubespray\.vars\.kube_version: is set by k8s-vnf from kubernetes\.version: set that instead/);
        assert.match(await refusal({ kubespray: { vars: { additional_no_proxy: ".example" } } }), /kubespray\.vars\.additional_no_proxy: is set by k8s-vnf from proxy\.noProxy/);
        assert.match(await refusal({ kubespray: { vars: { calico_mtu: 1400 } } }), /kubespray\.vars\.calico_mtu: is set by k8s-vnf \(the node network's MTU/);
        assert.match(await refusal({ kubernetes: { cniManifest: "/etc/cni.yaml" } }), /kubernetes\.cniManifest: .*kubespray\.vars\.kube_network_plugin/);
        // Accepted: a version of the release's list, its variables (also one v2.23.3 has and v2.31.0 no longer),
        // Ansible's own, and the load balancer's variables where the stack makes none.
        const ok = async (over: Record<string, Record<string, unknown>>, noLb = false) => {
            let { config, secretKeys } = kubespray(over);
            if (noLb) config = edit(config, "externalLoadBalancer", () => undefined);
            await runProgram("ok", config, secretKeys, new Graph());
        };
        await ok({ kubernetes: { version: "1.34.7" }, kubespray: { vars: { kube_network_plugin: "cilium", kube_proxy_mode: "iptables", ansible_python_interpreter: "/usr/bin/python3" } } });
        await ok({ kubernetes: { version: "1.27.7" }, kubespray: { version: "v2.23.3", vars: { ingress_nginx_enabled: true } } });
        await ok({ kubespray: { vars: { supplementary_addresses_in_ssl_keys: ["api.example"] } } }, true);
    });

    it("kubernetes.version: the refusal says why; 1.31 and later are accepted", async () => {
        const { message } = await refused(edit(base.config, "kubernetes", (k) => ({ ...k, version: "1.28.15" })), base.secretKeys);
        assert.match(message, /kubernetes\.version: must be 1\.31\.0 or later: kubeadm reads the v1beta4 configuration/);
        for (const version of ["1.31.0", "1.33.2"]) {
            await runProgram("ok", edit(base.config, "kubernetes", (k) => ({ ...k, version })), base.secretKeys, new Graph());
        }
    });

    it("a PersistentVolume manifest that is not one is named", async () => {
        const pkg = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-bad-package-"));
        try {
            fs.mkdirSync(path.join(pkg, "Files/kubernetes"), { recursive: true });
            for (const i of [1, 2, 3]) fs.writeFileSync(path.join(pkg, `Files/kubernetes/nfs-pv${i}.yaml`), i === 2 ? "kind: Pod\nmetadata: {name: x}\n" : fs.readFileSync(path.join(__dirname, "../examples/package/Files/kubernetes/nfs-pv1.yaml")));
            const { message, graph } = await refused(edit(storageConfig(), "packageDir", () => pkg), [...base.secretKeys, "k8s-vnf:storageServer"]);
            assert.match(message, /persistentVolumes\[1\]\.manifestFile: .*not a PersistentVolume manifest/);
            assert.equal(graph.resources.length, 0);
        } finally {
            fs.rmSync(pkg, { recursive: true, force: true });
        }
    });

    it("secrets never reach the error message", async () => {
        const config = edit(edit(base.config, "workers", (w) => ({ ...w, count: 9, password: "worker-secret-123" })), "masters", (m) => ({ ...m, password: "master-secret-456" }));
        const { message } = await refused(config, []);
        assert.ok(message.includes("masters.password"));
        assert.doesNotMatch(message, /worker-secret-123|master-secret-456/);
    });
});

/** The kubespray example stack with its passwords set as secrets, and `over` merged into its keys. */
function kubespray(over: Record<string, Record<string, unknown>> = {}): { config: Record<string, string>; secretKeys: string[] } {
    return withSecrets(readStackConfig("kubespray"), { masters: { password: "master-pw" }, workers: { password: "worker-pw" }, kubespray: { password: "ansible-pw" }, externalLoadBalancer: { password: "lb-pw" }, ...mergeInto(over) });
}

/** `over` as withSecrets merges it (the kubespray key's password kept). */
function mergeInto(over: Record<string, Record<string, unknown>>): Record<string, Record<string, unknown>> {
    return { ...over, ...(over.kubespray ? { kubespray: { password: "ansible-pw", ...over.kubespray } } : {}) };
}

function storageConfig(): Record<string, string> {
    return withSecrets(readStackConfig("storage"), { masters: { password: "master-pw" }, workers: { password: "worker-pw" }, storageServer: { password: "storage-pw" } }).config;
}

const REGISTRY_KEY = "-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n";

function registryConfig(): Record<string, string> {
    return withSecrets(readStackConfig("registry"), { registry: { password: "registry-pw", tls: { privateKey: REGISTRY_KEY }, users: [{ password: "user01-pw" }] } }).config;
}


