/**
 * A cluster stack on the real Pulumi CLI against the lab OpenStack API, as the real-engine suites set one up: the
 * API started for the lab, the stack created with the API's image, flavor and network under the suite's own
 * config, and both stopped with the suite (what the stack printed goes to the suite's secret scan first).
 */
import * as fs from "node:fs";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { archiveName, inRegistry, kubernetesImages, manifestImages, writeImages } from "./kubeImages";
import { LabSuite } from "./labSuite";
import { LabOpenStackApi } from "./openstackApi/server";
import { CloudOptions } from "./openstackApi/state";
import { realKubectl } from "./realKubectl";
import { makeCertificates } from "./certificates";
import { kubernetesPackageRepository } from "./kubePackages";
import { RealStack } from "./realStack";
import { builtTools } from "./tools";

/**
 * The pod network the lab's clusters run: flannel's own manifest of the release tools/build.sh built, its CNI
 * configuration at CNI spec 0.3.1 (as flannel's manifests gave it before 1.0.0): the flannel CNI plugin here is
 * containernetworking/plugins v0.9.1's (tools/flannel-cni-plugin says why), which speaks the spec up to 0.4.0.
 */
export const POD_NETWORK = { manifest: "kube-flannel.yml", podCidr: "10.244.0.0/16", cniVersion: ['"cniVersion": "1.0.0"', '"cniVersion": "0.3.1"'] };

/** Where an air-gapped lab cluster's images come from: the lab's registry VNF, whose package carries them. */
export interface AirGap {
    /** The registry's `host:port`. */
    registry: string;
    /** kubeadm's `imageRepository`, in that registry. */
    imageRepository: string;
    /** The registry stack's package directory: the archives go to its Files/images. */
    packageDir: string;
}

/**
 * Makes the hosts a lab starts from now on Kubernetes nodes as a VM image would have them (the real kubelet,
 * kubeadm and kubectl; the CNI plugins of kubernetes-cni; containerd preloaded with the images made from the
 * real binaries of `version`, of the pod network and of the `workloads` manifests the suite runs), and serves
 * flannel's manifest on the lab's bridge address, where the hosts reach it. The stack's `kubernetes.podCidr`
 * must be POD_NETWORK.podCidr, the network the manifest gives flannel (its net-conf.json), as flannel's
 * documentation has kubeadm init's.
 * With `airGap`, as an air-gapped site has it: nothing is preloaded. kubeadm's images and the pod network's are
 * made for the registry's `preloadImages`, and the manifest served names them in the registry; the workloads'
 * images go into the registry under their own names (`library/nginx:latest`), for the registry to mirror the
 * names they come from (`mirrorOf`: docker.io). The VM image has no Kubernetes, whose packages the lab serves
 * in pkgs.k8s.io's layout (kubePackages.ts) at `packageRepository`.
 */
