/**
 * A simple kubeadm cluster (1 master, 1 worker, then a second worker and back) run by the real Pulumi CLI, engine
 * and plugins on lab hosts that boot as VMs do: Debian's systemd as PID 1 (lab.sh, "systemd"), the real
 * kubelet, kubeadm and kubectl (tools/build.sh, v1.31.4) installed as their packages install them, and containerd
 * preloaded with the cluster's images, made from the real binaries (test/support/kubeImages.ts). Nothing of
 * Kubernetes is a stand-in here: the program's own steps configure containerd and the kubelet for the systemd
 * cgroup driver, run `kubeadm init`, whose kubelet runs etcd and the control plane as static Pods in containers,
 * `kubeadm join` (TLS bootstrap) and the drain.
 *
 * What differs from a VM, and why (README, "What is verified, and how"):
 *   - the test machine lets no process lower an oom_score_adj (no CAP_SYS_RESOURCE), which runc does for every
 *     pod the kubelet starts: the lab's runc shim raises those to the lowest value allowed (test/lab/node/runc);
 *   - no pod network yet: the CNI manifest is a placeholder, so the nodes stay NotReady and no Pod but the
 *     static ones runs; kube-proxy's image has no iptables (kubeImages.ts).
 */
import { strict as assert } from "node:assert";
import { skipAfterFirstFailure, useLab } from "./support/labSuite";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { realKubectl } from "./support/realKubectl";
import { kubeletNodes, realClusterStack, tokenKubeconfig } from "./support/realCluster";
import { RealStack } from "./support/realStack";
import { useBuiltTools } from "./support/tools";

const CLUSTER = "rl";
const MASTER = `${CLUSTER}-master-0`;
const WORKER = (i: number) => `${CLUSTER}-worker-${i}`;
const VERSION = "v1.31.4";
const CONTROL_PLANE = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"];

