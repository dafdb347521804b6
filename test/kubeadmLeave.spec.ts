import { strict as assert } from "node:assert";
import { API_UNAVAILABLE, nodeStatus } from "../providers/kubernetes/kubeadm";
import { nodeLabelsStep } from "../providers/kubernetes/nodeLabels";
import { workerMemberStep } from "../providers/kubernetes/workerMember";
import { SshTarget } from "../providers/transport/ssh";
import { envelope, HASH, joins, quickApiRetries, World } from "./support/scriptedCluster";

describe("leaving a cluster whose API server is not there for a moment, or that an entire heal takes away (kubeadm.ts: kubectl; leavingCluster.ts: onControlPlaneWhileThere)", () => {
    quickApiRetries();
    const workerOuts = (w: World, worker: SshTarget, master: SshTarget) => ({ ...envelope(worker), vmId: "vm", nodeName: "w-0", endpoint: `${master.host}:6443`, caCertHash: HASH, controlPlanes: [w.ref(master.host)], drainTimeoutSeconds: 60, nodeStatus: "Ready" as const });
    /** A world of master m-0 (10.0.0.5) and worker w-0 (10.0.0.7), and the worker's membership as stored. */
    const oneMasterOneWorker = () => {
        const w = new World();
        const m0 = w.machine("10.0.0.5", "m-0", "master");
        const worker = w.machine("10.0.0.7", "w-0", "worker");
        return { w, m0, worker, leave: () => workerMemberStep.deleteAcross!(w.hosts(), workerOuts(w, worker, m0)) };
    };

    it("worker delete while an entire heal's reset has stopped the master's API server but not yet removed its kubeconfig (the real kubeadm stops the static Pods first): it waits, then takes the cluster as gone and resets the worker", async () => {
        const { w, worker, leave } = oneMasterOneWorker();
        w.resetRefusals = 2;
        await leave();
        assert.deepEqual(joins(w, worker.host), ["reset"]);
        assert.equal(w.calls.filter((c) => c.startsWith("10.0.0.5 kubectl ")).length, 3, "refused twice, then the kubeconfig is gone");
    });

    it("worker delete while an entire heal replaces the master's VM under the drain: the session goes, a new one finds another machine there, so the cluster is gone and the worker is reset", async () => {
        const { w, worker, leave } = oneMasterOneWorker();
        w.drainEnds = "vmReplacedMeanwhile";
        await leave();
        assert.deepEqual(joins(w, worker.host), ["reset"]);
    });

    it("worker delete while an entire heal replaces the master's VM just after the leave logged in: that session goes before it can ask what the master is, a new one finds another machine there, so the cluster is gone and the worker is reset", async () => {
        const { w, m0, worker, leave } = oneMasterOneWorker();
        w.replacedAfterLogin.add(m0.host);
        await leave();
        assert.deepEqual(joins(w, worker.host), ["reset"]);
    });

    it("worker delete after an entire heal replaced the master's VM already: another machine answers there, so the cluster is gone and the worker is reset", async () => {
        const w = new World();
        const m0 = w.machine("10.0.0.5", "m-0", "master");
        const worker = w.machine("10.0.0.7", "w-0", "worker");
        const outs = workerOuts(w, worker, m0);
        w.machine("10.0.0.5", "m-0", "fresh", "another-key");
        await workerMemberStep.deleteAcross!(w.hosts(), outs);
        assert.deepEqual(joins(w, worker.host), ["reset"]);
    });

    it("worker delete after an entire heal's reset of the master, its VM not yet replaced: the master answers with no kubeconfig and no API server manifest, so the cluster is gone and the worker is reset", async () => {
        const { w, m0, worker, leave } = oneMasterOneWorker();
        w.machines.get(m0.host)!.files.clear();
        await leave();
        assert.deepEqual(joins(w, worker.host), ["reset"]);
    });

    it("worker delete while a master that lost only its kubeconfig still runs the cluster (its API server manifest there): the delete fails, so the worker and its VM stay", async () => {
        const { w, m0, worker, leave } = oneMasterOneWorker();
        w.machines.get(m0.host)!.files.delete("/etc/kubernetes/admin.conf");
        await assert.rejects(leave(), /none of the control-plane nodes \(m-0\) answered/);
        assert.deepEqual(joins(w, worker.host), []);
    });

    it("worker delete while master-0 is reset under the drain (its own heal) and master-1 runs the cluster: the drain goes on through master-1, then the Node goes and the worker is reset", async () => {
        const w = new World();
        const m0 = w.machine("10.0.0.5", "m-0", "master");
        const m1 = w.machine("10.0.0.6", "m-1", "master");
        const worker = w.machine("10.0.0.7", "w-0", "worker");
        w.drainEnds = "resetMeanwhile";
        await workerMemberStep.deleteAcross!(w.hosts(), { ...workerOuts(w, worker, m0), controlPlanes: [w.ref(m0.host), w.ref(m1.host)] });
        assert.deepEqual(
            w.calls.filter((c) => / drain w-0 /.test(c)).map((c) => c.split(" ")[0]),
            ["10.0.0.5", "10.0.0.6"],
        );
        assert.ok(!w.nodes.has("w-0"), "its Node deleted through master-1");
        assert.deepEqual(joins(w, worker.host), ["reset"]);
    });

    it("worker delete after master-0's VM was replaced while master-1 runs the cluster: drained through master-1", async () => {
        const w = new World();
        const m0 = w.machine("10.0.0.5", "m-0", "master");
        const m1 = w.machine("10.0.0.6", "m-1", "master");
        const worker = w.machine("10.0.0.7", "w-0", "worker");
        const outs = { ...workerOuts(w, worker, m0), controlPlanes: [w.ref(m0.host), w.ref(m1.host)] };
        w.machine("10.0.0.5", "m-0", "fresh", "another-key");
        await workerMemberStep.deleteAcross!(w.hosts(), outs);
        assert.deepEqual(w.calls.filter((c) => / drain w-0 /.test(c)).map((c) => c.split(" ")[0]), ["10.0.0.6"]);
        assert.ok(!w.nodes.has("w-0"));
    });

    it("worker delete while one master is down and the other reset: no master can tell, so the delete fails", async () => {
        const w = new World();
        const m0 = w.machine("10.0.0.5", "m-0", "master");
        const m1 = w.machine("10.0.0.6", "m-1", "master");
        const worker = w.machine("10.0.0.7", "w-0", "worker");
        w.machines.get(m0.host)!.up = false;
        w.machines.get(m1.host)!.files.clear();
        await assert.rejects(workerMemberStep.deleteAcross!(w.hosts(), { ...workerOuts(w, worker, m0), controlPlanes: [w.ref(m0.host), w.ref(m1.host)] }), /none of the control-plane nodes \(m-0, m-1\) answered/);
        assert.deepEqual(joins(w, worker.host), []);
    });

    it("a worker's labels go with a cluster an entire heal resets meanwhile, without failing the delete", async () => {
        const w = new World();
        const m0 = w.machine("10.0.0.5", "m-0", "master");
        w.resetRefusals = 1;
        await nodeLabelsStep.deleteAcross!(w.hosts(), { ...envelope(m0), vmId: "vm", nodeName: "w-0", labels: { zone: "a" }, computeHostLabel: "", controlPlanes: [w.ref(m0.host)], appliedLabels: { zone: "a" } } as any);
    });

    it("a refusal that outlasts the wait fails the call, saying what kubectl said", async () => {
        const w = new World();
        const m0 = w.machine("10.0.0.5", "m-0", "master");
        w.nodes.add("w-0");
        const wait = API_UNAVAILABLE.waitMs;
        try {
            API_UNAVAILABLE.waitMs = 50;
            w.resetRefusals = 1000;
            await assert.rejects(nodeStatus(w.session(m0.host), "w-0"), /kubectl get node w-0 failed: The connection to the server m-0:6443 was refused/);
        } finally {
            API_UNAVAILABLE.waitMs = wait;
        }
    });
});