export async function kubeletNodes(
    suite: LabSuite,
    version: string,
    workloads: string[] = [],
    airGap?: AirGap,
): Promise<{ cniManifest: string; preloadImages: { file: string; image: string }[]; mirrorOf: string[]; packageRepository?: string; packageVersions?: Record<string, string> }> {
    const tools = builtTools();
    const release = fs.readFileSync(path.join(path.dirname(tools.bins.cni), "manifests", POD_NETWORK.manifest), "utf8");
    const [cniVersion, supported] = POD_NETWORK.cniVersion;
    if (!release.includes(`"Network": "${POD_NETWORK.podCidr}"`) || !release.includes(cniVersion)) throw new Error(`flannel's ${POD_NETWORK.manifest} no longer has ${POD_NETWORK.podCidr} and ${cniVersion}: update POD_NETWORK`);
    const supportedRelease = release.replace(cniVersion, supported);
    const manifest = airGap ? inRegistry(supportedRelease, airGap.registry) : supportedRelease;
    const images = path.join(suite.lab.dir, "images");
    const packages = path.join(suite.lab.dir, "packages");
    let preloadImages: { file: string; image: string }[] = [];
    let mirrorOf: string[] = [];
    let packageVersions: Record<string, string> | undefined;
    if (airGap) {
        const dir = path.join(airGap.packageDir, "Files/images");
        const names = await kubernetesImages(dir, tools, version, [manifest], { imageRepository: airGap.imageRepository });
        const workloadImages = [...new Set(workloads.flatMap(manifestImages))];
        await writeImages(dir, tools, workloadImages);
        const domainOf = (name: string) => name.slice(0, name.indexOf("/"));
        preloadImages = [
            ...names.map((name) => ({ file: path.join("Files/images", archiveName(name)), image: name.slice(airGap.registry.length + 1) })),
            ...workloadImages.map((name) => ({ file: path.join("Files/images", archiveName(name)), image: name.slice(domainOf(name).length + 1) })),
        ];
        mirrorOf = [...new Set(workloadImages.map(domainOf))];
        packageVersions = kubernetesPackageRepository(packages, tools, version.replace(/^v/, ""));
    } else {
        await kubernetesImages(images, tools, version, [manifest, ...workloads]);
        suite.lab.giveTools({ kube: tools.bins.kube, etcd: tools.bins.etcd, cni: tools.bins.cni, images });
    }
    const server = http.createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://lab");
        if (url.pathname === `/${POD_NETWORK.manifest}`) return void res.writeHead(200, { "Content-Type": "application/yaml" }).end(manifest);
        // A file of the package repository (path.join resolves any "..": what lands outside it is not served).
        const file = path.join(packages, decodeURIComponent(url.pathname).replace(/^\/packages\//, ""));
        const found = url.pathname.startsWith("/packages/") && file.startsWith(`${packages}/`) ? fs.statSync(file, { throwIfNoEntry: false }) : undefined;
        if (!found?.isFile()) return void res.writeHead(404).end();
        res.writeHead(200, { "Content-Length": found.size });
        fs.createReadStream(file).pipe(res);
    });
    await new Promise<void>((resolve) => server.listen(0, `${suite.lab.subnet}.1`, resolve));
    suite.onTeardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const base = `http://${suite.lab.subnet}.1:${(server.address() as AddressInfo).port}`;
    return { cniManifest: `${base}/${POD_NETWORK.manifest}`, preloadImages, mirrorOf, ...(airGap ? { packageRepository: `${base}/packages`, packageVersions } : {}) };
}

/** `RealStack.create`, the stack disposed with the suite after what it printed goes to the suite's secret scan. */
export async function suiteStack(suite: LabSuite, name: string, config: Record<string, unknown>, options: { env?: Record<string, string> } = {}): Promise<RealStack> {
    return withSuite(suite, await RealStack.create(name, config, options));
}

/** `stack` disposed with the suite after what it printed goes to the suite's secret scan. */
export function withSuite(suite: LabSuite, stack: RealStack): RealStack {
    suite.onTeardown(async () => {
        suite.captured.push(...stack.output, ...stack.printed);
        await stack.dispose();
    });
    return stack;
}

/** Where `airGapRegistry` puts the registry's CA in the package, for the cluster's `privateRegistries`. */
export const AIR_GAP_REGISTRY_CA = "Files/registry-ca.crt";

/**
 * The registry VNF an air-gapped lab cluster pulls from (seed 002: HTTPS with a CA made in `dir` for `ip`, one
 * htpasswd login), made and brought up by its own stack on the real CLI with the `preloadImages` of
 * `kubeletNodes`; its CA written to the package at AIR_GAP_REGISTRY_CA. Returns the stack and the TLS key (for
 * the suite's secret scan).
 */
export async function airGapRegistry(
    suite: LabSuite,
    api: LabOpenStackApi,
    o: { name: string; ip: string; dir: string; packageDir: string; login: { username: string; password: string }; preloadImages: { file: string; image: string }[] },
): Promise<{ stack: RealStack; privateKey: string }> {
    const tls = makeCertificates(o.dir, o.ip, "registry");
    fs.writeFileSync(path.join(o.packageDir, AIR_GAP_REGISTRY_CA), tls.ca);
    const registry = { networkId: api.network.id, subnetId: api.network.subnetId, fixedIps: [o.ip], password: suite.lab.password, tls: { certificate: tls.certificate, privateKey: tls.privateKey }, users: [o.login], preloadImages: o.preloadImages };
    const stack = await suiteStack(suite, o.name, { vnfKind: "registry", vnfName: o.name, image: api.image.name, flavor: api.flavor.name, packageDir: o.packageDir, registry }, { env: api.env() });
    await stack.up();
    return { stack, privateKey: tls.privateKey };
}

