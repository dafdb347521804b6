/**
 * A single-master kubeadm cluster on lab hosts (flavour simple, with a proxy and a zone), driven as a user drives
 * it: stack config set, then the real Pulumi CLI (tools/build.sh) runs the program (`up`, `refresh`, `destroy`)
 * with its OpenStack plugin against the lab OpenStack API, whose servers are lab hosts, and the real Kubernetes
 * plugin against the master's real API server (etcd and kube-apiserver started by the kubeadm stand-in's init).
 * kubeadm, kubelet and kubectl are otherwise the lab's stand-ins (their calls recorded, Nodes and labels in
 * files): what this suite checks is what the program writes and runs on the hosts, and the errors it gives a
 * single master. The real kubelet's cluster is realKubelet.lab.spec.ts.
 */
import { strict as assert } from "node:assert";
import { Lab } from "./lab/lab";
import { clusterState, managedFilesFingerprint } from "./support/clusterState";
import { failure, skipAfterFirstFailure, useLab } from "./support/labSuite";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { realClusterStack, suiteApi } from "./support/realCluster";
import { RealStack } from "./support/realStack";
import { builtTools, useBuiltTools } from "./support/tools";


/** The stack's config (image, flavor and network are the lab API's: realClusterStack). */
function labConfig(lab: Lab): Record<string, unknown> {
    return {
        vnfName: "lab",
        flavour: "simple",
        masters: { count: 1, password: lab.password },
        workers: { count: 2, maxCount: 20, password: lab.password },
        kubernetes: { cniManifest: "https://projectcalico.example/calico.yaml" },
    };
}

