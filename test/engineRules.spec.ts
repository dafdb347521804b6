/**
 * The test engine's step rules against the cases Pulumi's engine source describes (step_generator.go,
 * dependency_graph.go at v3.248.0): the engine every lab suite runs on must decide as the real one does.
 */
import { strict as assert } from "node:assert";
import { decide, dependentReplacements, ignoringChanges, scheduleDeletes, shouldTriggerReplace, UNKNOWN, urnOf } from "./support/engine/stepRules";
import { ResourceState } from "./support/engine/state";

function res(name: string, deps: { dependsOn?: string[]; props?: Record<string, string[]>; parent?: string; custom?: boolean; inputs?: Record<string, unknown> } = {}): ResourceState {
    return {
        urn: name,
        type: "t",
        custom: deps.custom ?? true,
        id: `${name}-id`,
        parent: deps.parent ?? "",
        inputs: deps.inputs ?? Object.fromEntries(Object.keys(deps.props ?? {}).map((k) => [k, "v"])),
        outputs: {},
        dependencies: [...(deps.dependsOn ?? []), ...Object.values(deps.props ?? {}).flat()],
        propertyDependencies: deps.props ?? {},
        replacementTrigger: null,
        additionalSecretOutputs: [],
        deletedWith: "",
        retainOnDelete: false,
    };
}

