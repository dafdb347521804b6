/** Resource graphs under mocks: lifecycle findings, and the cluster as a Kubernetes VIM with its tenants and a CNF in a namespace (seed 003). */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import * as os from "node:os";
import * as fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import { PROJECT_DIR } from "./support/program";
import { build, dependencyNames, isSecret, rulePorts, T } from "./support/graphBuild";

describe("resource graphs: lifecycle findings (issue 9)", () => {
    it("HA: the HAProxy port is open to the cluster's own nodes, so narrowing securityGroup.allowedCidrs does not cut them off the API", async () => {
        const { graph } = await build("complex", (raw) => (raw.securityGroup = { ...raw.securityGroup, allowedCidrs: ["192.0.2.0/24"] }));
        const rules = rulePorts(graph, "complex-nodes-sg");
        assert.ok(rules.includes("tcp:16443-16443:192.0.2.0/24"), rules.join(" "));
        assert.ok(rules.includes("tcp:16443-16443:group"), `the nodes reach VIP:16443: ${rules.join(" ")}`);
        assert.equal(graph.named("complex-nodes-sg-api-haproxy-members").inputs.remoteGroupId, "complex-nodes-sg-group-id");
        const simple = rulePorts((await build("simple")).graph, "simple-nodes-sg");
        assert.ok(!simple.some((r) => r.startsWith("tcp:16443")), "no HAProxy port without HA");
    });

    it("the init reaches the masters by the host keys their node steps saw last, so a healed master-0 (new keys) is still reached; its own login carries no key", async () => {
        const { graph } = await build("complex", undefined, { [T.node]: { hostKeyFingerprint: "SHA256:current-key" } });
        const init = graph.named("complex-kubeadm-init");
        assert.ok(isSecret(init.inputs.controlPlanes), "the masters' logins are secret");
        const controlPlanes = init.inputs.controlPlanes.value;
        assert.deepEqual(controlPlanes.map((c: any) => c.name), ["complex-master-0", "complex-master-1", "complex-master-2"], "the first master (where init runs) first");
        for (const c of controlPlanes) assert.equal(c.connection.hostKeyFingerprint, "SHA256:current-key", c.name);
        assert.equal(init.inputs.connection.value.hostKeyFingerprint, undefined, "a key in the init's identity would make a healed master-0 replace the cluster");
        assert.equal(init.inputs.vmId, undefined);
    });
});

