/**
 * The kubeadm cluster lifecycle of an HA cluster (podaffinity: 3 masters behind a VIP, 3 workers) on lab hosts,
 * driven as a user drives it: set stack config, run the real program through the test engine (`up`, `refresh`,
 * `destroy`). Every VM the program creates is a lab host; every step runs its real provider in the real
 * dynamic-provider host; the engine orders them by Pulumi's rules. Nothing here wires a step's inputs.
 *
 * Why the test engine and not the real CLI here: under the real CLI the cluster's VIM account is made by the real
 * Kubernetes plugin, which needs a real API server through the VIP. With the kubeadm and kubelet stand-ins the
 * lab runs a real control plane on one master only (a control-plane join needs the real kubelet and etcd
 * membership), so an HA cluster of stand-ins has no API server that outlives master-0's heal. The HA cluster
 * under the real CLI is realKubeletHa.lab.spec.ts, with the real kubelet, etcd and control-plane joins:
 * instantiate, the heals of master-1 and master-0, change_flavour, destroy; a single master under the real
 * CLI with these stand-ins is kubeadmSingleMaster.lab.spec.ts. What stays here is what those cannot reach as
 * cheaply: exact step orders, drift, several masters healed at once, a failed drain on scale-in, an HA
 * cluster's entire heal. The compute host a worker's label names comes from FakeOpenStack (the engine answers
 * the servers itself, so the lab OpenStack API does not know them).
 */
import { strict as assert } from "node:assert";
import { Lab } from "./lab/lab";
import { FakeOpenStack } from "./support/fakeOpenStack";
import { LabStack } from "./support/labStack";
import { failure, LabSuite, useLab } from "./support/labSuite";
import { clusterState, managedFilesFingerprint } from "./support/clusterState";

/** HAProxy's runtime admin state of each backend server on a master: 0 = ready, 1 = maintenance. */
async function backendStates(suite: LabSuite, master: string): Promise<Record<string, string>> {
    const out = await suite.lab.inside(master, "echo 'show servers state kubernetes-apiserver' | socat stdio unix-connect:/run/haproxy/admin.sock");
    return Object.fromEntries(out.split("\n").filter((l) => /^\d+ kubernetes-apiserver /.test(l)).map((l) => l.split(" ")).map((f) => [f[3], f[6]]));
}


/** A cluster stack's config on the lab: ports take lab addresses; the nodes' login is the lab's. */
function labConfig(lab: Lab, flavour: string, masters: number, workers: number): Record<string, unknown> {
    return {
        vnfName: "lab",
        flavour,
        image: "lab-image",
        flavor: "lab-flavor",
        network: { networkId: "lab-net", subnetId: "lab-subnet" },
        ...(masters > 1 ? { controlPlane: { vip: `${lab.subnet}.200` } } : {}),
        masters: { count: masters, password: lab.password },
        workers: { count: workers, maxCount: 20, password: lab.password },
        kubernetes: { cniManifest: "https://projectcalico.example/calico.yaml" },
    };
}

const node = (role: "master" | "worker", i: number) => `lab-${role}-${i}`;
const MASTERS = [0, 1, 2].map((i) => node("master", i));
const WORKERS = [0, 1, 2, 3, 4].map((i) => node("worker", i));
const KUBEADM_CALL = / kubeadm (init|join|reset)| service-| kubectl (apply|drain|delete)/;