/** The lab OpenStack API for a suite, stopped with it. */
export async function suiteApi(suite: LabSuite, cluster: string, options: CloudOptions = {}): Promise<LabOpenStackApi> {
    const api = await LabOpenStackApi.start(suite.lab, { cluster, ...options });
    suite.onTeardown(() => api.stop());
    return api;
}

/**
 * A cluster stack of `cluster` on the real CLI, against `api` (one started for it when not given), its
 * credentials the OS_* variables, or (`credentials: "clouds.yaml"`) a cloud of a clouds.yaml that OS_CLOUD and
 * OS_CLIENT_CONFIG_FILE name.
 */
export async function realClusterStack(suite: LabSuite, cluster: string, config: (api: LabOpenStackApi) => Record<string, unknown>, given?: LabOpenStackApi, options: { credentials?: "env" | "clouds.yaml" } = {}): Promise<{ api: LabOpenStackApi; stack: RealStack }> {
    const api = given ?? (await suiteApi(suite, cluster));
    const base = { vnfName: cluster, flavour: "simple", image: api.image.name, flavor: api.flavor.name, network: { networkId: api.network.id, subnetId: api.network.subnetId } };
    let env = api.env();
    if (options.credentials === "clouds.yaml") {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-clouds-"));
        suite.onTeardown(() => fs.rmSync(dir, { recursive: true, force: true }));
        fs.writeFileSync(path.join(dir, "clouds.yaml"), api.cloudsYaml(cluster), { mode: 0o600 });
        env = { OS_CLOUD: cluster, OS_CLIENT_CONFIG_FILE: path.join(dir, "clouds.yaml") };
    }
    const stack = await suiteStack(suite, cluster, { ...base, ...config(api) }, { env });
    return { api, stack };
}

/** A kubeconfig of a ServiceAccount token at a Kubernetes VIM's endpoint, trusting its CA. */
export function tokenKubeconfig(vim: { endpoint: string; caCertificate: string }, token: string): string {
    const ca = Buffer.from(vim.caCertificate).toString("base64");
    return `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "${vim.endpoint}", certificate-authority-data: ${ca}}\nusers:\n- name: u\n  user: {token: "${token}"}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n`;
}

/** The control plane's static Pods, by their `component` label. */
export const CONTROL_PLANE = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];

/** The real kubectl with the cluster admin's kubeconfig; `input` gives it a standard input too. */
export interface Kubectl {
    (...args: string[]): Promise<string>;
    input(input: string, ...args: string[]): Promise<string>;
}

/** The real kubectl as the cluster's admin: the stack's kubeconfig, its client key added to `credentials` (what a suite's secret scan looks for). */
export function adminKubectl(stack: () => RealStack, credentials: string[]): Kubectl {
    const run = async (input: string | undefined, args: string[]) => {
        const kubeconfig = await stack().adminKubeconfig();
        credentials.push(/client-key-data: (\S+)/.exec(kubeconfig)?.[1] ?? "");
        return realKubectl(kubeconfig, args, input);
    };
    return Object.assign((...args: string[]) => run(undefined, args), { input: (input: string, ...args: string[]) => run(input, args) });
}