describe("resource graphs: the cluster as a Kubernetes VIM, its tenants, a CNF in a namespace (seed 003)", () => {
    const K = {
        serviceAccount: "kubernetes:core/v1:ServiceAccount",
        secret: "kubernetes:core/v1:Secret",
        namespace: "kubernetes:core/v1:Namespace",
        clusterRoleBinding: "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        role: "kubernetes:rbac.authorization.k8s.io/v1:Role",
        roleBinding: "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        deployment: "kubernetes:apps/v1:Deployment",
        pod: "kubernetes:core/v1:Pod",
    };
    const tokenData = (token: string) => ({ data: { token: Buffer.from(token).toString("base64") } });

    it("a kubeadm cluster gets a ServiceAccount bound to cluster-admin with an explicit token Secret; endpoint and CA plain, the token secret", async () => {
        const { graph, outputs, exported } = await build("simple", (raw) => (raw.tenants = []), { [K.secret]: tokenData("vim-token-from-the-controller") });
        const [account] = graph.ofType(K.serviceAccount);
        assert.deepEqual(account.inputs.metadata, { name: "k8s-vnf-vim", namespace: "kube-system" });
        const [secret] = graph.ofType(K.secret);
        assert.equal(secret.inputs.type, "kubernetes.io/service-account-token", "Kubernetes >= 1.24 makes no token Secret by itself (KEP-2799)");
        assert.deepEqual(secret.inputs.metadata.annotations, { "kubernetes.io/service-account.name": "k8s-vnf-vim" });
        assert.deepEqual(dependencyNames(secret), ["simple-vim-account"], "the token Secret is made once its ServiceAccount exists");
        const [binding] = graph.ofType(K.clusterRoleBinding);
        assert.deepEqual(binding.inputs.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" });
        assert.deepEqual(binding.inputs.subjects, [{ kind: "ServiceAccount", name: "k8s-vnf-vim", namespace: "kube-system" }]);
        for (const r of [account, secret, binding]) {
            assert.equal((r.opts.deletedWith as { constructor: { name: string } }).constructor.name, "KubeadmInit", `${r.name} goes with the cluster`);
            assert.ok(r.opts.replacementTrigger, `${r.name}: a new cluster (entire heal) makes it again`);
            assert.equal(r.opts.deleteBeforeReplace, true, `${r.name}: delete-first (the provider stays across a new cluster: a copy made first would be deleted by name)`);
        }
        assert.deepEqual(outputs.vim, { endpoint: "https://10.10.0.100:6443", caCertificate: "CA" }, "the CA from the admin kubeconfig kubeadm wrote");
        assert.equal(outputs.vimToken, "vim-token-from-the-controller", "read from the Secret the token controller filled");
        assert.ok(await pulumi.isSecret(exported.vimToken as pulumi.Output<string>), "the token is a secret output");
        assert.ok(!(await pulumi.isSecret(exported.vim as pulumi.Output<string>)) && !(await pulumi.isSecret((exported.vim as any).caCertificate)), "endpoint and CA are not");
        assert.deepEqual(outputs.tenants, []);
    });

    it("tenants: an admin is bound cluster-wide; a user gets a Role and RoleBinding in each of its namespaces only; each its own token", async () => {
        const { graph, outputs, exported } = await build("simple", undefined, { [K.secret]: tokenData("a-token") });
        assert.deepEqual(graph.ofType(K.namespace).map((n) => n.inputs.metadata.name).sort(), ["cnf-a", "cnf-a-test"]);
        assert.deepEqual(graph.ofType(K.serviceAccount).map((a) => a.inputs.metadata.name).sort(), ["k8s-vnf-tenant-operator", "k8s-vnf-tenant-team-a", "k8s-vnf-vim"]);
        assert.equal(graph.ofType(K.secret).length, 3, "one token Secret per account");
        assert.deepEqual(graph.ofType(K.clusterRoleBinding).map((b) => b.inputs.subjects[0].name).sort(), ["k8s-vnf-tenant-operator", "k8s-vnf-vim"], "team-a is bound to nothing cluster-wide");
        const roles = graph.ofType(K.role);
        assert.deepEqual(roles.map((r) => r.inputs.metadata.namespace).sort(), ["cnf-a", "cnf-a-test"]);
        for (const role of roles) assert.deepEqual(role.inputs.rules, [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }]);
        const bindings = graph.ofType(K.roleBinding);
        for (const b of bindings) {
            assert.deepEqual(b.inputs.roleRef, { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "k8s-vnf-tenant-team-a" });
            assert.deepEqual(b.inputs.subjects, [{ kind: "ServiceAccount", name: "k8s-vnf-tenant-team-a", namespace: "kube-system" }]);
            assert.ok(dependencyNames(b).includes(`simple-vim-namespace-${b.inputs.metadata.namespace}`), `${dependencyNames(b)}: bound once its namespace exists`);
        }
        assert.deepEqual(outputs.tenants, [{ name: "operator", role: "admin", namespaces: [] }, { name: "team-a", role: "user", namespaces: ["cnf-a", "cnf-a-test"] }]);
        assert.ok(await pulumi.isSecret(exported.tenantTokens as pulumi.Output<unknown>));
        assert.deepEqual(outputs.tenantTokens, { operator: "a-token", "team-a": "a-token" });
    });

    it("tenants: bad values are refused naming the field; a kubespray cluster has no API in the stack to make them with", async () => {
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "Team_A", namespaces: ["ok"] }])), /tenants\[0\]\.name: must be a lowercase RFC 1123 label/);
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "a", namespaces: [] }])), /tenants\[0\]\.namespaces: a user tenant acts in its namespaces only/);
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "a", namespaces: ["x"] }, { name: "a", namespaces: ["y"] }])), /tenants\[1\]\.name: duplicates tenants\[0\]\.name/);
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "a", namespaces: ["kube-system"] }])), /tenants\[0\]\.namespaces: kube-system is one of the namespaces every cluster has/);
        await assert.rejects(build("simple", (raw) => (raw.tenants = [{ name: "a", namespaces: ["default"] }])), /tenants\[0\]\.namespaces: default is one of the namespaces every cluster has/);
        await assert.rejects(build("kubespray", (raw) => (raw.tenants = [{ name: "a", role: "admin" }])), /tenants: are made through the kubeadm cluster's API/);
    });

    it("CNF: every object in the namespace, labelled with the instance; a provider from the VIM's endpoint, CA and token (secret); files in order", async () => {
        const { graph, outputs } = await build("cnf", (raw) => (raw.cnf.instanceId = "8a3adb69-0784-43c7-833e-aab0b6ab4470"));
        const [provider] = graph.ofType(T.k8sProvider);
        assert.ok(isSecret(provider.inputs.kubeconfig), "the kubeconfig carries the token");
        const kubeconfig = provider.inputs.kubeconfig.value as string;
        assert.match(kubeconfig, /server: https:\/\/10\.10\.0\.35:6443/);
        assert.match(kubeconfig, /token: vim-token-not-in-clear/);
        assert.match(kubeconfig, /certificate-authority-data: /);
        assert.equal(String(provider.inputs.deleteUnreachable), "true", "a CNF outliving its cluster still terminates");
        const objects = graph.resources.filter((r) => r.type.startsWith("kubernetes:") && r.type !== "kubernetes:yaml:ConfigGroup");
        assert.deepEqual(objects.map((o) => `${o.inputs.kind}/${o.inputs.metadata.name}`).sort(), ["Deployment/vdu1", "Pod/vdu2"]);
        for (const o of objects) {
            assert.equal(o.inputs.metadata.namespace, "cnf-a", o.name);
            assert.equal(o.inputs.metadata.labels.tacker_vnf_instance_id, "8a3adb69-0784-43c7-833e-aab0b6ab4470", o.name);
        }
        const [deployment] = graph.ofType(K.deployment);
        assert.equal(deployment.inputs.spec.replicas, 2, "replicas from cnf.replicas");
        assert.equal(deployment.inputs.spec.template.metadata.labels.tacker_vnf_instance_id, "8a3adb69-0784-43c7-833e-aab0b6ab4470", "its pods carry the label too");
        const [pod] = graph.ofType(K.pod);
        assert.deepEqual(dependencyNames(pod), ["cnf-file-0"], "the second file's objects are created after the first's, as Tacker does");
        assert.equal(graph.ofType(K.namespace).length, 0, "the namespace is not the CNF's own (createNamespace false)");
        assert.equal(pod.opts.replacementTrigger, "not restarted", "a trigger from the start: the engine takes a first value as no change");
        assert.deepEqual(outputs.vnfcResources.map((v: any) => [v.id, v.vduId, v.resourceId]), [
            ["cnf-vdu1-0", "vdu1", "Deployment/vdu1"],
            ["cnf-vdu1-1", "vdu1", "Deployment/vdu1"],
            ["cnf-vdu2-0", "vdu2", "Pod/vdu2"],
        ]);
        assert.equal(outputs.namespace, "cnf-a");
    });

    it("CNF: a heal marks a workload's pod template as kubectl rollout restart does, and re-creates a bare Pod; a created namespace comes first", async () => {
        const { graph } = await build("cnf", (raw) => {
            raw.cnf.createNamespace = true;
            raw.cnf.restarts = { vdu1: "2026-11-25T03:00:00Z", vdu2: "2026-11-25T03:00:00Z" };
        });
        const [deployment] = graph.ofType(K.deployment);
        assert.equal(deployment.inputs.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"], "2026-11-25T03:00:00Z");
        const [pod] = graph.ofType(K.pod);
        assert.equal(pod.opts.replacementTrigger, "2026-11-25T03:00:00Z");
        assert.equal(pod.opts.deleteBeforeReplace, true, "the new Pod has the old one's name");
        assert.equal(deployment.opts.replacementTrigger, undefined, "a Deployment rolls its pods in place");
        const [namespace] = graph.ofType(K.namespace);
        assert.equal(namespace.inputs.metadata.name, "cnf-a");
        assert.deepEqual(dependencyNames(deployment), ["cnf-namespace"]);
    });

    it("CNF: a healed ReplicaSet is re-created (its controller rolls no pods on a template change), a Deployment only marked", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-cnf-"));
        try {
            fs.cpSync(path.join(PROJECT_DIR, "examples/cnf-package"), dir, { recursive: true });
            const rs = fs.readFileSync(path.join(dir, "Files/kubernetes/deployment.yaml"), "utf8").replace("kind: Deployment", "kind: ReplicaSet").replace("name: vdu1", "name: vdu3").replace(/  strategy:\n    type: RollingUpdate\n/, "");
            fs.writeFileSync(path.join(dir, "Files/kubernetes/replicaset.yaml"), rs);
            const { graph } = await build("cnf", (raw) => {
                raw.packageDir = dir;
                raw.cnf.manifests = ["Files/kubernetes/deployment.yaml", "Files/kubernetes/replicaset.yaml"];
                raw.cnf.restarts = { vdu1: "mark-1", vdu3: "mark-1" };
            });
            const [replicaSet] = graph.ofType("kubernetes:apps/v1:ReplicaSet");
            assert.deepEqual([replicaSet.opts.replacementTrigger, replicaSet.opts.deleteBeforeReplace], ["mark-1", true]);
            assert.equal(replicaSet.inputs.spec.template.metadata.annotations?.["kubectl.kubernetes.io/restartedAt"], undefined);
            const [deployment] = graph.ofType(K.deployment);
            assert.equal(deployment.inputs.spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"], "mark-1");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("CNF: Tacker's namespace rules — the request's wins, else the manifests' own, several refused — and bad manifests are refused naming the field", async () => {
        const { graph } = await build("cnf", (raw) => delete raw.cnf.namespace);
        for (const o of graph.resources.filter((r) => r.type === K.deployment || r.type === K.pod)) assert.equal(o.inputs.metadata.namespace, "default");
        await assert.rejects(build("cnf", (raw) => (raw.cnf.namespace = "namespaceA")), /cnf\.namespace: must be a lowercase RFC 1123 label/);
        await assert.rejects(build("cnf", (raw) => (raw.cnf.replicas = { vdu2: 3 })), /cnf\.replicas\.vdu2: no Deployment, StatefulSet or ReplicaSet named vdu2/);
        await assert.rejects(build("cnf", (raw) => (raw.cnf.manifests = ["Files/kubernetes/missing.yaml"])), /cnf\.manifests\[0\]: Files\/kubernetes\/missing\.yaml does not exist/);
        await assert.rejects(build("cnf", (raw) => (raw.cnf.vim.endpoint = "http://10.10.0.35:6443")), /cnf\.vim\.endpoint: must be the API server's https:\/\/ URL/);
        await assert.rejects(build("cnf", (raw) => (raw.image = "ubuntu")), /image: not for vnfKind: cnf/);
    });
});
