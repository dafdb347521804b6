/**
 * The LCM service's side of Kubernetes VIMs and CNFs, in process on loopback: a cluster's outputs become VIMs
 * (and tenants' VIMs), listed as Tacker's NFVO API lists them and registered in a Tacker NFVO when one is
 * configured; a CNF request is planned into stack config from its VIM, its package's manifests and VNFD. The
 * stacks are run by a runner answering what the program exports (vim, vimToken, tenants; a CNF's namespace and
 * VNFCs): the program itself is the graph suite's and, with the real client, the CNF lab suite's.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { createService, Service } from "../service/app";
import { RunOptions, StackRunner } from "../service/stackRunner";
import { request } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";
import { describeEachStore, storeFor } from "./support/stores";

const CA = "-----BEGIN CERTIFICATE-----\nstand-in CA for tests\n-----END CERTIFICATE-----\n";
const CLUSTER_TOKEN = "cluster-token-never-shown";
const TENANT_TOKEN = "tenant-token-never-shown";
const HEALED_TOKEN = "cluster-token-after-heal";
const CNF_VNFD = "cnf-vnfd-0003";
const CLUSTER_VNFD = "cluster-vnfd";

/** Answers each update with the outputs the program exports for that config. */
class ProgramOutputsRunner implements StackRunner {
    readonly configs: Record<string, any>[] = [];
    /** The token a new cluster's controller would put in the Secret (an entire heal makes a new cluster). */
    nextToken: string | undefined;
    readonly destroyed: string[] = [];
    /** The next update fails (a Pulumi error), after being recorded. */
    failNext = false;
    async up(stack: string, config: Record<string, any>, _options: RunOptions): Promise<Record<string, unknown>> {
        this.configs.push(structuredClone(config));
        if (this.failNext) {
            this.failNext = false;
            throw new Error("the update failed (a test's fault)");
        }
        if (config.vnfKind === "cnf") {
            const replicas = config.cnf.replicas ?? {};
            const vnfcs = [
                ...Array.from({ length: config.cnf.manifests.includes("Files/kubernetes/deployment.yaml") ? (replicas.vdu1 ?? 1) : 0 }, (_, i) => ({ id: `${stack}-vdu1-${i}`, vduId: "vdu1", resourceId: "Deployment/vdu1", resourceType: "Deployment" })),
                { id: `${stack}-vdu2-0`, vduId: "vdu2", resourceId: "Pod/vdu2", resourceType: "Pod" },
            ];
            return { vnfKind: "cnf", namespace: config.cnf.namespace ?? "default", vnfcResources: vnfcs };
        }
        const tenants = config.tenants ?? [];
        return {
            vnfKind: "cluster",
            vnfcResources: [],
            scale: { worker_instance: { count: 2, min: 2, max: 4 } },
            vim: { endpoint: "https://10.10.0.1:6443", caCertificate: CA },
            vimToken: this.nextToken ?? CLUSTER_TOKEN,
            tenants: tenants.map((t: any) => ({ name: t.name, role: t.role ?? "user", namespaces: t.namespaces ?? [] })),
            tenantTokens: Object.fromEntries(tenants.map((t: any) => [t.name, TENANT_TOKEN])),
        };
    }
    async preview(): Promise<void> {
        throw new Error("these tests make no plans");
    }
    async destroy(stack: string): Promise<void> {
        this.destroyed.push(stack);
    }
    async recover(): Promise<string> {
        return "nothing was running";
    }
}

/** A Tacker NFVO's VIM API on loopback, recording what it was sent. */
async function fakeNfvo() {
    const received: { method: string; url: string; body: any; token?: string }[] = [];
    let next = 0;
    const control = { failNext: false };
    const server = http.createServer((req, res) => {
        let text = "";
        req.on("data", (d) => (text += d));
        req.on("end", () => {
            const body = text ? JSON.parse(text) : undefined;
            received.push({ method: req.method!, url: req.url!, body, token: req.headers["x-auth-token"] as string | undefined });
            if (control.failNext) {
                control.failNext = false;
                res.writeHead(503).end(JSON.stringify({ echoed: body }));
            } else if (req.method === "POST") res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ vim: { ...body.vim, id: `nfvo-${++next}`, auth_cred: { bearer_token: "***" } } }));
            else if (req.method === "DELETE") res.writeHead(204).end();
            else res.writeHead(200, { "content-type": "application/json" }).end("{}");
        });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        received,
        set failNext(v: boolean) {
            control.failNext = v;
        },
        stop: () => new Promise<void>((r) => server.close(() => r())),
    };
}

