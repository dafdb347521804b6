/**
 * A simple kubeadm cluster (1 master, then 2 workers) run by the real Pulumi CLI, engine and plugins, with a
 * real control plane: the VMs come from the lab OpenStack API; on the first master the real kubeadm (v1.31.4,
 * tools/build.sh) writes the certificates, kubeconfig files and static Pod manifests, and etcd, kube-apiserver,
 * kube-controller-manager and kube-scheduler run from them (test/lab/stand-ins/lib/static-pods.sh). The real
 * Kubernetes plugin creates the VIM's ServiceAccounts, token Secrets and RBAC there, and the real kubectl
 * checks them from the test machine with the stack's own kubeconfig and tokens.
 *
 * Not real yet (issue 26): the kubelet (no Node objects: joins, labels and drains still go to the stand-ins'
 * state), a control-plane join (so no HA flavour here), CNI and Pods.
 */
import { strict as assert } from "node:assert";
import { clusterState } from "./support/clusterState";
import { skipAfterFirstFailure, useLab } from "./support/labSuite";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { realKubectl } from "./support/realKubectl";
import { realClusterStack, tokenKubeconfig as vimTokenKubeconfig } from "./support/realCluster";
import { RealStack } from "./support/realStack";
import { builtTools, useBuiltTools } from "./support/tools";

const CLUSTER = "rk";
const MASTER = `${CLUSTER}-master-0`;
const VERSION = "v1.31.4";

