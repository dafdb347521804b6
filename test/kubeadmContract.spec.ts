import { strict as assert } from "node:assert";
import { UNKNOWN } from "../providers/step";
import { INIT_SETTINGS } from "./fixtures/kubeadmInit";
import { ProviderHost } from "./support/providerHost";

/**
 * The kubeadm steps' check and diff through the real dynamic-provider host (no host needed: neither opens
 * a session). What the engine decides with these answers: replace when the VM changed or is being
 * replaced (its id unknown), delete first where two copies cannot coexist.
 */
const connection = { host: "10.0.0.5", username: "ubuntu", password: "pw-not-shown" };
const hash = `sha256:${"a".repeat(64)}`;
const cp = [{ name: "m-0", connection }];
const STEPS = {
    node: {
        file: "providers/kubernetes/nodePrep.ts",
        provider: "kubernetesNodeProvider",
        inputs: { vmId: "vm-1", nodeName: "w-0", kubernetesVersion: "1.31.4", packageRepository: "https://pkgs.k8s.io/core:/stable:", proxy: { httpProxy: "", httpsProxy: "", noProxy: "" }, hostsEntries: [{ address: "10.0.0.5", name: "w-0" }] },
        bad: { nodeName: "W_0", kubernetesVersion: "latest", hostsEntries: [{ address: "x y", name: "w-0" }] },
        computed: {},
        deleteBeforeReplace: false,
    },
    lb: {
        file: "providers/kubernetes/apiLoadBalancer.ts",
        provider: "apiLoadBalancerProvider",
        inputs: { vmId: "vm-1", address: "10.0.0.5", vip: "10.0.0.100", routerId: 100, priority: 150, frontendPort: 16443, apiServerPort: 6443, backends: [{ name: "m-0", address: "10.0.0.5" }] },
        bad: { vip: "10.0.0.100; reboot", routerId: 300, backends: [] },
        computed: { haproxy: "running", keepalived: "running" },
        deleteBeforeReplace: false,
    },
    master: {
        file: "providers/kubernetes/controlPlaneMember.ts",
        provider: "controlPlaneMemberProvider",
        inputs: { vmId: "vm-1", nodeName: "m-1", address: "10.0.0.6", apiServerPort: 6443, endpoint: "10.0.0.100:16443", caCertHash: hash, peers: cp, loadBalanced: true },
        bad: { caCertHash: "sha1:abc", peers: [{ name: "m-0" }] },
        computed: { nodeStatus: "Ready" },
        deleteBeforeReplace: true,
    },
    worker: {
        file: "providers/kubernetes/workerMember.ts",
        provider: "workerMemberProvider",
        inputs: { vmId: "vm-1", nodeName: "w-0", endpoint: "10.0.0.100:16443", caCertHash: hash, controlPlanes: cp, drainTimeoutSeconds: 300 },
        bad: { caCertHash: "", controlPlanes: [], drainTimeoutSeconds: 0 },
        computed: { nodeStatus: "Ready" },
        deleteBeforeReplace: true,
    },
    labels: {
        file: "providers/kubernetes/nodeLabels.ts",
        provider: "nodeLabelsProvider",
        inputs: { vmId: "vm-1", nodeName: "w-0", labels: { "topology.kubernetes.io/zone": "az-1" }, computeHostLabel: "CIS-node", controlPlanes: cp },
        bad: { labels: { "bad key!": "v", ok: "bad value!" }, computeHostLabel: "/x" },
        computed: { computeHost: "compute-a", appliedLabels: { "topology.kubernetes.io/zone": "az-1", "CIS-node": "compute-a" } },
        deleteBeforeReplace: false,
    },
} as const;

/** The init step: the cluster, on the first master; it has no VM id (the cluster outlives that VM). */
const INIT = {
    ...INIT_SETTINGS,
    controlPlanes: [
        { name: "m-0", connection: { ...connection, hostKeyFingerprint: "SHA256:first-vm" } },
        { name: "m-1", connection: { ...connection, host: "10.0.0.6", hostKeyFingerprint: "SHA256:m-1" } },
    ],
};

