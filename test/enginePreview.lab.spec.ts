/**
 * `preview` in the test engine and the stand-in Pulumi CLI, on a small `simple` kubeadm stack on lab hosts:
 * the program runs as a dry run, each registration is checked and diffed by its real provider, and the steps
 * an update would take come back as events (`planning: true`, `isPreview: true`) while nothing runs and
 * nothing is written (the checkpoint stays byte-identical, no lab host or provider call changes).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { Lab } from "./lab/lab";
import { clusterState } from "./support/clusterState";
import { EngineEventJson, preview, RunResult } from "./support/engine";
import { LabStack } from "./support/labStack";
import { failure, useLab } from "./support/labSuite";
import { PROJECT_DIR } from "./support/program";
import { ServiceProject, serviceProject } from "./support/serviceProject";
import { runStandIn, STAND_IN_PULUMI_ROOT } from "./support/stand-ins/pulumi-cli/client";

function labConfig(lab: Lab): Record<string, unknown> {
    return {
        vnfName: "lab",
        flavour: "simple",
        image: "lab-image",
        flavor: "lab-flavor",
        network: { networkId: "lab-net", subnetId: "lab-subnet" },
        masters: { count: 1, password: lab.password },
        workers: { count: 2, maxCount: 20, password: lab.password },
        kubernetes: { cniManifest: "https://projectcalico.example/calico.yaml" },
    };
}

interface PreviewStep {
    op: string;
    urn: string;
    name: string;
    planning: boolean;
    keys?: string[];
    detailedDiff: unknown;
    oldInputs?: Record<string, unknown>;
    newInputs?: Record<string, unknown>;
}

describe("preview: the test engine and the stand-in Pulumi CLI on a simple kubeadm stack (1 master, 2 workers)", function () {
    this.timeout(600_000);
    const suite = useLab([]);
    let stack: LabStack;
    let state: ReturnType<typeof clusterState>;
    const stateFile = () => path.join(suite.lab.dir, "states", "simple.json");

    /** A preview of `stack` through the engine: its steps (pre events), its summary, what it printed. */
    async function enginePreview(config: Record<string, unknown>): Promise<{ steps: PreviewStep[]; summary: Record<string, any>; result: RunResult; output: string[] }> {
        const events: EngineEventJson[] = [];
        const output: string[] = [];
        const secretKeys = ["k8s-vnf:masters", "k8s-vnf:workers"];
        const result = await preview({
            projectDir: PROJECT_DIR,
            stack: "simple",
            stateFile: stateFile(),
            config: Object.fromEntries(Object.entries(config).map(([k, v]) => [`k8s-vnf:${k}`, typeof v === "string" ? v : JSON.stringify(v)])),
            secretKeys,
            labDescriptor: suite.lab.descriptorFile,
            onEvent: (e) => events.push(e),
            onOutput: (line) => output.push(line),
        });
        suite.captured.push(...output);
        const steps = events
            .filter((e) => e.resourcePreEvent)
            .map((e) => {
                const pre = e.resourcePreEvent as { metadata: Record<string, any>; planning?: boolean };
                const m = pre.metadata;
                return { op: m.op, urn: m.urn, name: m.urn.split("::").pop(), planning: pre.planning === true, keys: m.keys, detailedDiff: m.detailedDiff, oldInputs: m.old?.inputs, newInputs: m.new?.inputs };
            });
        const summary = events.find((e) => e.summaryEvent)!.summaryEvent as Record<string, any>;
        return { steps, summary, result, output };
    }

    const snapshot = () => ({ checkpoint: fs.readFileSync(stateFile()), calls: state.calls().length, hosts: suite.lab.hostNames().sort() });
    const withConfig = (change: (c: Record<string, any>) => void) => {
        const c = structuredClone(stack.config) as Record<string, any>;
        change(c);
        return c;
    };
    const changed = (steps: PreviewStep[]) => steps.filter((s) => s.op !== "same");

    before(async function () {
        if (!suite.lab) this.skip();
        stack = new LabStack(suite.lab, "simple", labConfig(suite.lab));
        state = clusterState(suite.lab, "simple");
        await stack.up();
    });
    after(() => suite.captured.push(...(stack?.output ?? [])));

    it("nothing changed: only sames, every step planning, nothing runs, the checkpoint byte-identical", async () => {
        const before = snapshot();
        const { steps, summary, result } = await enginePreview(stack.config);
        assert.ok(steps.length > 10);
        assert.deepEqual(changed(steps), []);
        assert.ok(steps.every((s) => s.planning), "every resourcePreEvent says planning");
        assert.equal(summary.isPreview, true);
        assert.equal(summary.result, "succeeded");
        assert.deepEqual(summary.resourceChanges, { same: steps.length });
        assert.deepEqual(result.changes, { same: steps.length });
        assert.match(String(result.outputs.kubeconfig.value), /server: https:/, "a same gives the program its old outputs");
        assert.deepEqual(snapshot(), before);
    });

    it("workers.count + 1: creates only for the new worker's resources; no VM starts", async () => {
        const before = snapshot();
        const { steps, summary } = await enginePreview(withConfig((c) => (c.workers.count = 3)));
        const creates = steps.filter((s) => s.op === "create").map((s) => s.name);
        assert.ok(creates.includes("lab-worker-2-vm"), creates.join(", "));
        assert.ok(creates.includes("lab-kubeadm-worker-2-member"), creates.join(", "));
        assert.deepEqual(creates.filter((n) => !/worker-2/.test(n)), [], "nothing else is created");
        assert.equal(summary.resourceChanges.create, creates.length);
        const vm = steps.find((s) => s.name === "lab-worker-2-vm")!;
        assert.equal(vm.newInputs!.name, "lab-worker-2");
        assert.deepEqual(snapshot(), before);
    });

    it("heal of worker-1: its membership's delete-replaced before the VM's, then the VM's replace and create-replacement", async () => {
        const before = snapshot();
        const { steps } = await enginePreview(withConfig((c) => (c.heal = { nodes: { "worker-1": 1 } })));
        const at = (op: string, name: string) => steps.findIndex((s) => s.op === op && s.name === name);
        const member = at("delete-replaced", "lab-kubeadm-worker-1-member");
        const vmDeleted = at("delete-replaced", "lab-worker-1-vm");
        const vmReplace = at("replace", "lab-worker-1-vm");
        const vmCreated = at("create-replacement", "lab-worker-1-vm");
        assert.ok(member >= 0 && vmDeleted > member, `membership delete-replaced (${member}) before the VM's (${vmDeleted})`);
        assert.ok(vmReplace > vmDeleted && vmCreated > vmReplace, "delete-replaced, replace, create-replacement");
        assert.ok(at("create-replacement", "lab-kubeadm-worker-1-member") > vmCreated, "the membership is created again after the VM");
        assert.ok(steps.slice(member, vmCreated + 1).every((s) => s.planning));
        assert.deepEqual(changed(steps).filter((s) => /worker-0|master-0/.test(s.name)), [], "the other nodes are untouched");
        assert.deepEqual(snapshot(), before);
    });

    it("scale-in to 1 worker: deletes of worker-1's resources, dependents first", async () => {
        const before = snapshot();
        const { steps, summary } = await enginePreview(withConfig((c) => (c.workers.count = 1)));
        const deletes = steps.filter((s) => s.op === "delete").map((s) => s.name);
        assert.ok(deletes.length >= 3, deletes.join(", "));
        assert.deepEqual(deletes.filter((n) => !/worker-1/.test(n)), [], "only worker-1's resources go");
        const order = (n: string) => deletes.indexOf(n);
        assert.ok(order("lab-kubeadm-worker-1-member") >= 0 && order("lab-kubeadm-worker-1-member") < order("lab-worker-1-vm"), deletes.join(", "));
        assert.ok(order("lab-worker-1-vm") < order("lab-worker-1-port"), deletes.join(", "));
        assert.equal(summary.resourceChanges.delete, deletes.length);
        assert.deepEqual(snapshot(), before);
    });

    it("invalid inputs fail the preview with the same error as up", async () => {
        const bad = withConfig((c) => (c.kubernetes.version = "1.32.0"));
        const previewError = await failure(suite, () => enginePreview(bad));
        assert.match(previewError.message, /kubernetes\.version changed from 1\.31\.4 to 1\.32\.0/);
    });

    describe("through the stand-in Pulumi CLI and the Automation API", () => {
        let project: ServiceProject;
        let env: Record<string, string>;
        const pulumi = (...args: string[]) => {
            const r = runStandIn(args, { cwd: project.dir, env });
            suite.captured.push(r.stdout, r.stderr);
            return r;
        };
        const ok = (...args: string[]) => {
            const r = pulumi(...args);
            assert.equal(r.status, 0, `pulumi ${args.join(" ")}:\n${r.stderr || r.stdout}`);
            return r;
        };
        const backendDir = () => path.join(project.dir, ".pulumi-state", ".pulumi");
        const checkpoint = () => path.join(backendDir(), "stacks", "k8s-vnf", "simple.json");

        before(function () {
            if (!suite.lab) this.skip();
            project = serviceProject();
            const standIn = path.join(project.dir, ".stand-in");
            fs.mkdirSync(standIn);
            env = { PULUMI_CONFIG_PASSPHRASE: "preview-lab", PULUMI_STANDIN_STATE: standIn, K8S_VNF_LAB: suite.lab.descriptorFile };
            ok("stack", "init", "simple");
            fs.copyFileSync(stateFile(), checkpoint());
            const entries = Object.fromEntries(Object.entries(stack.config).map(([k, v]) => [`k8s-vnf:${k}`, typeof v === "string" ? { value: v, secret: false } : { value: JSON.stringify(v), objectValue: v, secret: false }]));
            ok("config", "set-all", "--stack", "simple", "--json", JSON.stringify(entries));
            for (const key of ["masters.password", "workers.password"]) ok("config", "set", "--stack", "simple", "--path", "--secret", key, suite.lab.password);
        });
        after(() => project?.remove());

        it("pulumi preview --diff: nothing changed, then a new worker shown as creates with its inputs; no lock, history or checkpoint written", async () => {
            const bytes = fs.readFileSync(checkpoint());
            const same = ok("preview", "--diff", "--stack", "simple");
            assert.match(same.stdout, /^Previewing update \(simple\):\n/);
            assert.match(same.stdout, /Resources:\n {4}\d+ unchanged\n/);
            assert.doesNotMatch(same.stdout, /to create|to update|to delete|to replace/);
            assert.equal(pulumi("preview", "--expect-no-changes", "--stack", "simple").status, 0);

            ok("config", "set", "--stack", "simple", "--path", "workers.count", "3");
            const out = ok("preview", "--diff", "--stack", "simple").stdout;
            assert.match(out, /\n( {4})+\+ openstack:compute\/instance:Instance: \(create\)\n +\[urn=urn:pulumi:simple::k8s-vnf::[^\]]*lab-worker-2-vm\]\n/);
            assert.match(out, /\n +name *: "lab-worker-2"\n/, "a create shows its inputs");
            assert.match(out, /Resources:\n {4}\+ \d+ to create\n/);
            assert.doesNotMatch(out, /lab-worker-[01]-vm\]/, "sames are not shown");
            const refused = pulumi("preview", "--expect-no-changes", "--stack", "simple");
            assert.equal(refused.status, 1);
            assert.match(refused.stderr, /error: no changes were expected for preview but changes were proposed/);

            assert.deepEqual(fs.readFileSync(checkpoint()), bytes, "the checkpoint is not written");
            assert.ok(!fs.existsSync(path.join(backendDir(), "history")), "no history");
            const locks = path.join(backendDir(), "locks");
            assert.ok(!fs.existsSync(locks) || fs.readdirSync(locks, { recursive: true }).every((f) => !String(f).endsWith(".json")), "no lock left");
            assert.deepEqual(suite.lab.hostNames().filter((n) => n.includes("worker-2")), []);
        });

        it("pulumi preview --json: the PreviewDigest (steps without sames, changeSummary)", () => {
            const digest = JSON.parse(ok("preview", "--json", "--stack", "simple").stdout);
            const ops = digest.steps.map((s: { op: string; urn: string }) => `${s.op} ${s.urn.split("::").pop()}`);
            assert.ok(ops.includes("create lab-worker-2-vm"), ops.join("\n"));
            assert.ok(!ops.some((o: string) => o.startsWith("same ") && !o.endsWith("k8s-vnf-simple")), "sames are not listed");
            const vm = digest.steps.find((s: { urn: string }) => s.urn.endsWith("::lab-worker-2-vm"));
            assert.equal(vm.newState.inputs.name, "lab-worker-2");
            assert.equal(vm.detailedDiff, null);
            assert.equal(digest.changeSummary.create, digest.steps.filter((s: { op: string }) => s.op === "create").length);
            assert.ok(digest.changeSummary.same > 0);
            assert.equal(typeof digest.duration, "number");
        });

        it("pulumi preview --config-file: that file's config and salt instead of stacks/Pulumi.simple.yaml", () => {
            const alt = path.join(project.dir, "alt.yaml");
            fs.copyFileSync(path.join(project.dir, "stacks", "Pulumi.simple.yaml"), alt);
            ok("config", "set", "--stack", "simple", "--path", "workers.count", "2");
            try {
                assert.equal(pulumi("preview", "--expect-no-changes", "--stack", "simple").status, 0, "the stack's own file: no changes");
                const out = ok("preview", "--stack", "simple", "--config-file", "alt.yaml").stdout;
                assert.match(out, / \+  +[^\n]*openstack:compute\/instance:Instance lab-worker-2-vm create\n/);
                assert.match(out, /\+ 5 to create/);
            } finally {
                ok("config", "set", "--stack", "simple", "--path", "workers.count", "3");
            }
        });

        it("pulumi preview --diff shows the remote actions: a new worker's join among its step's inputs; for a heal, each step's one line of what its replacement runs", () => {
            const out = ok("preview", "--diff", "--stack", "simple").stdout;
            assert.match(out, /remoteActions *: \[[\s\S]*?action *: "kubeadm join lab-worker-2 \(a bootstrap token fetched from a control-plane node\)"/, out);
            ok("config", "set", "--stack", "simple", "--path", "workers.count", "2");
            ok("config", "set", "--stack", "simple", "--path", "heal.nodes.worker-1", "1");
            try {
                const heal = ok("preview", "--diff", "--stack", "simple");
                const text = `${heal.stdout}\n${heal.stderr}`;
                assert.match(text, /\[WorkerMember [^\]\s]*lab-worker-1\] will replace \(vmId\): delete: drain lab-worker-1 on a control-plane node, delete its Node, kubeadm reset lab-worker-1, then create: kubeadm join lab-worker-1 /, text);
                assert.doesNotMatch(text, /\[WorkerMember [^\]\s]*lab-worker-0\]/, "the other worker's step has no change to run");
            } finally {
                ok("config", "rm", "--stack", "simple", "--path", "heal.nodes.worker-1");
                ok("config", "set", "--stack", "simple", "--path", "workers.count", "3");
            }
        });

        it("the Automation API's stack.preview({onEvent}) against the stand-in: changeSummary and planning events", async () => {
            const { LocalWorkspace, PulumiCommand } = await import("@pulumi/pulumi/automation");
            const pulumiCommand = await PulumiCommand.get({ root: STAND_IN_PULUMI_ROOT, skipVersionCheck: true });
            const ws = await LocalWorkspace.create({ workDir: project.dir, pulumiCommand, envVars: env });
            const automationStack = await (await import("@pulumi/pulumi/automation")).Stack.select("simple", ws);
            const events: Record<string, any>[] = [];
            const result = await automationStack.preview({ onEvent: (e) => events.push(e), diff: true });
            const pres = events.filter((e) => e.resourcePreEvent);
            assert.ok(pres.length > 10);
            assert.ok(pres.every((e) => e.resourcePreEvent.planning === true));
            const creates = pres.filter((e) => e.resourcePreEvent.metadata.op === "create");
            assert.equal(result.changeSummary.create, creates.length);
            assert.ok(creates.some((e) => e.resourcePreEvent.metadata.urn.endsWith("::lab-worker-2-vm")));
            assert.match(result.stdout, /\+ openstack:compute\/instance:Instance: \(create\)/);
        });
    });
});
