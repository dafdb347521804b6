/**
 * The HA flavour with server groups (podaffinity: 3 masters behind a VIP and 1 worker, each kind in a Nova
 * anti-affinity server group) run by the real Pulumi CLI, engine and plugins on lab hosts that boot systemd,
 * with the real kubelet, kubeadm, kubectl, etcd and control plane (see realKubelet.lab.spec.ts for the hosts,
 * and what differs from a VM): the masters join the control plane one at a time through the VIP, which
 * keepalived holds on one master and HAProxy spreads over every API server; a master's heal takes its etcd
 * member out through a peer (etcdctl in the peer's etcd Pod) before its VM goes, and the new VM joins again,
 * master-0 (the one `kubeadm init` ran on) included, without the cluster being made anew. A change of flavour
 * to complex, as the LCM service plans it, moves each VM out of its server group the same way, one per update.
 * The pod network is flannel's (realKubelet.lab.spec.ts): every Node Ready.
 */
import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { parseVnfConfig } from "../config/load";
import { planFlavourChange } from "../service/flavourChange";
import { skipAfterFirstFailure, useLab } from "./support/labSuite";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { adminKubectl, clusterReady, CONTROL_PLANE, kubeletNodes, POD_NETWORK, realClusterStack } from "./support/realCluster";
import { PROJECT_DIR } from "./support/program";
import { RealStack } from "./support/realStack";
import { useBuiltTools } from "./support/tools";

const CLUSTER = "rh";
const MASTERS = [0, 1, 2].map((i) => `${CLUSTER}-master-${i}`);
const WORKER = `${CLUSTER}-worker-0`;
const VERSION = "v1.31.4";

