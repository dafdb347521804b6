/**
 * VIMs registered as with Tacker (`openstack vim register --config-file vim.yaml NAME`, Tacker's NFVO API
 * `POST /v1.0/vims`), in process on loopback, driven by the real python-tackerclient where it is installed
 * (.ci/run installs it; the HTTP calls stand in for it elsewhere): a Kubernetes VIM that no cluster of this
 * service made takes seed 003's CNFs, an OpenStack VIM a cluster's VMs; neither is deleted while in use. The
 * stacks are run by a runner recording the config it is given (what the real CLI does with it is in
 * realKubelet.lab.spec.ts, which registers its real cluster this way).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { createService, Service } from "../service/app";
import { RunOptions, StackRunner } from "../service/stackRunner";
import { request } from "./support/fixtures";
import { clientAvailable, openstackClient } from "./support/lcmClient";
import { PROJECT_DIR } from "./support/program";
import { describeEachStore, storeFor } from "./support/stores";

const CA = "-----BEGIN CERTIFICATE-----\nthe cluster's CA, for tests\n-----END CERTIFICATE-----\n";
const TOKEN = "registered-vim-token-never-shown";
const KEYSTONE_PASSWORD = "registered-keystone-password-never-shown";
const ROTATED_PASSWORD = "rotated-keystone-password-never-shown";
const PATCHED_PASSWORD = "patched-keystone-password-never-shown";
const CNF_VNFD = "cnf-vnfd-0003";

/** Records each update's config and VIM environment; answers what the program exports for a CNF. */
class RecordingRunner implements StackRunner {
    readonly ups: { config: Record<string, any>; env: Record<string, string> }[] = [];
    async up(_stack: string, config: Record<string, any>, options: RunOptions): Promise<Record<string, unknown>> {
        this.ups.push({ config: structuredClone(config), env: options.env });
        if (config.vnfKind === "cnf") return { vnfKind: "cnf", namespace: config.cnf.namespace ?? "default", vnfcResources: [{ id: "vdu2-0", vduId: "vdu2", resourceId: "Pod/vdu2", resourceType: "Pod" }] };
        return { vnfKind: "cluster", vnfcResources: [] };
    }
    async preview(): Promise<void> {
        throw new Error("these tests make no plans");
    }
    async destroy(): Promise<void> {}
    async recover(): Promise<string> {
        return "nothing was running";
    }
}

