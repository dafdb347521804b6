/** Resource graphs under mocks: each step's remote actions, as `pulumi preview --diff` shows them. */
import { strict as assert } from "node:assert";
import { Graph } from "./support/program";
import { build, isSecret, PASSWORDS } from "./support/graphBuild";

describe("resource graphs: each step's remote actions, what `pulumi preview --diff` shows (issue 15)", () => {
    const STEP_TYPE = /^pulumi-nodejs:dynamic\/k8s-vnf:/;
    const actionsOf = (r: { inputs: Record<string, any> }) => r.inputs.remoteActions as { when: string; action: string; digest: any; deletedWith?: string }[];
    const digestOf = (graph: Graph, name: string, phase: string) => {
        const found = actionsOf(graph.named(name)).filter((a) => a.when.split(", ").includes(phase));
        assert.equal(found.length, 1, `${name}: one ${phase} action`);
        return found[0].digest;
    };

    it("every step of every example stack carries its actions: phases, plain texts naming no credential, a short digest never secret (else the engine would hide the whole plan)", async () => {
        for (const stack of ["simple", "complex", "storage", "registry", "registry-client", "kubespray"]) {
            const { graph } = await build(stack);
            const steps = graph.resources.filter((r) => STEP_TYPE.test(r.type));
            assert.ok(steps.length > 0, stack);
            const passwords = JSON.stringify(PASSWORDS[stack]).match(/"[^"]*(-pw|not-in-clear)[^"]*"/g)!.map((p) => JSON.parse(p) as string);
            for (const step of steps) {
                const actions = actionsOf(step);
                assert.ok(Array.isArray(actions) && actions.length > 0, `${stack} ${step.name}: no remoteActions`);
                for (const a of actions) {
                    assert.ok(a.when.split(", ").every((p) => ["create", "update", "delete"].includes(p)), `${step.name}: ${a.when}`);
                    assert.equal(typeof a.action, "string");
                    for (const p of passwords) assert.ok(!a.action.includes(p), `${step.name}: a password in its action text`);
                    assert.ok(!isSecret(a.digest), `${step.name}: ${a.action}: a secret digest`);
                    assert.match(a.digest, /^sha256:[0-9a-f]{16}$/, `${step.name}: ${a.action}`);
                }
            }
        }
    });

    it("a worker's membership: its join at create, the operate drain at update, its drain and reset at delete, each naming the node", async () => {
        const { graph } = await build("simple");
        const actions = actionsOf(graph.named("simple-kubeadm-worker-1-member"));
        assert.deepEqual(
            actions.map((a) => [a.when, a.action.split(" ").slice(0, 3).join(" ")]),
            [
                ["create", "kubeadm join simple-worker-1"],
                ["update", "cordon and drain"],
                ["delete", "drain simple-worker-1 on"],
            ],
        );
    });

    it("a membership's delete actions name the init it is deleted with (a destroy runs none of them); its create actions do not", async () => {
        const { graph } = await build("simple");
        for (const a of actionsOf(graph.named("simple-kubeadm-worker-0-member"))) {
            if (a.when.includes("delete")) assert.match(String(a.deletedWith), /KubeadmInit::simple-kubeadm-init$/);
            else assert.equal(a.deletedWith, undefined);
        }
        for (const a of actionsOf(graph.named("simple-kubeadm-worker-0-node"))) assert.equal(a.deletedWith, undefined, "a node step is deleted on its own");
    });

    it("no digest depends on a credential: other passwords for the nodes, a registry or the proxy leave every plan as it was (their change shows as the secret inputs')", async () => {
        const plans = async (password: string) => {
            const { graph } = await build("registry-client", (raw) => {
                raw.proxy = { ...raw.proxy, httpProxy: `http://user:${password}@proxy.example:3128`, httpsProxy: `http://user:${password}@proxy.example:3128` };
                raw.masters = { ...raw.masters, password };
                raw.workers = { ...raw.workers, password };
                raw.privateRegistries = raw.privateRegistries.map((r: Record<string, unknown>) => (r.username ? { ...r, password } : r));
            });
            return graph.resources.filter((r) => STEP_TYPE.test(r.type)).map((r) => [r.name, r.inputs.remoteActions, isSecret(r.inputs.proxy), isSecret(r.inputs.credentials)]);
        };
        const first = await plans("first-pw-1");
        const second = await plans("second-pw-2");
        assert.deepEqual(second, first);
        assert.ok(!JSON.stringify(first).includes("first-pw-1"));
        assert.ok(first.some(([name, , proxySecret]) => /worker-0-node$/.test(String(name)) && proxySecret), "the proxy input itself stays secret");
        assert.ok(first.some(([name, , , credentialsSecret]) => /worker-0-registries$/.test(String(name)) && credentialsSecret), "the registry logins stay secret");
    });

    it("the digests follow what is sent: two more masters re-render HAProxy on every master; a longer drain deadline changes only the workers' delete digests", async () => {
        const three = (await build("complex")).graph;
        const five = (await build("complex", (raw) => (raw.masters = { ...raw.masters, count: 5, fixedIps: [...raw.masters.fixedIps, "10.10.0.14", "10.10.0.15"] }))).graph;
        for (const i of [0, 1, 2]) {
            const name = `complex-kubeadm-master-${i}-api-lb`;
            assert.notEqual(digestOf(five, name, "update"), digestOf(three, name, "update"), `${name}: HAProxy re-rendered`);
            assert.equal(digestOf(five, name, "delete"), digestOf(three, name, "delete"), `${name}: its stop is the same`);
        }
        const slower = (await build("complex", (raw) => (raw.kubernetes = { ...raw.kubernetes, drainTimeout: 900 }))).graph;
        const member = "complex-kubeadm-worker-0-member";
        assert.notEqual(digestOf(slower, member, "delete"), digestOf(three, member, "delete"));
        assert.equal(digestOf(slower, member, "create"), digestOf(three, member, "create"));
        assert.deepEqual(actionsOf(slower.named("complex-kubeadm-master-0-api-lb")), actionsOf(three.named("complex-kubeadm-master-0-api-lb")));
    });
});
