import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { FakeOpenStack } from "./support/fakeOpenStack";
import { failure, LabSuite, useLab } from "./support/labSuite";
import { LabCluster, nodeName } from "./support/labCluster";

/** The stand-ins' shared cluster state (see test/lab/stand-ins/common.sh). */
function clusterState(suite: LabSuite) {
    const dir = suite.lab.clusterState;
    const list = (sub: string) => (fs.existsSync(path.join(dir, sub)) ? fs.readdirSync(path.join(dir, sub)).filter((f) => !f.includes(".")) : []).sort();
    const kv = (file: string): Record<string, string> =>
        Object.fromEntries(
            fs
                .readFileSync(file, "utf8")
                .trim()
                .split("\n")
                .filter(Boolean)
                .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
        );
    return {
        nodes: () => list("nodes"),
        node: (name: string) => kv(path.join(dir, "nodes", name)),
        setNode: (name: string, key: string, value: string) => {
            const file = path.join(dir, "nodes", name);
            const entries = { ...kv(file), [key]: value };
            fs.writeFileSync(file, Object.entries(entries).map(([k, v]) => `${k}=${v}\n`).join(""));
        },
        labels: (name: string) => kv(path.join(dir, "labels", name)),
        etcdMembers: () => list("etcd"),
        etcdId: (name: string) => fs.readFileSync(path.join(dir, "etcd", name), "utf8").trim(),
        calls: () => fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n"),
        applied: () => fs.readFileSync(path.join(dir, "applied"), "utf8").trim().split("\n"),
        blockDrain: (name: string, on: boolean) => (on ? fs.writeFileSync(path.join(dir, "drain-blocked", name), "") : fs.rmSync(path.join(dir, "drain-blocked", name), { force: true })),
    };
}

/** HAProxy's runtime admin state of each backend server on a master: 0 = ready, 1 = maintenance. */
async function backendStates(suite: LabSuite, master: string): Promise<Record<string, string>> {
    const out = await suite.lab.inside(master, "echo 'show servers state kubernetes-apiserver' | socat stdio unix-connect:/run/haproxy/admin.sock");
    return Object.fromEntries(out.split("\n").filter((l) => /^\d+ kubernetes-apiserver /.test(l)).map((l) => l.split(" ")).map((f) => [f[3], f[6]]));
}

/** What on a host the steps manage: compared before and after a re-run. */
const MANAGED_FILES = "/etc/hosts /etc/hostname /etc/containerd/config.toml /etc/sysctl.d/99-k8s-vnf.conf /etc/modules-load.d/k8s-vnf.conf /etc/haproxy/haproxy.cfg /etc/keepalived/keepalived.conf /etc/kubernetes/kubelet.conf";
const fingerprint = (suite: LabSuite, host: string) => suite.lab.inside(host, `for f in ${MANAGED_FILES}; do [ -f "$f" ] && sha256sum "$f"; done; true`);

const MASTERS = [0, 1, 2].map((i) => nodeName("master", i));
const WORKERS = [0, 1, 2, 3, 4].map((i) => nodeName("worker", i));