describe("the real Pulumi CLI and plugins on lab hosts booting systemd: a simple kubeadm cluster with the real kubelet", function () {
    useBuiltTools();
    this.timeout(900_000);
    let api: LabOpenStackApi;
    const credentials: string[] = [];
    const suite = useLab([], { bootSystemd: true, secrets: () => [api?.credentials.password ?? "", ...credentials] });
    let stack: RealStack;

    const adminKubeconfig = async () => {
        const kubeconfig = await stack.adminKubeconfig();
        credentials.push(/client-key-data: (\S+)/.exec(kubeconfig)?.[1] ?? "");
        return kubeconfig;
    };
    const kubectl = async (...args: string[]) => realKubectl(await adminKubeconfig(), args);
    const nodes = async () => JSON.parse(await kubectl("get", "nodes", "-o", "json")).items as any[];
    const inside = (host: string, command: string) => suite.lab.inside(host, command);

    skipAfterFirstFailure();

    before(async function () {
        if (!suite.lab) this.skip();
        this.timeout(300_000);
        const cniManifest = await kubeletNodes(suite, VERSION);
        ({ api, stack } = await realClusterStack(suite, CLUSTER, () => ({
            masters: { count: 1, password: suite.lab.password },
            workers: { count: 1, maxCount: 3, password: suite.lab.password },
            kubernetes: { version: VERSION.slice(1), cniManifest, drainTimeout: 30 },
            tenants: [{ name: "team-a", role: "user", namespaces: ["team-a-cnf"] }],
        })));
    });

    it("up: every VM boots systemd; the program configures containerd and the kubelet for the systemd cgroup driver; kubeadm init's kubelet runs etcd and the control plane in containers; the worker joins by TLS bootstrap", async () => {
        await stack.up();
        assert.deepEqual(api.servers().map((s) => [s.name, s.status]).sort(), [[MASTER, "ACTIVE"], [WORKER(0), "ACTIVE"]]);
        for (const host of [MASTER, WORKER(0)]) {
            assert.equal(await inside(host, "ps -o comm= -p 1"), "systemd\n", `${host} boots systemd`);
            assert.equal(await inside(host, "systemctl is-active containerd kubelet"), "active\nactive\n");
            assert.match(await inside(host, "cat /etc/containerd/config.toml"), /^\s*SystemdCgroup = true$/m, "the program's containerd configuration");
            assert.match(await inside(host, "cat /var/lib/kubelet/config.yaml"), /^cgroupDriver: systemd$/m, "kubeadm's kubelet configuration");
        }
        const listed = await nodes();
        assert.deepEqual(listed.map((n) => [n.metadata.name, n.status.nodeInfo.kubeletVersion, n.status.nodeInfo.containerRuntimeVersion]).sort(), [
            [MASTER, VERSION, "containerd://1.6.20"],
            [WORKER(0), VERSION, "containerd://1.6.20"],
        ]);
        const pods = JSON.parse(await kubectl("get", "pods", "-n", "kube-system", "-o", "json")).items as any[];
        const controlPlane = pods.filter((p) => p.spec.nodeName === MASTER && p.metadata.annotations?.["kubernetes.io/config.source"] === "file");
        assert.deepEqual(controlPlane.map((p) => [p.metadata.labels.component, p.status.phase]).sort(), CONTROL_PLANE.map((c) => [c, "Running"]), "the static Pods of kubeadm's manifests, running");
        const apiServerCgroup = await inside(MASTER, "cat /proc/$(pgrep -xo kube-apiserver)/cgroup");
        // Seen from the test machine: the host's own cgroup (host-init.sh) is where its systemd's tree starts.
        assert.match(
            apiServerCgroup,
            new RegExp(`^\\d+:name=systemd:/k8s-vnf-kv-[0-9a-f]+-${MASTER}/kubepods\\.slice/kubepods-burstable\\.slice/kubepods-burstable-pod[0-9a-f_]+\\.slice/cri-containerd-[0-9a-f]{64}\\.scope$`, "m"),
            `a container in a systemd scope below the kubelet's kubepods slice, in the host's own cgroup: ${apiServerCgroup}`,
        );
        assert.match(await inside(WORKER(0), "readlink /var/lib/kubelet/pki/kubelet-client-current.pem"), /kubelet-client-\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\.pem/, "the worker's client certificate, issued through its bootstrap token");
        assert.equal((await kubectl("get", "configmap", "-n", "kube-system", "k8s-vnf-lab-pod-network", "-o", "jsonpath={.data.cni}")).trim(), "none yet", "the CNI manifest applied");
    });

    it("the VIM's token is the cluster admin's; a tenant's token acts in its namespaces only, the real API server refusing the rest", async () => {
        const all = stack.outputs();
        credentials.push(all.vimToken, ...Object.values(all.tenantTokens as Record<string, string>));
        const vim = all.vim as { endpoint: string; caCertificate: string };
        assert.equal((await realKubectl(tokenKubeconfig(vim, all.vimToken), ["auth", "can-i", "*", "*", "--all-namespaces"])).trim(), "yes");
        const tenant = tokenKubeconfig(vim, all.tenantTokens["team-a"]);
        assert.equal((await realKubectl(tenant, ["auth", "can-i", "create", "deployments", "-n", "team-a-cnf"])).trim(), "yes");
        await assert.rejects(realKubectl(tenant, ["get", "nodes"]), /forbidden/);
        await assert.rejects(realKubectl(tenant, ["get", "configmaps", "-n", "default"]), /forbidden/);
    });

    it("scale out: a second worker joins; scale in: it is drained by the real kubectl, its Node deleted, kubeadm reset, its VM deleted", async () => {
        stack.set("workers.count", 2);
        await stack.up();
        assert.deepEqual((await nodes()).map((n) => n.metadata.name).sort(), [MASTER, WORKER(0), WORKER(1)]);
        assert.equal((await inside(WORKER(1), "cat /etc/kubernetes/pki/ca.crt")).trim(), (stack.outputs().vim as { caCertificate: string }).caCertificate.trim(), "the cluster's CA");
        stack.set("workers.count", 1);
        await stack.up();
        assert.deepEqual((await nodes()).map((n) => n.metadata.name).sort(), [MASTER, WORKER(0)]);
        assert.deepEqual(api.servers().map((s) => s.name).sort(), [MASTER, WORKER(0)]);
    });

    it("a second up changes nothing", async () => {
        const since = stack.steps.length;
        const result = await stack.up();
        assert.deepEqual(stack.stepsOf(since, /./).filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`), []);
        assert.deepEqual(Object.keys(result.changes), ["same"]);
    });

    it("destroy: every resource deleted, no lab host left", async () => {
        await stack.destroy();
        assert.deepEqual(stack.state().filter((r) => r.type !== "pulumi:pulumi:Stack"), []);
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });
});
