/**
 * A simple kubeadm cluster (1 master, 1 worker, then a second worker and back) run by the real Pulumi CLI, engine
 * and plugins on lab hosts that boot as VMs do: Debian's systemd as PID 1 (lab.sh, "systemd"). Installed
 * air-gapped (docs/air-gapped.md): the real kubelet, kubeadm and kubectl (tools/build.sh, v1.31.4) come as
 * packages from the lab's repository in pkgs.k8s.io's layout (test/support/kubePackages.ts), which node
 * preparation installs from `kubernetes.packageRepository`; the cluster's images, made from the real binaries
 * (test/support/kubeImages.ts), are pushed into the registry VNF (seed 002, HTTPS with a login) by its own stack,
 * and the nodes pull them from there through the program's `kubernetes.imageRepository` and registry
 * connections. Nothing of
 * Kubernetes is a stand-in here: the program's own steps configure containerd and the kubelet for the systemd
 * cgroup driver, run `kubeadm init`, whose kubelet runs etcd and the control plane as static Pods in containers,
 * `kubeadm join` (TLS bootstrap) and the drain.
 *
 * What differs from a VM, and why (docs/verified.md):
 *   - the test machine lets no process lower an oom_score_adj (no CAP_SYS_RESOURCE), which runc does for every
 *     pod the kubelet starts: the lab's runc shim raises those to the lowest value allowed (test/lab/node/runc);
 *   - the machine's conntrack limit is set by the lab to kube-proxy's value, which a VM's kube-proxy sets itself,
 *     and root's inotify instances are raised, which every host shares (test/lab/kubeletHolds.sh).
 * The pod network is flannel's own manifest of v0.28.10, its images made from flannel's binaries and Debian's
 * iptables (kubeImages.ts), the CNI plugins of kubernetes-cni in /opt/cni/bin as that package installs them.
 * Seed 003's CNF package runs on it through the cluster's VIMs, its `nginx` image made from Debian's nginx and pulled
 * from the registry VNF, which the nodes have as docker.io's mirror (`privateRegistries[].mirrorOf`).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { failure, skipAfterFirstFailure, useLab } from "./support/labSuite";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { realKubectl } from "./support/realKubectl";
import { acrossNodes, adminKubectl, AIR_GAP_REGISTRY_CA, airGapRegistry, clusterReady, CONTROL_PLANE, eventually, kubeletNodes, POD_NETWORK, realClusterStack, suiteApi, suiteStack, tokenKubeconfig } from "./support/realCluster";
import { openstackClient, seedBody } from "./support/lcmClient";
import { PROJECT_DIR } from "./support/program";
import { realServiceEnv, settledOperation, startService, stopServiceTree } from "./support/realLcmService";
import { serviceProject } from "./support/serviceProject";
import { RealStack } from "./support/realStack";
import { useBuiltTools } from "./support/tools";

const CLUSTER = "rl";
const MASTER = `${CLUSTER}-master-0`;
const WORKER = (i: number) => `${CLUSTER}-worker-${i}`;
const VERSION = "v1.31.4";
/** Seed 003's package: a Deployment (vdu1) and its Service, and a bare Pod (vdu2), both of the image `nginx`. */
const CNF_PACKAGE = path.join(PROJECT_DIR, "examples/cnf-package");
const CNF_MANIFESTS = ["Files/kubernetes/deployment.yaml", "Files/kubernetes/service.yaml", "Files/kubernetes/pod.yaml"];
/** Its vnfdId in the LCM service's packages. */
const CNF_VNFD = "cnf-seed-003";
/** The registry VNF the cluster's images come from (seed 002: HTTPS, one htpasswd login), and its VM. */
const REGISTRY_VNF = "rlr";
const REGISTRY_HOST = `${REGISTRY_VNF}-registry`;
const REGISTRY_LOGIN = { username: "k8s-nodes", password: "rl-registry-login-pw-4" };

