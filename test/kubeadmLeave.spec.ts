import { strict as assert } from "node:assert";
import { API_UNAVAILABLE, nodeStatus } from "../providers/kubernetes/kubeadm";
import { nodeLabelsStep } from "../providers/kubernetes/nodeLabels";
import { workerMemberStep } from "../providers/kubernetes/workerMember";
import { SshTarget } from "../providers/transport/ssh";
import { envelope, HASH, joins, quickApiRetries, World } from "./support/scriptedCluster";

describe("leaving a cluster whose API server is not there for a moment, or that an entire heal takes away (kubeadm.ts: kubectl, onControlPlaneWhileThere)", () => {
    quickApiRetries();
    const workerOuts = (w: World, worker: SshTarget, master: SshTarget) => ({ ...envelope(worker), vmId: "vm", nodeName: "w-0", endpoint: `${master.host}:6443`, caCertHash: HASH, controlPlanes: [w.ref(master.host)], drainTimeoutSeconds: 60, nodeStatus: "Ready" as const });

    it("worker delete while an entire heal's reset has stopped the master's API server but not yet removed its kubeconfig (the real kubeadm stops the static Pods first): it waits, then takes the cluster as gone and resets the worker", async () => {
        const w = new World();
        const m0 = w.machine("10.0.0.5", "m-0", "master");
        const worker = w.machine("10.0.0.7", "w-0", "worker");
        w.resetRefusals = 2;
        await workerMemberStep.deleteAcross!(w.hosts(), workerOuts(w, worker, m0));
        assert.deepEqual(joins(w, worker.host), ["reset"]);
        assert.equal(w.calls.filter((c) => c.startsWith("10.0.0.5 kubectl ")).length, 3, "refused twice, then the kubeconfig is gone");
    });

    it("worker delete while an entire heal replaces the master's VM under the drain: the session goes, a new one finds another machine there, so the cluster is gone and the worker is reset", async () => {
        const w = new World();
        const m0 = w.machine("10.0.0.5", "m-0", "master");
        const worker = w.machine("10.0.0.7", "w-0", "worker");
        w.drainEnds = "vmReplacedMeanwhile";
        await workerMemberStep.deleteAcross!(w.hosts(), workerOuts(w, worker, m0));
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
