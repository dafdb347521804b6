/**
 * The Kubernetes provider's stand-in (test/support/engine/kubernetesStandIn.ts) driven directly, as the test
 * engine calls it, on a temporary cluster state laid out as the lab's kubeadm stand-in writes it: authentication
 * and RBAC, namespaces, the token controller, diff, and the refusal of the kinds it does not model.
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
    ({ Namespace: "kubernetes:core/v1:Namespace", ServiceAccount: "kubernetes:core/v1:ServiceAccount", Secret: "kubernetes:core/v1:Secret", Pod: "kubernetes:core/v1:Pod", Deployment: "kubernetes:apps/v1:Deployment", Role: "kubernetes:rbac.authorization.k8s.io/v1:Role", RoleBinding: "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", ClusterRoleBinding: "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding" })[kind]!;

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

const namespace = (name: string) => ({ apiVersion: "v1", kind: "Namespace", metadata: { name } });
const serviceAccount = (name: string, ns: string) => ({ apiVersion: "v1", kind: "ServiceAccount", metadata: { name, namespace: ns } });
const opaqueSecret = (name: string, ns: string, value = "YQ==") => ({ apiVersion: "v1", kind: "Secret", metadata: { name, namespace: ns }, data: { k: value } });

describe("Kubernetes provider stand-in", function () {
    this.timeout(10_000);
    let root: string;
    let cluster: string;
    let k8s: KubernetesStandIn;
    const admin = adminKubeconfig();

    const rejects = async (p: Promise<unknown>, pattern: RegExp) => assert.match(await p.then(() => "no error", (e: Error) => e.message), pattern);

    beforeEach(() => {
        root = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-standin-"));
        cluster = path.join(root, "stack-a");
        fs.mkdirSync(cluster, { recursive: true });
        fs.writeFileSync(path.join(cluster, "cluster"), `endpoint=${ENDPOINT}\ncahash=${CAHASH}\npods=10.244.0.0/16\nservices=10.96.0.0/12\n`);
        k8s = new KubernetesStandIn({ clusterState: root }, { pollMs: 2, createRetryBaseMs: 1, serviceAccountTokenWaitMs: 50 });
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
            await rejects(k8s.create(T("ServiceAccount"), admin, serviceAccount("sa", "nowhere")), /was not successfully created by the Kubernetes API server: namespaces "nowhere" not found$/);
        });

        it("deleting a namespace deletes its content, and the delete waits until it is gone", async () => {
            await k8s.create(T("Namespace"), admin, namespace("vnf"));
            await k8s.create(T("ServiceAccount"), admin, serviceAccount("sa", "vnf"));
            await k8s.create(T("Secret"), admin, opaqueSecret("cfg", "vnf"));
            await k8s.delete(T("Namespace"), { kubeconfig: admin, deleteUnreachable: false }, "vnf");
            assert.equal(k8s.read(T("Namespace"), admin, "vnf"), undefined);
            assert.deepEqual([listObjects(cluster, { kind: "ServiceAccount", namespace: "vnf" }), listObjects(cluster, { kind: "Secret", namespace: "vnf" })], [[], []]);
        });
    });

    describe("service accounts, tokens and RBAC", () => {
        async function serviceAccountToken(ns: string, sa: string): Promise<string> {
            await k8s.create(T("ServiceAccount"), admin, serviceAccount(sa, ns));
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
            await rejects(k8s.create(T("Secret"), sa, opaqueSecret("cfg", "vnf")), /secrets "cfg" is forbidden: User "system:serviceaccount:vnf:deployer" cannot patch resource "secrets" in API group "" in the namespace "vnf"$/);
            await rejects(k8s.create(T("Namespace"), sa, namespace("other")), /namespaces "other" is forbidden: User "system:serviceaccount:vnf:deployer" cannot patch resource "namespaces" in API group "" in the namespace "other"$/);
            await k8s.create(T("RoleBinding"), admin, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "deployer-edit", namespace: "vnf" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "edit" }, subjects: [{ kind: "ServiceAccount", name: "deployer", namespace: "vnf" }] });
            await k8s.create(T("Secret"), sa, opaqueSecret("cfg", "vnf"));
        });

        it("creating by server-side apply needs patch, then create: a Role with patch alone is refused without a reason, as the API server's create-on-patch check is", async () => {
            await k8s.create(T("Namespace"), admin, namespace("vnf"));
            const sa = tokenKubeconfig(await serviceAccountToken("vnf", "patcher"));
            await k8s.create(T("Role"), admin, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "patch-only", namespace: "vnf" }, rules: [{ apiGroups: [""], resources: ["secrets"], verbs: ["patch"] }] });
            await k8s.create(T("RoleBinding"), admin, { apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "patcher", namespace: "vnf" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "patch-only" }, subjects: [{ kind: "ServiceAccount", name: "patcher", namespace: "vnf" }] });
            await rejects(k8s.create(T("Secret"), sa, opaqueSecret("cfg", "vnf")), /secrets "cfg" is forbidden: $/);
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

    it("refuses every kind it does not model, so no test can pass on workload controllers, a scheduler or awaiters it no longer has", async () => {
        const refusal = (kind: string) => new RegExp(`the Kubernetes API stand-in \\(test/support/engine/kubernetes/\\) does not model ${kind}: it models a Kubernetes VIM's objects and PersistentVolumes only \\(Namespace, PersistentVolume, ServiceAccount, Secret, Role, RoleBinding, ClusterRole, ClusterRoleBinding\\); workloads run on a real cluster \\(test/realKubelet.lab.spec.ts\\)$`);
        const web = { apiVersion: "apps/v1", kind: "Deployment", metadata: { name: "web", namespace: "default" }, spec: {} };
        assert.throws(() => k8s.check(T("Deployment"), "urn:pulumi:s::p::kubernetes:apps/v1:Deployment::web", web), refusal("apps/v1 Deployment"));
        await rejects(k8s.create(T("Deployment"), admin, web), refusal("apps/v1 Deployment"));
        assert.throws(() => k8s.read(T("Pod"), admin, "default/p"), refusal("v1 Pod"));
        assert.throws(() => k8s.check("kubernetes:example.com/v1:Widget", "urn:pulumi:s::p::kubernetes:example.com/v1:Widget::w", {}), refusal("example.com/v1 Widget"));
        assert.throws(() => listObjects(cluster, { kind: "Endpoints" }), refusal("Endpoints"));
    });

    describe("diff", () => {
        it("replaces on the provider's forceNew fields only, delete-first when named", () => {
            assert.deepEqual(k8s.diff(T("Secret"), opaqueSecret("s", "vnf"), opaqueSecret("s", "vnf", "Yg==")), { changes: "some", replaces: ["data"], deleteBeforeReplace: true });
            const binding = (role: string) => ({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", metadata: { name: "b", namespace: "vnf" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: role }, subjects: [] });
            assert.deepEqual(k8s.diff(T("RoleBinding"), binding("view"), binding("edit")).replaces, ["roleRef"]);
            const role = (verbs: string[]) => ({ apiVersion: "rbac.authorization.k8s.io/v1", kind: "Role", metadata: { name: "r", namespace: "vnf" }, rules: [{ apiGroups: [""], resources: ["secrets"], verbs }] });
            assert.deepEqual(k8s.diff(T("Role"), role(["get"]), role(["get", "list"])), { changes: "some", replaces: [], deleteBeforeReplace: false });
            const autonamed = (value: string) => ({ ...opaqueSecret("s-1a2b3c4d", "vnf", value), metadata: { name: "s-1a2b3c4d", namespace: "vnf", annotations: { "pulumi.com/autonamed": "true" } } });
            assert.equal(k8s.diff(T("Secret"), autonamed("YQ=="), autonamed("Yg==")).deleteBeforeReplace, false);
            assert.equal(k8s.diff(T("ServiceAccount"), { ...serviceAccount("sa", "x"), metadata: { name: "sa" } }, serviceAccount("sa", "default")).changes, "none");
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
