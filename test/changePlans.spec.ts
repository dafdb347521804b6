import { strict as assert } from "node:assert";
import { configFromPulumiMap, parseVnfConfig } from "../config/load";
import { planExtConnChange } from "../service/extConn";
import { planFlavourChange } from "../service/flavourChange";
import { updatesOf } from "../service/lifecycle";
import { ProblemError } from "../service/problem";
import { PROJECT_DIR, readStackConfig, withSecrets } from "./support/program";

type Config = Record<string, any>;

/** An example stack's config as the service stores it, changed by `change`. */
function stackConfig(stack: string, change: (raw: Config) => void = () => {}): Config {
    const { raw } = configFromPulumiMap(withSecrets(readStackConfig(stack), { masters: { password: "m-pw" }, workers: { password: "w-pw" } }).config);
    change(raw);
    return raw;
}

const resolved = (raw: Config) => parseVnfConfig(raw, { stackName: "plans", baseDir: PROJECT_DIR }).spec;
type Plan = { stages: Config[]; config: Config };
const extConn = (raw: Config, body: Config) => planExtConnChange(raw, resolved(raw), body) as Plan;
const flavour = (raw: Config, body: Config) => planFlavourChange(raw, resolved(raw), body) as Plan;

const NETWORK = "71a3fbd1-f31e-4c2c-b0e2-26267d64a9ee";
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
    const three = stackConfig("simple", (raw) => (raw.workers.count = 3));

    it("a new network: one stage per worker but the last, each moving one more worker; the last config has no move under way; the masters stay", () => {
        const { stages, config } = extConn(three, move("workerNode_CP2", "net-b"));
        assert.deepEqual(stages.map((s) => s.workers.portMove), [
            { from: { networkId: NETWORK }, moved: 1 },
            { from: { networkId: NETWORK }, moved: 2 },
        ]);
        assert.ok(stages.every((s) => s.workers.networkId === "net-b"));
        assert.deepEqual(config.workers, { ...three.workers, networkId: "net-b" });
        assert.deepEqual(config.masters, three.masters);
        assert.ok(resolved(stages[0]).kind === "cluster", "each stage is a config the program takes");
    });

    it("a move stopped half way is finished by the same request, from where it stopped", () => {
        const { stages } = extConn(three, move("workerNode_CP2", "net-b"));
        const { stages: rest, config } = extConn(stages[0], move("workerNode_CP2", "net-b"));
        assert.deepEqual(rest.map((s) => s.workers.portMove.moved), [2]);
        assert.equal(config.workers.portMove, undefined);
        assert.equal(refusal(() => extConn(stages[0], move("workerNode_CP2", "net-c"))).status, 409, "another target while one is half done");
    });

    it("new fixed addresses, with cpConfig as SOL003 v2.6.1's map: the subnet and addresses taken; the old ones kept for the workers not moved", () => {
        const current = stackConfig("simple", (raw) => (raw.workers = { ...raw.workers, networkId: "net-a", subnetId: "sub-a", fixedIps: ["10.0.0.5", "10.0.0.6"] }));
        const body = { extVirtualLinks: [{ id: "vl", resourceId: "net-a", extCps: [{ cpdId: "workerNode_CP2", cpConfig: { c1: { cpProtocolData: [{ layerProtocol: "IP_OVER_ETHERNET", ipOverEthernet: { ipAddresses: [{ type: "IPV4", fixedAddresses: ["10.0.0.7", "10.0.0.8"], subnetId: "sub-a" }] } }] } } }] }] };
        const { stages, config } = extConn(current, body);
        assert.deepEqual(stages[0].workers.portMove, { from: { networkId: "net-a", subnetId: "sub-a", fixedIps: ["10.0.0.5", "10.0.0.6"] }, moved: 1 });
        assert.deepEqual([config.workers.fixedIps, config.workers.subnetId], [["10.0.0.7", "10.0.0.8"], "sub-a"]);
        const swapped = refusal(() => extConn(current, move("workerNode_CP2", "net-a", [{ fixedAddresses: ["10.0.0.6", "10.0.0.5"], subnetId: "sub-a" }])));
        assert.deepEqual([swapped.status, /10\.0\.0\.6 of worker 0 is still held by a worker moving after it/.test(swapped.detail)], [422, true]);
    });

    it("refused with the reason: the masters' connection point, another one, pre-created ports, several subnets (422); none named, addresses without a subnet or too few (400); no change (409)", () => {
        const cases: [Config, number, RegExp][] = [
            [move("masterNode_CP1", "net-b"), 422, /^extVirtualLinks\[0\]\.extCps\[0\]\.cpdId: masterNode_CP1 carries the control plane's addresses/],
            [move("storageServer_CP", "net-b"), 422, /moves only its workers' connection point workerNode_CP2; storageServer_CP/],
            [{ extVirtualLinks: [{ id: "vl", resourceId: "net-b", extCps: [{ cpdId: "workerNode_CP2" }], extLinkPorts: [{ id: "p" }] }] }, 422, /extLinkPorts: this VNF makes its own ports/],
            [{ extVirtualLinks: [{ id: "vl", resourceId: "net-b", extCps: [{ cpdId: "workerNode_CP2", cpConfig: [{ linkPortId: "p" }] }] }] }, 422, /linkPortId names a pre-created port/],
            [move("workerNode_CP2", "net-b", [{ fixedAddresses: ["10.1.0.5"], subnetId: "s1" }, { fixedAddresses: ["10.2.0.5", "10.2.0.6"], subnetId: "s2" }]), 422, /on one subnet, not s1, s2/],
            [{ extVirtualLinks: [{ id: "vl", resourceId: "net-b", extCps: [{ cpdId: "other" }] }].slice(1) }, 400, /^extVirtualLinks: name workerNode_CP2/],
            [move("workerNode_CP2", "net-b", [{ fixedAddresses: ["10.1.0.5", "10.1.0.6", "10.1.0.7"] }]), 400, /fixedAddresses need the subnetId/],
            [move("workerNode_CP2", "net-b", [{ fixedAddresses: ["10.1.0.5"], subnetId: "s1" }]), 400, /1 fixedAddresses for 3 workers; give one per worker/],
            [move("workerNode_CP2", NETWORK), 409, /^workerNode_CP2 is already on network/],
        ];
        for (const [body, status, detail] of cases) {
            const e = refusal(() => extConn(three, body));
            assert.equal(e.status, status, JSON.stringify(body));
            assert.match(e.detail, detail);
        }
    });
});