describeEachStore("LCM service: VIMs registered as with Tacker (`openstack vim register`), for CNFs and clusters", function (kind) {
    this.timeout(60_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-vim-register-"));
    const packagesDir = path.join(dataDir, "packages");
    fs.cpSync(path.join(PROJECT_DIR, "examples/cnf-package"), path.join(packagesDir, CNF_VNFD), { recursive: true });
    const runner = new RecordingRunner();
    let service: Service;
    let base = "";
    const call = async (method: string, route: string, body?: unknown) => {
        const response = await fetch(`${base}${route}`, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await response.text();
        return { status: response.status, body: text ? JSON.parse(text) : undefined, text };
    };
    const withClient = clientAvailable();
    const openstack = openstackClient(() => base);
    /** `openstack vim …` with the real client: what it printed; a failure's message has its error output. */
    const vimCommand = (...args: string[]) => openstack("vim", ...args);
    /** `vim register` with a config file as Tacker's docs write it: by the client, or as it would send it. */
    const register = async (name: string, config: Record<string, unknown>, isDefault = false): Promise<{ id: string; text: string }> => {
        if (withClient) {
            const file = path.join(dataDir, `${name}.yaml`);
            fs.writeFileSync(file, JSON.stringify(config), { mode: 0o600 }); // JSON is YAML
            const text = await vimCommand("register", "--config-file", file, ...(isDefault ? ["--is-default"] : []), name, "-f", "json");
            return { id: JSON.parse(text).id, text };
        }
        const { auth_url, type, project_name, bearer_token, ssl_ca_cert, username, password, user_domain_name, project_domain_name } = config as Record<string, string>;
        const authCred = type === "kubernetes" ? { bearer_token, ...(ssl_ca_cert ? { ssl_ca_cert } : {}) } : { username, password, user_domain_name, cert_verify: "True" };
        const vimProject = type === "kubernetes" ? { name: project_name } : { name: project_name, project_domain_name };
        const answer = await call("POST", "/v1.0/vims", { vim: { name, type, auth_url, auth_cred: authCred, vim_project: vimProject, is_default: isDefault } });
        if (answer.status !== 201) throw new Error(`openstack vim register failed: ${answer.body.detail}`);
        return { id: answer.body.vim.id, text: answer.text };
    };
    const kubernetesConfig = { auth_url: "https://10.20.0.5:6443", type: "kubernetes", project_name: "default", bearer_token: TOKEN, ssl_ca_cert: CA };
    const openstackConfig = { auth_url: "http://keystone.example:5000/v3", type: "openstack", project_name: "nfv", project_domain_name: "Default", username: "nfv_user", password: KEYSTONE_PASSWORD, user_domain_name: "Default" };
    /** `vim set --config-file … [--name NAME] ID` with the client, or the PUT it sends; what it printed, or the refusal's text. */
    const update = async (id: string, config: Record<string, unknown>, name?: string): Promise<{ ok: boolean; text: string }> => {
        if (withClient) {
            const file = path.join(dataDir, "vim-set.yaml");
            fs.writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
            return vimCommand("set", "--config-file", file, ...(name ? ["--name", name] : []), id, "-f", "json").then(
                (text) => ({ ok: true, text }),
                (e: { stderr?: string; message: string }) => ({ ok: false, text: e.stderr ?? e.message }),
            );
        }
        const { project_name, project_domain_name, username, password, user_domain_name } = config as Record<string, string>;
        const body = { vim: { vim_project: { name: project_name, project_domain_name }, auth_cred: { username, password, user_domain_name, cert_verify: "True" }, ...(name ? { name } : {}) } };
        const answer = await call("PUT", `/v1.0/vims/${id}`, body);
        return { ok: answer.status === 200, text: answer.text };
    };
    const run = async (id: string, task: string, body: unknown) => {
        const accepted = await call("POST", `/vnflcm/v1/vnf_instances/${id}/${task}`, body);
        assert.equal(accepted.status, 202, accepted.text);
        await service.lifecycle.idle();
        const ops = (await call("GET", "/vnflcm/v1/vnf_lcm_op_occs")).body.filter((o: any) => o.vnfInstanceId === id);
        return ops.at(-1);
    };
    const seedCnfBody = (vimId?: string) => {
        const body = request("cnf-namespace-instantiate.json");
        if (vimId) body.vimConnectionInfo[0].vimId = vimId;
        else delete body.vimConnectionInfo;
        return body;
    };
    /** Every answer a client could read, as text: none may hold a credential. */
    const assertNoCredentialShown = async (...extra: string[]) => {
        const answers = await Promise.all(["/v1.0/vims", "/k8s-vnf/v1/vims", "/vnflcm/v1/vnf_instances", "/vnflcm/v1/vnf_lcm_op_occs"].map(async (route) => (await call("GET", route)).text));
        for (const [i, text] of [...answers, ...extra].entries()) {
            for (const secret of [TOKEN, KEYSTONE_PASSWORD, ROTATED_PASSWORD, PATCHED_PASSWORD, Buffer.from(TOKEN).toString("base64")]) assert.ok(!text.includes(secret), `answer ${i} shows a credential`);
        }
    };

    before(async () => {
        if (!withClient && process.env.CI) assert.fail("the openstack client is missing; .ci/run installs python3-openstackclient and python3-tackerclient");
        service = await createService({ dataDir, ...(await storeFor(kind, dataDir)), runner, env: {}, packagesDir });
        base = `http://127.0.0.1:${((await service.app.listen({ port: 0, host: "127.0.0.1" })) && (service.app.server.address() as AddressInfo).port)}`;
    });
    after(async () => {
        await service?.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    let kubernetesVim = "";
    let cnf = "";

    it("a Kubernetes VIM registered with its bearer token and CA: `vim list` and `vim show` show it, its project the namespace; no answer shows the token", async () => {
        const registered = await register("external-cluster", kubernetesConfig);
        kubernetesVim = registered.id;
        const shown = (await call("GET", `/v1.0/vims/${kubernetesVim}`)).body.vim;
        assert.deepEqual([shown.name, shown.type, shown.auth_url, shown.vim_project.name, shown.placement_attr.regions, shown.is_default], ["external-cluster", "kubernetes", "https://10.20.0.5:6443", "default", ["default"], false]);
        if (withClient) assert.ok(JSON.parse(await vimCommand("list", "-f", "json")).some((v: any) => v.ID === kubernetesVim && v.Type === "kubernetes"));
        await assertNoCredentialShown(registered.text);
    });

    it("seed 003's body with that vimId: the CNF's stack gets the VIM's endpoint, CA and token, in namespaceA as Kubernetes spells it", async () => {
        cnf = (await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: CNF_VNFD })).body.id;
        const op = await run(cnf, "instantiate", seedCnfBody(kubernetesVim));
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const { config } = runner.ups.at(-1)!;
        assert.deepEqual(config.cnf.vim, { endpoint: "https://10.20.0.5:6443", caCertificate: CA, token: TOKEN });
        assert.equal(config.cnf.namespace, "namespacea");
        assert.equal(config.cnf.createNamespace, true, "not the VIM's project: the CNF makes it");
        const instance = (await call("GET", `/vnflcm/v1/vnf_instances/${cnf}`)).body;
        assert.deepEqual(instance.vimConnectionInfo.map((v: any) => v.vimId), [kubernetesVim]);
        await assertNoCredentialShown();
    });

    it("`vim delete` is refused while a CNF runs on the VIM, naming it; after the terminate the VIM goes", async () => {
        const refusal = withClient ? await vimCommand("delete", kubernetesVim).then(() => "", (e: Error) => e.message) : (await call("DELETE", `/v1.0/vims/${kubernetesVim}`)).body.detail;
        assert.match(refusal, new RegExp(`VIM ${kubernetesVim} is in use by VNF instance\\(s\\) ${cnf}: terminate them first`));
        assert.equal((await run(cnf, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
        if (withClient) await vimCommand("delete", kubernetesVim);
        else assert.equal((await call("DELETE", `/v1.0/vims/${kubernetesVim}`)).status, 204);
        assert.equal((await call("GET", `/v1.0/vims/${kubernetesVim}`)).status, 404);
    });

    it("refused before anything is stored, naming the field: an http:// API server, a CA that is no certificate, a project that is no namespace name, a username instead of a token, an unknown field, a second default", async () => {
        const before = (await call("GET", "/v1.0/vims")).body.vims.length;
        await assert.rejects(register("plain-http", { ...kubernetesConfig, auth_url: "http://10.20.0.5:6443" }), /vim\.auth_url: must be the API server's https:\/\/ URL/);
        await assert.rejects(register("bad-ca-and-namespace", { ...kubernetesConfig, ssl_ca_cert: "not a certificate", project_name: "Team_A" }), /vim\.auth_cred\.ssl_ca_cert: not a PEM certificate; vim\.vim_project\.name: must be a Kubernetes namespace name/);
        const { bearer_token: _token, ...withoutToken } = kubernetesConfig;
        await assert.rejects(register("basic-auth", { ...withoutToken, username: "admin", password: "pw" }), /vim\.auth_cred\.bearer_token: a Kubernetes VIM of this service is reached with a ServiceAccount's bearer token/);
        const extra = await call("POST", "/v1.0/vims", { vim: { name: "x", type: "kubernetes", auth_url: "https://10.20.0.5:6443", auth_cred: { bearer_token: TOKEN }, extra: { helm_info: "{}" } } });
        assert.deepEqual([extra.status, extra.body.detail], [400, "body.vim.extra: is not a known field"]);
        const first = await register("default-one", kubernetesConfig, true);
        await assert.rejects(register("default-two", kubernetesConfig, true), new RegExp(`vim\\.is_default: kubernetes VIM ${first.id} \\(default-one\\) is the default already`));
        assert.equal((await call("GET", "/v1.0/vims")).body.vims.length, before + 1);
        await assertNoCredentialShown();
    });

    it("--is-default: a CNF request naming no Kubernetes VIM goes to it", async () => {
        const id = (await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: CNF_VNFD })).body.id;
        assert.equal((await run(id, "instantiate", seedCnfBody())).operationState, "COMPLETED");
        assert.equal(runner.ups.at(-1)!.config.cnf.vim.token, TOKEN);
        assert.equal((await run(id, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
    });

    it("an OpenStack VIM registered the same way (--is-default): a cluster named with it, or naming no VIM, gets its Keystone credentials in the update's environment only; in use, it stays", async () => {
        const registered = await register("lab-openstack", openstackConfig, true);
        const named = request("simple-instantiate.json");
        named.vimConnectionInfo = [{ id: "vim-1", vimId: registered.id, vimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3" }];
        const unnamed = request("simple-instantiate.json");
        delete unnamed.vimConnectionInfo;
        for (const body of [named, unnamed]) {
            const id = (await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "cluster-vnfd" })).body.id;
            assert.equal((await run(id, "instantiate", body)).operationState, "COMPLETED");
            const { env } = runner.ups.at(-1)!;
            assert.deepEqual(
                [env.OS_AUTH_URL, env.OS_USERNAME, env.OS_PASSWORD, env.OS_PROJECT_NAME, env.OS_USER_DOMAIN_NAME, env.OS_PROJECT_DOMAIN_NAME],
                ["http://keystone.example:5000/v3", "nfv_user", KEYSTONE_PASSWORD, "nfv", "Default", "Default"],
            );
            assert.equal((await call("DELETE", `/v1.0/vims/${registered.id}`)).status, 409, "in use by the cluster");
            assert.equal((await run(id, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
        }
        assert.equal((await call("DELETE", `/v1.0/vims/${registered.id}`)).status, 204);
        await assertNoCredentialShown(registered.text);
    });

    it("a VIM changes: `openstack vim set` (client) renames it and rotates its password, which the next update's environment carries; PATCH does the same; its project does not move under an instance (409); DELETE goes once nothing uses it", async () => {
        const registered = await register("rotating", openstackConfig);
        const body = request("simple-instantiate.json");
        body.vimConnectionInfo = [{ id: "vim-1", vimId: registered.id, vimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3" }];
        const id = (await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "cluster-vnfd" })).body.id;
        assert.equal((await run(id, "instantiate", body)).operationState, "COMPLETED");

        const rotated = await update(registered.id, { ...openstackConfig, password: ROTATED_PASSWORD }, "rotated");
        assert.ok(rotated.ok, rotated.text);
        const shown = (await call("GET", `/v1.0/vims/${registered.id}`)).body.vim;
        assert.deepEqual([shown.name, shown.auth_url, shown.vim_project.name], ["rotated", openstackConfig.auth_url, "nfv"]);
        assert.ok(shown.updated_at, "updated_at set");
        assert.equal((await run(id, "scale", { type: "SCALE_OUT", aspectId: "worker_instance" })).operationState, "COMPLETED");
        assert.equal(runner.ups.at(-1)!.env.OS_PASSWORD, ROTATED_PASSWORD);

        const moved = await update(registered.id, { ...openstackConfig, project_name: "elsewhere" });
        assert.equal(moved.ok, false);
        assert.match(moved.text, /vim\.vim_project\.name: VIM .* is in use by VNF instance\(s\) .*, made in project nfv/);
        const patchMoved = await call("PATCH", `/k8s-vnf/v1/vims/${registered.id}`, { projectName: "elsewhere" });
        assert.deepEqual([patchMoved.status, patchMoved.body.detail.startsWith("projectName: ")], [409, true]);
        const keystone = await call("PATCH", `/k8s-vnf/v1/vims/${registered.id}`, { authUrl: "http://other.example:5000/v3" });
        assert.equal(keystone.status, 400, "its Keystone does not change");
        const region = await call("PATCH", `/k8s-vnf/v1/vims/${registered.id}`, { region: "RegionTwo" });
        assert.deepEqual([region.status, region.body.detail.startsWith("region: ")], [409, true], "nor to another region");
        const patched = await call("PATCH", `/k8s-vnf/v1/vims/${registered.id}`, { password: PATCHED_PASSWORD });
        assert.equal(patched.status, 200, patched.text);
        assert.equal((await run(id, "scale", { type: "SCALE_IN", aspectId: "worker_instance" })).operationState, "COMPLETED");
        assert.equal(runner.ups.at(-1)!.env.OS_PASSWORD, PATCHED_PASSWORD);
        // Tacker's update_vim deep-merges: a PUT of the password alone keeps the username.
        const partial = await call("PUT", `/v1.0/vims/${registered.id}`, { vim: { auth_cred: { password: ROTATED_PASSWORD } } });
        assert.equal(partial.status, 200, partial.text);
        assert.equal((await call("GET", `/k8s-vnf/v1/vims/${registered.id}`)).body.username, "nfv_user");

        assert.equal((await call("DELETE", `/k8s-vnf/v1/vims/${registered.id}`)).status, 409, "in use");
        assert.equal((await run(id, "terminate", { terminationType: "FORCEFUL" })).operationState, "COMPLETED");
        assert.equal((await call("DELETE", `/k8s-vnf/v1/vims/${registered.id}`)).status, 204);
        assert.equal((await call("GET", `/k8s-vnf/v1/vims/${registered.id}`)).status, 404);
        await assertNoCredentialShown(rotated.text, patched.text);
    });
});