describe("the real Pulumi CLI and plugins on lab hosts booting systemd: the HA flavour with the real kubelet, etcd and control-plane joins", function () {
    useBuiltTools();
    this.timeout(900_000);
    let api: LabOpenStackApi;
    const credentials: string[] = [];
    const suite = useLab([], { bootSystemd: true, secrets: () => [api?.credentials.password ?? "", ...credentials] });
    let stack: RealStack;
    // An address of lab-net's pool (.10-.126) that the servers, taking the lowest free ones, do not reach.
    const vip = () => `${suite.lab.subnet}.120`;

    const kubectl = adminKubectl(() => stack, credentials);
    const inside = (host: string, command: string) => suite.lab.inside(host, command);
    const address = (server: string) => api.servers().find((s) => s.name === server)!.address;
    /** Whether `master` holds the VIP (keepalived's address on its interface). */
    const holdsVip = async (master: string) => (await inside(master, "ip -o -4 addr show")).includes(` ${vip()}/`);
    /** etcd's members as the etcd Pod of `via` lists them (etcdctl with the Pod's own client certificate). */
    const etcdMembers = async (via: string) => {
        const tls = ["--cacert=/etc/kubernetes/pki/etcd/ca.crt", "--cert=/etc/kubernetes/pki/etcd/server.crt", "--key=/etc/kubernetes/pki/etcd/server.key"];
        const out = await kubectl("-n", "kube-system", "exec", `etcd-${via}`, "--", "etcdctl", ...tls, "member", "list", "-w", "json");
        return (JSON.parse(out).members as { name: string }[]).map((m) => m.name).sort();
    };
    const controlPlanePods = async () =>
        (JSON.parse(await kubectl("get", "pods", "-n", "kube-system", "-o", "json")).items as any[])
            .filter((p) => p.metadata.annotations?.["kubernetes.io/config.source"] === "file" && p.status.phase === "Running")
            .map((p) => `${p.metadata.labels.component} ${p.spec.nodeName}`)
            .sort();
    const everyControlPlane = () => MASTERS.flatMap((m) => CONTROL_PLANE.map((c) => `${c} ${m}`)).sort();
    /**
     * Heals `node` while the real kubectl reads a ConfigMap through the VIP every 2 s: how many reads were
     * answered and how many refused while the update ran.
     */
    const healWhileReading = async (node: string) => {
        stack.set(`heal.nodes.${node}`, 1);
        const up = stack.up();
        const seen = { answered: 0, refused: 0 };
        let done = false;
        void up.finally(() => (done = true)).catch(() => undefined);
        while (!done) {
            await kubectl("get", "configmap", "kept", "-n", "default").then(
                () => seen.answered++,
                () => seen.refused++,
            );
            await new Promise((r) => setTimeout(r, 2_000));
        }
        await up;
        return seen;
    };
    /**
     * The cluster after `healed`'s heal: its etcd member was removed through a peer, three etcd members, the
     * control plane and HAProxy over every API server on every master, every Node Ready, the ConfigMap kept.
     */
    const wholeAgain = async (healed: string) => {
        assert.ok(stack.output.some((l) => l.includes(`[ControlPlaneMember ${healed}] etcd member removed (via `)), `${healed}'s etcd member removed through a peer`);
        assert.deepEqual(await etcdMembers(MASTERS[1]), MASTERS, "every master an etcd member again");
        assert.deepEqual(await controlPlanePods(), everyControlPlane());
        for (const master of MASTERS) assert.equal((await inside(master, "grep -cE '^\\s+server ' /etc/haproxy/haproxy.cfg")).trim(), "3", `${master}: HAProxy over every API server`);
        assert.deepEqual((await clusterReady(kubectl)).map((n) => n.metadata.name).sort(), [...MASTERS, WORKER], "every Node Ready again");
        assert.equal((await kubectl("get", "configmap", "kept", "-n", "default", "-o", "jsonpath={.data.written}")).trim(), "before the heals", "etcd kept its data");
    };

    skipAfterFirstFailure();

    before(async function () {
        if (!suite.lab) this.skip();
        this.timeout(300_000);
        const { cniManifest } = await kubeletNodes(suite, VERSION);
        ({ api, stack } = await realClusterStack(suite, CLUSTER, () => ({
            flavour: "podaffinity",
            controlPlane: { vip: vip() },
            masters: { count: 3, password: suite.lab.password },
            workers: { count: 1, maxCount: 3, password: suite.lab.password, availabilityZone: "nova" },
            kubernetes: { version: VERSION.slice(1), cniManifest, podCidr: POD_NETWORK.podCidr, drainTimeout: 30 },
            // The provider and the program's compute-host lookup both find the lab's credentials in a clouds.yaml.
        }), undefined, { credentials: "clouds.yaml" }));
    });

    it("up: kubeadm init on master-0, the other masters join the control plane through the VIP one at a time; every Node Ready on the pod network; three etcd members; HAProxy over every API server and the VIP on exactly one master", async () => {
        await stack.up();
        const nodes = await clusterReady(kubectl);
        assert.deepEqual(nodes.map((n) => [n.metadata.name, "node-role.kubernetes.io/control-plane" in n.metadata.labels]).sort(), [...MASTERS.map((m) => [m, true]), [WORKER, false]]);
        assert.deepEqual(await controlPlanePods(), everyControlPlane(), "each master runs the control plane as static Pods");
        assert.deepEqual(await etcdMembers(MASTERS[0]), MASTERS);
        assert.match(await stack.adminKubeconfig(), new RegExp(`server: https://${vip().replace(/\./g, "\\.")}:\\d+\\n`), "the cluster's endpoint is the VIP");
        for (const master of MASTERS) {
            assert.equal(await inside(master, "systemctl is-active haproxy keepalived"), "active\nactive\n", master);
            const backends = (await inside(master, "grep -E '^\\s+server ' /etc/haproxy/haproxy.cfg")).trim().split("\n");
            assert.equal(backends.length, 3, `${master}'s HAProxy: ${backends.join("; ")}`);
        }
        const holders = (await Promise.all(MASTERS.map(async (m) => ((await holdsVip(m)) ? m : "")))).filter(Boolean);
        assert.equal(holders.length, 1, `the VIP on exactly one master: ${holders.join(", ")}`);
        const hosts = await inside(WORKER, "cat /etc/hosts");
        const block = hosts.slice(hosts.indexOf("# BEGIN k8s-vnf"), hosts.indexOf("# END k8s-vnf")).trim().split("\n").slice(1);
        assert.deepEqual(block, [WORKER, ...MASTERS].map((n) => `${address(n)} ${n}`), "the worker's /etc/hosts: itself and every master, once");
    });

    it("podaffinity: the masters in one anti-affinity server group, on three compute hosts; the worker in another, labelled with its compute host and zone; the masters with neither label", async () => {
        const groups = api.serverGroups().map((g) => [g.policy, g.members.sort()]);
        assert.deepEqual(groups.sort(), [["anti-affinity", [...MASTERS]], ["anti-affinity", [WORKER]]], "each kind in a server group of its own (Nova's POST /os-server-groups and the servers' scheduler hint)");
        const placed = new Map(api.servers().map((s) => [s.name, s.computeHost]));
        assert.equal(new Set(MASTERS.map((m) => placed.get(m))).size, 3, `one master per compute host: ${MASTERS.map((m) => placed.get(m)).join(", ")}`);
        const labels = new Map((JSON.parse(await kubectl("get", "nodes", "-o", "json")).items as any[]).map((n) => [n.metadata.name, n.metadata.labels]));
        assert.equal(labels.get(WORKER)["CIS-node"], placed.get(WORKER), "the worker's compute host, as Nova reports it");
        assert.equal(labels.get(WORKER)["topology.kubernetes.io/zone"], "nova");
        for (const m of MASTERS) assert.deepEqual([labels.get(m)["CIS-node"], labels.get(m)["topology.kubernetes.io/zone"]], [undefined, undefined], m);
    });

    it("drift: the worker live-migrated to another compute host (the real `openstack` client); refresh reads the new host into its labels step; the next up relabels its Node; then nothing changes", async () => {
        const from = api.servers().find((s) => s.name === WORKER)!.computeHost;
        const to = ["compute-1", "compute-2", "compute-3"].find((h) => h !== from)!;
        await promisify(execFile)("openstack", ["--os-compute-api-version", "2.30", "server", "migrate", "--live-migration", "--host", to, "--wait", WORKER], { env: { PATH: process.env.PATH!, ...api.env() } });
        await stack.refresh();
        assert.equal(stack.outputsOf(`${CLUSTER}-kubeadm-worker-0-labels`).computeHost, to, "refresh read Nova's new host");
        const since = stack.steps.length;
        await stack.up();
        assert.deepEqual(stack.steps.slice(since).filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`), [`update ${CLUSTER}-kubeadm-worker-0-labels`], "only the labels step changes");
        const labels = JSON.parse(await kubectl("get", "node", WORKER, "-o", "json")).metadata.labels;
        assert.equal(labels["CIS-node"], to, "the Node relabelled by the real kubectl");
        await stack.preview(["--expect-no-changes"]);
    });

    it("heal master-1: its Node and etcd member taken out through a peer before its VM goes; the new VM joins the control plane again; the API answers through the VIP throughout", async () => {
        await kubectl("create", "configmap", "kept", "-n", "default", "--from-literal=written=before the heals");
        const since = stack.steps.length;
        const { answered, refused } = await healWhileReading("master-1");
        assert.ok(answered > 0 && refused <= 2, `the API through the VIP during the heal: ${answered} answers, ${refused} refusals`);
        const order = stack.stepsOf(since, /master-1/).filter((s) => s.op !== "same" && s.op !== "update");
        const at = (op: string, name: string) => order.findIndex((s) => s.op === op && s.name === name);
        const [member, vm] = [`${CLUSTER}-kubeadm-master-1-member`, `${MASTERS[1]}-vm`];
        assert.ok(at("delete-replaced", member) >= 0 && at("delete-replaced", member) < at("delete-replaced", vm), `the membership goes before the VM: ${order.map((s) => `${s.op} ${s.name}`).join("; ")}`);
        assert.ok(at("create-replacement", vm) < at("create-replacement", member), "the new VM joins after it is made");
        await wholeAgain(MASTERS[1]);
    });

    it("heal master-0, where kubeadm init ran: its etcd member removed through a peer, it joins the control plane again; the cluster is not made anew; the API answers through the VIP throughout, another master holding it while master-0 is away", async () => {
        const { caCertificate } = stack.outputs().vim as { caCertificate: string };
        const before = api.servers().find((s) => s.name === MASTERS[0])!.id;
        const since = stack.steps.length;
        const holdersSeen = new Set<string>();
        let healing = true;
        const watch = (async () => {
            while (healing) {
                // master-0 is gone for a while: a host that does not answer holds nothing.
                for (const m of MASTERS) if (await holdsVip(m).catch(() => false)) holdersSeen.add(m);
                await new Promise((r) => setTimeout(r, 2_000));
            }
        })();
        const { answered, refused } = await healWhileReading("master-0").finally(() => (healing = false));
        await watch;
        assert.ok([...holdersSeen].some((m) => m !== MASTERS[0]), `another master held the VIP during the heal: ${[...holdersSeen].join(", ")}`);
        assert.notEqual(api.servers().find((s) => s.name === MASTERS[0])!.id, before, "a new VM");
        const init = stack.stepsOf(since, new RegExp(`^${CLUSTER}-kubeadm-init$`)).map((s) => s.op);
        assert.deepEqual(init.filter((op) => op !== "same" && op !== "update"), [], `the init is kept (its masters' host keys updated), never run again: ${init.join(", ")}`);
        assert.equal((stack.outputs().vim as { caCertificate: string }).caCertificate, caCertificate, "the same cluster CA");
        assert.ok(answered > 0 && refused <= 5, `the API through the VIP during the heal (keepalived moves the VIP within a few adverts): ${answered} answers, ${refused} refusals`);
        await wholeAgain(MASTERS[0]);
        const labels = JSON.parse(await kubectl("get", "node", MASTERS[0], "-o", "json")).metadata.labels;
        assert.ok("node-role.kubernetes.io/control-plane" in labels, "a control-plane node again");
        await stack.preview(["--expect-no-changes"]);
    });

    it("change_flavour podaffinity → complex, as the LCM service plans it: one VM replaced per update (the worker, master-1, master-2, master-0), each out of its server group and joined again; then no server group is left; the same cluster, whole", async () => {
        const { caCertificate } = stack.outputs().vim as { caCertificate: string };
        const { stages, config } = planFlavourChange(stack.config, parseVnfConfig(stack.config, { stackName: CLUSTER, baseDir: PROJECT_DIR }).spec, { newFlavourId: "complex" });
        const order = [WORKER, MASTERS[1], MASTERS[2], MASTERS[0]];
        assert.equal(stages.length + 1, order.length, "an update per VM");
        for (const [k, stage] of [...stages, config].entries()) {
            const since = stack.steps.length;
            stack.setAll(stage);
            await stack.up();
            const replaced = stack.stepsOf(since, /-vm$/).filter((s) => s.op === "create-replacement").map((s) => s.name.replace(/-vm$/, ""));
            assert.deepEqual(replaced, [order[k]], `update ${k + 1} replaces ${order[k]} only`);
        }
        assert.deepEqual(api.serverGroups(), [], "the server groups are gone");
        assert.equal((stack.outputs().vim as { caCertificate: string }).caCertificate, caCertificate, "the same cluster CA");
        assert.deepEqual(await etcdMembers(MASTERS[2]), MASTERS);
        assert.deepEqual(await controlPlanePods(), everyControlPlane());
        assert.deepEqual((await clusterReady(kubectl)).map((n) => n.metadata.name).sort(), [...MASTERS, WORKER]);
        assert.equal((await kubectl("get", "configmap", "kept", "-n", "default", "-o", "jsonpath={.data.written}")).trim(), "before the heals", "etcd kept its data");
        const labels = JSON.parse(await kubectl("get", "node", WORKER, "-o", "json")).metadata.labels;
        assert.equal(labels["CIS-node"], undefined, "complex has no compute-host label");
        await stack.preview(["--expect-no-changes"]);
    });

    it("destroy: every resource deleted, no lab host left", async () => {
        await stack.destroy();
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });
});
