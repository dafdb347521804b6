/**
 * A preview's engine events as the plan `k8s-vnf plan` and the LCM dry run answer (service/changePlan.ts):
 * events in the CLI's JSON shapes (sdk/go/common/apitype/events.go), as the Automation API hands them over.
 */
import { strict as assert } from "node:assert";
import { managedLineProvider } from "../providers/managedLine";
import { planFromEvents, printablePlan } from "../service/changePlan";

const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
const STACK = "urn:pulumi:s::k8s-vnf::";
const member = (node: string, digests: { create: unknown; delete: unknown }) => ({
    remoteActions: [
        { when: "create", action: `kubeadm join ${node}`, digest: digests.create },
        { when: "update", action: `cordon and drain ${node}`, digest: "sha256:00000000000000aa" },
        { when: "delete", action: `drain ${node}, delete its Node`, digest: digests.delete },
    ],
});
const pre = (op: string, name: string, type: string, old?: Record<string, unknown>, next?: Record<string, unknown>) => ({
    sequence: 0,
    timestamp: 0,
    resourcePreEvent: { metadata: { op, urn: `${STACK}${type}::${name}`, type, old: old ? { inputs: old } : null, new: next ? { inputs: next } : null }, planning: true },
});
const MEMBER = "pulumi-nodejs:dynamic/k8s-vnf:WorkerMember";
const VM = "openstack:compute/instance:Instance";