/** Runs `check` every 3 s until it returns something other than undefined, or fails with what it last saw after `timeoutMs`. */
export async function eventually<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    let last: unknown;
    for (;;) {
        try {
            const result = await check();
            if (result !== undefined) return result;
            last = "not yet";
        } catch (e) {
            last = (e as Error).message;
        }
        if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s (last: ${last})`);
        await new Promise((resolve) => setTimeout(resolve, 3000));
    }
}

/**
 * Waits until every Node is Ready under no pressure (disk, memory, PIDs) and every Pod of the pod network,
 * kube-proxy and CoreDNS is Ready (what the real kubectl lists): the Nodes.
 */
export async function clusterReady(kubectl: Kubectl, timeoutMs = 300_000): Promise<any[]> {
    const ready = (o: any) => o.status?.conditions?.some((c: any) => c.type === "Ready" && c.status === "True");
    return eventually("every Node and the cluster's networking Pods Ready", timeoutMs, async () => {
        const nodes = JSON.parse(await kubectl("get", "nodes", "-o", "json")).items as any[];
        const pods = (JSON.parse(await kubectl("get", "pods", "-A", "-o", "json")).items as any[]).filter((p) =>
            ["app=flannel", "k8s-app=kube-proxy", "k8s-app=kube-dns"].some((l) => Object.entries(p.metadata.labels ?? {}).some(([k, v]) => `${k}=${v}` === l)),
        );
        const pressure = (n: any) => (n.status?.conditions ?? []).filter((c: any) => c.type.endsWith("Pressure") && c.status === "True").map((c: any) => c.type);
        const notReady = [
            ...nodes.filter((n) => !ready(n) || pressure(n).length).map((n) => `node ${n.metadata.name} ${pressure(n).join(" ")}`.trim()),
            ...pods.filter((p) => !ready(p)).map((p) => `pod ${p.metadata.namespace}/${p.metadata.name}`),
        ];
        if (notReady.length) throw new Error(`not Ready: ${notReady.join(", ")}`);
        const flannel = pods.filter((p) => p.metadata.labels.app === "flannel").map((p) => p.spec.nodeName);
        if (nodes.some((n) => !flannel.includes(n.metadata.name))) throw new Error(`flannel runs on ${flannel.join(", ")} only`);
        return nodes;
    });
}

/**
 * A Pod on `server` and one on `client`, both of etcd's image (its etcd serves; its etcdctl is the client):
 * the client writes a key through a Service's DNS name (CoreDNS, then kube-proxy's rules, then the pod network
 * to the other node) and reads it back at the server Pod's own IP. Returns what it read; the Pods and the
 * Service are gone afterwards.
 */
export async function acrossNodes(kubectl: Kubectl, server: string, client: string): Promise<string> {
    const image = (await kubectl("get", "pods", "-n", "kube-system", "-l", "component=etcd", "-o", "jsonpath={.items[0].spec.containers[0].image}")).trim();
    const pod = (name: string, node: string) => ({
        apiVersion: "v1",
        kind: "Pod",
        metadata: { name, namespace: "default", labels: { app: name } },
        spec: {
            nodeName: node,
            containers: [
                {
                    name: "etcd",
                    image,
                    command: ["etcd", "--data-dir=/var/lib/lab-etcd", "--listen-client-urls=http://0.0.0.0:2379", "--advertise-client-urls=http://$(POD_IP):2379"],
                    env: [{ name: "POD_IP", valueFrom: { fieldRef: { fieldPath: "status.podIP" } } }],
                    readinessProbe: { tcpSocket: { port: 2379 }, periodSeconds: 2 },
                },
            ],
        },
    });
    const service = { apiVersion: "v1", kind: "Service", metadata: { name: "lab-server", namespace: "default" }, spec: { selector: { app: "lab-server" }, ports: [{ port: 2379 }] } };
    const list = { apiVersion: "v1", kind: "List", items: [pod("lab-server", server), pod("lab-client", client), service] };
    await kubectl.input(JSON.stringify(list), "apply", "-f", "-");
    try {
        await eventually("the lab-server and lab-client Pods Ready", 120_000, async () => {
            const pods = JSON.parse(await kubectl("get", "pods", "lab-server", "lab-client", "-o", "json")).items as any[];
            if (pods.every((p) => p.status.conditions?.some((c: any) => c.type === "Ready" && c.status === "True"))) return true;
            throw new Error(pods.map((p) => `${p.metadata.name} ${p.status.phase} ${p.status.message ?? ""}`).join("; "));
        });
        const serverIp = (await kubectl("get", "pod", "lab-server", "-o", "jsonpath={.status.podIP}")).trim();
        const etcdctl = (endpoint: string, ...args: string[]) => kubectl("exec", "lab-client", "--", "etcdctl", `--endpoints=${endpoint}`, "--dial-timeout=5s", ...args);
        await eventually("a write through the Service's name", 60_000, () => etcdctl("http://lab-server:2379", "put", "lab", `from ${client} to ${server}`));
        return (await etcdctl(`http://${serverIp}:2379`, "get", "lab", "--print-value-only")).trim();
    } finally {
        await kubectl("delete", "pod/lab-server", "pod/lab-client", "service/lab-server", "--ignore-not-found", "--grace-period=1", "--wait=false");
    }
}