describe("kubeadm cluster on lab hosts: podaffinity (3 masters, 3 workers), the real program through the test engine", function () {
    this.timeout(300_000);
    let openstack: FakeOpenStack;
    const suite = useLab([], { secrets: () => [openstack?.credentials.password ?? ""] });
    let stack: LabStack;
    let state: ReturnType<typeof clusterState>;
    /** Nova's scheduler: the compute host of each VM, by name when it is created. */
    const computeHost = new Map([0, 1, 2, 3, 4].map((i) => [node("worker", i), `compute-${"abcde"[i]}`]));
    const ip = (n: string) => suite.lab.host(n).address;

    before(async function () {
        if (!suite.lab) this.skip();
        openstack = await FakeOpenStack.start();
        const os = openstack.credentials;
        stack = new LabStack(suite.lab, "podaffinity", labConfig(suite.lab, "podaffinity", 3, 3), {
            env: { OS_AUTH_URL: os.authUrl, OS_USERNAME: os.username, OS_PASSWORD: os.password, OS_PROJECT_NAME: os.projectName, OS_REGION_NAME: os.region ?? "" },
            onServer: (s) => openstack.hosts.set(s.id, computeHost.get(s.name) ?? "compute-default"),
        });
        stack.set("kubernetes.drainTimeout", 2);
        stack.set("workers.availabilityZone", "az-1");
        state = clusterState(suite.lab, "podaffinity");
    });
    after(async () => {
        suite.captured.push(...(stack?.output ?? []));
        await openstack?.stop();
    });

    it("instantiate: VMs become hosts, one kubeadm init, masters join one at a time, workers in parallel, all Ready", async () => {
        const result = await stack.up();
        assert.deepEqual(suite.lab.hostNames().sort(), [...MASTERS, ...WORKERS.slice(0, 3)].sort());
        assert.deepEqual(state.nodes(), [...MASTERS, ...WORKERS.slice(0, 3)].sort());
        assert.deepEqual(state.etcdMembers(), MASTERS);
        for (const n of state.nodes()) assert.equal(state.node(n).status, "Ready", n);
        assert.deepEqual(state.applied(), ["https://projectcalico.example/calico.yaml"], "the CNI applied once");
        const kubeadm = state.calls().filter((c) => / kubeadm (init|join) --config /.test(c)).map((c) => c.split(" ").slice(0, 3).join(" "));
        assert.deepEqual(kubeadm.filter((c) => c.includes("master")), ["lab-master-0 kubeadm init", "lab-master-1 kubeadm join", "lab-master-2 kubeadm join"]);
        assert.equal(kubeadm.length, 6);
        const memberCreates = stack.steps.filter((s) => s.op === "create" && /master-\d-member$/.test(s.name)).map((s) => s.name);
        assert.deepEqual(memberCreates, ["lab-kubeadm-master-1-member", "lab-kubeadm-master-2-member", "lab-kubeadm-master-0-member"], "one join at a time; master-0, a member by the init, confirmed last");
        const started = (name: string) => stack.steps.find((s) => s.name === name && s.op === "create")!;
        const network = started("lab-kubeadm-pod-network");
        for (const w of WORKERS.slice(0, 3).map((_, i) => started(`lab-kubeadm-worker-${i}-member`))) assert.ok(w.started >= network.ended!, `${w.name} joined after the pod network was applied`);
        const init = stack.outputsOf("lab-kubeadm-init");
        assert.match(init.caCertHash, /^sha256:[0-9a-f]{64}$/);
        assert.match(init.joinToken, /^[0-9a-f]{6}\.[0-9a-f]{16}$/);
        assert.equal(result.outputs.kubeconfig.secret, true, "the kubeconfig is a secret stack output");
        assert.match(String(result.outputs.kubeconfig.value), new RegExp(`server: https://${suite.lab.subnet.replace(/\./g, "\\.")}\\.200:16443`));
        assert.deepEqual((result.outputs.vnfcResources.value as { id: string }[]).map((v) => v.id), [...MASTERS, ...WORKERS.slice(0, 3)]);
    });

    it("the masters run HAProxy over every master and keepalived, checked by the real binaries; the VIP is on exactly one master", async () => {
        for (const [i, m] of MASTERS.entries()) {
            assert.deepEqual(Object.keys(await backendStates(suite, m)).sort(), MASTERS, m);
            assert.match(await suite.lab.inside(m, "pgrep -x haproxy >/dev/null && pgrep -x keepalived >/dev/null && echo both running"), /both running/);
            assert.match(await suite.lab.inside(m, "grep -E 'priority|virtual_router_id' /etc/keepalived/keepalived.conf"), new RegExp(`virtual_router_id 200\n\\s+priority ${150 - i}\n`));
        }
        // keepalived elects a holder by VRRP over the lab bridge: a master that started first may hold the VIP
        // until the highest priority preempts it (preempt is keepalived's default); give it some adverts.
        let holders: string[] = [];
        for (let attempt = 0; attempt < 80; attempt++) {
            holders = [];
            for (const m of MASTERS) if ((await suite.lab.inside(m, "ip -o -4 addr show dev eth0")).includes(`${suite.lab.subnet}.200/32`)) holders.push(m);
            if (holders.length === 1 && holders[0] === "lab-master-0") break;
            await new Promise((r) => setTimeout(r, 250));
        }
        assert.deepEqual(holders, ["lab-master-0"], "the highest priority holds the VIP");
    });

    it("nodes: exact /etc/hosts entries (itself and the masters), containerd with the systemd cgroup driver, pinned versions", async () => {
        const hosts = await suite.lab.inside("lab-worker-1", "cat /etc/hosts");
        const block = hosts.slice(hosts.indexOf("# BEGIN k8s-vnf"), hosts.indexOf("# END k8s-vnf"));
        assert.deepEqual(block.trim().split("\n").slice(1), [`${ip("lab-worker-1")} lab-worker-1`, ...MASTERS.map((m) => `${ip(m)} ${m}`)]);
        assert.equal(hosts.split("\n").filter((l) => l === `${ip("lab-worker-1")} lab-worker-1`).length, 1, "the image's own line for the host is not kept twice");
        assert.match(await suite.lab.inside("lab-worker-1", "grep SystemdCgroup /etc/containerd/config.toml"), /SystemdCgroup = true/);
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

    it("refresh reads every step back unchanged, and the next up changes nothing: no init or join, no restart, same files", async () => {
        const hosts = [...MASTERS, ...WORKERS.slice(0, 3)];
        const before = await Promise.all(hosts.map((h) => managedFilesFingerprint(suite.lab, h)));
        const callsBefore = state.calls().length;
        await stack.refresh();
        assert.equal(stack.outputsOf("lab-kubeadm-worker-1-node").kubernetesVersion, "1.31.4");
        const since = stack.steps.length;
        const result = await stack.up();
        assert.deepEqual(Object.keys(result.changes), ["same"], "every resource the same");
        assert.deepEqual(stack.steps.slice(since).filter((s) => s.op !== "same"), []);
        assert.deepEqual(await Promise.all(hosts.map((h) => managedFilesFingerprint(suite.lab, h))), before);
        assert.deepEqual(state.calls().slice(callsBefore).filter((c) => KUBEADM_CALL.test(c)), []);
    });

    it("scale-out by 2 creates only the new workers' VMs and steps, and touches only those two hosts and one master", async () => {
        const logins = () => Object.fromEntries([...MASTERS, ...WORKERS.slice(0, 3)].map((h) => [h, suite.lab.logins(h)]));
        const before = logins();
        const since = stack.steps.length;
        stack.set("workers.count", 5);
        await stack.up();
        const after = logins();
        assert.deepEqual(Object.keys(after).filter((h) => after[h] !== before[h]), ["lab-master-0"], "of the existing hosts only the master handing out join tokens");
        const changed = stack.steps.slice(since).filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`);
        assert.deepEqual(changed.sort(), ["lab-worker-3", "lab-worker-4"].flatMap((w) => [`create ${w}`, `create ${w}-port`, `create ${w}-vm`, `create lab-kubeadm-${w.slice(4)}-labels`, `create lab-kubeadm-${w.slice(4)}-member`, `create lab-kubeadm-${w.slice(4)}-node`]).sort());
        assert.equal(state.node("lab-worker-4").status, "Ready");
        assert.equal(state.labels("lab-worker-4")["CIS-node"], "compute-e");
    });

    it("scale-in drains before it deletes; a failed drain (a disruption budget) fails the delete and keeps the node and its VM", async () => {
        state.blockDrain("lab-worker-4", true);
        const callsBefore = state.calls().length;
        stack.set("workers.count", 3);
        const error = await failure(suite, () => stack.up());
        assert.match(error.message, /drain of lab-worker-4 failed, so the node and its VM stay/);
        const names = stack.state().map((r) => r.urn.split("::").pop());
        assert.ok(names.includes("lab-kubeadm-worker-4-member") && names.includes("lab-worker-4-vm"), "the member stays, and so does what it depends on");
        assert.ok(suite.lab.hostNames().includes("lab-worker-4") && state.nodes().includes("lab-worker-4"));
        assert.ok(!names.includes("lab-kubeadm-worker-3-member"), "the other worker left the cluster");
        assert.ok(names.includes("lab-worker-3-vm"), "the engine stops at the first failure: no further deletes start (no --continue-on-error)");
        const worker3 = state.calls().slice(callsBefore).filter((c) => c.includes("lab-worker-3")).map((c) => (c.includes(" drain ") ? "drain" : c.includes(" delete node ") ? "delete node" : c.includes("kubeadm reset") ? "reset" : "")).filter(Boolean);
        assert.deepEqual(worker3, ["drain", "delete node", "reset"]);

        state.blockDrain("lab-worker-4", false);
        await stack.up();
        assert.deepEqual(state.nodes(), [...MASTERS, ...WORKERS.slice(0, 3)].sort());
        assert.deepEqual(suite.lab.hostNames().sort(), [...MASTERS, ...WORKERS.slice(0, 3)].sort());
    });

    it("healing a worker drains it first, replaces its VM, rejoins and relabels it with the new VM's compute host", async () => {
        const healed = "lab-worker-1";
        const callsBefore = state.calls().length;
        computeHost.set(healed, "compute-b2");
        stack.set("heal.nodes.worker-1", 1);
        await stack.up();
        const steps = state.calls().slice(callsBefore).filter((c) => c.includes(healed) && / (drain|delete node|join)/.test(c)).map((c) => (c.includes(" drain ") ? "drain" : c.includes("delete node") ? "delete node" : "join"));
        assert.deepEqual(steps, ["drain", "delete node", "join"]);
        assert.equal(state.node(healed).status, "Ready");
        assert.equal(state.labels(healed)["CIS-node"], "compute-b2", "the new VM's compute host");
    });

    it("healing master-0 and master-2 at once (HA): they rejoin through a peer one at a time, master-0 last; the cluster is not re-created; the init and pod network steps still reach it", async () => {
        const callsBefore = state.calls().length;
        const hash = stack.outputsOf("lab-kubeadm-init").caCertHash;
        stack.set("heal.nodes.master-0", 1);
        stack.set("heal.nodes.master-2", 1);
        await stack.up();
        assert.deepEqual(state.etcdMembers(), MASTERS);
        for (const m of ["lab-master-0", "lab-master-2"]) assert.equal(state.node(m).status, "Ready", m);
        assert.deepEqual(state.calls().slice(callsBefore).filter((c) => / kubeadm (init|join) --config /.test(c)).map((c) => c.split(" ").slice(0, 3).join(" ")), ["lab-master-2 kubeadm join", "lab-master-0 kubeadm join"]);
        await stack.refresh();
        assert.equal(stack.outputsOf("lab-kubeadm-init").caCertHash, hash, "the same cluster");
        stack.set("kubernetes.cniManifest", "https://projectcalico.example/calico-2.yaml");
        await stack.up();
        assert.deepEqual(state.applied(), ["https://projectcalico.example/calico.yaml", "https://projectcalico.example/calico-2.yaml"], "the pod network step still reaches the cluster");
    });

    it("a master whose Node was deleted is reset and joins again through a peer, back in etcd and every HAProxy", async () => {
        await suite.lab.inside("lab-master-0", "kubectl --kubeconfig /etc/kubernetes/admin.conf delete node lab-master-1 --ignore-not-found");
        await stack.refresh();
        assert.ok(!stack.state().some((r) => r.urn.endsWith("::lab-kubeadm-master-1-member")), "refresh dropped the membership");
        const callsBefore = state.calls().length;
        await stack.up();
        const own = state.calls().slice(callsBefore).filter((c) => c.startsWith("lab-master-1 kubeadm ")).map((c) => c.split(" ").slice(1, 3).join(" "));
        assert.deepEqual(own, ["kubeadm reset", "kubeadm join"]);
        assert.deepEqual(state.etcdMembers(), MASTERS);
        assert.equal(state.node("lab-master-1").status, "Ready");
        for (const peer of MASTERS) assert.equal((await backendStates(suite, peer))["lab-master-1"], "0", `${peer}: lab-master-1 in HAProxy`);
    });

    it("labels follow the cluster while the first master is down: kubectl runs on the next master that answers", async () => {
        await suite.lab.killSshd("lab-master-0");
        try {
            openstack.hosts.set(stack.state().find((r) => r.urn.endsWith("::lab-worker-2-vm"))!.id, "compute-c2");
            await stack.refresh(["lab-kubeadm-worker-2-labels"]);
            assert.equal(stack.outputsOf("lab-kubeadm-worker-2-labels").computeHost, "compute-c2");
            const callsBefore = state.calls().length;
            await stack.up();
            assert.equal(state.labels("lab-worker-2")["CIS-node"], "compute-c2");
            assert.ok(state.calls().slice(callsBefore).some((c) => c.startsWith("lab-master-1 kubectl") && c.includes("label node lab-worker-2")));
        } finally {
            await suite.lab.startSshd("lab-master-0");
        }
        // Its HAProxy and keepalived went with its sshd (the lab host's processes): refresh and up restore them.
        await stack.refresh();
        await stack.up();
        assert.match(await suite.lab.inside("lab-master-0", "pgrep -x haproxy >/dev/null && echo running"), /running/);
    });

    it("refresh sees drift: a stopped HAProxy, a missing backend, a NotReady or missing node, a worker that moved; the next up repairs it", async () => {
        await suite.lab.inside("lab-master-2", "pkill -x haproxy; sleep 0.5");
        await suite.lab.inside("lab-master-1", "sed -i '/server lab-master-2 /d' /etc/haproxy/haproxy.cfg");
        state.setNode("lab-worker-2", "status", "NotReady");
        openstack.hosts.set(stack.state().find((r) => r.urn.endsWith("::lab-worker-0-vm"))!.id, "compute-z");
        await stack.refresh();
        assert.equal(stack.outputsOf("lab-kubeadm-master-2-api-lb").haproxy, "stopped");
        assert.deepEqual(stack.outputsOf("lab-kubeadm-master-1-api-lb").backends.map((b: { name: string }) => b.name), ["lab-master-0", "lab-master-1"]);
        assert.equal(stack.outputsOf("lab-kubeadm-worker-2-member").nodeStatus, "NotReady");
        assert.equal(stack.outputsOf("lab-kubeadm-worker-0-labels").computeHost, "compute-z");

        const since = stack.steps.length;
        await stack.up();
        const updated = stack.steps.slice(since).filter((s) => s.op === "update").map((s) => s.name);
        for (const r of ["lab-kubeadm-master-2-api-lb", "lab-kubeadm-master-1-api-lb", "lab-kubeadm-worker-0-labels"]) assert.ok(updated.includes(r), `${r} updated`);
        assert.match(await suite.lab.inside("lab-master-2", "pgrep -x haproxy >/dev/null && echo running"), /running/);
        assert.match(await suite.lab.inside("lab-master-1", "grep -c '^    server ' /etc/haproxy/haproxy.cfg"), /^3/);
        assert.equal(state.labels("lab-worker-0")["CIS-node"], "compute-z");

        await suite.lab.inside("lab-master-0", "kubectl --kubeconfig /etc/kubernetes/admin.conf delete node lab-worker-2 --ignore-not-found");
        await stack.refresh();
        assert.ok(!stack.state().some((r) => r.urn.endsWith("::lab-kubeadm-worker-2-member")), "a node missing from the cluster is gone for refresh");
        const callsBefore = state.calls().length;
        await stack.up();
        assert.deepEqual(state.calls().slice(callsBefore).filter((c) => c.startsWith("lab-worker-2 kubeadm ")).map((c) => c.split(" ").slice(1, 3).join(" ")), ["kubeadm reset", "kubeadm join"], "reset, then joined again");
        assert.equal(state.node("lab-worker-2").status, "Ready");
        assert.equal(state.labels("lab-worker-2")["topology.kubernetes.io/zone"], "az-1", "labelled again");
    });

    it("operate: a graceful stop drains every node (a blocked drain lets the stop go on after its timeout), then shuts every VM off; the start powers them on and uncordons each node once Ready", async () => {
        const nodes = [...MASTERS, ...WORKERS.slice(0, 3)];
        const vms = () => Object.fromEntries(stack.state().filter((r) => r.type === "openstack:compute/instance:Instance").map((r) => [r.outputs.name, r.id]));
        const vmsBefore = vms();
        const stepsOf = (since: number) => stack.steps.slice(since).filter((s) => s.op !== "same");

        state.blockDrain("lab-worker-1", true);
        let since = stack.steps.length;
        let callsBefore = state.calls().length;
        stack.set("operate", { vnfState: "STARTED", drained: true, drainTimeout: 2 });
        await stack.up();
        state.blockDrain("lab-worker-1", false);
        for (const n of nodes) assert.equal(state.node(n).unschedulable, "true", `${n} cordoned`);
        assert.equal(state.calls().slice(callsBefore).filter((c) => / kubectl .* drain /.test(c)).length, nodes.length, "every node drained");
        assert.ok(stack.output.some((l) => /lab-worker-1\] cordoned; its drain did not finish within 2 s/.test(l)), "the blocked drain is reported, and the stop went on");
        assert.deepEqual([...new Set(stepsOf(since).map((s) => `${s.op} ${s.name.replace(/\d/, "N")}`))].sort(), ["update lab-kubeadm-master-N-member", "update lab-kubeadm-worker-N-member"], "the VMs still run");

        since = stack.steps.length;
        callsBefore = state.calls().length;
        stack.set("operate.vnfState", "STOPPED");
        await stack.up();
        assert.deepEqual(stepsOf(since).map((s) => `${s.op} ${s.name}`).sort(), nodes.map((n) => `update ${n}-vm`).sort(), "only the VMs change: nothing reaches a stopped host");
        for (const n of nodes) assert.equal(state.node(n).status, "NotReady", `${n}'s kubelet stopped with its VM`);
        await assert.rejects(suite.lab.inside("lab-worker-0", "true"), "the host's processes are gone");
        assert.deepEqual(vms(), vmsBefore, "the same VMs, only shut off");

        since = stack.steps.length;
        callsBefore = state.calls().length;
        stack.set("operate", { vnfState: "STARTED", drained: false });
        await stack.up();
        for (const n of nodes) assert.deepEqual([state.node(n).status, state.node(n).unschedulable], ["Ready", "false"], n);
        const uncordons = state.calls().slice(callsBefore).filter((c) => / kubectl .* uncordon /.test(c)).map((c) => c.split(" ").at(-1));
        assert.deepEqual(uncordons.sort(), nodes, "each node uncordoned");
        assert.deepEqual(vms(), vmsBefore, "no VM replaced");
        assert.ok(stepsOf(since).every((s) => /-(vm|member)$/.test(s.name)), "only the VMs and the memberships change");
        assert.equal((await suite.lab.inside("lab-worker-0", "echo up")).trim(), "up");

        since = stack.steps.length;
        await stack.up();
        assert.deepEqual(stepsOf(since), [], "the next up changes nothing");
    });

    it("healing the entire cluster replaces every VM and creates a new cluster, which gets its pod network anew", async () => {
        const hash = stack.outputsOf("lab-kubeadm-init").caCertHash;
        const since = stack.steps.length;
        stack.set("heal.generation", 1);
        await stack.up();
        assert.notEqual(stack.outputsOf("lab-kubeadm-init").caCertHash, hash, "a new cluster CA");
        assert.ok(stack.stepsOf(since, /^lab-kubeadm-pod-network$/).some((s) => s.op === "create-replacement"), "the pod network step replaced");
        assert.deepEqual(state.applied(), ["https://projectcalico.example/calico-2.yaml"], "applied on the new cluster");
        assert.deepEqual(state.nodes(), [...MASTERS, ...WORKERS.slice(0, 3)].sort());
        for (const n of state.nodes()) assert.equal(state.node(n).status, "Ready", n);
    });

    it("destroy: the memberships and labels go with the cluster (no drain, no etcd removal), every resource is deleted, no lab host is left", async () => {
        const callsBefore = state.calls().length;
        await stack.destroy();
        assert.deepEqual(stack.state(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
        assert.deepEqual(state.calls().slice(callsBefore).filter((c) => / drain |member remove/.test(c)), []);
    });
});