describe("kubeadm cluster on lab hosts: podaffinity (3 masters, workers) through the real provider hosts", function () {
    this.timeout(300_000);
    let openstack: FakeOpenStack;
    const suite = useLab([...MASTERS, ...WORKERS], { secrets: () => [openstack?.credentials.password ?? ""] });
    let cluster: LabCluster;
    let state: ReturnType<typeof clusterState>;

    before(async function () {
        if (!suite.lab) this.skip();
        openstack = await FakeOpenStack.start();
        cluster = new LabCluster(suite.lab, { masters: 3, workers: 3, flavour: "podaffinity", compute: openstack.credentials, config: { kubernetes: { drainTimeout: 2 }, workers: { availabilityZone: "az-1" } } });
        openstack.hosts.set(cluster.vmId("lab-worker-0"), "compute-a");
        openstack.hosts.set(cluster.vmId("lab-worker-1"), "compute-b");
        openstack.hosts.set(cluster.vmId("lab-worker-2"), "compute-c");
        await cluster.startProviders();
        state = clusterState(suite);
    });
    after(async () => {
        if (cluster) {
            suite.captured.push(cluster.output());
            cluster.stop();
        }
        await openstack?.stop();
    });

    it("instantiate: one kubeadm init, masters join one at a time, workers join in parallel, all Ready", async () => {
        await cluster.instantiate();
        assert.deepEqual(state.nodes(), [...MASTERS, ...WORKERS.slice(0, 3)].sort());
        assert.deepEqual(state.etcdMembers(), MASTERS);
        for (const n of state.nodes()) assert.equal(state.node(n).status, "Ready", n);
        assert.deepEqual(state.applied(), ["https://projectcalico.example/calico.yaml"], "the CNI applied once");
        const kubeadm = state.calls().filter((c) => / kubeadm (init|join) --config /.test(c)).map((c) => c.split(" ").slice(0, 3).join(" "));
        assert.deepEqual(kubeadm.filter((c) => c.includes("master")), ["lab-master-0 kubeadm init", "lab-master-1 kubeadm join", "lab-master-2 kubeadm join"]);
        assert.equal(kubeadm.length, 6);
        const order = cluster.calls.filter((c) => /create lab-master-\d-member/.test(c));
        assert.deepEqual(order, ["create lab-master-0-member", "create lab-master-1-member", "create lab-master-2-member"]);
        const outs = cluster.state.get("init")!;
        assert.match(String(outs.caCertHash), /^sha256:[0-9a-f]{64}$/);
        assert.match(String(outs.joinToken), /^[0-9a-f]{6}\.[0-9a-f]{16}$/);
        assert.match(String(outs.kubeconfig), new RegExp(`server: https://${cluster.vip().replace(/\./g, "\\.")}:16443`));
    });

    it("the masters run HAProxy over every master and keepalived, checked by the real binaries; the VIP is on exactly one master", async () => {
        for (const [i, m] of MASTERS.entries()) {
            assert.deepEqual(Object.keys(await backendStates(suite, m)).sort(), MASTERS, m);
            assert.match(await suite.lab.inside(m, "pgrep -x haproxy >/dev/null && pgrep -x keepalived >/dev/null && echo both running"), /both running/);
            assert.match(await suite.lab.inside(m, "grep -E 'priority|virtual_router_id' /etc/keepalived/keepalived.conf"), new RegExp(`virtual_router_id 200\n\\s+priority ${150 - i}\n`));
        }
        // keepalived elects a holder by VRRP over the lab bridge; give it a few adverts.
        let holders: string[] = [];
        for (let attempt = 0; attempt < 40; attempt++) {
            holders = [];
            for (const m of MASTERS) if ((await suite.lab.inside(m, "ip -o -4 addr show dev eth0")).includes(`${cluster.vip()}/32`)) holders.push(m);
            if (holders.length === 1) break;
            await new Promise((r) => setTimeout(r, 250));
        }
        assert.deepEqual(holders, ["lab-master-0"], "the highest priority holds the VIP");
    });

    it("nodes: exact /etc/hosts entries (itself and the masters), containerd with the systemd cgroup driver, pinned versions", async () => {
        const hosts = await suite.lab.inside("lab-worker-1", "cat /etc/hosts");
        const block = hosts.slice(hosts.indexOf("# BEGIN k8s-vnf"), hosts.indexOf("# END k8s-vnf"));
        const ip = (n: string) => suite.lab.host(n).address;
        assert.deepEqual(block.trim().split("\n").slice(1), [`${ip("lab-worker-1")} lab-worker-1`, ...MASTERS.map((m) => `${ip(m)} ${m}`)]);
        assert.equal(hosts.split("\n").filter((l) => l === `${ip("lab-worker-1")} lab-worker-1`).length, 1, "the image's own line for the host is not kept twice");
        assert.match(await suite.lab.inside("lab-worker-1", "grep SystemdCgroup /etc/containerd/config.toml"), /SystemdCgroup = true/);
        const read = await cluster.read("lab-worker-1-node");
        assert.equal(read.props.kubernetesVersion, "1.31.4");
        assert.equal((await cluster.diff("lab-worker-1-node")).changes, "none");
    });

    it("podaffinity: each worker labelled with its compute host and zone (both keys); masters are not", async () => {
        assert.deepEqual(state.labels("lab-worker-0"), {
            "kubernetes.io/hostname": "lab-worker-0",
            "topology.kubernetes.io/zone": "az-1",
            "kubernetes.io/zone": "az-1",
            "CIS-node": "compute-a",
        });
        assert.equal(state.labels("lab-worker-2")["CIS-node"], "compute-c");
        assert.equal(state.labels("lab-master-0")["CIS-node"], undefined);
    });

    it("re-running every step (a retried up) changes nothing: no init or join, no restart, same files", async () => {
        const before = await Promise.all([...MASTERS, ...WORKERS.slice(0, 3)].map((h) => fingerprint(suite, h)));
        const callsBefore = state.calls().length;
        for (const r of cluster.graph()) assert.equal((await cluster.diff(r.name)).changes, "none", r.name);
        for (const r of cluster.graph()) await cluster.create(r.name);
        const after = await Promise.all([...MASTERS, ...WORKERS.slice(0, 3)].map((h) => fingerprint(suite, h)));
        assert.deepEqual(after, before);
        const newCalls = state.calls().slice(callsBefore);
        assert.deepEqual(newCalls.filter((c) => / kubeadm (init|join|reset)| service-| kubectl (apply|drain|delete)/.test(c) && !c.includes("calico")), []);
        assert.deepEqual(state.etcdMembers(), MASTERS);
    });

    it("scale-out by 2 creates only the new workers' steps, and touches only those two hosts and one master", async () => {
        const logins = () => Object.fromEntries([...MASTERS, ...WORKERS].map((h) => [h, suite.lab.logins(h)]));
        const before = logins();
        const callsBefore = cluster.calls.length;
        await cluster.scaleTo(5);
        const after = logins();
        const touched = Object.keys(after).filter((h) => after[h] !== before[h]).sort();
        assert.deepEqual(touched, ["lab-master-0", "lab-worker-3", "lab-worker-4"]);
        assert.deepEqual(cluster.calls.slice(callsBefore).sort(), ["create lab-worker-3-labels", "create lab-worker-3-member", "create lab-worker-3-node", "create lab-worker-4-labels", "create lab-worker-4-member", "create lab-worker-4-node"]);
        assert.equal(state.node("lab-worker-4").status, "Ready");
        assert.equal(state.labels("lab-worker-4")["CIS-node"], "compute-default");
    });

    it("scale-in drains before it deletes; a failed drain (a disruption budget) fails the delete and keeps the node", async () => {
        state.blockDrain("lab-worker-4", true);
        const callsBefore = state.calls().length;
        const error = await failure(suite, () => cluster.scaleTo(3));
        assert.match(error.message, /drain of lab-worker-4 failed, so the node and its VM stay/);
        assert.match(error.message, /disruption budget|global timeout reached: 2s/);
        assert.ok(cluster.state.has("lab-worker-4-member") && cluster.state.has("lab-worker-4-node"), "the engine keeps the member, so the VM is not deleted");
        assert.ok(state.nodes().includes("lab-worker-4"));
        assert.ok(!cluster.state.has("lab-worker-3-node"), "the other worker went");
        const worker3 = state.calls().slice(callsBefore).filter((c) => c.includes("lab-worker-3")).map((c) => (c.includes(" drain ") ? "drain" : c.includes(" delete node ") ? "delete node" : c.includes("kubeadm reset") ? "reset" : "")).filter(Boolean);
        assert.deepEqual(worker3, ["drain", "delete node", "reset"]);

        state.blockDrain("lab-worker-4", false);
        await cluster.scaleTo(3);
        assert.deepEqual(state.nodes(), [...MASTERS, ...WORKERS.slice(0, 3)].sort());
    });

    it("healing a master: out of etcd (exact member) and every peer's HAProxy, rejoined on a new VM, back in every peer's HAProxy", async () => {
        const healed = "lab-master-1";
        const oldId = state.etcdId(healed);
        await cluster.removeChain(healed);
        assert.deepEqual(state.etcdMembers(), ["lab-master-0", "lab-master-2"], "its etcd member removed by ID");
        assert.ok(!state.nodes().includes(healed));
        for (const peer of ["lab-master-0", "lab-master-2"]) assert.equal((await backendStates(suite, peer))[healed], "1", `${peer}: ${healed} in maintenance`);

        await cluster.rejoin(healed);
        assert.deepEqual(state.etcdMembers(), MASTERS);
        assert.notEqual(state.etcdId(healed), oldId, "a new member");
        assert.equal(state.node(healed).status, "Ready");
        for (const peer of MASTERS) assert.equal((await backendStates(suite, peer))[healed], "0", `${peer}: ${healed} back in HAProxy`);
        const joins = state.calls().filter((c) => c.startsWith(`${healed} kubeadm join`));
        assert.equal(joins.length, 2, "joined at instantiate and after the heal");
    });

    it("healing a worker drains it first, replaces its VM, rejoins and relabels it", async () => {
        const healed = "lab-worker-1";
        const callsBefore = state.calls().length;
        openstack.hosts.set("vm-lab-worker-1-1", "compute-b2");
        await cluster.heal(healed);
        const steps = state.calls().slice(callsBefore).filter((c) => c.includes(healed) && / (drain|delete node|join)/.test(c)).map((c) => (c.includes(" drain ") ? "drain" : c.includes("delete node") ? "delete node" : "join"));
        assert.deepEqual(steps, ["drain", "delete node", "join"]);
        assert.equal(state.node(healed).status, "Ready");
        assert.equal(state.labels(healed)["CIS-node"], "compute-b2", "the new VM's compute host");
    });

    it("labels follow the cluster while the first master is down: kubectl runs on the next master that answers", async () => {
        await suite.lab.killSshd("lab-master-0");
        try {
            openstack.hosts.set(cluster.vmId("lab-worker-2"), "compute-c2");
            await cluster.read("lab-worker-2-labels");
            assert.equal(await cluster.apply("lab-worker-2-labels"), "updated");
            assert.equal(state.labels("lab-worker-2")["CIS-node"], "compute-c2");
            assert.ok(state.calls().some((c) => c.startsWith("lab-master-1 kubectl") && c.includes("label node lab-worker-2")));
        } finally {
            await suite.lab.startSshd("lab-master-0");
        }
        // Its HAProxy and keepalived went with its sshd (the lab host's processes): refresh and update restore them.
        await cluster.read("lab-master-0-api-lb");
        assert.equal(await cluster.apply("lab-master-0-api-lb"), "updated");
    });

    it("refresh sees drift: a stopped HAProxy, a missing backend, a NotReady or missing node, a worker that moved; the next update repairs what it can", async () => {
        await suite.lab.inside("lab-master-2", "pkill -x haproxy; sleep 0.5");
        await cluster.read("lab-master-2-api-lb");
        assert.equal(cluster.state.get("lab-master-2-api-lb")!.haproxy, "stopped");
        assert.equal((await cluster.diff("lab-master-2-api-lb")).changes, "some");
        assert.equal(await cluster.apply("lab-master-2-api-lb"), "updated");
        assert.match(await suite.lab.inside("lab-master-2", "pgrep -x haproxy >/dev/null && echo running"), /running/);

        await suite.lab.inside("lab-master-1", "sed -i '/server lab-master-2 /d' /etc/haproxy/haproxy.cfg");
        await cluster.read("lab-master-1-api-lb");
        assert.deepEqual((cluster.state.get("lab-master-1-api-lb")!.backends as { name: string }[]).map((b) => b.name), ["lab-master-0", "lab-master-1"]);
        assert.equal(await cluster.apply("lab-master-1-api-lb"), "updated");
        assert.match(await suite.lab.inside("lab-master-1", "grep -c '^    server ' /etc/haproxy/haproxy.cfg"), /^3/);

        state.setNode("lab-worker-2", "status", "NotReady");
        await cluster.read("lab-worker-2-member");
        assert.equal(cluster.state.get("lab-worker-2-member")!.nodeStatus, "NotReady");

        openstack.hosts.set(cluster.vmId("lab-worker-0"), "compute-z");
        await cluster.read("lab-worker-0-labels");
        assert.equal(cluster.state.get("lab-worker-0-labels")!.computeHost, "compute-z");
        assert.equal((await cluster.diff("lab-worker-0-labels")).changes, "some", "moved: the next up relabels");
        await cluster.apply("lab-worker-0-labels");
        assert.equal(state.labels("lab-worker-0")["CIS-node"], "compute-z");

        const masterPrep = await suite.lab.inside("lab-master-0", "kubectl --kubeconfig /etc/kubernetes/admin.conf delete node lab-worker-2 --ignore-not-found");
        assert.match(masterPrep, /deleted/);
        assert.equal((await cluster.read("lab-worker-2-member")).id, "", "a node missing from the cluster is gone for refresh; the next up joins it again");
    });
});