describe("the plan of a preview (changePlan)", () => {
    it("a scale-out: only the changes, in order; a new step's create actions, its unknown digest shown as such; sames left out", () => {
        const plan = planFromEvents([
            pre("same", "s-worker-0-vm", VM, {}, {}),
            pre("create", "s-worker-2-vm", VM, undefined, { name: "s-worker-2" }),
            pre("create", "s-kubeadm-worker-2-member", MEMBER, undefined, member("s-worker-2", { create: UNKNOWN, delete: "sha256:0000000000000001" })),
            { sequence: 9, timestamp: 0, summaryEvent: { resourceChanges: { create: 2, same: 1 }, isPreview: true } },
        ]);
        assert.deepEqual(
            plan.changes.map((c) => [c.op, c.name, c.actions.map((a) => `${a.phase}: ${a.action} ${a.digest}`)]),
            [
                ["create", "s-worker-2-vm", []],
                ["create", "s-kubeadm-worker-2-member", ["create: kubeadm join s-worker-2 (known after the change)"]],
            ],
        );
        assert.deepEqual(plan.resourceChanges, { create: 2, same: 1 });
        const text = printablePlan(plan, "Plan:");
        assert.match(text, /\+  create\s+s-kubeadm-worker-2-member \(WorkerMember\)\n\s+create: kubeadm join s-worker-2 \[\(known after the change\)\]/);
        assert.match(text, /Resources: 2 to create, 1 unchanged\nRemote actions: 1\n$/);
    });

    it("a heal: the membership's delete actions (the drain) from its old inputs, before the VM goes; then the creates", () => {
        const old = member("s-worker-1", { create: "sha256:0000000000000002", delete: "sha256:0000000000000003" });
        const plan = planFromEvents([
            pre("delete-replaced", "s-kubeadm-worker-1-member", MEMBER, old, undefined),
            pre("delete-replaced", "s-worker-1-vm", VM, { name: "s-worker-1" }, undefined),
            pre("replace", "s-worker-1-vm", VM, { name: "s-worker-1" }, { name: "s-worker-1" }),
            pre("create-replacement", "s-worker-1-vm", VM, { name: "s-worker-1" }, { name: "s-worker-1" }),
            pre("create-replacement", "s-kubeadm-worker-1-member", MEMBER, old, member("s-worker-1", { create: UNKNOWN, delete: UNKNOWN })),
        ]);
        const actions = plan.changes.flatMap((c) => c.actions.map((a) => `${c.name} ${a.phase}: ${a.action}`));
        assert.deepEqual(actions, ["s-kubeadm-worker-1-member delete: drain s-worker-1, delete its Node", "s-kubeadm-worker-1-member create: kubeadm join s-worker-1"]);
        assert.deepEqual(
            plan.changes.map((c) => c.op),
            ["delete-replaced", "delete-replaced", "replace", "create-replacement", "create-replacement"],
        );
    });

    it("an update: its update actions, those whose digest changed marked; a blinded secret digest shown as [secret]", () => {
        const lb = (digest: unknown) => ({ remoteActions: [{ when: "create, update", action: "render HAProxy on m-0", digest }, { when: "update", action: "other", digest: "sha256:0000000000000009" }] });
        const plan = planFromEvents([pre("update", "m-0-api-lb", "pulumi-nodejs:dynamic/k8s-vnf:ApiLoadBalancer", lb("sha256:000000000000000a"), lb("sha256:000000000000000b")), pre("update", "x", MEMBER, lb("[secret]"), lb("[secret]"))]);
        assert.deepEqual(
            plan.changes[0].actions.map((a) => [a.action, a.changed]),
            [
                ["render HAProxy on m-0", true],
                ["other", false],
            ],
        );
        assert.equal(plan.changes[1].actions[0].digest, "[secret]");
        assert.match(printablePlan(plan, "Plan:"), /render HAProxy on m-0 \[sha256:000000000000000b, changed\]/);
    });

    it("a destroy: a membership deleted with the cluster's init runs no delete of its own when the init goes too (deletedWith); alone (a scale-in) it drains", () => {
        const INIT = `${STACK}pulumi-nodejs:dynamic/k8s-vnf:KubeadmInit::s-kubeadm-init`;
        const withInit = (node: string) => ({ remoteActions: [{ when: "delete", action: `drain ${node}`, digest: "sha256:0000000000000004", deletedWith: INIT }] });
        const destroy = planFromEvents([pre("delete", "s-kubeadm-worker-0-member", MEMBER, withInit("s-worker-0"), undefined), pre("delete", "s-kubeadm-init", "pulumi-nodejs:dynamic/k8s-vnf:KubeadmInit", { remoteActions: [] }, undefined)]);
        assert.equal(destroy.changes[0].actions[0].skipped, "deleted with s-kubeadm-init");
        assert.match(printablePlan(destroy, "Plan:"), /drain s-worker-0 \[sha256:0000000000000004\] \(not run: deleted with s-kubeadm-init\)\n[\s\S]*Remote actions: 0\n$/);
        const scaleIn = planFromEvents([pre("delete", "s-kubeadm-worker-0-member", MEMBER, withInit("s-worker-0"), undefined)]);
        assert.equal(scaleIn.changes[0].actions[0].skipped, undefined);
    });

    it("an update action that runs only when its digest changes is left out when it did not; a state from before plans says its actions are not recorded", () => {
        const drain = (digest: string) => ({ remoteActions: [{ when: "update", action: "cordon and drain w", digest, onChange: true }] });
        const update = planFromEvents([pre("update", "w-member", MEMBER, drain("sha256:000000000000000c"), drain("sha256:000000000000000c"))]);
        assert.deepEqual(update.changes[0].actions, []);
        assert.equal(planFromEvents([pre("update", "w-member", MEMBER, drain("sha256:000000000000000c"), drain("sha256:000000000000000d"))]).changes[0].actions.length, 1);
        const older = planFromEvents([pre("delete", "w-member", MEMBER, { nodeName: "w" }, undefined)]);
        assert.equal(older.changes[0].unrecorded, true);
        assert.match(printablePlan(older, "Plan:"), /its remote actions are not recorded: its state predates plans; they run all the same/);
    });

    it("a step's diff: its plan alone changes nothing (a state from before plans is not updated for it); a real change prints one line of what runs", async () => {
        const inputs = { connection: { host: "10.0.0.9", username: "u", password: "p" }, path: "/etc/hosts", line: "10.0.0.1 a", mode: "0644", sudo: true, providerVersion: "1" };
        const plan = [{ when: "create, update", action: "ensure the line", digest: "sha256:0000000000000001" }];
        const printed: string[] = [];
        const log = console.log;
        console.log = (line: string) => printed.push(line);
        try {
            assert.equal((await managedLineProvider.diff("id-1", inputs, { ...inputs, remoteActions: plan })).changes, false);
            assert.equal((await managedLineProvider.diff("id-1", { ...inputs, remoteActions: plan }, { ...inputs, remoteActions: [{ ...plan[0], action: "reworded" }] })).changes, false);
            assert.deepEqual(printed, []);
            assert.equal((await managedLineProvider.diff("id-1", { ...inputs, remoteActions: plan }, { ...inputs, mode: "0600", remoteActions: plan })).changes, true);
        } finally {
            console.log = log;
        }
        assert.deepEqual(printed, ["[ManagedLine id-1] will update: ensure the line"]);
    });

    it("no change at all says so; events without remoteActions (cloud resources, components) list no actions", () => {
        assert.match(printablePlan(planFromEvents([pre("same", "a", VM, {}, {})]), "Plan:"), /no changes: nothing would run/);
        assert.deepEqual(planFromEvents([pre("delete", "v", VM, { name: "v" }, undefined)]).changes[0].actions, []);
    });
});