describe("the real Pulumi CLI and plugins: a simple kubeadm cluster whose first master runs the real control plane", function () {
    useBuiltTools();
    this.timeout(900_000);
    let api: LabOpenStackApi;
    /** Credentials the suite handles, none of which may show in anything it printed or captured. */
    const credentials: string[] = [];
    const suite = useLab([], { secrets: () => [api?.credentials.password ?? "", ...credentials] });
    let stack: RealStack;
    const state = () => clusterState(suite.lab, CLUSTER);

    const kubectl = realKubectl;
    /** The stack's admin kubeconfig, its client key among the credentials the scan looks for. */
    const adminKubeconfig = async () => {
        const kubeconfig = await stack.adminKubeconfig();
        credentials.push(/client-key-data: (\S+)/.exec(kubeconfig)?.[1] ?? "");
        return kubeconfig;
    };
    /** The stack's outputs, each token among the credentials the scan looks for. */
    const outputs = () => {
        const all = stack.outputs();
        credentials.push(all.vimToken, ...Object.values(all.tenantTokens as Record<string, string>));
        return all;
    };
    /** A kubeconfig of a ServiceAccount token the stack registers, at the VIM's endpoint and CA. */
    const tokenKubeconfig = (token: string) => vimTokenKubeconfig(outputs().vim, token);
    const refused = (promise: Promise<unknown>) =>
        promise.then(
            () => assert.fail("the API server should refuse"),
            (e: Error) => e.message,
        );
    const staticPods = () => suite.lab.inside(MASTER, "for f in /run/k8s-vnf-lab/*.pid; do n=${f##*/}; kill -0 \"$(cat \"$f\")\" && echo \"${n%.pid}\"; done; true").then((o) => o.trim().split("\n").filter(Boolean).sort());

    skipAfterFirstFailure();

    before(async function () {
        if (!suite.lab) this.skip();
        const tools = builtTools();
        suite.lab.giveTools({ kube: tools.bins.kube, etcd: tools.bins.etcd });
        ({ api, stack } = await realClusterStack(suite, CLUSTER, () => ({
            masters: { count: 1, password: suite.lab.password },
            workers: { count: 1, maxCount: 5, password: suite.lab.password },
            kubernetes: { version: VERSION.slice(1), cniManifest: "https://projectcalico.example/calico.yaml", drainTimeout: 5 },
            tenants: [{ name: "team-a", role: "user", namespaces: ["team-a-cnf"] }],
        })));
    });

    it("up: the first master runs etcd and the control plane from the real kubeadm's manifests; the stack's kubeconfig reaches that API server", async () => {
        await stack.up();
        assert.deepEqual(api.servers().map((s) => [s.name, s.status]).sort(), [[MASTER, "ACTIVE"], [`${CLUSTER}-worker-0`, "ACTIVE"]]);
        assert.deepEqual(await staticPods(), ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]);
        const manifest = await suite.lab.inside(MASTER, "cat /etc/kubernetes/manifests/kube-apiserver.yaml");
        assert.match(manifest, new RegExp(`--advertise-address=${api.servers().find((s) => s.name === MASTER)!.address.replace(/\./g, "\\.")}\\n`), "kubeadm's own flags");
        const kubeconfig = await adminKubeconfig();
        assert.equal(JSON.parse(await kubectl(kubeconfig, ["version", "-o", "json"])).serverVersion.gitVersion, VERSION);
        const config = await kubectl(kubeconfig, ["get", "configmap", "-n", "kube-system", "kubeadm-config", "-o", "jsonpath={.data.ClusterConfiguration}"]);
        assert.match(config, /podSubnet: 192\.168\.0\.0\/16/, "kubeadm's upload-config stored the program's ClusterConfiguration");
        assert.deepEqual(state().nodes(), [MASTER, `${CLUSTER}-worker-0`].sort());
    });

    it("the VIM's token is the cluster admin's; a tenant's token acts in its namespaces only, the real API server refusing the rest", async () => {
        const all = outputs();
        const admin = tokenKubeconfig(all.vimToken);
        assert.equal((await kubectl(admin, ["auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"])).trim(), "system:serviceaccount:kube-system:k8s-vnf-vim");
        assert.equal((await kubectl(admin, ["auth", "can-i", "*", "*", "--all-namespaces"])).trim(), "yes");
        const tenant = tokenKubeconfig(all.tenantTokens["team-a"]);
        assert.equal((await kubectl(tenant, ["auth", "can-i", "create", "deployments", "-n", "team-a-cnf"])).trim(), "yes");
        await kubectl(tenant, ["create", "configmap", "probe", "-n", "team-a-cnf", "--from-literal=a=b"]);
        assert.match(await refused(kubectl(tenant, ["get", "configmaps", "-n", "default"])), /Forbidden|forbidden/);
        assert.match(await refused(kubectl(tenant, ["get", "nodes"])), /forbidden/);
        assert.ok(stack.isSecretOutput("vimToken") && stack.isSecretOutput("tenantTokens"), "the tokens are secret outputs");
        await kubectl(await adminKubeconfig(), ["delete", "configmap", "probe", "-n", "team-a-cnf"]);
    });

    it("a second up changes nothing: the real Kubernetes plugin's diff of every object is empty", async () => {
        const since = stack.steps.length;
        const result = await stack.up();
        assert.deepEqual(stack.stepsOf(since, /./).filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`), []);
        assert.deepEqual(Object.keys(result.changes), ["same"]);
    });

    it("preview under the real engine: nothing to change; a scale-out shows creates for the new worker only, with its join; a worker heal its membership deleted before its VM, both made again, and what each replacement runs; nothing changes", async () => {
        const state = JSON.stringify(stack.state());
        const preview = async (...extra: string[]) => {
            await stack.applyConfig();
            const { stdout, stderr } = await stack.cli(["preview", "--stack", stack.name, "--color", "never", ...extra]);
            return `${stdout}\n${stderr}`;
        };
        // The JSON digest leaves out a replacement's delete-replaced and create-replacement steps unless asked
        // (v3.248.0 pkg/backend/display/display.go `shouldShow`).
        const steps = async () => (JSON.parse(await stack.preview(["--json", "--show-replacement-steps"])).steps as { op: string; urn: string }[]).map((s) => `${s.op} ${s.urn.split("::").pop()}`);
        await preview("--expect-no-changes");

        stack.set("workers.count", 2);
        const creates = (await steps()).filter((s) => s.startsWith("create "));
        assert.ok(creates.includes(`create ${CLUSTER}-worker-1-vm`) && creates.includes(`create ${CLUSTER}-kubeadm-worker-1-member`), creates.join("\n"));
        assert.deepEqual(creates.filter((s) => !s.includes("worker-1")), [], "nothing else is created");
        assert.match(await preview("--diff"), new RegExp(`action *: "kubeadm join ${CLUSTER}-worker-1 \\(a bootstrap token fetched from a control-plane node\\)"`));

        stack.set("workers.count", 1);
        stack.set("heal.nodes.worker-0", 1);
        const heal = await steps();
        const at = (step: string) => heal.indexOf(step);
        const [member, vm] = [`${CLUSTER}-kubeadm-worker-0-member`, `${CLUSTER}-worker-0-vm`];
        assert.ok(at(`delete-replaced ${member}`) >= 0 && at(`delete-replaced ${member}`) < at(`delete-replaced ${vm}`), heal.join("\n"));
        assert.ok(at(`delete-replaced ${vm}`) < at(`replace ${vm}`) && at(`replace ${vm}`) < at(`create-replacement ${vm}`), heal.join("\n"));
        assert.ok(at(`create-replacement ${member}`) > at(`create-replacement ${vm}`), "the membership is made again after the VM");
        assert.deepEqual(heal.filter((s) => /master-0/.test(s) && !s.startsWith("same ")), [], "the master is untouched");
        const text = await preview("--diff");
        assert.match(text, new RegExp(`\\[WorkerMember [^\\]\\s]*${CLUSTER}-worker-0\\] will replace \\(vmId\\): delete: drain ${CLUSTER}-worker-0 on a control-plane node, delete its Node, kubeadm reset ${CLUSTER}-worker-0, then create: kubeadm join ${CLUSTER}-worker-0 `), "what the replacement runs, from the step's diff");
        delete stack.config.heal;
        assert.equal(JSON.stringify(stack.state()), state, "a preview changes nothing");
        await preview("--expect-no-changes");
    });

    it("scale out and in: a second worker joins the real cluster's CA; it is drained and deleted again", async () => {
        stack.set("workers.count", 2);
        await stack.up();
        assert.deepEqual(state().nodes(), [MASTER, `${CLUSTER}-worker-0`, `${CLUSTER}-worker-1`].sort());
        const ca = (await suite.lab.inside(`${CLUSTER}-worker-1`, "cat /etc/kubernetes/pki/ca.crt")).trim();
        assert.equal(ca, (outputs().vim as { caCertificate: string }).caCertificate.trim(), "the worker holds the real cluster CA");
        stack.set("workers.count", 1);
        await stack.up();
        assert.deepEqual(state().nodes(), [MASTER, `${CLUSTER}-worker-0`].sort());
        assert.deepEqual(api.servers().map((s) => s.name).sort(), [MASTER, `${CLUSTER}-worker-0`]);
    });

    it("operate stop and start: the master's VM powers off and on; its kubelet starts the control plane again, with etcd's data", async () => {
        stack.set("operate", { vnfState: "STOPPED" });
        await stack.up();
        assert.deepEqual(api.servers().map((s) => s.status), ["SHUTOFF", "SHUTOFF"]);
        stack.set("operate", { vnfState: "STARTED" });
        await stack.up();
        assert.deepEqual(await staticPods(), ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"]);
        const admin = tokenKubeconfig(outputs().vimToken);
        assert.equal((await kubectl(admin, ["get", "namespace", "team-a-cnf", "-o", "jsonpath={.status.phase}"])).trim(), "Active", "the objects made before the stop are there");
    });

    it("healing the entire cluster makes a new one (new CA, empty etcd), and the VIM's accounts are made again in it", async () => {
        const before = outputs();
        stack.set("heal.generation", 1);
        const since = stack.steps.length;
        await stack.up();
        const vimSteps = stack.stepsOf(since, /^rk-vim-/).filter((s) => s.op !== "same");
        assert.ok(vimSteps.some((s) => s.op === "create-replacement"), "the VIM's objects made again");
        assert.ok(vimSteps.every((s) => s.op !== "create-replacement" || vimSteps.findIndex((d) => d.name === s.name && d.op === "delete-replaced") < vimSteps.indexOf(s)), "each VIM object deleted before its copy is made (same name, same provider)");
        assert.deepEqual(stack.stepsOf(since, /-api$/).filter((s) => s.op !== "same").map((s) => s.op), ["update"], "the Kubernetes provider updated, not replaced");
        const after = outputs();
        assert.notEqual(after.vim.caCertificate, before.vim.caCertificate, "a new cluster CA");
        assert.notEqual(after.vimToken, before.vimToken, "a new token");
        assert.equal((await kubectl(tokenKubeconfig(after.vimToken), ["auth", "can-i", "*", "*", "--all-namespaces"])).trim(), "yes");
        assert.match(await refused(kubectl(tokenKubeconfig(before.vimToken), ["get", "namespaces"])), /Unauthorized|certificate signed by unknown authority/);
    });

    it("destroy: every resource deleted, no lab host left", async () => {
        await stack.destroy();
        assert.deepEqual(stack.state().filter((r) => r.type !== "pulumi:pulumi:Stack"), []);
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });
});
