/**
 * The Kubernetes provider's stand-in (test/support/engine/kubernetesStandIn.ts) driven directly, as the test
 * engine calls it, on a temporary cluster state laid out as the lab's kubeadm stand-in writes it: authentication
 * and RBAC, namespaces, the token controller, workloads and their controllers, awaiters, diff.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { clusterDirFor, KubernetesStandIn, listObjects } from "./support/engine/kubernetesStandIn";

const ENDPOINT = "10.231.7.200:16443";
const CAHASH = "5f".repeat(32);
const CA_PEM = `-----BEGIN CERTIFICATE-----\nstand-in CA ${CAHASH}\n-----END CERTIFICATE-----\n`;
const b64 = (s: string) => Buffer.from(s).toString("base64");

const T = (kind: string) =>
    ({ Namespace: "kubernetes:core/v1:Namespace", ServiceAccount: "kubernetes:core/v1:ServiceAccount", Secret: "kubernetes:core/v1:Secret", Pod: "kubernetes:core/v1:Pod", Service: "kubernetes:core/v1:Service", Deployment: "kubernetes:apps/v1:Deployment", ReplicaSet: "kubernetes:apps/v1:ReplicaSet", StatefulSet: "kubernetes:apps/v1:StatefulSet", Role: "kubernetes:rbac.authorization.k8s.io/v1:Role", RoleBinding: "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", ClusterRoleBinding: "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding" })[kind]!;

/** admin.conf as bin/kubeadm's write_node_files writes it. */
function adminKubeconfig(ca = CA_PEM, cahash = CAHASH): string {
    const cert = `-----BEGIN CERTIFICATE-----\nstand-in certificate\nSubject: O=kubeadm:cluster-admins, CN=kubernetes-admin\nIssuer: stand-in CA ${cahash}\n-----END CERTIFICATE-----\n`;
    const key = "-----BEGIN RSA PRIVATE KEY-----\nstand-in key of CN=kubernetes-admin\n-----END RSA PRIVATE KEY-----\n";
    return YAML.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ cluster: { "certificate-authority-data": b64(ca), server: `https://${ENDPOINT}` }, name: "kubernetes" }],
        contexts: [{ context: { cluster: "kubernetes", user: "kubernetes-admin" }, name: "kubernetes-admin@kubernetes" }],
        "current-context": "kubernetes-admin@kubernetes",
        preferences: {},
        users: [{ name: "kubernetes-admin", user: { "client-certificate-data": b64(cert), "client-key-data": b64(key) } }],
    });
}

function tokenKubeconfig(token: string): string {
    return YAML.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ cluster: { "certificate-authority-data": b64(CA_PEM), server: `https://${ENDPOINT}` }, name: "c" }],
        contexts: [{ context: { cluster: "c", user: "sa" }, name: "sa@c" }],
        "current-context": "sa@c",
        users: [{ name: "sa", user: { token } }],
    });
}

const container = (image = "registry.example/app:1.0") => ({ name: "app", image, ports: [{ name: "http", containerPort: 8080 }] });
const deployment = (name: string, namespace: string, replicas: number, image?: string) => ({
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, namespace },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [container(image)] } } },
});
const namespace = (name: string) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } });

describe("Kubernetes provider stand-in", function () {
    this.timeout(10_000);
    let root: string;
    let cluster: string;
    let k8s: KubernetesStandIn;
    const admin = adminKubeconfig();

    const setNode = (name: string, role: string, status: string, unschedulable = false) =>
        fs.writeFileSync(path.join(cluster, "nodes", name), `role=${role}\nstatus=${status}\nunschedulable=${unschedulable}\naddress=10.231.7.${name.length}\n`);
    const pods = (ns: string) => listObjects(cluster, { kind: "Pod", namespace: ns });
    const rejects = async (p: Promise<unknown>, pattern: RegExp) => assert.match(await p.then(() => "no error", (e: Error) => e.message), pattern);

    beforeEach(() => {
        root = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-standin-"));
        cluster = path.join(root, "stack-a");
        fs.mkdirSync(path.join(cluster, "nodes"), { recursive: true });
        fs.mkdirSync(path.join(cluster, "labels"), { recursive: true });
        fs.writeFileSync(path.join(cluster, "cluster"), `endpoint=${ENDPOINT}\ncahash=${CAHASH}\npods=10.244.0.0/16\nservices=10.96.0.0/12\n`);
        setNode("m-master-0", "control-plane", "Ready");
        setNode("m-worker-0", "worker", "Ready");
        setNode("m-worker-1", "worker", "Ready");
        k8s = new KubernetesStandIn({ clusterState: root }, { pollMs: 2, createRetryBaseMs: 1, endpointsSettleMs: 20, serviceAccountTokenWaitMs: 50 });
    });
    afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

    describe("authentication", () => {
        it("admin.conf's certificate is kubernetes-admin in kubeadm:cluster-admins, bound to cluster-admin", async () => {
            const { id } = await k8s.create(T("Namespace"), admin, namespace("vnf"));
            assert.equal(id, "vnf");
            assert.ok(listObjects(cluster, { kind: "ClusterRoleBinding" }).some((b) => b.metadata.name === "kubeadm:cluster-admins"));
        });

        it("a CA that is not the cluster's fails the TLS handshake; an unknown token is 401", async () => {
            await rejects(k8s.create(T("Namespace"), adminKubeconfig(CA_PEM.replace(CAHASH, "00")), namespace("x")), /configured Kubernetes cluster is unreachable: .*x509: certificate signed by unknown authority/);
            await rejects(k8s.create(T("Namespace"), tokenKubeconfig("not.a.token"), namespace("x")), /configured Kubernetes cluster is unreachable: unable to load schema information from the API server: the server has asked for the client to provide credentials$/);
            await rejects(k8s.create(T("Namespace"), admin.replace(ENDPOINT, "10.231.7.9:6443"), namespace("x")), /connect: connection refused/);
        });
    });

    describe("namespaces", () => {
        it("validates names, refuses a taken one and content of a missing namespace", async () => {
            await rejects(k8s.create(T("Namespace"), admin, namespace("Bad_Name")), /Namespace "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of/);
            await k8s.create(T("Namespace"), admin, namespace("vnf"));
            await rejects(k8s.create(T("Namespace"), admin, namespace("vnf")), /namespaces "vnf" already exists\n\nThe resource already exists in the cluster/);
            await rejects(k8s.create(T("Deployment"), admin, deployment("web", "nowhere", 1)), /was not successfully created by the Kubernetes API server: namespaces "nowhere" not found$/);
        });

        it("deleting a namespace deletes its content, and the delete waits until it is gone", async () => {
            await k8s.create(T("Namespace"), admin, namespace("vnf"));
            await k8s.create(T("Deployment"), admin, deployment("web", "vnf", 2));
            assert.equal(pods("vnf").length, 2);
            await k8s.delete(T("Namespace"), { kubeconfig: admin, deleteUnreachable: false }, "vnf");
            assert.equal(k8s.read(T("Namespace"), admin, "vnf"), undefined);
            assert.deepEqual([listObjects(cluster, { kind: "Deployment", namespace: "vnf" }), pods("vnf")], [[], []]);
        });
    });

    describe("service accounts, tokens and RBAC", () => {
        async function serviceAccountToken(ns: string, sa: string): Promise<string> {
            await k8s.create(T("ServiceAccount"), admin, { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: sa, namespace: ns } });
            const { outputs } = await k8s.create(T("Secret"), admin, { apiVersion: "v1", kind: "Secret", type: "kubernetes.io/service-account-token", metadata: { name: `${sa}-token`, namespace: ns, annotations: { "kubernetes.io/service-account.name": sa } } });
            assert.equal(Buffer.from(outputs.data["ca.crt"], "base64").toString(), CA_PEM);
            assert.equal(Buffer.from(outputs.data.namespace, "base64").toString(), ns);
            assert.ok(outputs.metadata.annotations["kubernetes.io/service-account.uid"]);
            const token = Buffer.from(outputs.data.token, "base64").toString();
            assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
            return token;
        }

        it("the token controller fills a token Secret; its token is the ServiceAccount, which RBAC then refuses until bound", async () => {
            await k8s.create(T("Namespace"), admin, namespace("vnf"));
            const sa = tokenKubeconfig(await serviceAccountToken("vnf", "deployer"));
            await rejects(
                k8s.create(T("Deployment"), sa, deployment("web", "vnf", 1)),
                /deployments.apps "web" is forbidden: User "system:serviceaccount:vnf:deployer" cannot patch resource "deployments" in API group "apps" in the namespace "vnf"$/,
            );
            await rejects(k8s.create(T("Namespace"), sa, namespace("other")), /namespaces "other" is forbidden: User "system:serviceaccount:vnf:deployer" cannot patch resource "namespaces" in API group "" in the namespace "other"$/);
            await k8s.create(T("RoleBinding"), admin, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "deployer-edit", namespace: "vnf" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "edit" }, subjects: [{ kind: "ServiceAccount", name: "deployer", namespace: "vnf" }] });
            await k8s.create(T("Deployment"), sa, deployment("web", "vnf", 1));
        });

        it("creating by server-side apply needs patch, then create: a Role with patch alone is refused without a reason, as the API server's create-on-patch check is", async () => {
            await k8s.create(T("Namespace"), admin, namespace("vnf"));
            const sa = tokenKubeconfig(await serviceAccountToken("vnf", "patcher"));
            await k8s.create(T("Role"), admin, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "patch-only", namespace: "vnf" }, rules: [{ apiGroups: ["apps"], resources: ["deployments"], verbs: ["patch"] }] });
            await k8s.create(T("RoleBinding"), admin, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "patcher", namespace: "vnf" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "patch-only" }, subjects: [{ kind: "ServiceAccount", name: "patcher", namespace: "vnf" }] });
            await rejects(k8s.create(T("Deployment"), sa, deployment("web", "vnf", 1)), /deployments.apps "web" is forbidden: $/);
        });

        it("a token Secret whose ServiceAccount is missing is deleted, and the provider's wait for its token times out", async () => {
            await k8s.create(T("Namespace"), admin, namespace("vnf"));
            await rejects(
                k8s.create(T("Secret"), admin, { apiVersion: "v1", kind: "Secret", type: "kubernetes.io/service-account-token", metadata: { name: "orphan", namespace: "vnf", annotations: { "kubernetes.io/service-account.name": "nobody" } } }),
                /failed to fully initialize or become live: Timeout occurred polling for 'orphan'$/,
            );
            assert.deepEqual(listObjects(cluster, { kind: "Secret", namespace: "vnf" }), []);
        });

        it("creating a Role or binding grants only what the creator holds (escalation check)", async () => {
            await k8s.create(T("Namespace"), admin, namespace("vnf"));
            const sa = tokenKubeconfig(await serviceAccountToken("vnf", "ops"));
            await k8s.create(T("RoleBinding"), admin, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "ops-admin", namespace: "vnf" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "admin" }, subjects: [{ kind: "ServiceAccount", name: "ops", namespace: "vnf" }] });
            const role = (name: string, rules: unknown[]) => ({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name, namespace: "vnf" }, rules });
            await k8s.create(T("Role"), sa, role("pod-reader", [{ apiGroups: [""], resources: ["pods"], verbs: ["get", "list"] }]));
            await rejects(
                k8s.create(T("Role"), sa, role("node-reader", [{ apiGroups: [""], resources: ["nodes"], verbs: ["get", "list"] }])),
                /roles.rbac.authorization.k8s.io "node-reader" is forbidden: user "system:serviceaccount:vnf:ops" \(groups=\["system:serviceaccounts" "system:serviceaccounts:vnf" "system:authenticated"\]\) is attempting to grant RBAC permissions not currently held:\n\{APIGroups:\[""\], Resources:\["nodes"\], Verbs:\["get" "list"\]\}$/,
            );
            await rejects(
                k8s.create(T("RoleBinding"), sa, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "x", namespace: "vnf" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" }, subjects: [{ kind: "User", name: "mallory" }] }),
                /rolebindings.rbac.authorization.k8s.io "x" is forbidden: user "system:serviceaccount:vnf:ops" .* is attempting to grant RBAC permissions not currently held/,
            );
        });
    });

    describe("workloads", () => {
        beforeEach(() => k8s.create(T("Namespace"), admin, namespace("vnf")));

        it("a Deployment runs its pods on Ready workers through a ReplicaSet; a template change rolls out, replicas scale", async () => {
            const { id, outputs } = await k8s.create(T("Deployment"), admin, deployment("web", "vnf", 2));
            assert.equal(id, "vnf/web");
            assert.equal(outputs.status.availableReplicas, 2);
            assert.equal(outputs.metadata.annotations["deployment.kubernetes.io/revision"], "1");
            const [rs1] = listObjects(cluster, { kind: "ReplicaSet", namespace: "vnf" });
            assert.match(rs1.metadata.name, /^web-[bcdfghjklmnpqrstvwxz2456789]+$/);
            for (const pod of pods("vnf")) {
                assert.match(pod.metadata.name, new RegExp(`^${rs1.metadata.name}-[bcdfghjklmnpqrstvwxz2456789]{5}$`));
                assert.equal(pod.metadata.labels.app, "web");
                assert.equal(pod.metadata.ownerReferences[0].uid, rs1.metadata.uid);
                assert.match(pod.spec.nodeName, /^m-worker-/, "the control-plane taint keeps pods off the master");
                assert.equal(pod.status.phase, "Running");
            }
            const updated = await k8s.update(T("Deployment"), admin, id, deployment("web", "vnf", 2, "registry.example/app:2.0"));
            assert.equal(updated.metadata.annotations["deployment.kubernetes.io/revision"], "2");
            const replicaSets = listObjects(cluster, { kind: "ReplicaSet", namespace: "vnf" });
            assert.equal(replicaSets.find((r) => r.metadata.name === rs1.metadata.name)!.spec.replicas, 0);
            assert.ok(pods("vnf").every((p) => p.spec.containers[0].image === "registry.example/app:2.0"));
            await k8s.update(T("Deployment"), admin, id, deployment("web", "vnf", 3, "registry.example/app:2.0"));
            assert.equal(pods("vnf").length, 3);
            await k8s.delete(T("Deployment"), { kubeconfig: admin, deleteUnreachable: false }, id);
            assert.deepEqual([listObjects(cluster, { kind: "ReplicaSet", namespace: "vnf" }), pods("vnf")], [[], []]);
        });

        it("no Ready, schedulable worker: pods stay Pending with the scheduler's reasons; they run once a node is Ready", async () => {
            setNode("m-worker-0", "worker", "NotReady");
            setNode("m-worker-1", "worker", "Ready", true);
            const rs = { apiVersion: "apps/v1", kind: "ReplicaSet", metadata: { name: "rs", namespace: "vnf" }, spec: { replicas: 1, selector: { matchLabels: { app: "rs" } }, template: { metadata: { labels: { app: "rs" } }, spec: { containers: [container()] } } } };
            await k8s.create(T("ReplicaSet"), admin, rs);
            const [pending] = pods("vnf");
            assert.equal(pending.status.phase, "Pending");
            assert.equal(
                pending.status.conditions[0].message,
                "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
            );
            setNode("m-worker-0", "worker", "Ready");
            assert.equal(k8s.read(T("ReplicaSet"), admin, "vnf/rs")!.status.readyReplicas, 1);
            assert.equal(pods("vnf")[0].spec.nodeName, "m-worker-0");
        });

        it("a StatefulSet names pods by ordinal, scales from the top and replaces pods on a template change", async () => {
            const sts = (replicas: number, image?: string) => ({ apiVersion: "apps/v1", kind: "StatefulSet", metadata: { name: "db", namespace: "vnf" }, spec: { serviceName: "db", replicas, selector: { matchLabels: { app: "db" } }, template: { metadata: { labels: { app: "db" } }, spec: { containers: [container(image)] } } } });
            const { id, outputs } = await k8s.create(T("StatefulSet"), admin, sts(3));
            assert.equal(outputs.status.currentRevision, outputs.status.updateRevision);
            assert.deepEqual(pods("vnf").map((p) => p.metadata.name), ["db-0", "db-1", "db-2"]);
            await k8s.update(T("StatefulSet"), admin, id, sts(2));
            assert.deepEqual(pods("vnf").map((p) => p.metadata.name), ["db-0", "db-1"]);
            const before = pods("vnf").map((p) => p.metadata.uid);
            const updated = await k8s.update(T("StatefulSet"), admin, id, sts(2, "registry.example/app:2.0"));
            assert.equal(updated.status.updatedReplicas, 2);
            assert.ok(pods("vnf").every((p, i) => p.metadata.uid !== before[i] && p.spec.containers[0].image === "registry.example/app:2.0"));
        });

        it("a Service with a selector gets Endpoints of its ready pods; the awaiter waits for them to settle", async () => {
            await k8s.create(T("Deployment"), admin, deployment("web", "vnf", 2));
            const { outputs } = await k8s.create(T("Service"), admin, { apiVersion: "v1", kind: "Service", metadata: { name: "web", namespace: "vnf" }, spec: { selector: { app: "web" }, ports: [{ port: 80, targetPort: "http" }] } });
            assert.match(outputs.spec.clusterIP, /^10\.(9[6-9]|10[0-9]|11[01])\./);
            const [ep] = listObjects(cluster, { kind: "Endpoints", namespace: "vnf" });
            assert.equal(ep.subsets[0].addresses.length, 2);
            assert.deepEqual(ep.subsets[0].ports, [{ port: 8080, protocol: "TCP" }]);
        });
    });

    describe("diff", () => {
        it("replaces on the provider's forceNew fields only", () => {
            const d = deployment("web", "vnf", 1);
            assert.deepEqual(k8s.diff(T("Deployment"), d, deployment("web", "vnf", 1, "x:2")).replaces, []);
            const reselected = { ...d, spec: { ...d.spec, selector: { matchLabels: { app: "other" } } } };
            assert.deepEqual(k8s.diff(T("Deployment"), d, reselected), { changes: "some", replaces: ["spec.selector"], deleteBeforeReplace: true });
            const pod = (image: string) => ({ apiVersion: "v1", kind: "Pod", metadata: { name: "p" }, spec: { containers: [container(image)] } });
            assert.deepEqual(k8s.diff(T("Pod"), pod("a:1"), pod("a:2")).replaces, ["spec.containers[*].image"]);
            const secret = (v: string) => ({ apiVersion: "v1", kind: "Secret", metadata: { name: "s", namespace: "default" }, data: { k: v } });
            assert.deepEqual(k8s.diff(T("Secret"), secret("YQ=="), secret("Yg==")).replaces, ["data"]);
            assert.deepEqual(k8s.diff(T("Deployment"), { ...d, metadata: { name: "web" } }, { ...d, metadata: { name: "web", namespace: "default" } }).changes, "none");
        });
    });

    it("of two cluster states at one address (a destroyed cluster's stays behind), the one initialized last answers", () => {
        const root = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-standin-endpoint-"));
        try {
            for (const [name, age] of [["old", 60], ["new", 0], ["elsewhere", 0]] as const) {
                fs.mkdirSync(path.join(root, name));
                const file = path.join(root, name, "cluster");
                fs.writeFileSync(file, `endpoint=${name === "elsewhere" ? "10.0.0.9" : "10.0.0.10"}:6443\n`);
                const when = new Date(Date.now() - age * 1000);
                fs.utimesSync(file, when, when);
            }
            assert.equal(clusterDirFor(root, "10.0.0.10:6443"), path.join(root, "new"));
            assert.equal(clusterDirFor(root, "10.0.0.11:6443"), undefined);
        } finally {
            fs.rmSync(root, { recursive: true, force: true });
        }
    });
});