describe("test engine: Pulumi's step rules", () => {
    it("replacementTrigger: a first value or a removed one replaces nothing; a change or an unknown replaces", () => {
        assert.equal(shouldTriggerReplace("0.1", null), false);
        assert.equal(shouldTriggerReplace(null, "0.1"), false);
        assert.equal(shouldTriggerReplace("0.1", "0.1"), false);
        assert.equal(shouldTriggerReplace("0.2", "0.1"), true);
        assert.equal(shouldTriggerReplace(UNKNOWN, "0.1"), true);
        assert.equal(shouldTriggerReplace({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value: "0.1" }, "0.1"), false, "a secret wrapper is not a change");
    });

    it("a diff's replace keys or a fired trigger replace; the resource option overrides the provider's delete-first answer", () => {
        const diff = (replaces: string[], dbr = false) => ({ changes: "some" as const, replaces, deleteBeforeReplace: dbr });
        assert.deepEqual(decide({ changes: "none", replaces: [], deleteBeforeReplace: false }, false, undefined, false), { op: "same" });
        assert.deepEqual(decide(diff([]), false, undefined, true), { op: "update" });
        assert.deepEqual(decide(diff(["vmId"], true), false, undefined, true), { op: "replace", deleteBeforeReplace: true });
        assert.deepEqual(decide(diff(["vmId"], true), false, false, true), { op: "replace", deleteBeforeReplace: false });
        assert.deepEqual(decide({ changes: "none", replaces: [], deleteBeforeReplace: false }, true, true, false), { op: "replace", deleteBeforeReplace: true });
        assert.deepEqual(decide({ changes: "unknown", replaces: [], deleteBeforeReplace: false }, false, undefined, true), { op: "update" }, "an unknown diff with changed inputs is an update");
    });

    it("delete-before-replace takes the dependents whose diff, with the replaced property unknown, answers replace; dependsOn edges never", async () => {
        // A ← B (property), A ← C (dependsOn only), B ← D (property), C ← E (property)
        const A = res("A");
        const B = res("B", { props: { vmId: ["A"] } });
        const C = res("C", { dependsOn: ["A"] });
        const D = res("D", { props: { vmId: ["B"] } });
        const E = res("E", { props: { x: ["C"] } });
        const asked: string[] = [];
        const replaced = await dependentReplacements([A, B, C, D, E], A, new Set(), async (r, inputs) => {
            asked.push(`${r.urn}:${Object.keys(inputs).filter((k) => inputs[k] === UNKNOWN)}`);
            return { changes: "some", replaces: Object.values(inputs).includes(UNKNOWN) ? ["vmId"] : [], deleteBeforeReplace: true };
        });
        assert.deepEqual(replaced.map((r) => r.urn), ["B", "D"]);
        assert.deepEqual(asked, ["B:vmId", "D:vmId"], "C and E are never diffed: nothing of theirs comes from a replaced resource");
    });

    it("delete-before-replace also takes the resources whose explicit provider is being replaced, without asking their diff; a provider is a dependency", async () => {
        // init ← provider (kubeconfig); provider ← pv (its provider reference only)
        const init = res("init");
        const provider = res("provider", { props: { kubeconfig: ["init"] } });
        const pv = { ...res("pv"), provider: "provider::provider-id" };
        const asked: string[] = [];
        const replaced = await dependentReplacements([init, provider, pv], init, new Set(), async (r) => {
            asked.push(r.urn);
            return { changes: "some", replaces: ["kubeconfig"], deleteBeforeReplace: false };
        });
        assert.deepEqual(replaced.map((r) => r.urn), ["provider", "pv"]);
        assert.deepEqual(asked, ["provider"]);
        assert.deepEqual(scheduleDeletes([init, provider, pv], [init, provider, pv]).map((c) => c.map((r) => r.urn)), [["pv"], ["provider"], ["init"]], "the provider goes after what it made");
        const kept = await dependentReplacements([init, provider, pv], init, new Set(), async () => ({ changes: "none", replaces: [], deleteBeforeReplace: false }));
        assert.deepEqual(kept, [], "a provider that stays keeps its resources");
    });

    it("ignoreChanges: an ignored property keeps its old input, so its change neither updates nor replaces; one the old inputs lack is dropped (PropertyPath.Reset)", () => {
        const olds = { availabilityZone: "az-1", size: 5 };
        assert.deepEqual(ignoringChanges({ availabilityZone: "az-2", size: 6, volumeType: "ssd" }, olds, ["availabilityZone", "volumeType"]), { availabilityZone: "az-1", size: 6 });
        assert.deepEqual(ignoringChanges({ availabilityZone: "az-2" }, olds, []), { availabilityZone: "az-2" });
    });

    it("deletes: antichains by depth, as ScheduleDeletes layers them; a resource goes after everything depending on it or parented under it", () => {
        const comp = res("comp", { custom: false });
        const vm1 = res("vm1", { parent: "comp" });
        const vm2 = res("vm2", { parent: "comp" });
        const node1 = res("node1", { props: { vmId: ["vm1"] } });
        const member1 = res("member1", { props: { vmId: ["node1"] } });
        const init = res("init", { dependsOn: ["comp"] });
        const all = [comp, vm1, vm2, node1, member1, init];
        const chains = scheduleDeletes(all, all).map((c) => c.map((r) => r.urn).sort());
        assert.deepEqual(chains, [["member1"], ["init", "node1"], ["vm1", "vm2"], ["comp"]], "init depends on the component, so on everything under it");
    });

    it("URNs carry the parent's qualified type, except under the root stack", () => {
        const stack = urnOf("dev", "k8s-vnf", "pulumi:pulumi:Stack", "k8s-vnf-dev", "");
        const cluster = urnOf("dev", "k8s-vnf", "k8s-vnf:index:KubernetesCluster", "lab", stack);
        const server = urnOf("dev", "k8s-vnf", "k8s-vnf:openstack:Server", "lab-master-0", cluster);
        assert.equal(cluster, "urn:pulumi:dev::k8s-vnf::k8s-vnf:index:KubernetesCluster::lab");
        assert.equal(urnOf("dev", "k8s-vnf", "openstack:compute/instance:Instance", "lab-master-0-vm", server), "urn:pulumi:dev::k8s-vnf::k8s-vnf:index:KubernetesCluster$k8s-vnf:openstack:Server$openstack:compute/instance:Instance::lab-master-0-vm");
    });
});
