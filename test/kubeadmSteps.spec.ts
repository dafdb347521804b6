import { strict as assert } from "node:assert";
import { controlPlaneMemberStep } from "../providers/kubernetes/controlPlaneMember";
import { kubeadmInitStep } from "../providers/kubernetes/kubeadmInit";
import { podNetworkStep } from "../providers/kubernetes/podNetwork";
import { workerMemberStep } from "../providers/kubernetes/workerMember";
import { ConnectError, SshTarget } from "../providers/transport/ssh";
import { INIT_SETTINGS } from "./fixtures/kubeadmInit";
import { envelope, HASH, joins, NO_SESSION, quickApiRetries, World } from "./support/scriptedCluster";


describe("kubeadm steps against a scripted cluster", () => {
    describe("a member whose Node was deleted joins again (docs/architecture.md: refresh drops it, the next up joins it)", () => {
        /** A master and worker w-0 (as `state`, whose Node `inCluster` says whether the cluster has); runs create on w-0. */
        async function createWorker(state: "fresh" | "worker", inCluster: boolean): Promise<World> {
            const w = new World();
            const master = w.machine("10.0.0.5", "m-0", "master");
            const worker = w.machine("10.0.0.7", "w-0", state);
            if (inCluster) w.nodes.add("w-0");
            else w.nodes.delete("w-0");
            const inputs = { ...envelope(worker), vmId: "vm", nodeName: "w-0", endpoint: "10.0.0.5:6443", caCertHash: HASH, controlPlanes: [w.ref(master.host)], drainTimeoutSeconds: 60 };
            await workerMemberStep.create(w.session(worker.host), inputs, w.hosts());
            assert.ok(w.nodes.has("w-0"));
            return w;
        }

        it("worker: it still has kubelet.conf, so it is reset first, then joins", async () => {
            assert.deepEqual(joins(await createWorker("worker", false), "10.0.0.7"), ["reset", "join"]);
        });

        it("worker: joined and in the cluster, create changes nothing", async () => {
            assert.deepEqual(joins(await createWorker("worker", true), "10.0.0.7"), []);
        });

        it("worker: a new VM under a name the cluster still has: the old Node goes, the new VM joins without a reset", async () => {
            assert.deepEqual(joins(await createWorker("fresh", true), "10.0.0.7"), ["join"]);
        });

        const masterInputs = (w: World, self: SshTarget, name: string, peers: string[]) => ({
            ...envelope(self),
            vmId: "vm",
            nodeName: name,
            address: self.host,
            apiServerPort: 6443,
            endpoint: "10.0.0.100:16443",
            caCertHash: HASH,
            peers: peers.map((p) => w.ref(p)),
            loadBalanced: true,
        });

        it("master (HA): its manifests and etcd data would fail the join's preflight, so it is reset first (its etcd member goes), then joins the control plane through a peer and is back in every peer's HAProxy", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const m1 = w.machine("10.0.0.6", "m-1", "master");
            w.nodes.delete("m-1");
            await controlPlaneMemberStep.create(w.session(m1.host), masterInputs(w, m1, "m-1", [m0.host]), w.hosts());
            assert.deepEqual(joins(w, m1.host), ["reset", "join"]);
            assert.ok(w.nodes.has("m-1"));
            assert.deepEqual([...w.etcd.keys()].sort(), ["m-0", "m-1"]);
            assert.ok(w.calls.includes(`${m0.host} script server-state m-1 ready`));
        });

        it("master: the only one, joined but without its Node, is refused with advice; nothing is reset", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            w.nodes.delete("m-0");
            await assert.rejects(controlPlaneMemberStep.create(w.session(m0.host), masterInputs(w, m0, "m-0", []), w.hosts()), /m-0 joined once, but the cluster has no Node of it.*restart its kubelet.*heal the entire cluster \(heal\.generation\)/);
            assert.deepEqual(joins(w, m0.host), []);
        });

        it("master delete: a peer that left etcd a moment ago (masters leaving at once, an entire-cluster heal) gives way to the next", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const m1 = w.machine("10.0.0.6", "m-1", "master");
            w.machine("10.0.0.7", "m-2", "master");
            w.etcd.delete("m-0");
            await controlPlaneMemberStep.deleteAcross!(w.hosts(), { ...masterInputs(w, m1, "m-1", [m0.host, "10.0.0.7"]), hostKeyFingerprint: m1.hostKeyFingerprint, nodeStatus: "Ready" });
            assert.deepEqual([...w.etcd.keys()], ["m-2"]);
            assert.ok(!w.nodes.has("m-1"));
            assert.deepEqual(joins(w, m1.host), ["reset"]);
        });

        it("master delete: when no peer can take it out (the others left etcd too), the delete still resets it and succeeds", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const m1 = w.machine("10.0.0.6", "m-1", "master");
            w.etcd.delete("m-0");
            await controlPlaneMemberStep.deleteAcross!(w.hosts(), { ...masterInputs(w, m1, "m-1", [m0.host]), hostKeyFingerprint: m1.hostKeyFingerprint, nodeStatus: "Ready" });
            assert.deepEqual(joins(w, m1.host), ["reset"]);
        });

        describe("the VIP moving under an etcdctl run through a peer (keepalived; the exec's stream ends in an i/o timeout)", () => {
            quickApiRetries();
            /** m-1 leaves through m-0 while `lost` loses a stream; it is out of etcd after. */
            const leaveLosing = async (lost: World["lostExecStreams"][number]) => {
                const w = new World();
                const m0 = w.machine("10.0.0.5", "m-0", "master");
                const m1 = w.machine("10.0.0.6", "m-1", "master");
                w.lostExecStreams = [lost];
                await controlPlaneMemberStep.deleteAcross!(w.hosts(), { ...masterInputs(w, m1, "m-1", [m0.host]), hostKeyFingerprint: m1.hostKeyFingerprint, nodeStatus: "Ready" });
                assert.deepEqual([...w.etcd.keys()], ["m-0"]);
                return { w, m0 };
            };

            it("master delete: the member list is tried again through the same peer, and the member is removed", async () => {
                const { w, m0 } = await leaveLosing({ match: / member list /, applied: false });
                assert.equal(w.calls.filter((c) => c.startsWith(`${m0.host} `) && / member list /.test(c)).length, 2);
            });

            it("master delete: a removal that applied before its answer was lost is tried again, finds no such member, and counts as removed", async () => {
                const { w } = await leaveLosing({ match: / member remove /, applied: true });
                const etcdctl = w.calls.filter((c) => / etcdctl /.test(c)).map((c) => / member (list|remove) /.exec(c)![1]);
                assert.deepEqual(etcdctl, ["list", "remove", "remove", "list"], "the second removal finds no such member; the list again says it is gone");
            });

            it("master join on a new VM: taking out what the previous member left, through a peer, survives a removal whose answer was lost", async () => {
                const w = new World();
                const m0 = w.machine("10.0.0.5", "m-0", "master");
                const m1 = w.machine("10.0.0.6", "m-1", "fresh");
                w.nodes.add("m-1");
                w.etcd.set("m-1", "7");
                w.lostExecStreams = [{ match: / member remove /, applied: true }];
                await controlPlaneMemberStep.create(w.session(m1.host), masterInputs(w, m1, "m-1", [m0.host]), w.hosts());
                assert.deepEqual(joins(w, m1.host), ["join"]);
                assert.notEqual(w.etcd.get("m-1"), "7", "a new member");
            });
        });

        it("master delete: etcd refusing the removal through one peer is no removal; the next peer takes it out", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const m1 = w.machine("10.0.0.6", "m-1", "master");
            w.machine("10.0.0.7", "m-2", "master");
            w.refusedEtcdRemovals = 1;
            await controlPlaneMemberStep.deleteAcross!(w.hosts(), { ...masterInputs(w, m1, "m-1", [m0.host, "10.0.0.7"]), hostKeyFingerprint: m1.hostKeyFingerprint, nodeStatus: "Ready" });
            assert.deepEqual([...w.etcd.keys()].sort(), ["m-0", "m-2"]);
            assert.ok(w.calls.some((c) => c.startsWith("10.0.0.7 ") && / member remove /.test(c)), "removed through m-2");
        });

        it("worker delete while an entire-cluster heal resets the master under it: the drain fails as the cluster goes, which is no failure; the worker is reset", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const worker = w.machine("10.0.0.7", "w-0", "worker");
            w.drainEnds = "resetMeanwhile";
            const outs = { ...envelope(worker), vmId: "vm", nodeName: "w-0", endpoint: "10.0.0.5:6443", caCertHash: HASH, controlPlanes: [w.ref(m0.host)], drainTimeoutSeconds: 60, nodeStatus: "Ready" as const };
            await workerMemberStep.deleteAcross!(w.hosts(), outs);
            assert.deepEqual(joins(w, worker.host), ["reset"]);
            w.machine("10.0.0.5", "m-0", "master");
            w.drainEnds = "timeout";
            await assert.rejects(workerMemberStep.deleteAcross!(w.hosts(), outs), /drain of w-0 failed, so the node and its VM stay/, "a drain failing on a live control plane still fails");
        });

        it("master-0 right after init is a member already, asked of itself: its peers have not joined yet", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const m1 = w.machine("10.0.0.6", "m-1", "fresh");
            await controlPlaneMemberStep.create(w.session(m0.host), masterInputs(w, m0, "m-0", [m1.host]), w.hosts());
            assert.deepEqual(joins(w, m0.host), []);
        });
    });

    describe("the init works through the masters' current host keys, never a session of its own", () => {
        const initState = (w: World, masters: string[]) => ({
            ...envelope({ host: masters[0], username: "ubuntu", password: "pw" }),
            ...INIT_SETTINGS,
            controlPlanes: masters.map((m) => w.ref(m)),
            kubeconfig: "k",
            joinToken: "t",
            caCertHash: HASH,
        });

        it("after master-0's VM was replaced (new host keys, pinned by its node step), refresh, update and delete reach it", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master", "SHA256:healed-vm");
            w.machine("10.0.0.6", "m-1", "master");
            const state = initState(w, ["10.0.0.5", "10.0.0.6"]);
            assert.equal(kubeadmInitStep.ownHost, false);
            assert.deepEqual(await kubeadmInitStep.read(NO_SESSION, state, w.hosts()), { caCertHash: HASH });
            const healed = { ...state, controlPlanes: ["10.0.0.5", "10.0.0.6"].map((m) => w.ref(m)) };
            assert.deepEqual(await kubeadmInitStep.update(NO_SESSION, state, healed, w.hosts()), { kubeconfig: "k", joinToken: "t", caCertHash: HASH });
            await kubeadmInitStep.deleteAcross!(w.hosts(), state);
            assert.deepEqual(joins(w, "10.0.0.5"), ["reset"]);
            assert.ok(w.logins.every((t) => t.hostKeyFingerprint === w.machines.get(t.host)!.key), "every login pinned to the host's current key");
        });

        it("refresh with master-0 down asks the next master", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master");
            w.machine("10.0.0.6", "m-1", "master");
            w.machines.get("10.0.0.5")!.up = false;
            assert.deepEqual(await kubeadmInitStep.read(NO_SESSION, initState(w, ["10.0.0.5", "10.0.0.6"]), w.hosts()), { caCertHash: HASH });
        });

        it("refresh: the cluster is gone only when every master answers and none is a control-plane node; none answering fails the refresh", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "fresh");
            w.machine("10.0.0.6", "m-1", "fresh");
            const state = initState(w, ["10.0.0.5", "10.0.0.6"]);
            assert.equal(await kubeadmInitStep.read(NO_SESSION, state, w.hosts()), undefined);
            for (const m of w.machines.values()) m.up = false;
            await assert.rejects(kubeadmInitStep.read(NO_SESSION, state, w.hosts()), ConnectError);
        });

        it("delete after an entire-cluster heal: master-0 is another machine by then (another key), so nothing is reset and the delete succeeds", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "fresh", "SHA256:newer-vm");
            const state = initState(w, ["10.0.0.5"]);
            state.controlPlanes[0].connection.hostKeyFingerprint = "SHA256:first-vm";
            await kubeadmInitStep.deleteAcross!(w.hosts(), state);
            assert.deepEqual(joins(w, "10.0.0.5"), []);
        });
    });

    describe("the pod network: applied on the first master that answers, by its current host key", () => {
        const networkState = (w: World, masters: string[]) => ({
            ...envelope({ host: masters[0], username: "ubuntu", password: "pw" }),
            cniManifest: "https://example.com/calico.yaml",
            proxy: { httpProxy: "", httpsProxy: "http://user:s3cret@proxy.example:3128", noProxy: "10.0.0.0/8" },
            caCertHash: HASH,
            controlPlanes: masters.map((m) => w.ref(m)),
        });

        it("create applies the manifest on a control-plane node; the proxy goes in the script's environment, never its arguments", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master");
            await podNetworkStep.create(NO_SESSION, networkState(w, ["10.0.0.5"]), w.hosts());
            assert.deepEqual(w.calls.filter((c) => c.includes(" script ")), ["10.0.0.5 script apply https://example.com/calico.yaml 60 5"]);
            assert.equal(w.scriptEnvs.at(-1)!.https_proxy, "http://user:s3cret@proxy.example:3128");
            assert.ok(w.calls.every((c) => !c.includes("s3cret")), "no command carries the proxy's password");
        });

        it("with master-0 down it goes through the next master; an update re-applies only a new manifest or proxy", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master");
            w.machine("10.0.0.6", "m-1", "master");
            w.machines.get("10.0.0.5")!.up = false;
            const state = networkState(w, ["10.0.0.5", "10.0.0.6"]);
            await podNetworkStep.update(NO_SESSION, state, { ...state, controlPlanes: [...state.controlPlanes].reverse() }, w.hosts());
            assert.equal(w.calls.filter((c) => c.includes(" script ")).length, 0, "new host keys change nothing in the cluster");
            await podNetworkStep.update(NO_SESSION, state, { ...state, cniManifest: "https://example.com/calico-2.yaml" }, w.hosts());
            assert.deepEqual(w.calls.filter((c) => c.includes(" script ")), ["10.0.0.6 script apply https://example.com/calico-2.yaml 60 5"]);
        });

        it("refresh: the network is there while its cluster is (the same CA); another cluster or none means it is gone", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master");
            const state = networkState(w, ["10.0.0.5"]);
            assert.deepEqual(await podNetworkStep.read(NO_SESSION, state, w.hosts()), {});
            assert.equal(await podNetworkStep.read(NO_SESSION, { ...state, caCertHash: `sha256:${"e".repeat(64)}` }, w.hosts()), undefined);
            const fresh = new World();
            fresh.machine("10.0.0.5", "m-0", "fresh");
            assert.equal(await podNetworkStep.read(NO_SESSION, networkState(fresh, ["10.0.0.5"]), fresh.hosts()), undefined);
        });
    });
});

