/**
 * Seed 003 on lab hosts, driven as a user drives it (stack config, the real program through the test engine):
 * a kubeadm cluster becomes a Kubernetes VIM with a tenant; CNF stacks use those VIMs' endpoint, CA and tokens.
 * Their objects go to the stand-in API server of the test engine (test/support/engine/kubernetes/), which keeps
 * them in the lab cluster's state with the kubeadm and kubectl stand-ins: its RBAC authorizer, token controller,
 * workload controllers and pulumi-kubernetes' awaiters act on what each run created.
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import { listObjects } from "./support/engine/kubernetes/store";
import { LabStack } from "./support/labStack";
import { failure, useLab } from "./support/labSuite";
import { PROJECT_DIR } from "./support/program";

const CLUSTER = "cv";

describe("Kubernetes VIM, tenants and CNFs on lab hosts (seed 003): the real program through the test engine", function () {
    this.timeout(600_000);
    const tokens = new Set<string>();
    const suite = useLab([], { secrets: () => [...tokens] });
    let cluster: LabStack;
    const clusterDir = () => path.join(suite.lab.clusterState, CLUSTER);
    const objects = (kind: string, namespace?: string) => listObjects(clusterDir(), { kind, namespace });
    const podNames = (namespace: string) => objects("Pod", namespace).map((p) => p.metadata.name as string);
    const cnfStack = (name: string, vim: { endpoint: string; caCertificate: string; token: string }, cnf: Record<string, unknown>) =>
        new LabStack(suite.lab, name, {
            vnfKind: "cnf",
            packageDir: path.join(PROJECT_DIR, "examples/cnf-package"),
            cnf: { manifests: ["Files/kubernetes/deployment.yaml", "Files/kubernetes/service.yaml", "Files/kubernetes/pod.yaml"], vim, ...cnf },
        });
    /** A VIM from the cluster's outputs; every token seen is one the captured output must not hold. */
    const vimWith = (token: string) => (tokens.add(token), { ...cluster.outputs().vim, token });
    const adminVim = () => vimWith(cluster.outputs().vimToken);
    const tenantVim = () => vimWith(cluster.outputs().tenantTokens["team-a"]);

    before(function () {
        if (!suite.lab) this.skip();
        cluster = new LabStack(suite.lab, CLUSTER, {
            vnfName: CLUSTER,
            flavour: "simple",
            image: "lab-image",
            flavor: "lab-flavor",
            network: { networkId: "lab-net", subnetId: "lab-subnet" },
            masters: { count: 1, password: suite.lab.password },
            workers: { count: 1, minCount: 1, password: suite.lab.password },
            kubernetes: { cniManifest: "https://projectcalico.example/calico.yaml" },
            tenants: [{ name: "team-a", namespaces: ["cnf-a"] }],
        });
    });
    after(() => {
        suite.captured.push(...(cluster?.output ?? []));
    });

    it("the cluster is a VIM: a ServiceAccount bound to cluster-admin, its token from an explicit Secret the token controller filled; endpoint and kubeadm's CA as outputs, the token secret", async () => {
        await cluster.up();
        const outputs = cluster.outputs();
        assert.equal(outputs.vim.endpoint, `https://${outputs.masterAddresses[0]}:6443`);
        assert.equal(outputs.vim.caCertificate, await suite.lab.inside(`${CLUSTER}-master-0`, "cat /etc/kubernetes/pki/ca.crt"), "the CA kubeadm wrote");
        const secret = objects("Secret", "kube-system").find((s) => s.metadata.name === "k8s-vnf-vim-token")!;
        assert.equal(Buffer.from(secret.data.token, "base64").toString(), outputs.vimToken);
        assert.ok(cluster.isSecretOutput("vimToken") && cluster.isSecretOutput("tenantTokens"));
        assert.ok(!cluster.isSecretOutput("vim"), "endpoint and CA are not secret");
        assert.deepEqual(objects("ClusterRoleBinding").filter((b) => b.metadata.name.startsWith("k8s-vnf")).map((b) => [b.metadata.name, b.roleRef.name]), [["k8s-vnf-vim", "cluster-admin"]]);
        assert.deepEqual(objects("Namespace").map((n) => n.metadata.name).filter((n) => n === "cnf-a"), ["cnf-a"], "the tenant's namespace");
        assert.deepEqual(objects("RoleBinding", "cnf-a").map((b) => b.subjects[0].name), ["k8s-vnf-tenant-team-a"]);
    });

    it("a CNF through the tenant's VIM: every object in its namespace, labelled; the Deployment's and the Pod's pods Running on the cluster's nodes", async () => {
        const cnf = cnfStack("cnf-tenant", tenantVim(), { namespace: "cnf-a", instanceId: "cnf-tenant-1" });
        await cnf.up();
        for (const kind of ["Deployment", "Service", "Pod"]) {
            for (const o of objects(kind, "cnf-a").filter((x) => x.metadata.labels?.app)) assert.equal(o.metadata.labels.tacker_vnf_instance_id, "cnf-tenant-1", `${kind} ${o.metadata.name}`);
        }
        const pods = objects("Pod", "cnf-a");
        assert.equal(pods.length, 2, podNames("cnf-a").join(", "));
        for (const pod of pods) {
            assert.equal(pod.status.phase, "Running", pod.metadata.name);
            assert.match(pod.spec.nodeName, new RegExp(`^${CLUSTER}-`));
            assert.equal(pod.metadata.labels.tacker_vnf_instance_id, "cnf-tenant-1", "the pod template's label reaches the pods");
        }
        assert.deepEqual(cnf.outputs().vnfcResources.map((v: any) => v.resourceId), ["Deployment/vdu1", "Pod/vdu2"]);

        // scale: replicas by workload name; the Deployment's controller makes the pods, the awaiter waits for them
        cnf.set("cnf.replicas", { vdu1: 3 });
        await cnf.up();
        assert.equal(podNames("cnf-a").filter((n) => n.startsWith("vdu1-")).length, 3);

        // heal: a restart mark rolls the Deployment's pods and re-creates the bare Pod
        const before = objects("Pod", "cnf-a").map((p) => p.metadata.uid as string);
        cnf.set("cnf.restarts", { vdu1: "2026-11-25T04:00:00Z", vdu2: "2026-11-25T04:00:00Z" });
        const healed = await cnf.up();
        assert.ok(healed.changes.replace, `the bare Pod is replaced: ${JSON.stringify(healed.changes)}`);
        const after = objects("Pod", "cnf-a");
        assert.equal(after.length, 4);
        for (const pod of after) assert.ok(!before.includes(pod.metadata.uid), `${pod.metadata.name} is a new pod`);
        assert.ok(after.every((p) => p.status.phase === "Running"));

        await cnf.destroy();
        assert.deepEqual(podNames("cnf-a"), [], "everything the CNF made is gone");
        assert.ok(objects("Namespace").some((n) => n.metadata.name === "cnf-a"), "the tenant's namespace stays: the cluster made it");
    });

    it("a tenant's token acts in its namespaces only: the API refuses a CNF elsewhere (RBAC), and nothing is left", async () => {
        const elsewhere = cnfStack("cnf-elsewhere", tenantVim(), { namespace: "default" });
        const refused = await failure(suite, () => elsewhere.up());
        assert.match(refused.message, /is forbidden: User "system:serviceaccount:kube-system:k8s-vnf-tenant-team-a" cannot create resource "deployments" in API group "apps" in the namespace "default"/);
        assert.deepEqual(objects("Deployment", "default"), []);
        const ownNamespace = cnfStack("cnf-own-ns", tenantVim(), { namespace: "cnf-b", createNamespace: true });
        assert.match((await failure(suite, () => ownNamespace.up())).message, /namespaces is forbidden: User "system:serviceaccount:kube-system:k8s-vnf-tenant-team-a" cannot create resource "namespaces" in API group "" at the cluster scope/);
    });

    it("a CNF through the cluster's VIM that creates its namespace deletes it on destroy; a wrong token is refused by the API (401)", async () => {
        const cnf = cnfStack("cnf-admin", adminVim(), { namespace: "cnf-owned", createNamespace: true });
        await cnf.up();
        assert.ok(objects("Namespace").some((n) => n.metadata.name === "cnf-owned"));
        assert.equal(podNames("cnf-owned").length, 2);
        await cnf.destroy();
        assert.ok(!objects("Namespace").some((n) => n.metadata.name === "cnf-owned"), "its namespace goes with it");
        const stranger = cnfStack("cnf-stranger", { ...adminVim(), token: "not-a-token-of-this-cluster" }, { namespace: "cnf-a" });
        assert.match((await failure(suite, () => stranger.up())).message, /Unauthorized/);
    });

    it("a heal of the entire cluster makes a new cluster: new CA and tokens in the VIM outputs; a CNF on the old token is refused, on the new one it runs", async () => {
        const before = { ...adminVim() };
        cluster.set("heal.generation", 1);
        await cluster.up();
        const after = adminVim();
        assert.notEqual(after.caCertificate, before.caCertificate, "a new cluster CA");
        assert.notEqual(after.token, before.token, "a new token from the new cluster's token controller");
        assert.ok(cluster.outputs().tenantTokens["team-a"], "the tenant's account made again");
        const stale = cnfStack("cnf-stale", before, { namespace: "cnf-a" });
        assert.match((await failure(suite, () => stale.up())).message, /x509: certificate signed by unknown authority|Unauthorized/);
        const fresh = cnfStack("cnf-fresh", tenantVim(), { namespace: "cnf-a" });
        await fresh.up();
        assert.equal(podNames("cnf-a").length, 2);
        await fresh.destroy();
    });
});