describe("kubeadm cluster on lab hosts: simple (1 master, 2 workers) with a proxy and a zone", function () {
    this.timeout(300_000);
    const suite = useLab([nodeName("master", 0), nodeName("worker", 0), nodeName("worker", 1)]);
    let cluster: LabCluster;
    let state: ReturnType<typeof clusterState>;
    const ip = (n: string) => suite.lab.host(n).address;

    before(async function () {
        if (!suite.lab) this.skip();
        cluster = new LabCluster(suite.lab, {
            masters: 1,
            workers: 2,
            config: {
                proxy: { httpProxy: "http://proxy.example:3128", httpsProxy: "http://user:p%40ss@proxy.example:3128", noProxy: ["10.0.0.0/8", ".example.com"], k8sNodeCidr: `${suite.lab.subnet}.0/24` },
                workers: { availabilityZone: "az-2" },
            },
        });
        await cluster.startProviders();
        state = clusterState(suite);
        // What a cloud image may already have: the host's own line, and a line that only starts like an entry.
        await suite.lab.inside("lab-worker-0", `printf '%s lab-master-0\\n%s lab-master-00\\n' ${ip("lab-master-0")} ${ip("lab-master-0")} >> /etc/hosts`);
    });
    after(() => {
        if (!cluster) return;
        suite.captured.push(cluster.output());
        cluster.stop();
    });

    it("instantiate: the endpoint is the master's API server; no HAProxy; workers get zone labels only", async () => {
        await cluster.instantiate();
        assert.deepEqual(state.nodes(), ["lab-master-0", "lab-worker-0", "lab-worker-1"]);
        assert.match(String(cluster.state.get("init")!.kubeconfig), new RegExp(`server: https://${ip("lab-master-0").replace(/\./g, "\\.")}:6443`));
        assert.equal(await suite.lab.inside("lab-master-0", "grep -c 'Written by k8s-vnf' /etc/haproxy/haproxy.cfg || true"), "0\n", "Debian's own haproxy.cfg, untouched");
        const labels = state.labels("lab-worker-1");
        assert.equal(labels["topology.kubernetes.io/zone"], "az-2");
        assert.equal(labels["kubernetes.io/zone"], "az-2");
        assert.equal(labels["CIS-node"], undefined);
    });

    it("/etc/hosts: entries exactly once; a line that merely starts like an entry stays", async () => {
        const lines = (await suite.lab.inside("lab-worker-0", "cat /etc/hosts")).split("\n");
        assert.equal(lines.filter((l) => l === `${ip("lab-master-0")} lab-master-0`).length, 1);
        assert.equal(lines.filter((l) => l === `${ip("lab-master-0")} lab-master-00`).length, 1);
    });

    it("proxy: apt, containerd and kubelet get it; no_proxy holds CIDRs and cluster addresses, never one entry per address", async () => {
        assert.equal(await suite.lab.inside("lab-worker-0", "cat /etc/apt/apt.conf.d/95k8s-vnf-proxy"), 'Acquire::http::Proxy "http://proxy.example:3128";\nAcquire::https::Proxy "http://user:p%40ss@proxy.example:3128";\n');
        const dropIn = await suite.lab.inside("lab-worker-0", "cat /etc/systemd/system/containerd.service.d/http-proxy.conf");
        assert.match(dropIn, /Environment="HTTPS_PROXY=http:\/\/user:p%%40ss@proxy\.example:3128"/, "systemd would expand a single %");
        const noProxy = /NO_PROXY=([^"]*)"/.exec(dropIn)![1].split(",");
        assert.deepEqual(noProxy, ["10.0.0.0/8", ".example.com", "127.0.0.1", "localhost", ".svc", ".cluster.local", "192.168.0.0/16", "10.96.0.0/12", `${suite.lab.subnet}.0/24`, ip("lab-master-0")]);
        assert.equal(await suite.lab.inside("lab-worker-0", "cmp /etc/systemd/system/containerd.service.d/http-proxy.conf /etc/systemd/system/kubelet.service.d/http-proxy.conf && echo same"), "same\n");
    });

    it("kernel settings go through modprobe and sysctl (recorded by the lab's guards: they are machine-wide)", async () => {
        const calls = state.calls().filter((c) => c.startsWith("lab-worker-1 ") && / (modprobe|sysctl) /.test(c));
        assert.deepEqual(calls, ["lab-worker-1 modprobe overlay", "lab-worker-1 modprobe br_netfilter", "lab-worker-1 sysctl -p /etc/sysctl.d/99-k8s-vnf.conf"]);
        assert.match(await suite.lab.inside("lab-worker-1", "cat /etc/modules-load.d/k8s-vnf.conf /etc/sysctl.d/99-k8s-vnf.conf"), /overlay\nbr_netfilter\nnet\.bridge\.bridge-nf-call-iptables = 1\n/);
    });

    it("a new Kubernetes version is refused by the running cluster's init step, naming both versions", async () => {
        cluster.spec.kubernetes.version = "1.32.0";
        try {
            const error = await failure(suite, () => cluster.apply("init"));
            assert.match(error.message, /kubernetes\.version changed from 1\.31\.4 to 1\.32\.0: upgrading a running cluster is not done by this step/);
        } finally {
            cluster.spec.kubernetes.version = "1.31.4";
        }
    });

    it("a replaced single master cannot rejoin: the error says to heal the entire cluster", async () => {
        await cluster.removeChain("lab-master-0");
        const error = await failure(suite, () => cluster.rejoin("lab-master-0"));
        assert.match(error.message, /a single-master cluster cannot heal its master node by node .*heal the entire cluster \(heal\.generation\)/);
    });
});