describeEachStore("LCM service: clusters become Kubernetes VIMs; CNFs are planned onto them (seed 003)", function (kind) {
    this.timeout(60_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-lcm-vim-"));
    const packagesDir = path.join(dataDir, "packages");
    fs.cpSync(path.join(PROJECT_DIR, "examples/cnf-package"), path.join(packagesDir, CNF_VNFD), { recursive: true });
    fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(packagesDir, CLUSTER_VNFD), { recursive: true });
    fs.writeFileSync(
        path.join(packagesDir, CNF_VNFD, "Files/kubernetes/clusterrole.yaml"),
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: cnf-reader\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get]\n",
    );
    const runner = new ProgramOutputsRunner();
    let service: Service;
    let base = "";
    let nfvo: Awaited<ReturnType<typeof fakeNfvo>>;
    const call = async (method: string, route: string, body?: unknown) => {
        const response = await fetch(`${base}${route}`, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await response.text();
        return { status: response.status, body: text ? JSON.parse(text) : undefined, text };
    };
    const create = async (vnfdId: string) => (await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId })).body.id as string;
    const run = async (id: string, task: string, body: unknown) => {
        const accepted = await call("POST", `/vnflcm/v1/vnf_instances/${id}/${task}`, body);
        assert.equal(accepted.status, 202, accepted.text);
        await service.lifecycle.idle();
        const ops = (await call("GET", "/vnflcm/v1/vnf_lcm_op_occs")).body.filter((o: any) => o.vnfInstanceId === id);
        return (await call("GET", `/vnflcm/v1/vnf_lcm_op_occs/${ops.at(-1).id}`)).body;
    };
    const refused = async (id: string, task: string, body: unknown) => {
        const answer = await call("POST", `/vnflcm/v1/vnf_instances/${id}/${task}`, body);
        assert.ok(answer.status >= 400 && answer.status < 500, `${task} was accepted: ${answer.text}`);
        return answer;
    };
    const clusterBody = (vimName: string, tenants?: unknown[]) => {
        const body = request("simple-instantiate.json");
        delete body.vimConnectionInfo;
        body.additionalParams.k8s_cluster_installation_param.vim_name = vimName;
        if (tenants) body.additionalParams.tenants = tenants;
        return body;
    };
    let cluster = "";
    let seedCnf = "";

    before(async () => {
        nfvo = await fakeNfvo();
        service = await createService({ dataDir, ...(await storeFor(kind, dataDir)), runner, env: {}, packagesDir, nfvo: { url: nfvo.url, token: "nfvo-keystone-token" } });
        base = `http://127.0.0.1:${((await service.app.listen({ port: 0, host: "127.0.0.1" })) && (service.app.server.address() as AddressInfo).port)}`;
    });
    after(async () => {
        await service?.close();
        await nfvo?.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("an instantiated cluster is a VIM under vim_name: listed as `openstack vim list` reads it, registered in the NFVO with token and CA; no token in any answer", async () => {
        cluster = await create(CLUSTER_VNFD);
        const op = await run(cluster, "instantiate", clusterBody("kubernetes_vim"));
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const listed = (await call("GET", "/v1.0/vims.json")).body.vims;
        assert.deepEqual(listed.map((v: any) => [v.name, v.type, v.auth_url]), [["kubernetes_vim", "kubernetes", "https://10.10.0.1:6443"]]);
        assert.deepEqual(listed[0].placement_attr.regions, ["default", "kube-system", "kube-public", "kube-node-lease"]);
        const shown = (await call("GET", `/v1.0/vims/${listed[0].id}.json`)).body.vim;
        assert.equal(shown.name, "kubernetes_vim");
        const instance = (await call("GET", `/vnflcm/v1/vnf_instances/${cluster}`)).body;
        assert.deepEqual(instance.vimConnectionInfo.find((v: any) => v.vimType === "ETSINFV.KUBERNETES.V_1"), { id: `${listed[0].id}-kubernetes`, vimId: listed[0].id, vimType: "ETSINFV.KUBERNETES.V_1", interfaceInfo: { endpoint: "https://10.10.0.1:6443" } });
        const [post] = nfvo.received;
        assert.deepEqual([post.method, post.url, post.token], ["POST", "/v1.0/vims", "nfvo-keystone-token"]);
        assert.deepEqual(post.body.vim.auth_cred, { bearer_token: CLUSTER_TOKEN, ssl_ca_cert: CA }, "the CA always goes with the token");
        assert.deepEqual([post.body.vim.type, post.body.vim.name, post.body.vim.auth_url, post.body.vim.vim_project], ["kubernetes", "kubernetes_vim", "https://10.10.0.1:6443", { name: "default" }]);
        for (const route of ["/v1.0/vims", `/v1.0/vims/${listed[0].id}`, "/k8s-vnf/v1/vims", `/vnflcm/v1/vnf_instances/${cluster}`, "/vnflcm/v1/vnf_lcm_op_occs"]) {
            assert.ok(!(await call("GET", route)).text.includes(CLUSTER_TOKEN), route);
        }
    });

    it("a heal of the entire cluster refreshes its VIM: the new token and CA here and in the NFVO, under the same ids", async () => {
        const id = (await call("GET", "/v1.0/vims")).body.vims[0].id;
        runner.nextToken = HEALED_TOKEN;
        const op = await run(cluster, "heal", {});
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const [vim] = (await call("GET", "/v1.0/vims")).body.vims;
        assert.equal(vim.id, id, "the VIM keeps its id: CNFs name it");
        const put = nfvo.received.at(-1)!;
        assert.deepEqual([put.method, put.url], ["PUT", "/v1.0/vims/nfvo-1"]);
        assert.deepEqual(put.body.vim.auth_cred, { bearer_token: HEALED_TOKEN, ssl_ca_cert: CA });
    });

    it("a second cluster may register under the same vim_name (the seeds' bodies all say kubernetes_vim): two VIMs, told apart by id", async () => {
        const other = await create(CLUSTER_VNFD);
        assert.equal((await run(other, "instantiate", clusterBody("kubernetes_vim"))).operationState, "COMPLETED");
        const named = (await call("GET", "/v1.0/vims")).body.vims.filter((v: any) => v.name === "kubernetes_vim");
        assert.equal(new Set(named.map((v: any) => v.id)).size, 2);
        assert.equal((await run(other, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
        assert.equal((await call("GET", "/v1.0/vims")).body.vims.filter((v: any) => v.name === "kubernetes_vim").length, 1, "its own VIM went with it");
    });

    it("seed 003's body names its VIM by a placeholder: refused naming the field; with the id `vim list` shows, the CNF is planned in namespaceA as Kubernetes spells it", async () => {
        const cnf = await create(CNF_VNFD);
        const placeholder = await refused(cnf, "instantiate", request("cnf-namespace-instantiate.json"));
        assert.match(placeholder.body.detail, /vimConnectionInfo\[0\]\.vimId: no Kubernetes VIM "specified by response of vim list" is registered with this service; `openstack vim list` shows/);
        const body = request("cnf-namespace-instantiate.json");
        body.vimConnectionInfo[0].vimId = (await call("GET", "/v1.0/vims")).body.vims[0].id;
        const op = await run(cnf, "instantiate", body);
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const config = runner.configs.at(-1)!;
        assert.equal(config.vnfKind, "cnf");
        assert.deepEqual(config.cnf.manifests, ["Files/kubernetes/pod.yaml"]);
        assert.equal(config.cnf.namespace, "namespacea");
        assert.equal(config.cnf.createNamespace, true, "no cluster namespace and no other CNF: this CNF owns it");
        assert.equal(config.cnf.instanceId, cnf);
        assert.deepEqual(config.cnf.vim, { endpoint: "https://10.10.0.1:6443", caCertificate: CA, token: HEALED_TOKEN }, "the VIM's token since the entire heal");
        assert.deepEqual(config.cnf.replicas, {}, "the pod's VDU is not scaled; the Deployment's is not in these manifests");
        const instance = (await call("GET", `/vnflcm/v1/vnf_instances/${cnf}`)).body;
        assert.equal(instance.metadata.namespace, "namespacea", "the namespace is shown in GET vnf_instances/{id}");
        assert.deepEqual(instance.vimConnectionInfo.map((v: any) => v.vimType), ["ETSINFV.KUBERNETES.V_1"]);
        assert.deepEqual(instance.instantiatedVnfInfo.scaleStatus, [], "no aspect of the VNFD scales what this CNF runs");
        assert.ok(!instance._links.operate && !instance._links.scale, "nothing to scale, no VMs to operate");
        assert.ok(!JSON.stringify(instance).includes(HEALED_TOKEN));
        seedCnf = cnf;
    });

    it("CNF scale sets the aspect's workload replicas by the VNFD's delta within max_scale_level; heal gives the VNFC's workload a restart mark; operate is refused", async () => {
        const cnf = await create(CNF_VNFD);
        const body = request("cnf-namespace-instantiate.json");
        body.vimConnectionInfo[0].vimId = (await call("GET", "/v1.0/vims")).body.vims[0].id;
        body.additionalParams = { "lcm-kubernetes-def-files": ["Files/kubernetes/deployment.yaml", "Files/kubernetes/pod.yaml"], namespace: "cnf-scale" };
        const inst = await run(cnf, "instantiate", body);
        assert.equal(inst.operationState, "COMPLETED", JSON.stringify(inst.error));
        assert.deepEqual(runner.configs.at(-1)!.cnf.replicas, { vdu1: 1 }, "the VNFD's initial delta of each scaled VDU");
        const instance = (await call("GET", `/vnflcm/v1/vnf_instances/${cnf}`)).body;
        assert.deepEqual(instance.instantiatedVnfInfo.vnfcResourceInfo.map((v: any) => [v.vduId, v.computeResource.resourceId, v.computeResource.vimLevelResourceType]), [
            ["VDU1", "Deployment/vdu1", "Deployment"],
            ["VDU2", "Pod/vdu2", "Pod"],
        ]);
        assert.deepEqual(instance.instantiatedVnfInfo.scaleStatus, [{ aspectId: "vdu1_aspect", scaleLevel: 0 }]);
        assert.ok(instance._links.scale);
        const out = await run(cnf, "scale", { type: "SCALE_OUT", aspectId: "vdu1_aspect", numberOfSteps: 2 });
        assert.equal(out.operationState, "COMPLETED", JSON.stringify(out));
        assert.deepEqual(runner.configs.at(-1)!.cnf.replicas, { vdu1: 3 });
        const scaled = (await call("GET", `/vnflcm/v1/vnf_instances/${cnf}`)).body;
        assert.deepEqual(scaled.instantiatedVnfInfo.scaleStatus, [{ aspectId: "vdu1_aspect", scaleLevel: 2 }]);
        assert.equal(scaled.instantiatedVnfInfo.vnfcResourceInfo.filter((v: any) => v.vduId === "VDU1").length, 3);
        assert.match((await refused(cnf, "scale", { type: "SCALE_OUT", aspectId: "vdu1_aspect", numberOfSteps: 1 })).body.detail, /numberOfSteps: SCALE_OUT by 1 would take vdu1_aspect to level 3, above its max_scale_level 2/);
        assert.match((await refused(cnf, "scale", { type: "SCALE_OUT", aspectId: "worker_instance" })).body.detail, /aspectId: the VNFD scales vdu1_aspect, not worker_instance/);
        const vdu2 = scaled.instantiatedVnfInfo.vnfcResourceInfo.find((v: any) => v.vduId === "VDU2").id;
        const healed = await run(cnf, "heal", { vnfcInstanceId: [vdu2] });
        assert.equal(healed.operationState, "COMPLETED", JSON.stringify(healed.error));
        const restarts = runner.configs.at(-1)!.cnf.restarts;
        assert.deepEqual(Object.keys(restarts), ["vdu2"], "only the named VNFC's workload");
        assert.ok(!Number.isNaN(Date.parse(restarts.vdu2)));
        await run(cnf, "heal", {});
        assert.deepEqual(Object.keys(runner.configs.at(-1)!.cnf.restarts).sort(), ["vdu1", "vdu2"], "no VNFC named: every workload");
        assert.match((await refused(cnf, "heal", { vnfcInstanceId: ["no-such-vnfc"] })).body.detail, /vnfcInstanceId\[0\]: this CNF has no VNFC no-such-vnfc/);
        assert.equal((await refused(cnf, "operate", { changeStateTo: "STOPPED" })).status, 409);
        const back = await run(cnf, "scale", { type: "SCALE_IN", aspectId: "vdu1_aspect", numberOfSteps: 2 });
        assert.equal(back.operationState, "COMPLETED");
        assert.deepEqual(runner.configs.at(-1)!.cnf.replicas, { vdu1: 1 });
        assert.equal((await run(cnf, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
    });

    it("a second CNF in the namespace shares it; the CNF that created it cannot be terminated while the other runs there", async () => {
        const first = seedCnf;
        const second = await create(CNF_VNFD);
        const body = request("cnf-namespace-instantiate.json");
        body.vimConnectionInfo[0].vimId = (await call("GET", "/v1.0/vims")).body.vims[0].id;
        assert.equal((await run(second, "instantiate", body)).operationState, "COMPLETED");
        assert.equal(runner.configs.at(-1)!.cnf.createNamespace, false, "namespacea is the first CNF's");
        const answer = await refused(first, "terminate", { terminationType: "FORCEFUL" });
        assert.equal(answer.status, 409);
        assert.match(answer.body.detail, new RegExp(`namespace namespacea was created by VNF instance ${first} and goes with it, and VNF instance\\(s\\) ${second} still use it`));
        assert.equal((await run(second, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
        assert.equal((await run(first, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
        assert.equal((await call("GET", `/vnflcm/v1/vnf_instances/${first}`)).body.metadata.namespace, undefined, "a terminated CNF has no namespace");
    });

    it("tenants: each is a VIM of its own; a user tenant's VIM takes CNFs in its namespaces only; the cluster's terminate removes its VIMs here and in the NFVO", async () => {
        const tenantCluster = await create(CLUSTER_VNFD);
        const op = await run(tenantCluster, "instantiate", clusterBody("tenant_vim", [{ name: "team-a", namespaces: ["cnf-a"] }]));
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const vims = (await call("GET", "/v1.0/vims")).body.vims;
        const tenantVim = vims.find((v: any) => v.name === "tenant_vim_team-a");
        assert.deepEqual(tenantVim.placement_attr.regions, ["cnf-a"]);
        const cnf = await create(CNF_VNFD);
        const body = request("cnf-namespace-instantiate.json");
        body.vimConnectionInfo[0].vimId = tenantVim.id;
        assert.match((await refused(cnf, "instantiate", body)).body.detail, /additionalParams\.namespace: VIM tenant_vim_team-a is tenant team-a's, which acts in cnf-a only, not in namespacea/);
        body.additionalParams.namespace = "cnf-a";
        assert.equal((await run(cnf, "instantiate", body)).operationState, "COMPLETED");
        const config = runner.configs.at(-1)!;
        assert.equal(config.cnf.vim.token, TENANT_TOKEN, "the tenant's own token");
        assert.equal(config.cnf.createNamespace, false, "the cluster made the tenant's namespace");
        const posted = nfvo.received.filter((r) => r.method === "POST").map((r) => r.body.vim.name);
        assert.deepEqual(posted, ["kubernetes_vim", "kubernetes_vim", "tenant_vim", "tenant_vim_team-a"]);
        const inUse = await refused(tenantCluster, "terminate", { terminationType: "FORCEFUL" });
        assert.match(inUse.body.detail, new RegExp(`CNFs run on the Kubernetes VIM of VNF instance ${tenantCluster}: ${cnf}; terminate them first`));
        assert.equal((await run(cnf, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
        assert.equal((await run(tenantCluster, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
        assert.deepEqual((await call("GET", "/v1.0/vims")).body.vims.map((v: any) => v.name), ["kubernetes_vim"]);
        assert.deepEqual(nfvo.received.filter((r) => r.method === "DELETE").map((r) => r.url).sort(), ["/v1.0/vims/nfvo-2", "/v1.0/vims/nfvo-3", "/v1.0/vims/nfvo-4"]);
    });
    it("a cluster named with a Kubernetes VIM as its OpenStack VIM is refused; a tenant's VIM takes no cluster-wide object", async () => {
        const vimId = (await call("GET", "/v1.0/vims")).body.vims[0].id;
        const body = clusterBody("another_vim");
        body.vimConnectionInfo = [{ id: "c", vimId, vimType: "openstack" }];
        assert.match((await refused(await create(CLUSTER_VNFD), "instantiate", body)).body.detail, /vimConnectionInfo\.vimId: .* is a Kubernetes VIM \(kubernetes_vim\); a cluster's VMs need an OpenStack VIM/);
        const tenantCluster = await create(CLUSTER_VNFD);
        assert.equal((await run(tenantCluster, "instantiate", clusterBody("wide_vim", [{ name: "t", namespaces: ["t-ns"] }]))).operationState, "COMPLETED");
        const cnfBody = request("cnf-namespace-instantiate.json");
        cnfBody.vimConnectionInfo[0].vimId = (await call("GET", "/v1.0/vims")).body.vims.find((v: any) => v.name === "wide_vim_t").id;
        cnfBody.additionalParams = { "lcm-kubernetes-def-files": ["Files/kubernetes/clusterrole.yaml", "Files/kubernetes/pod.yaml"], namespace: "t-ns" };
        assert.match((await refused(await create(CNF_VNFD), "instantiate", cnfBody)).body.detail, /additionalParams\.lcm-kubernetes-def-files: ClusterRole cnf-reader is cluster-wide, and tenant t's VIM acts in its namespaces only/);
        assert.equal((await run(tenantCluster, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
    });

    it("a cluster's terminate is refused while a CNF's instantiate on its VIM has not ended (FAILED_TEMP): the CNF may still come to run there", async () => {
        const cluster = await create(CLUSTER_VNFD);
        assert.equal((await run(cluster, "instantiate", clusterBody("pending_vim"))).operationState, "COMPLETED");
        const body = request("cnf-namespace-instantiate.json");
        body.vimConnectionInfo[0].vimId = (await call("GET", "/v1.0/vims")).body.vims.find((v: any) => v.name === "pending_vim").id;
        const cnf = await create(CNF_VNFD);
        runner.failNext = true;
        const failed = await run(cnf, "instantiate", body);
        assert.equal(failed.operationState, "FAILED_TEMP");
        assert.match((await refused(cluster, "terminate", { terminationType: "FORCEFUL" })).body.detail, new RegExp(`CNFs run on the Kubernetes VIM of VNF instance ${cluster}: ${cnf}; terminate them first`));
        assert.equal((await call("POST", `/vnflcm/v1/vnf_lcm_op_occs/${failed.id}/fail`)).status, 200);
        assert.equal((await run(cluster, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED", "once the CNF's instantiate has failed for good");
    });

    it("an NFVO that refuses a registration fails the instantiate (FAILED_TEMP, nothing hidden); op retry registers the VIM and completes with the stack's outputs", async () => {
        nfvo.failNext = true;
        const retried = await create(CLUSTER_VNFD);
        const failed = await run(retried, "instantiate", clusterBody("retried_vim"));
        assert.equal(failed.operationState, "FAILED_TEMP");
        assert.match(failed.error.detail, /the Tacker NFVO answered POST \/v1\.0\/vims with HTTP 503/);
        assert.ok(!failed.error.detail.includes(CLUSTER_TOKEN) && !failed.error.detail.includes(HEALED_TOKEN));
        const ups = runner.configs.length;
        assert.equal((await call("POST", `/vnflcm/v1/vnf_lcm_op_occs/${failed.id}/retry`)).status, 202);
        await service.lifecycle.idle();
        const op = (await call("GET", `/vnflcm/v1/vnf_lcm_op_occs/${failed.id}`)).body;
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.equal(runner.configs.length, ups + 1, "one more up, which changes nothing, for the outputs");
        const instance = (await call("GET", `/vnflcm/v1/vnf_instances/${retried}`)).body;
        assert.ok(instance.vimConnectionInfo.some((v: any) => v.vimType === "ETSINFV.KUBERNETES.V_1"), "its VIM is registered and named");
        assert.deepEqual(instance.instantiatedVnfInfo.scaleStatus, [{ aspectId: "worker_instance", scaleLevel: 0 }], "from the stack's outputs");
        assert.equal((await run(retried, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
    });
});