describe("kubeadm steps: check and diff through the real dynamic-provider host", function () {
    this.timeout(60_000);
    const hosts = new Map<string, ProviderHost>();
    before(async () => {
        await Promise.all([
            ...Object.entries(STEPS).map(async ([kind, s]) => hosts.set(kind, await ProviderHost.start(s.file, s.provider))),
            ProviderHost.start("providers/kubernetes/kubeadmInit.ts", "kubeadmInitProvider").then((h) => hosts.set("init", h)),
            ProviderHost.start("providers/kubernetes/podNetwork.ts", "podNetworkProvider").then((h) => hosts.set("network", h)),
        ]);
    });
    after(() => {
        for (const h of hosts.values()) h.stop();
    });

    for (const [kind, step] of Object.entries(STEPS)) {
        const news = (over: Record<string, unknown> = {}) => ({ connection, providerVersion: "1", ...step.inputs, ...over });

        it(`${kind}: check names every bad input and lets unknown values through`, async () => {
            const host = hosts.get(kind)!;
            assert.deepEqual((await host.check({}, news())).failures, []);
            const bad = await host.check({}, news(step.bad));
            assert.deepEqual([...new Set(bad.failures.map((f) => f.property))].sort(), Object.keys(step.bad).sort());
            const unknown = Object.fromEntries(Object.keys(step.bad).map((k) => [k, UNKNOWN]));
            assert.deepEqual((await host.check({}, news(unknown))).failures, []);
        });

        it(`${kind}: a new or unknown VM id replaces${step.deleteBeforeReplace ? " (delete first)" : ""}; the same inputs change nothing`, async () => {
            const host = hosts.get(kind)!;
            const olds = { ...news(), ...step.computed, hostKeyFingerprint: "SHA256:x" };
            assert.equal((await host.diff("id", olds, news())).changes, "none");
            for (const vmId of ["vm-2", UNKNOWN]) {
                const d = await host.diff("id", olds, news({ vmId }));
                assert.deepEqual(d.replaces, ["vmId"]);
                assert.equal(d.deleteBeforeReplace, step.deleteBeforeReplace);
            }
        });
    }

    it("node: a new Kubernetes version is refused at check while the VM stays (nothing runs); a new VM takes it", async () => {
        const host = hosts.get("node")!;
        const olds = { connection, providerVersion: "1", ...STEPS.node.inputs };
        const refused = (await host.check(olds, { ...olds, kubernetesVersion: "1.32.0" })).failures;
        assert.deepEqual(refused.map((f) => f.property), ["kubernetesVersion"]);
        assert.match(refused[0].reason, /^kubernetes\.version changed from 1\.31\.4 to 1\.32\.0: a running cluster is not upgraded by k8s-vnf, and nothing was changed\. .*heal the entire cluster \(heal\.generation\)/);
        for (const vmId of ["vm-2", UNKNOWN]) assert.deepEqual((await host.check(olds, { ...olds, vmId, kubernetesVersion: "1.32.0" })).failures, [], `vmId ${vmId}`);
        assert.deepEqual((await host.check({}, { ...olds, kubernetesVersion: "1.32.0" })).failures, [], "a new node");
        assert.deepEqual((await host.check(olds, { ...olds, hostsEntries: [] })).failures, [], "other changes are updates");
    });

    it("init: a new Kubernetes version is refused at check unless the cluster is re-created (heal.generation)", async () => {
        const host = hosts.get("init")!;
        const olds = { connection, providerVersion: "2", ...INIT };
        const refused = (await host.check(olds, { ...olds, kubernetesVersion: "1.32.0" })).failures;
        assert.deepEqual(refused.map((f) => f.property), ["kubernetesVersion"]);
        assert.match(refused[0].reason, /^kubernetes\.version changed from 1\.31\.4 to 1\.32\.0: a running cluster is not upgraded by k8s-vnf/);
        assert.deepEqual((await host.check(olds, { ...olds, kubernetesVersion: "1.32.0", clusterGeneration: 1 })).failures, []);
    });

    it("init: a new image repository is refused at check unless the cluster is re-created; nodes take it (their sandbox image)", async () => {
        const host = hosts.get("init")!;
        const olds = { connection, providerVersion: "2", ...INIT };
        const mirror = "registry.example:5000/k8s";
        for (const [from, to] of [[undefined, mirror], [mirror, undefined], [mirror, `${mirror}2`]]) {
            const refused = (await host.check({ ...olds, imageRepository: from }, { ...olds, imageRepository: to })).failures;
            assert.deepEqual(refused.map((f) => f.property), ["imageRepository"], `${from} → ${to}`);
            assert.match(refused[0].reason, /^kubernetes\.imageRepository changed from .* to .*: a running cluster's control plane keeps the images it was made with, and nothing was changed\. .*heal the entire cluster \(heal\.generation\)/);
        }
        assert.deepEqual((await host.check(olds, { ...olds, imageRepository: mirror, clusterGeneration: 1 })).failures, [], "a new cluster takes it");
        for (const bad of ["https://x/", "k8s/images"]) assert.deepEqual((await host.check(olds, { ...olds, imageRepository: bad })).failures.map((f) => f.property), ["imageRepository"], `${bad}: not a registry's repository`);
        const node = hosts.get("node")!;
        const nodeOlds = { connection, providerVersion: "1", ...STEPS.node.inputs };
        assert.deepEqual((await node.check(nodeOlds, { ...nodeOlds, imageRepository: mirror })).failures, [], "a node takes it");
        const d = await node.diff("id", nodeOlds, { ...nodeOlds, imageRepository: mirror });
        assert.equal(d.changes, "some", "an update of the node (its sandbox image)");
        assert.deepEqual(d.replaces, [], "not a new node");
    });

    it("init: the masters must be listed, the first master first", async () => {
        const host = hosts.get("init")!;
        const news = { connection, providerVersion: "2", ...INIT };
        assert.deepEqual((await host.check({}, news)).failures, []);
        for (const controlPlanes of [[], [INIT.controlPlanes[1], INIT.controlPlanes[0]], [{ name: "m-0" }]]) {
            assert.deepEqual((await host.check({}, { ...news, controlPlanes })).failures.map((f) => f.property), ["controlPlanes"], JSON.stringify(controlPlanes));
        }
        assert.deepEqual((await host.check({}, { ...news, controlPlanes: UNKNOWN })).failures, []);
    });

    it("init: a replaced master-0 (its host key unknown, then new) updates the init, never replaces it; a new cluster generation replaces it, delete first", async () => {
        const host = hosts.get("init")!;
        const olds = { connection, providerVersion: "2", ...INIT, caCertHash: hash, kubeconfig: "k", joinToken: "t" };
        const news = { connection, providerVersion: "2", ...INIT };
        assert.equal((await host.diff("id", olds, news)).changes, "none");
        // What the engine asks when master-0's node step is replaced (calculateDependentReplacements), then the new key.
        const healed = [UNKNOWN, [{ ...INIT.controlPlanes[0], connection: { ...connection, hostKeyFingerprint: "SHA256:new-vm" } }, INIT.controlPlanes[1]]];
        for (const controlPlanes of healed) {
            const d = await host.diff("id", olds, { ...news, controlPlanes });
            assert.deepEqual([d.changes, d.replaces], ["some", []], JSON.stringify(controlPlanes));
        }
        const regenerated = await host.diff("id", olds, { ...news, clusterGeneration: 1 });
        assert.deepEqual([regenerated.replaces, regenerated.deleteBeforeReplace], [["clusterGeneration"], true]);
    });

    it("network: another cluster (a new or unknown CA hash) replaces it; a new manifest, proxy or master keys update it; credentials in the URL are refused", async () => {
        const host = hosts.get("network")!;
        const news = { connection, providerVersion: "1", cniManifest: "https://example.com/calico.yaml", proxy: { httpProxy: "", httpsProxy: "", noProxy: "" }, caCertHash: hash, controlPlanes: cp };
        assert.deepEqual((await host.check({}, news)).failures, []);
        assert.deepEqual((await host.check({}, { ...news, cniManifest: "https://u:p@example.com/calico.yaml" })).failures.map((f) => f.property), ["cniManifest"]);
        assert.equal((await host.diff("id", news, news)).changes, "none");
        for (const caCertHash of [`sha256:${"b".repeat(64)}`, UNKNOWN]) {
            const d = await host.diff("id", news, { ...news, caCertHash });
            assert.deepEqual([d.replaces, d.deleteBeforeReplace], [["caCertHash"], false], String(caCertHash));
        }
        for (const change of [{ cniManifest: "https://example.com/calico-2.yaml" }, { proxy: { ...news.proxy, httpsProxy: "http://proxy.example:3128" } }, { controlPlanes: UNKNOWN }]) {
            const d = await host.diff("id", news, { ...news, ...change });
            assert.deepEqual([d.changes, d.replaces], ["some", []], JSON.stringify(change));
        }
    });

    it("lb: a stopped HAProxy seen by refresh is drift an update repairs, though the inputs did not change", async () => {
        const host = hosts.get("lb")!;
        const news = { connection, providerVersion: "1", ...STEPS.lb.inputs };
        assert.equal((await host.diff("id", { ...news, haproxy: "running", keepalived: "running" }, news)).changes, "none");
        assert.equal((await host.diff("id", { ...news, haproxy: "stopped", keepalived: "running" }, news)).changes, "some");
    });

    it("labels: a compute host that changed since the labels were applied is drift", async () => {
        const host = hosts.get("labels")!;
        const news = { connection, providerVersion: "1", ...STEPS.labels.inputs };
        const applied = { "topology.kubernetes.io/zone": "az-1", "CIS-node": "compute-a" };
        assert.equal((await host.diff("id", { ...news, computeHost: "compute-a", appliedLabels: applied }, news)).changes, "none");
        assert.equal((await host.diff("id", { ...news, computeHost: "compute-b", appliedLabels: applied }, news)).changes, "some");
    });
});