describe("kubeadm cluster on lab hosts: simple (1 master, 2 workers) with a proxy and a zone, the real Pulumi CLI against the lab OpenStack API", function () {
    useBuiltTools();
    this.timeout(600_000);
    let api: LabOpenStackApi | undefined;
    const suite = useLab([], { secrets: () => [api?.credentials.password ?? ""] });
    let stack: RealStack;
    let state: ReturnType<typeof clusterState>;
    const ip = (n: string) => suite.lab.host(n).address;

    skipAfterFirstFailure();

    before(async function () {
        if (!suite.lab) this.skip();
        // The master runs the real control plane (etcd and kube-apiserver built by tools/build.sh), which the real
        // Kubernetes plugin reaches for the cluster's VIM account; the kubeadm and kubelet stand-ins do the rest.
        const tools = builtTools();
        suite.lab.giveTools({ kube: tools.bins.kube, etcd: tools.bins.etcd });
        api = await suiteApi(suite, "simple");
        ({ stack } = await realClusterStack(suite, "simple", () => labConfig(suite.lab), api));
        stack.set("proxy", { httpProxy: "http://proxy.example:3128", httpsProxy: "http://user:p%40ss@proxy.example:3128", noProxy: ["10.0.0.0/8", ".example.com"], k8sNodeCidr: `${suite.lab.subnet}.0/24` });
        stack.set("workers.availabilityZone", "az-2");
        state = clusterState(suite.lab, "simple");
    });

    it("instantiate: the endpoint is the master's API server; no HAProxy; workers get zone labels only", async () => {
        const result = await stack.up();
        assert.deepEqual(state.nodes(), ["lab-master-0", "lab-worker-0", "lab-worker-1"]);
        assert.match(String(result.outputs.kubeconfig.value), new RegExp(`server: https://${ip("lab-master-0").replace(/\./g, "\\.")}:6443`));
        assert.equal(await suite.lab.inside("lab-master-0", "grep -c 'Written by k8s-vnf' /etc/haproxy/haproxy.cfg || true"), "0\n", "Debian's own haproxy.cfg, untouched");
        const labels = state.labels("lab-worker-1");
        assert.equal(labels["topology.kubernetes.io/zone"], "az-2");
        assert.equal(labels["kubernetes.io/zone"], "az-2");
        assert.equal(labels["CIS-node"], undefined);
    });

    it("/etc/hosts: entries exactly once", async () => {
        const lines = (await suite.lab.inside("lab-worker-0", "cat /etc/hosts")).split("\n");
        assert.equal(lines.filter((l) => l === `${ip("lab-master-0")} lab-master-0`).length, 1);
    });

    it("proxy: apt, containerd and kubelet get it; no_proxy holds CIDRs and cluster addresses, never one entry per address", async () => {
        assert.equal(await suite.lab.inside("lab-worker-0", "cat /etc/apt/apt.conf.d/95k8s-vnf-proxy"), 'Acquire::http::Proxy "http://proxy.example:3128";\nAcquire::https::Proxy "http://user:p%40ss@proxy.example:3128";\n');
        const dropIn = await suite.lab.inside("lab-worker-0", "cat /etc/systemd/system/containerd.service.d/http-proxy.conf");
        assert.match(dropIn, /Environment="HTTPS_PROXY=http:\/\/user:p%%40ss@proxy\.example:3128"/, "systemd would expand a single %");
        const noProxy = /NO_PROXY=([^"]*)"/.exec(dropIn)![1].split(",");
        assert.deepEqual(noProxy, ["10.0.0.0/8", ".example.com", "127.0.0.1", "localhost", ".svc", ".cluster.local", "192.168.0.0/16", "10.96.0.0/12", `${suite.lab.subnet}.0/24`, ip("lab-master-0")]);
        assert.equal(await suite.lab.inside("lab-worker-0", "cmp /etc/systemd/system/containerd.service.d/http-proxy.conf /etc/systemd/system/kubelet.service.d/http-proxy.conf && echo same"), "same\n");
    });

    it("kernel settings go through modprobe and sysctl (recorded by the lab's guards; only the network namespace's net.* settings applied, the rest being machine-wide)", async () => {
        const calls = state.calls().filter((c) => c.startsWith("lab-worker-1 ") && / (modprobe|sysctl) /.test(c));
        assert.deepEqual(calls, ["lab-worker-1 modprobe overlay", "lab-worker-1 modprobe br_netfilter", "lab-worker-1 sysctl -p /etc/sysctl.d/99-k8s-vnf.conf"]);
        assert.match(await suite.lab.inside("lab-worker-1", "cat /etc/modules-load.d/k8s-vnf.conf /etc/sysctl.d/99-k8s-vnf.conf"), /overlay\nbr_netfilter\nnet\.bridge\.bridge-nf-call-iptables = 1\n/);
        assert.equal(await suite.lab.inside("lab-worker-1", "cat /proc/sys/net/ipv4/ip_forward"), "1\n", "the host's own forwarding on");
    });

    it("a new Kubernetes version is refused before any node changes, naming both versions", async () => {
        const files = await Promise.all(["lab-master-0", "lab-worker-0"].map((h) => managedFilesFingerprint(suite.lab, h)));
        const since = stack.steps.length;
        stack.set("kubernetes.version", "1.32.0");
        try {
            const error = await failure(suite, () => stack.up());
            assert.match(error.message, /kubernetes\.version changed from 1\.31\.4 to 1\.32\.0/);
            assert.deepEqual(stack.steps.slice(since).filter((s) => s.op === "update" && /-node$/.test(s.name)).map((s) => s.name), [], "no node step started");
            assert.ok(!stack.output.some((l) => l.includes("installing kubelet, kubeadm and kubectl 1.32.0")));
            assert.deepEqual(await Promise.all(["lab-master-0", "lab-worker-0"].map((h) => managedFilesFingerprint(suite.lab, h))), files);
        } finally {
            stack.set("kubernetes.version", "1.31.4");
        }
        await stack.up();
    });

    it("a single master whose Node was deleted is not reset: the error says how to recover", async () => {
        await suite.lab.inside("lab-master-0", "kubectl --kubeconfig /etc/kubernetes/admin.conf delete node lab-master-0 --ignore-not-found");
        await stack.refresh();
        const callsBefore = state.calls().length;
        const error = await failure(suite, () => stack.up());
        assert.match(error.message, /lab-master-0 joined once, but the cluster has no Node of it.*heal the entire cluster \(heal\.generation\)/s);
        assert.deepEqual(state.calls().slice(callsBefore).filter((c) => c.startsWith("lab-master-0 kubeadm reset")), []);
    });

    it("a replaced single master cannot rejoin (`up --replace` of its VM): the error says to heal the entire cluster", async () => {
        const vm = stack.state().find((r) => r.urn.endsWith("::lab-master-0-vm"))!;
        const error = await failure(suite, () => stack.up({ replace: [vm.urn] }));
        assert.match(error.message, /a single-master cluster cannot heal its master node by node .*heal the entire cluster \(heal\.generation\)/);
    });

    it("destroy after the failed runs deletes every resource; no lab host is left", async () => {
        await stack.destroy();
        assert.deepEqual(stack.state(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });
});