describe("a graceful stop and the start after it (nodeService.ts, through the membership steps' update)", () => {
    function cluster() {
        const w = new World();
        const master = w.machine("10.0.0.5", "m-0", "master");
        const worker = w.machine("10.0.0.7", "w-0", "worker");
        const inputs = { ...envelope(worker), vmId: "vm", nodeName: "w-0", endpoint: "10.0.0.5:6443", caCertHash: HASH, controlPlanes: [w.ref(master.host)], drainTimeoutSeconds: 60 };
        const update = (olds: object, news: object) => workerMemberStep.update(w.session(worker.host), { ...inputs, ...olds }, { ...inputs, ...news }, w.hosts());
        return { w, update };
    }
    const kubectlCalls = (w: World) => w.calls.filter((c) => / kubectl /.test(c)).map((c) => c.split(" ").slice(4, 6).join(" "));

    it("draining within the stop's timeout; a drain that runs out of time lets the stop go on", async () => {
        const { w, update } = cluster();
        await update({}, { drained: true, stopDrainTimeoutSeconds: 5 });
        assert.ok(w.calls.some((c) => / drain w-0 --ignore-daemonsets --delete-emptydir-data --timeout=5s$/.test(c)));
        w.drainEnds = "timeout";
        await update({}, { drained: true, stopDrainTimeoutSeconds: 5 });
    });

    it("any other drain failure stops the stop, saying why", async () => {
        const { w, update } = cluster();
        w.drainEnds = "unmanaged";
        await assert.rejects(update({}, { drained: true, stopDrainTimeoutSeconds: 5 }), /w-0 could not be drained for the stop, so its VM keeps running[\s\S]*cannot delete Pods that declare no controller/);
    });

    it("the start uncordons a drained node once it is Ready; an undrained one is left alone", async () => {
        const { w, update } = cluster();
        await update({ drained: true, stopDrainTimeoutSeconds: 5 }, { drained: false });
        assert.deepEqual(kubectlCalls(w), ["get node", "uncordon w-0"]);
        const other = cluster();
        await other.update({ drained: false }, { drained: false });
        assert.deepEqual(kubectlCalls(other.w), []);
    });
});