describe("change_flavour between the HA flavours: one node replaced per update (planFlavourChange)", () => {
    const complex = stackConfig("complex");
    const podaffinity = stackConfig("podaffinity", (raw) => (raw.podAffinity = { serverGroupPolicy: "soft-anti-affinity" }));

    it("complex → podaffinity: the workers, then master-1, master-2 and master-0 last; every stage a config the program takes; the last has no change under way", () => {
        const { stages, config } = flavour(complex, { newFlavourId: "podaffinity" });
        assert.deepEqual(stages.map((s) => [s.flavour, s.flavourChange.from, s.flavourChange.moved.at(-1)]), [
            ["podaffinity", "complex", "worker-0"],
            ["podaffinity", "complex", "worker-1"],
            ["podaffinity", "complex", "master-1"],
            ["podaffinity", "complex", "master-2"],
        ]);
        assert.deepEqual(stages[3].flavourChange.moved, ["worker-0", "worker-1", "master-1", "master-2"]);
        for (const s of stages) resolved(s);
        assert.deepEqual(config, { ...complex, flavour: "podaffinity" });
    });

    it("podaffinity → complex: the old server-group policy is carried while nodes move out; podAffinity goes; a change stopped half way is finished by the same request", () => {
        const { stages, config } = flavour(podaffinity, { newFlavourId: "complex" });
        assert.deepEqual(stages[0].flavourChange, { from: "podaffinity", fromServerGroupPolicy: "soft-anti-affinity", moved: ["worker-0"] });
        assert.ok(stages.every((s) => !("podAffinity" in s)));
        assert.deepEqual(config, Object.fromEntries(Object.entries({ ...podaffinity, flavour: "complex" }).filter(([k]) => k !== "podAffinity")));
        const resumed = flavour(stages[1], { newFlavourId: "complex" });
        assert.deepEqual(resumed.stages.map((s) => s.flavourChange.moved.at(-1)), ["master-1", "master-2"]);
        assert.equal(refusal(() => flavour(stages[1], { newFlavourId: "podaffinity" })).status, 409, "another target while one is half done");
    });

    it("refused with the reason: the same flavour 409; an unknown one, simple ↔ HA, new connection points 422; instantiation levels 400", () => {
        assert.equal(refusal(() => flavour(complex, { newFlavourId: "complex" })).status, 409);
        const unknown = refusal(() => flavour(complex, { newFlavourId: "gold" }));
        assert.deepEqual([unknown.status, unknown.detail], [422, "newFlavourId: gold is none of this VNF's deployment flavours (simple, complex, podaffinity)"]);
        const simple = refusal(() => flavour(stackConfig("simple"), { newFlavourId: "complex" }));
        assert.deepEqual([simple.status, /changes the control plane's endpoint/.test(simple.detail)], [422, true]);
        assert.equal(refusal(() => flavour(complex, { newFlavourId: "podaffinity", extVirtualLinks: [{}] })).status, 422);
        assert.equal(refusal(() => flavour(complex, { newFlavourId: "podaffinity", instantiationLevelId: "l1" })).status, 400);
    });
});

describe("a multi-update operation's updates (updatesOf): a retry resumes, a rollback steps back the way it came", () => {
    const plan = { stages: [{ s: 1 }, { s: 2 }], config: { s: 3 }, previousConfig: { s: 0 } };
    const shown = (u: ReturnType<typeof updatesOf>) => u.map(({ config, position }) => `${config?.s}@${position}`);

    it("forward from where it stopped; back through each succeeded stage, the last one first (undoing the half-done one), to the config before", () => {
        assert.deepEqual(shown(updatesOf(plan, "forward", 0)), ["1@1", "2@2", "3@3"]);
        assert.deepEqual(shown(updatesOf(plan, "forward", 2)), ["3@3"]);
        assert.deepEqual(shown(updatesOf(plan, "back", 2)), ["2@2", "1@1", "0@0"]);
        assert.deepEqual(shown(updatesOf(plan, "back", 0)), ["0@0"]);
        assert.deepEqual(shown(updatesOf({ config: { s: 9 }, previousConfig: { s: 0 } }, "forward", 0)), ["9@1"], "a one-update operation");
    });
});
