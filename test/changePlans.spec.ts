import { strict as assert } from "node:assert";
import { planExtConnChange } from "../service/extConn";
import { planFlavourChange } from "../service/flavourChange";
import { ProblemError } from "../service/problem";

const CURRENT = {
    flavour: "simple",
    masters: { connectionPoint: "masterNode_CP1", networkId: "net-a", count: 1 },
    workers: { connectionPoint: "workerNode_CP2", networkId: "net-a", count: 3, aspectId: "worker_instance" },
    heal: { generation: 0, nodes: { "worker-1": 2 } },
};

const move = (cpdId: string, resourceId: string, ipAddresses?: unknown[]) => ({
    extVirtualLinks: [{ id: "vl", resourceId, extCps: [{ cpdId, cpConfig: [{ cpProtocolData: [{ layerProtocol: "IP_OVER_ETHERNET", ...(ipAddresses ? { ipOverEthernet: { ipAddresses } } : {}) }] }] }] }],
});

function refusal(fn: () => unknown): ProblemError {
    try {
        fn();
    } catch (e) {
        if (e instanceof ProblemError) return e;
        throw e;
    }
    assert.fail("accepted");
}

describe("change_ext_conn: the workers' ports move one worker per update (planExtConnChange)", () => {
    it("a new network: one stage per worker but the last, each moving one more worker and replacing it (its heal count); the last config has no move under way", () => {
        const { stages, config } = planExtConnChange(CURRENT, move("workerNode_CP2", "net-b"));
        assert.deepEqual(stages.map((s: any) => s.workers.portMove), [
            { from: { networkId: "net-a" }, moved: 1 },
            { from: { networkId: "net-a" }, moved: 2 },
        ]);
        assert.deepEqual(stages.map((s: any) => s.heal.nodes), [
            { "worker-0": 1, "worker-1": 2 },
            { "worker-0": 1, "worker-1": 3 },
        ]);
        assert.deepEqual(config.workers, { connectionPoint: "workerNode_CP2", networkId: "net-b", count: 3, aspectId: "worker_instance" });
        assert.deepEqual((config.heal as any).nodes, { "worker-0": 1, "worker-1": 3, "worker-2": 1 });
        assert.deepEqual(config.masters, CURRENT.masters, "the masters stay");
    });

    it("new fixed addresses on the same network, with cpConfig as SOL003 v2.6.1's map: the subnet and addresses are taken; old ones kept for the workers not moved", () => {
        const current = { ...CURRENT, workers: { ...CURRENT.workers, count: 2, subnetId: "sub-a", fixedIps: ["10.0.0.5", "10.0.0.6"] } };
        const body = { extVirtualLinks: [{ id: "vl", resourceId: "net-a", extCps: [{ cpdId: "workerNode_CP2", cpConfig: { c1: { cpProtocolData: [{ layerProtocol: "IP_OVER_ETHERNET", ipOverEthernet: { ipAddresses: [{ type: "IPV4", fixedAddresses: ["10.0.0.7", "10.0.0.8"], subnetId: "sub-a" }] } }] } } }] }] };
        const { stages, config } = planExtConnChange(current, body);
        assert.deepEqual((stages[0] as any).workers.portMove, { from: { networkId: "net-a", subnetId: "sub-a", fixedIps: ["10.0.0.5", "10.0.0.6"] }, moved: 1 });
        assert.deepEqual([(config.workers as any).fixedIps, (config.workers as any).subnetId], [["10.0.0.7", "10.0.0.8"], "sub-a"]);
    });

    it("refused with the reason: the masters' connection point (422), one this VNF does not move (422), none named (400), no change (409)", () => {
        const masters = refusal(() => planExtConnChange(CURRENT, move("masterNode_CP1", "net-b")));
        assert.equal(masters.status, 422);
        assert.match(masters.detail, /^extVirtualLinks\[0\]\.extCps\[0\]\.cpdId: masterNode_CP1 carries the control plane's addresses/);
        const storage = refusal(() => planExtConnChange(CURRENT, move("storageServer_CP", "net-b")));
        assert.deepEqual([storage.status, /moves only its workers' connection point workerNode_CP2; storageServer_CP/.test(storage.detail)], [422, true]);
        assert.equal(refusal(() => planExtConnChange(CURRENT, { extVirtualLinks: [] })).status, 400);
        const same = refusal(() => planExtConnChange(CURRENT, move("workerNode_CP2", "net-a")));
        assert.deepEqual([same.status, same.detail], [409, "workerNode_CP2 is already on network net-a with these addresses"]);
    });
});

describe("change_flavour between the HA flavours: one node replaced per update (planFlavourChange)", () => {
    const complex = { flavour: "complex", masters: { count: 3 }, workers: { count: 2 }, heal: { generation: 0, nodes: {} } };
    const podaffinity = { ...complex, flavour: "podaffinity", podAffinity: { serverGroupPolicy: "soft-anti-affinity" } };

    it("complex → podaffinity: the workers, then master-1, master-2 and master-0 last; the last config has no change under way", () => {
        const { stages, config } = planFlavourChange(complex, { newFlavourId: "podaffinity" });
        assert.deepEqual(stages.map((s: any) => [s.flavour, s.flavourChange.from, s.flavourChange.moved.at(-1)]), [
            ["podaffinity", "complex", "worker-0"],
            ["podaffinity", "complex", "worker-1"],
            ["podaffinity", "complex", "master-1"],
            ["podaffinity", "complex", "master-2"],
        ]);
        assert.deepEqual((stages[3] as any).flavourChange.moved, ["worker-0", "worker-1", "master-1", "master-2"]);
        assert.deepEqual(config, { ...complex, flavour: "podaffinity" });
    });

    it("podaffinity → complex: the old server-group policy is carried while nodes move out; podAffinity goes", () => {
        const { stages, config } = planFlavourChange(podaffinity, { newFlavourId: "complex" });
        assert.deepEqual((stages[0] as any).flavourChange, { from: "podaffinity", fromServerGroupPolicy: "soft-anti-affinity", moved: ["worker-0"] });
        assert.ok(stages.every((s) => !("podAffinity" in s)));
        assert.deepEqual(config, complex);
    });

    it("refused with the reason: the same flavour 409; an unknown one, simple ↔ HA, new connection points 422; instantiation levels 400", () => {
        const refused = (current: Record<string, unknown>, body: Record<string, unknown>) => refusal(() => planFlavourChange(current, body));
        assert.equal(refused(complex, { newFlavourId: "complex" }).status, 409);
        const unknown = refused(complex, { newFlavourId: "gold" });
        assert.deepEqual([unknown.status, unknown.detail], [422, "newFlavourId: gold is none of this VNF's deployment flavours (simple, complex, podaffinity)"]);
        const simple = refused({ flavour: "simple" }, { newFlavourId: "complex" });
        assert.deepEqual([simple.status, /changes the control plane's endpoint/.test(simple.detail)], [422, true]);
        assert.equal(refused(complex, { newFlavourId: "podaffinity", extVirtualLinks: [{}] }).status, 422);
        assert.equal(refused(complex, { newFlavourId: "podaffinity", instantiationLevelId: "l1" }).status, 400);
    });
});