describe("the real Pulumi CLI and plugins on lab hosts booting systemd: a simple kubeadm cluster with the real kubelet", function () {
    useBuiltTools();
    this.timeout(900_000);
    let api: LabOpenStackApi;
    // The login as it travels (the `auth` of the kubelet's and containerd's copies) and as typed.
    const credentials: string[] = [REGISTRY_LOGIN.password, Buffer.from(`${REGISTRY_LOGIN.username}:${REGISTRY_LOGIN.password}`).toString("base64")];
    const suite = useLab([], { bootSystemd: true, secrets: () => [api?.credentials.password ?? "", ...credentials] });
    let stack: RealStack;
    let registryStack: RealStack;
    /** The registry's `host:port`, and kubeadm's imageRepository in it. */
    let registry: string;
    let imageRepository: string;
    /** The lab's Kubernetes packages (pkgs.k8s.io's layout) and their versions; flannel's manifest. */
    let packageRepository: string | undefined;
    let packageVersions: Record<string, string> | undefined;
    let cniManifest: string;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-rl-"));
    /** The cluster's VMs (the registry VNF's is the lab OpenStack's too). */
    const servers = () => api.servers().filter((s) => s.name !== REGISTRY_HOST);

    const kubectl = adminKubectl(() => stack, credentials);
    const nodes = async () => JSON.parse(await kubectl("get", "nodes", "-o", "json")).items as any[];
    /** The stack's outputs, each token among the credentials the scan looks for. */
    const outputs = () => {
        const all = stack.outputs();
        credentials.push(all.vimToken, ...Object.values(all.tenantTokens as Record<string, string>));
        return all;
    };
    /** The real kubectl with a ServiceAccount token the stack registers, at the VIM's endpoint and CA. */
    const vimKubectl =
        (token: string) =>
        (...args: string[]) =>
            realKubectl(tokenKubeconfig(outputs().vim, token), args);
    /** A Deployment of one pause Pod on the second worker, and a PodDisruptionBudget over it. */
    const pinned = (name: string, budget: { minAvailable?: number; maxUnavailable?: number }) => [
        {
            apiVersion: "apps/v1",
            kind: "Deployment",
            metadata: { name, namespace: "default" },
            spec: {
                replicas: 1,
                selector: { matchLabels: { app: name } },
                template: { metadata: { labels: { app: name } }, spec: { nodeSelector: { "kubernetes.io/hostname": WORKER(1) }, containers: [{ name: "pause", image: `${imageRepository}/pause:3.10` }] } },
            },
        },
        { apiVersion: "policy/v1", kind: "PodDisruptionBudget", metadata: { name, namespace: "default" }, spec: { ...budget, selector: { matchLabels: { app: name } } } },
    ];
    /** The static Pods of the control plane on the master, with their phases. */
    const controlPlane = async () =>
        (JSON.parse(await kubectl("get", "pods", "-n", "kube-system", "-o", "json")).items as any[])
            .filter((p) => p.spec.nodeName === MASTER && p.metadata.annotations?.["kubernetes.io/config.source"] === "file")
            .map((p) => [p.metadata.labels.component, p.status.phase])
            .sort();
    const inside = (host: string, command: string) => suite.lab.inside(host, command);
    /** A CNF stack of seed 003's package on the real CLI, through the cluster's VIM with `token`. */
    const cnfStack = (name: string, token: string, cnf: Record<string, unknown>) =>
        suiteStack(suite, name, { vnfKind: "cnf", packageDir: CNF_PACKAGE, cnf: { manifests: CNF_MANIFESTS, vim: { ...outputs().vim, token }, ...cnf } });
    const cnfPods = async (namespace: string) => (JSON.parse(await kubectl("get", "pods", "-n", namespace, "-o", "json")).items as any[]).filter((p) => !p.metadata.deletionTimestamp);

    skipAfterFirstFailure();

    before(async function () {
        if (!suite.lab) this.skip();
        this.timeout(600_000);
        const ip = `${suite.lab.subnet}.60`;
        registry = `${ip}:5000`;
        imageRepository = `${registry}/k8s`;
        const packageDir = path.join(dir, "package");
        const workloads = CNF_MANIFESTS.map((file) => fs.readFileSync(path.join(CNF_PACKAGE, file), "utf8"));
        let preloadImages;
        let mirrorOf: string[];
        ({ cniManifest, preloadImages, mirrorOf, packageRepository, packageVersions } = await kubeletNodes(suite, VERSION, workloads, { registry, imageRepository, packageDir }));
        // The registry's volume holds the cluster's images (about 150 MB compressed).
        api = await suiteApi(suite, CLUSTER, { volumeMb: 1024 });
        let privateKey: string;
        ({ stack: registryStack, privateKey } = await airGapRegistry(suite, api, { name: REGISTRY_VNF, ip, dir, packageDir, login: REGISTRY_LOGIN, preloadImages }));
        credentials.push(privateKey);
        ({ stack } = await realClusterStack(
            suite,
            CLUSTER,
            () => ({
                packageDir,
                masters: { count: 1, password: suite.lab.password },
                workers: { count: 1, maxCount: 3, password: suite.lab.password, availabilityZone: "nova" },
                kubernetes: { version: VERSION.slice(1), cniManifest, podCidr: POD_NETWORK.podCidr, drainTimeout: 30, imageRepository, packageRepository },
                privateRegistries: [{ protocol: "https", server: registry, ...REGISTRY_LOGIN, caCertificateFile: AIR_GAP_REGISTRY_CA, mirrorOf }],
                tenants: [{ name: "team-a", role: "user", namespaces: ["team-a-cnf"] }],
            }),
            api,
        ));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("up: every VM boots systemd; the program configures containerd and the kubelet for the systemd cgroup driver; kubeadm init's kubelet runs etcd and the control plane in containers; the worker joins by TLS bootstrap", async () => {
        await stack.up();
        assert.deepEqual(servers().map((s) => [s.name, s.status]).sort(), [[MASTER, "ACTIVE"], [WORKER(0), "ACTIVE"]]);
        for (const host of [MASTER, WORKER(0)]) {
            assert.equal(await inside(host, "ps -o comm= -p 1"), "systemd\n", `${host} boots systemd`);
            assert.equal(await inside(host, "systemctl is-active containerd kubelet"), "active\nactive\n");
            assert.match(await inside(host, "cat /etc/containerd/config.toml"), /^\s*SystemdCgroup = true$/m, "the program's containerd configuration");
            assert.match(await inside(host, "cat /var/lib/kubelet/config.yaml"), /^cgroupDriver: systemd$/m, "kubeadm's kubelet configuration");
            assert.match(await inside(host, "containerd config dump"), new RegExp(`^\\s*sandbox_image = "${imageRepository.replace(/\./g, "\\.")}/pause:3\\.10"$`, "m"), "the sandbox image kubeadm lists, not containerd's default pause:3.6");
        }
        assert.ok(stack.output.some((l) => l.includes("[WorkerMember ") && l.includes("[preflight] Running pre-flight checks")), "the worker's join prints its preflight");
        assert.deepEqual(stack.output.filter((l) => /inconsistent with that used by kubeadm/.test(l)), [], "no preflight warning of another sandbox image");
        const listed = await nodes();
        assert.deepEqual(listed.map((n) => [n.metadata.name, n.status.nodeInfo.kubeletVersion, n.status.nodeInfo.containerRuntimeVersion]).sort(), [
            [MASTER, VERSION, "containerd://1.6.20"],
            [WORKER(0), VERSION, "containerd://1.6.20"],
        ]);
        assert.deepEqual(await controlPlane(), CONTROL_PLANE.map((c) => [c, "Running"]), "the static Pods of kubeadm's manifests, running");
        assert.equal(JSON.parse(await kubectl("version", "-o", "json")).serverVersion.gitVersion, VERSION);
        const manifest = await inside(MASTER, "cat /etc/kubernetes/manifests/kube-apiserver.yaml");
        assert.match(manifest, new RegExp(`--advertise-address=${api.servers().find((s) => s.name === MASTER)!.address.replace(/\./g, "\\.")}\\n`), "kubeadm's own flags");
        const config = await kubectl("get", "configmap", "-n", "kube-system", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}");
        assert.match(config, /podSubnet: 10\.244\.0\.0\/16/, "kubeadm's upload-config stored the program's ClusterConfiguration");
        const apiServerCgroup = await inside(MASTER, "cat /proc/$(pgrep -xo kube-apiserver)/cgroup");
        // Seen from the test machine: the host's own cgroup (host-init.sh) is where its systemd's tree starts.
        assert.match(
            apiServerCgroup,
            new RegExp(`^\\d+:name=systemd:/k8s-vnf-kv-[0-9a-f]+-${MASTER}/kubepods\\.slice/kubepods-burstable\\.slice/kubepods-burstable-pod[0-9a-f_]+\\.slice/cri-containerd-[0-9a-f]{64}\\.scope$`, "m"),
            `a container in a systemd scope below the kubelet's kubepods slice, in the host's own cgroup: ${apiServerCgroup}`,
        );
        assert.match(await inside(WORKER(0), "readlink /var/lib/kubelet/pki/kubelet-client-current.pem"), /kubelet-client-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem/, "the worker's client certificate, issued through its bootstrap token");
    });

    it("the pod network: flannel, kube-proxy and CoreDNS run; every Node is Ready, the workers with the zone labels the program sets, each with a pod subnet of the cluster's", async () => {
        const ready = await clusterReady(kubectl);
        assert.deepEqual(ready.map((n) => n.metadata.name).sort(), [MASTER, WORKER(0)]);
        const worker = ready.find((n) => n.metadata.name === WORKER(0));
        assert.equal(worker.metadata.labels["topology.kubernetes.io/zone"], "nova");
        assert.equal(worker.metadata.labels["kubernetes.io/zone"], "nova");
        for (const node of ready) assert.match(node.spec.podCIDR, /^10\.244\.\d+\.0\/24$/, `${node.metadata.name}: a /24 of ${POD_NETWORK.podCidr}, from kubeadm's podSubnet`);
        assert.match(await inside(WORKER(0), "cat /run/flannel/subnet.env"), new RegExp(`^FLANNEL_SUBNET=${worker.spec.podCIDR.replace(".0/24", ".1/24").replace(/\./g, "\\.")}$`, "m"));
        assert.match(await inside(WORKER(0), "ip -d link show flannel.1"), /vxlan id 1 /, "flannel's VXLAN device");
    });

    it("air-gapped: every image of the control plane, CoreDNS, the sandbox and the pod network came from the registry VNF, which refuses a pull without its login; the VM image had none", async () => {
        const running = (JSON.parse(await kubectl("get", "pods", "-n", "kube-system", "-o", "json")).items as any[]).flatMap((p) => p.spec.containers.map((c: any) => c.image));
        assert.deepEqual(running.filter((image) => !image.startsWith(`${registry}/`)), [], "every kube-system Pod runs an image of the registry");
        for (const host of [MASTER, WORKER(0)]) {
            const images = (await inside(host, "ctr -n k8s.io images ls -q")).split("\n").filter((i) => i && !i.startsWith("sha256:"));
            const [fromRegistry, other] = [images.filter((i) => i.startsWith(`${registry}/`)), images.filter((i) => !i.startsWith(`${registry}/`))];
            assert.ok(fromRegistry.includes(`${imageRepository}/pause:3.10`) && fromRegistry.some((i) => i.startsWith(`${registry}/flannel-io/flannel:`)), `${host}: ${fromRegistry.join(" ")}`);
            assert.deepEqual(other, [], `${host}: no image but the registry's`);
        }
        assert.ok((await inside(MASTER, "ctr -n k8s.io images ls -q")).includes(`${imageRepository}/kube-apiserver:${VERSION}`));
        const anonymous = `curl -s -o /dev/null -w '%{http_code}' --cacert '/etc/containerd/certs.d/${registry}/ca.crt' https://${registry}/v2/k8s/pause/manifests/3.10`;
        assert.equal(await inside(WORKER(0), anonymous), "401", "the registry wants its login");
        assert.equal(await inside(WORKER(0), "stat -c %a /etc/containerd/config.toml /var/lib/kubelet/config.json"), "600\n600\n", "the login's two copies, root's only");
    });

    it("air-gapped: kubelet, kubeadm, kubectl and kubernetes-cni installed by apt from the lab's package repository (pkgs.k8s.io's layout, its signing key), pinned to the version and held", async () => {
        for (const host of [MASTER, WORKER(0)]) {
            const installed = await inside(host, "dpkg-query -W -f '${Package} ${Version} ${db:Status-Status}\\n' kubelet kubeadm kubectl kubernetes-cni");
            assert.deepEqual(installed.trim().split("\n").sort(), Object.entries(packageVersions!).map(([name, version]) => `${name} ${version} installed`).sort(), host);
            assert.equal(await inside(host, "apt-mark showhold | sort"), "kubeadm\nkubectl\nkubelet\n");
            assert.equal((await inside(host, "cat /etc/apt/sources.list.d/kubernetes.list")).trim(), `deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] ${packageRepository}/v1.31/deb/ /`);
            assert.equal((await inside(host, "readlink -f $(command -v kubelet)")).trim(), "/usr/bin/kubelet", "the package's binary, not the VM image's");
        }
        assert.ok(stack.output.some((l) => l.includes(`installing kubelet, kubeadm and kubectl ${VERSION.slice(1)} from ${packageRepository}`)), "node preparation installed them");
    });

    it("the VIM's token is the cluster admin's; a tenant's token acts in its namespaces only, the real API server refusing the rest", async () => {
        const all = outputs();
        const admin = vimKubectl(all.vimToken);
        assert.equal((await admin("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")).trim(), "system:serviceaccount:kube-system:k8s-vnf-vim");
        assert.equal((await admin("auth", "can-i", "*", "*", "--all-namespaces")).trim(), "yes");
        const tenant = vimKubectl(all.tenantTokens["team-a"]);
        assert.equal((await tenant("auth", "can-i", "create", "deployments", "-n", "team-a-cnf")).trim(), "yes");
        await tenant("create", "configmap", "probe", "-n", "team-a-cnf", "--from-literal=a=b");
        await assert.rejects(tenant("get", "nodes"), /forbidden/);
        await assert.rejects(tenant("get", "configmaps", "-n", "default"), /forbidden/);
        assert.ok(stack.isSecretOutput("vimToken") && stack.isSecretOutput("tenantTokens"), "the tokens are secret outputs");
        assert.ok(!stack.isSecretOutput("vim"), "the VIM's endpoint and CA are not");
        await kubectl("delete", "configmap", "probe", "-n", "team-a-cnf");
    });

    it("seed 003's CNF through the tenant's VIM: the real Kubernetes plugin makes its Deployment, Service and Pod in the tenant's namespace, labelled; the real scheduler and kubelet run them (Debian's nginx), answering through the Service; scaled, healed (every pod new), destroyed with the namespace kept; elsewhere, and a namespace of its own, the real API server refuses the tenant", async () => {
        const token = outputs().tenantTokens["team-a"];
        const cnf = await cnfStack(`${CLUSTER}-cnf`, token, { namespace: "team-a-cnf", instanceId: "rl-cnf-1" });
        await cnf.up();
        const pods = await cnfPods("team-a-cnf");
        assert.deepEqual(pods.map((p) => [p.metadata.labels.app, p.status.phase, p.spec.nodeName]).sort(), [
            ["vdu1", "Running", WORKER(0)],
            ["vdu2", "Running", WORKER(0)],
        ]);
        // `nginx` is docker.io's name: pulled from the registry VNF, which mirrors docker.io, with its login.
        assert.equal(await inside(WORKER(0), `cat /etc/containerd/certs.d/docker.io/hosts.toml`), await inside(WORKER(0), `cat '/etc/containerd/certs.d/${registry}/hosts.toml'`), "the registry's own hosts.toml");
        assert.match(await inside(WORKER(0), `cat /etc/containerd/certs.d/docker.io/hosts.toml`), new RegExp(`^server = "https://${registry.replace(/\./g, "\\.")}"$`, "m"));
        assert.match(await inside(WORKER(0), "ctr -n k8s.io images ls -q"), /^docker\.io\/library\/nginx:latest$/m);
        // An image the registry lacks is not found there, and never looked for at docker.io's own registry.
        await kubectl("create", "namespace", "rl-unmirrored");
        const overrides = JSON.stringify({ spec: { nodeSelector: { "kubernetes.io/hostname": WORKER(0) } } });
        await kubectl("run", "unmirrored", "-n", "rl-unmirrored", "--image=busybox:1.36", "--restart=Never", `--overrides=${overrides}`);
        const pullFailure = await eventually("the kubelet's pull of busybox failed", 120_000, async () => {
            const said = await kubectl("get", "events", "-n", "rl-unmirrored", "--field-selector", "involvedObject.name=unmirrored,reason=Failed", "-o", "jsonpath={.items[*].message}");
            return /Failed to pull image/.test(said) ? said : undefined;
        });
        assert.match(pullFailure, /docker\.io\/library\/busybox:1\.36: not found/);
        assert.doesNotMatch(pullFailure, /registry-1\.docker\.io/);
        await kubectl("delete", "namespace", "rl-unmirrored", "--wait=false");
        const labelled = (await kubectl("get", "deployments,services,pods", "-n", "team-a-cnf", "-l", "tacker_vnf_instance_id=rl-cnf-1", "-o", "name")).trim().split("\n");
        assert.deepEqual(labelled.filter((n) => !n.startsWith("pod/vdu1-")), ["deployment.apps/vdu1", "service/vdu1", "pod/vdu2"], "every object labelled with the instance");
        for (const pod of pods) assert.equal(pod.metadata.labels.tacker_vnf_instance_id, "rl-cnf-1", `${pod.metadata.name}: the instance label, through the pod template too`);
        assert.deepEqual(cnf.outputs().vnfcResources.map((v: any) => v.resourceId), ["Deployment/vdu1", "Pod/vdu2"]);
        const serviceIp = (await kubectl("get", "service", "vdu1", "-n", "team-a-cnf", "-o", "jsonpath={.spec.clusterIP}")).trim();
        assert.match(await inside(MASTER, `curl -sS --max-time 20 http://${serviceIp}/`), /<title>Welcome to nginx!<\/title>/, "nginx answers at the Service's address from the master (kube-proxy's rules, flannel to the worker)");

        // scale: the Deployment's replicas by workload name; the plugin's awaiter waits for the new pods to be ready
        cnf.set("cnf.replicas", { vdu1: 3 });
        await cnf.up();
        assert.equal((await cnfPods("team-a-cnf")).filter((p) => p.metadata.labels.app === "vdu1" && p.status.phase === "Running").length, 3);

        // heal: a restart mark rolls the Deployment's pods; the bare Pod is replaced
        const before = (await cnfPods("team-a-cnf")).map((p) => p.metadata.uid as string);
        cnf.set("cnf.restarts", { vdu1: "2026-11-28T04:00:00Z", vdu2: "2026-11-28T04:00:00Z" });
        const healed = await cnf.up();
        assert.ok(healed.changes.replace, `the bare Pod is replaced: ${JSON.stringify(healed.changes)}`);
        await eventually("every pod new and Running, the old ones gone", 120_000, async () => {
            const now = await cnfPods("team-a-cnf");
            return now.length === 4 && now.every((p) => !before.includes(p.metadata.uid) && p.status.phase === "Running") ? true : undefined;
        });

        const elsewhere = await cnfStack(`${CLUSTER}-cnf-elsewhere`, token, { namespace: "default" });
        const refused = await failure(suite, () => elsewhere.up());
        // The real plugin creates by server-side apply: RBAC sees a patch.
        assert.match(refused.message, /is forbidden: User "system:serviceaccount:kube-system:k8s-vnf-tenant-team-a" cannot patch resource "\w+" in API group "[\w.]*" in the namespace "default"/);
        assert.equal((await kubectl("get", "deployments,services,pods", "-n", "default", "-o", "name")).trim(), "service/kubernetes", "nothing made in default (the API server's own Service is there)");
        const ownNamespace = await cnfStack(`${CLUSTER}-cnf-own-ns`, token, { namespace: "team-a-own", createNamespace: true });
        assert.match((await failure(suite, () => ownNamespace.up())).message, /namespaces "team-a-own" is forbidden: User "system:serviceaccount:kube-system:k8s-vnf-tenant-team-a" cannot patch resource "namespaces" in API group "" in the namespace "team-a-own"/);

        await cnf.destroy();
        assert.equal((await kubectl("get", "deployments,services,pods", "-n", "team-a-cnf", "-o", "name")).trim(), "", "everything the CNF made is gone");
        assert.equal((await kubectl("get", "namespace", "team-a-cnf", "-o", "jsonpath={.status.phase}")).trim(), "Active", "the tenant's namespace stays: the cluster made it");
    });

    it("a CNF through the cluster's VIM makes its own namespace and deletes it on destroy; a token of no account of this cluster is refused by the real API server", async () => {
        const owned = await cnfStack(`${CLUSTER}-cnf-admin`, outputs().vimToken, { namespace: "rl-cnf-owned", createNamespace: true });
        await owned.up();
        assert.deepEqual((await cnfPods("rl-cnf-owned")).map((p) => p.status.phase), ["Running", "Running"]);
        await owned.destroy();
        await eventually("its namespace gone", 120_000, async () => ((await kubectl("get", "namespaces", "-o", "name")).includes("namespace/rl-cnf-owned") ? undefined : true));
        const stranger = await cnfStack(`${CLUSTER}-cnf-stranger`, "not-a-token-of-this-cluster", { namespace: "team-a-cnf" });
        // client-go's words for the API server's 401 (apimachinery v0.31.4 api/errors NewGenericServerResponse).
        assert.match((await failure(suite, () => stranger.up())).message, /the server has asked for the client to provide credentials/);
    });

    it("seed 003 through the LCM service on the real CLI: the cluster registered by `openstack vim register` (its VIM's token and CA); the seed's body as it is but for that vimId, and beside it the package's Deployment as a second CNF (client): the real plugin makes each namespace and its objects, labelled with the instance, which the real kubelet runs; the Deployment scaled out by its VNFD aspect and one VNFC healed (its pods new, the other VNFC's kept); `vim delete` refused meanwhile; terminate deletes each with its namespace, then the VIM goes", async () => {
        const lcmDir = path.join(dir, "lcm");
        const packages = path.join(lcmDir, "packages");
        fs.cpSync(CNF_PACKAGE, path.join(packages, CNF_VNFD), { recursive: true });
        const project = serviceProject();
        suite.onTeardown(() => project.remove());
        const env = realServiceEnv(lcmDir);
        const service = await startService(lcmDir, project, env, packages);
        try {
            const openstack = openstackClient(() => service.url);
            const vim = outputs().vim;
            const vimConfig = path.join(lcmDir, "vim.yaml");
            fs.writeFileSync(vimConfig, `auth_url: ${vim.endpoint}\ntype: kubernetes\nproject_name: default\nbearer_token: ${outputs().vimToken}\nssl_ca_cert: |\n${vim.caCertificate.trim().replace(/^/gm, "  ")}\n`, { mode: 0o600 });
            const vimId = JSON.parse(await openstack("vim", "register", "--config-file", vimConfig, "rl-cluster", "-f", "json")).id;
            /** Runs `openstack vnflcm ARGS` (a task) and waits for the instance's operation: COMPLETED. */
            const task = async (id: string, ...args: string[]) => {
                assert.match(await openstack("vnflcm", ...args), /has been accepted/);
                const op = await settledOperation(service, id);
                assert.equal(op.operationState, "COMPLETED", `${args[0]}: ${JSON.stringify(op.error)}`);
            };
            const instantiate = async (name: string, change: (body: any) => void) => {
                const id = JSON.parse(await openstack("vnflcm", "create", CNF_VNFD, "-f", "json")).ID as string;
                const body = seedBody(suite.lab, "cnf-namespace-instantiate.json");
                body.vimConnectionInfo[0].vimId = vimId;
                change(body);
                const request = path.join(lcmDir, `${name}.json`);
                fs.writeFileSync(request, JSON.stringify(body));
                await task(id, "instantiate", id, request);
                return id;
            };
            const [seed, deployment] = await Promise.all([
                instantiate("seed-003", () => undefined),
                instantiate("deployment", (b) => (b.additionalParams = { "lcm-kubernetes-def-files": ["Files/kubernetes/deployment.yaml", "Files/kubernetes/pod.yaml"], namespace: "rl-cnf-lcm" })),
            ]);
            assert.deepEqual((await cnfPods("namespacea")).map((p) => [p.metadata.name, p.metadata.labels.tacker_vnf_instance_id, p.status.phase, p.spec.nodeName]), [["vdu2", seed, "Running", WORKER(0)]]);
            assert.equal((await service.call("GET", `/vnflcm/v1/vnf_instances/${seed}`)).body.metadata.namespace, "namespacea");
            const pods = async (prefix: string) => (await cnfPods("rl-cnf-lcm")).filter((p) => p.metadata.name.startsWith(prefix));
            assert.deepEqual((await pods("vdu1-")).map((p) => [p.metadata.labels.tacker_vnf_instance_id, p.status.phase]), [[deployment, "Running"]], "the VNFD's initial delta");

            await task(deployment, "scale", "--type", "SCALE_OUT", "--aspect-id", "vdu1_aspect", "--number-of-steps", "2", deployment);
            assert.deepEqual((await pods("vdu1-")).map((p) => p.status.phase), ["Running", "Running", "Running"]);
            const shown = (await service.call("GET", `/vnflcm/v1/vnf_instances/${deployment}`)).body;
            assert.deepEqual(shown.instantiatedVnfInfo.scaleStatus, [{ aspectId: "vdu1_aspect", scaleLevel: 2 }]);
            const [before, bare] = [(await pods("vdu1-")).map((p) => p.metadata.uid as string), (await pods("vdu2"))[0].metadata.uid];
            const vdu1 = shown.instantiatedVnfInfo.vnfcResourceInfo.find((v: any) => v.vduId === "VDU1");
            await task(deployment, "heal", "--vnfc-instance", vdu1.id, "--", deployment);
            await eventually("the Deployment's pods all new and Running", 120_000, async () => {
                const now = await pods("vdu1-");
                return now.length === 3 && now.every((p) => !before.includes(p.metadata.uid) && p.status.phase === "Running") ? true : undefined;
            });
            assert.equal((await pods("vdu2"))[0].metadata.uid, bare, "the other VNFC's pod is untouched");
            await assert.rejects(openstack("vim", "delete", vimId), new RegExp(`VIM ${vimId} is in use by VNF instance\\(s\\) (${seed}, ${deployment}|${deployment}, ${seed})`));

            await Promise.all([seed, deployment].map((id) => task(id, "terminate", "--termination-type", "FORCEFUL", id)));
            await eventually("the namespaces the CNFs made gone with them", 120_000, async () => (/namespace\/(namespacea|rl-cnf-lcm)$/m.test(await kubectl("get", "namespaces", "-o", "name")) ? undefined : true));
            for (const id of [seed, deployment]) await openstack("vnflcm", "delete", id);
            await openstack("vim", "delete", vimId);
            assert.deepEqual(JSON.parse(await openstack("vim", "list", "-f", "json")), []);
            // The real Kubernetes plugin writes the VIM's kubeconfig (its token) into each command's TMPDIR.
            assert.deepEqual(fs.readdirSync(env.TMPDIR), [], "nothing of the Pulumi commands left in the service's temporary folder");
        } finally {
            suite.captured.push(service.output);
            await stopServiceTree(service);
        }
    });

    it("a second up changes nothing: the real Kubernetes plugin's diff of every object is empty", async () => {
        const since = stack.steps.length;
        const result = await stack.up();
        assert.deepEqual(stack.stepsOf(since, /./).filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`), []);
        assert.deepEqual(Object.keys(result.changes), ["same"]);
    });

    it("preview under the real engine: nothing to change; a scale-out shows creates for the new worker only, with its join; a worker heal its membership deleted before its VM, both made again, and what each replacement runs; nothing changes", async () => {
        const state = JSON.stringify(stack.state());
        const preview = async (...extra: string[]) => {
            await stack.applyConfig();
            const { stdout, stderr } = await stack.cli(["preview", "--stack", stack.name, "--color", "never", ...extra]);
            return `${stdout}\n${stderr}`;
        };
        // The JSON digest leaves out a replacement's delete-replaced and create-replacement steps unless asked
        // (v3.248.0 pkg/backend/display/display.go `shouldShow`).
        const steps = async () => (JSON.parse(await stack.preview(["--json", "--show-replacement-steps"])).steps as { op: string; urn: string }[]).map((s) => `${s.op} ${s.urn.split("::").pop()}`);
        await preview("--expect-no-changes");

        stack.set("workers.count", 2);
        const creates = (await steps()).filter((s) => s.startsWith("create "));
        assert.ok(creates.includes(`create ${WORKER(1)}-vm`) && creates.includes(`create ${CLUSTER}-kubeadm-worker-1-member`), creates.join("\n"));
        assert.deepEqual(creates.filter((s) => !s.includes("worker-1")), [], "nothing else is created");
        assert.match(await preview("--diff"), new RegExp(`action *: "kubeadm join ${WORKER(1)} \\(a bootstrap token fetched from a control-plane node\\)"`));

        stack.set("workers.count", 1);
        stack.set("heal.nodes.worker-0", 1);
        const heal = await steps();
        const at = (step: string) => heal.indexOf(step);
        const [member, vm] = [`${CLUSTER}-kubeadm-worker-0-member`, `${WORKER(0)}-vm`];
        assert.ok(at(`delete-replaced ${member}`) >= 0 && at(`delete-replaced ${member}`) < at(`delete-replaced ${vm}`), heal.join("\n"));
        assert.ok(at(`delete-replaced ${vm}`) < at(`replace ${vm}`) && at(`replace ${vm}`) < at(`create-replacement ${vm}`), heal.join("\n"));
        assert.ok(at(`create-replacement ${member}`) > at(`create-replacement ${vm}`), "the membership is made again after the VM");
        assert.deepEqual(heal.filter((s) => /master-0/.test(s) && !s.startsWith("same ")), [], "the master is untouched");
        const text = await preview("--diff");
        assert.match(text, new RegExp(`\\[WorkerMember [^\\]\\s]*${WORKER(0)}\\] will replace \\(vmId\\): delete: drain ${WORKER(0)} on a control-plane node, delete its Node, kubeadm reset ${WORKER(0)}, then create: kubeadm join ${WORKER(0)} `), "what the replacement runs, from the step's diff");
        delete stack.config.heal;
        assert.equal(JSON.stringify(stack.state()), state, "a preview changes nothing");
        await preview("--expect-no-changes");
    });

    it("scale out: a second worker joins, and Pods on the two workers reach each other; scale in: the real drain evicts what a budget allows and fails on what one guards, so the node and its VM stay; without that budget it is drained, its Node deleted, kubeadm reset, its VM deleted", async () => {
        stack.set("workers.count", 2);
        await stack.up();
        assert.deepEqual((await nodes()).map((n) => n.metadata.name).sort(), [MASTER, WORKER(0), WORKER(1)]);
        assert.equal((await inside(WORKER(1), "cat /etc/kubernetes/pki/ca.crt")).trim(), (stack.outputs().vim as { caCertificate: string }).caCertificate.trim(), "the cluster's CA");
        await clusterReady(kubectl);
        assert.equal(await acrossNodes(kubectl, WORKER(0), WORKER(1)), `from ${WORKER(1)} to ${WORKER(0)}`, "a Pod on one worker reaches one on the other, by a Service's name and by Pod IP");

        // Two Deployments on the leaving worker: one whose budget allows an eviction, one whose budget does not.
        await kubectl.input(JSON.stringify({ apiVersion: "v1", kind: "List", items: [...pinned("evictable", { maxUnavailable: 1 }), ...pinned("guarded", { minAvailable: 1 })] }), "apply", "-f", "-");
        await eventually("both Deployments available", 120_000, async () =>
            (await kubectl("get", "deployments", "evictable", "guarded", "-o", "jsonpath={.items[*].status.availableReplicas}")).trim() === "1 1" ? true : undefined,
        );
        stack.set("workers.count", 1);
        const refused = await stack.up().then(
            () => assert.fail("the scale-in should fail while a budget blocks the drain"),
            (e: Error) => e.message,
        );
        assert.match(refused, new RegExp(`drain of ${WORKER(1)} failed, so the node and its VM stay`));
        assert.match(refused, /disruption budget/, "the real eviction API's refusal, through kubectl drain");
        assert.deepEqual(servers().map((s) => s.name).sort(), [MASTER, WORKER(0), WORKER(1)], "the VM stays");
        assert.equal((await kubectl("get", "pods", "-l", "app=evictable", "--field-selector", `spec.nodeName=${WORKER(1)}`, "-o", "name")).trim(), "", "the Pod its budget allowed was evicted");
        assert.match(await kubectl("get", "pods", "-l", "app=guarded", "-o", "jsonpath={.items[*].spec.nodeName}"), new RegExp(WORKER(1)), "the guarded Pod still runs there");

        await kubectl("delete", "poddisruptionbudget", "guarded");
        await stack.up();
        assert.deepEqual((await nodes()).map((n) => n.metadata.name).sort(), [MASTER, WORKER(0)]);
        assert.deepEqual(servers().map((s) => s.name).sort(), [MASTER, WORKER(0)]);
        await kubectl("delete", "deployment", "evictable", "guarded");
        await kubectl("delete", "poddisruptionbudget", "evictable");
    });

    it("operate stop and start: the VMs power off and on; the kubelets start the control plane again with etcd's data, and every Node is Ready", async () => {
        stack.set("operate", { vnfState: "STOPPED" });
        await stack.up();
        assert.deepEqual(servers().map((s) => s.status), ["SHUTOFF", "SHUTOFF"]);
        stack.set("operate", { vnfState: "STARTED" });
        await stack.up();
        await clusterReady(kubectl);
        assert.deepEqual(await controlPlane(), CONTROL_PLANE.map((c) => [c, "Running"]));
        assert.equal((await kubectl("get", "namespace", "team-a-cnf", "-o", "jsonpath={.status.phase}")).trim(), "Active", "the objects made before the stop are there");
    });

    it("heal a worker: it is drained and leaves the cluster before its VM goes; the new VM joins and is Ready on the pod network", async () => {
        const before = api.servers().find((s) => s.name === WORKER(0))!.id;
        stack.set("heal.nodes.worker-0", 1);
        await stack.up();
        assert.notEqual(api.servers().find((s) => s.name === WORKER(0))!.id, before, "a new VM");
        const ready = await clusterReady(kubectl);
        assert.deepEqual(ready.map((n) => n.metadata.name).sort(), [MASTER, WORKER(0)]);
        assert.equal(ready.find((n) => n.metadata.name === WORKER(0)).metadata.labels["topology.kubernetes.io/zone"], "nova", "labelled again");
    });

    it("healing the entire cluster makes a new one (new CA, empty etcd) on the pod network, and the VIM's accounts are made again in it", async () => {
        const before = outputs();
        stack.set("heal.generation", 1);
        const since = stack.steps.length;
        await stack.up();
        const vimSteps = stack.stepsOf(since, new RegExp(`^${CLUSTER}-vim-`)).filter((s) => s.op !== "same");
        assert.ok(vimSteps.some((s) => s.op === "create-replacement"), "the VIM's objects made again");
        assert.ok(vimSteps.every((s) => s.op !== "create-replacement" || vimSteps.findIndex((d) => d.name === s.name && d.op === "delete-replaced") < vimSteps.indexOf(s)), "each VIM object deleted before its copy is made (same name, same provider)");
        assert.deepEqual(stack.stepsOf(since, /-api$/).filter((s) => s.op !== "same").map((s) => s.op), ["update"], "the Kubernetes provider updated, not replaced");
        const after = outputs();
        assert.notEqual(after.vim.caCertificate, before.vim.caCertificate, "a new cluster CA");
        assert.notEqual(after.vimToken, before.vimToken, "a new token");
        assert.equal((await vimKubectl(after.vimToken)("auth", "can-i", "*", "*", "--all-namespaces")).trim(), "yes");
        await assert.rejects(vimKubectl(before.vimToken)("get", "namespaces"), /Unauthorized|certificate signed by unknown authority/);
        assert.deepEqual((await clusterReady(kubectl)).map((n) => n.metadata.name).sort(), [MASTER, WORKER(0)]);
    });

    it("destroy: every resource of the cluster and of the registry deleted (the two stacks at once); no lab host left", async () => {
        await Promise.all([stack.destroy(), registryStack.destroy()]);
        for (const destroyed of [stack, registryStack]) assert.deepEqual(destroyed.state().filter((r) => r.type !== "pulumi:pulumi:Stack"), []);
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });
});
