/**
 * The LCM service under hostile input, in process on loopback: secrets never come back (one rule for what is
 * secret), callbacks under an address policy, links from the configured public URL, malformed requests as
 * ProblemDetails. Stacks are run by a recording runner: what is checked here is what the service stores and
 * answers; the Pulumi side is the real-CLI suites' (realLcm.lab.spec.ts, realLcmOperations.lab.spec.ts).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { carriesCredential, findSecretLeaves, isSecretName, maskSecrets, redactText } from "../config/secrets";
import { parseRequestText } from "../config/requestText";
import { createService, Service } from "../service/app";
import { refusedAddress } from "../service/callbackClient";
import { RunOptions, StackRunner } from "../service/stackRunner";
import { REQUESTS_DIR } from "./support/fixtures";
import { describeEachStore, storeFor } from "./support/stores";

/** Runs nothing; fails each update with `failWith` when set (as a Pulumi command error would read). */
class RecordingRunner implements StackRunner {
    failWith: string | undefined;
    readonly configs: Record<string, unknown>[] = [];
    async up(_stack: string, config: Record<string, unknown>, _options: RunOptions): Promise<Record<string, unknown>> {
        this.configs.push(config);
        if (this.failWith) throw new Error(this.failWith);
        return { vnfcResources: [], scale: { worker_instance: { count: 2, min: 2, max: 4 } } };
    }
    async destroy(): Promise<void> {}
    /** Every dry run's config (undefined: the stack's own) and whether it previewed a destroy. */
    readonly previews: { config: Record<string, unknown> | undefined; destroy: boolean }[] = [];
    async preview(_stack: string, config: Record<string, unknown> | undefined, options: RunOptions & { destroy?: boolean }): Promise<void> {
        if (this.failWith) throw new Error(this.failWith);
        this.previews.push({ config, destroy: options.destroy === true });
    }
    async recover(): Promise<string> {
        return "nothing was running";
    }
}

/** A loopback HTTP endpoint answering every request with `status` (and `headers`), recording bodies. */
async function endpoint(status: number, headers: Record<string, string> = {}) {
    const received: string[] = [];
    const server = http.createServer((req, res) => {
        let body = "";
        req.on("data", (d) => (body += d));
        req.on("end", () => {
            if (req.method === "POST") received.push(body);
            res.writeHead(status, headers).end();
        });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb`;
    return { url, received, stop: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A raw HTTP request (any path, any Host, any content type), answered status, headers and parsed body. */
function raw(base: string, method: string, rawPath: string, options: { body?: string; headers?: Record<string, string> } = {}) {
    const url = new URL(base);
    return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
        const req = http.request({ host: url.hostname, port: url.port, method, path: rawPath, headers: options.headers }, (res) => {
            let text = "";
            res.on("data", (d) => (text += d));
            res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
        });
        req.on("error", reject);
        req.end(options.body);
    });
}

const seed = (name: string) => parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, name), "utf8"), name) as any;

describe("secrets: one rule for what is secret", () => {
    it("a field is secret by the last word of its name, in any spelling; a value by the credential it carries", () => {
        for (const name of ["password", "ssh_password", "clientPassword", "OS_PASSWORD", "OS_PASSCODE", "privateKey", "api_key", "client_secret", "bearer_token", "passphrase", "kubeconfig", "passwords", "privateKeys", "SSHPassword", "APIToken", "client-key-data", "Authorization"])
            assert.ok(isSecretName(name), name);
        for (const name of ["username", "publicKey", "enablePasswordLogin", "tokenEndpoint", "aspectId", "key", "keys", "passwordFile", "address", "status"]) assert.ok(!isSecretName(name), name);
        assert.ok(carriesCredential("http://user1:password1@host1:port1"));
        assert.ok(carriesCredential("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----"));
        assert.ok(!carriesCredential("http://proxy.example:3128"));
        assert.ok(!carriesCredential("uses Basic authentication"));
        assert.ok(carriesCredential("Authorization: Basic dXNlcjpwYXNzd29yZDE="));
    });

    it("what Tacker nests in other shapes: a dict in a string (helm_info), numbers, lists and objects under a secret name; a URL keeps all but its user info", () => {
        const masked = maskSecrets({
            extra: { helm_info: "{'masternode_ip': ['192.168.0.1'], 'masternode_username': 'helm_user', 'masternode_password': 'helm_pass'}" },
            accessInfo: { password: 98765432 },
            passwords: ["first-pw", "second-pw"],
            credentials: { user: "x", pass: "hunter22" },
            callbackUri: "https://bob:Hunter22@nfvo.example/cb",
        });
        const text = JSON.stringify(masked);
        for (const secret of ["helm_pass", "98765432", "first-pw", "second-pw", "hunter22", "Hunter22"]) assert.ok(!text.includes(secret), secret);
        assert.match(masked.extra.helm_info, /'masternode_username': 'helm_user'/, "the rest of the string stays");
        assert.equal(masked.callbackUri, "https://[secret]@nfvo.example/cb");
    });

    it("Tacker's own names are found wherever they nest: ssh_password, proxy URLs with credentials, accessInfo.password", () => {
        const body = seed("kubespray-instantiate.json");
        body.vimConnectionInfo = [{ id: "v", vimType: "openstack", accessInfo: { username: "admin", password: "vim-pass-1" } }];
        const found = findSecretLeaves(body).map((s) => s.trail.join("."));
        for (const expected of [
            "additionalParams.k8s_cluster_installation_param.external_lb_param.ssh_password",
            "additionalParams.k8s_cluster_installation_param.proxy.http_proxy",
            "additionalParams.k8s_cluster_installation_param.proxy.https_proxy",
            "additionalParams.k8s_cluster_installation_param.ansible.password",
            "vimConnectionInfo.0.accessInfo.password",
        ])
            assert.ok(found.includes(expected), `${expected} in ${found.join(", ")}`);
        const masked = maskSecrets(body);
        const param = masked.additionalParams.k8s_cluster_installation_param;
        assert.deepEqual([param.external_lb_param.ssh_password, param.master_node.password, param.proxy.http_proxy, masked.vimConnectionInfo[0].accessInfo.password], ["[secret]", "[secret]", "http://[secret]@host1:port1", "[secret]"]);
        assert.deepEqual([param.external_lb_param.ssh_username, param.proxy.no_proxy], ["ubuntu", "192.168.246.0/24,10.0.0.1"], "only secrets are masked");
        assert.equal(body.additionalParams.k8s_cluster_installation_param.external_lb_param.ssh_password, "ubuntu", "the original is left as it was");
    });

    it("redacted text: known values, a URL's user info and a private key's body, whatever surrounds them", () => {
        const text = "pulumi config set masters.password s3cr3t-pw; proxy https://u:p@proxy:3128; -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----";
        const out = redactText(text, ["s3cr3t-pw"]);
        assert.ok(!/s3cr3t-pw|u:p@|MIIE/.test(out), out);
        assert.match(out, /https:\/\/\[secret\]@proxy:3128/);
        const spelled = redactText(`json "Ma\\"ster\\\\Pw1" base64 ${Buffer.from("WorkerPw2").toString("base64")} alone Pr%40xyPw3 and Pr@xyPw3`, ['Ma"ster\\Pw1', "WorkerPw2", "http://u:Pr%40xyPw3@proxy:3128"]);
        assert.ok(!/ster|V29ya2VyUHcy|xyPw3/.test(spelled), spelled);
    });
});

describeEachStore("LCM service under hostile input (in process, a recording runner)", function (kind) {
    this.timeout(30_000);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-hostile-"));
    const runner = new RecordingRunner();
    let service: Service;
    let base: string;
    const api = async (method: string, route: string, body?: unknown) => {
        const r = await fetch(`${base}${route}`, { method, headers: body === undefined ? {} : { "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
        const text = await r.text();
        return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : undefined };
    };
    const settle = async (opId: string) => {
        for (let i = 0; i < 200; i++) {
            const op = (await api("GET", `/vnflcm/v1/vnf_lcm_op_occs/${opId}`)).body;
            if (!["STARTING", "PROCESSING", "ROLLING_BACK"].includes(op.operationState)) return op;
            await new Promise((r) => setTimeout(r, 25));
        }
        assert.fail(`${opId} did not finish`);
    };

    before(async () => {
        service = await createService({ dataDir, ...(await storeFor(kind, dataDir)), runner, env: {}, delivery: { attempts: 1, firstPauseMs: 10 }, allowLoopbackCallbacks: true, publicUrl: "https://lcm.example:9890" });
        const address = await service.app.listen({ port: 0, host: "127.0.0.1" });
        base = address;
    });
    after(async () => {
        await service?.close();
        fs.rmSync(dataDir, { recursive: true, force: true });
    });

    it("no secret of an instantiate comes back: operationParams, the instance, a failed operation's error, the notifications", async () => {
        const subscriber = await endpoint(204);
        try {
            assert.equal((await api("POST", "/vnflcm/v1/subscriptions", { callbackUri: subscriber.url })).status, 201);
            const id = (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177" })).body.id;
            const body = seed("kubespray-instantiate.json");
            delete body.vimConnectionInfo; // the service's own OS_* credentials (none here)
            body.additionalParams.k8s_cluster_installation_param.external_lb_param.ssh_password = "lb-ssh-pass-9";
            body.additionalParams.k8s_cluster_installation_param.ansible.password = "ansible-pass-7";
            // What a Pulumi command's error carries: its command line and output, config values included.
            runner.failWith = "Command failed with exit code 255: pulumi up --stack x --config k8s-vnf:externalLoadBalancer.password=lb-ssh-pass-9\nstderr: proxy http://user1:password1@host1:port1 refused";
            const accepted = await api("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, body);
            assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
            const op = await settle(String(accepted.headers.get("location")).split("/").pop()!);
            assert.equal(op.operationState, "FAILED_TEMP");
            assert.match(op.error.detail, /exit code 255/);
            const ofOperation = () => subscriber.received.filter((n) => JSON.parse(n).notificationType === "VnfLcmOperationOccurrenceNotification");
            for (let i = 0; i < 100 && ofOperation().length < 2; i++) await new Promise((r) => setTimeout(r, 20));
            await new Promise((r) => setTimeout(r, 100));
            assert.deepEqual(ofOperation().map((n) => JSON.parse(n).notificationStatus), ["START", "RESULT"], "START and RESULT delivered, once each");
            const seen = [JSON.stringify(op), JSON.stringify((await api("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields")).body), JSON.stringify((await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body), ...subscriber.received];
            for (const text of seen) for (const secret of ["lb-ssh-pass-9", "ansible-pass-7", "password1", "password2", "user1:"]) assert.ok(!text.includes(secret), `${secret} in ${text.slice(0, 300)}`);
            assert.ok(JSON.stringify(runner.configs).includes("lb-ssh-pass-9"), "the stack config still gets the real password");
            await api("POST", `/vnflcm/v1/vnf_lcm_op_occs/${op.id}/fail`);
        } finally {
            runner.failWith = undefined;
            await subscriber.stop();
        }
    });

    it("a PATCH's vimConnectionInfo password is masked as an instantiate's is: not in the instance, not in the occurrence", async () => {
        const id = (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177" })).body.id;
        const patched = await fetch(`${base}/vnflcm/v1/vnf_instances/${id}`, {
            method: "PATCH",
            headers: { "content-type": "application/merge-patch+json" },
            body: JSON.stringify({ vimConnectionInfo: [{ id: "vim-1", vimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3", accessInfo: { username: "admin", password: "patched-vim-pass", region: "RegionOne" } }] }),
        });
        assert.equal(patched.status, 202);
        const instance = (await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body;
        assert.deepEqual(instance.vimConnectionInfo[0].accessInfo, { username: "admin", password: "[secret]", region: "RegionOne" });
        const op = (await api("GET", `/vnflcm/v1/vnf_lcm_op_occs/${String(patched.headers.get("location")).split("/").pop()}`)).body;
        assert.ok(!JSON.stringify(op).includes("patched-vim-pass"));
        const stored = fs.readdirSync(dataDir, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
        assert.ok(!stored.some((f) => fs.readFileSync(path.join(f.parentPath, f.name), "latin1").includes("patched-vim-pass")), "not stored either");
    });

    it("a callback that trickles its answer is cut at the deadline, not held open by each byte", async () => {
        const sockets = new Set<import("node:net").Socket>();
        const trickler = (await import("node:net")).createServer((socket) => {
            sockets.add(socket);
            socket.write("HTTP/1.1 204 No Content\r\n");
            const timer = setInterval(() => socket.write(`X-Slow: ${Date.now()}\r\n`), 300);
            socket.on("close", () => clearInterval(timer));
            socket.on("error", () => clearInterval(timer));
        });
        await new Promise<void>((r) => trickler.listen(0, "127.0.0.1", r));
        try {
            const { callCallback } = await import("../service/callbackClient");
            const started = Date.now();
            await callCallback(`http://127.0.0.1:${(trickler.address() as AddressInfo).port}/cb`, { method: "GET", timeoutMs: 1500 }, { allowLoopback: true }).then(
                () => {},
                () => {},
            );
            assert.ok(Date.now() - started < 4000, `took ${Date.now() - started} ms`);
        } finally {
            for (const socket of sockets) socket.destroy();
            await new Promise<void>((r) => trickler.close(() => r()));
        }
    });

    it("a created instance's description and metadata are masked before they are stored", async () => {
        const created = await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "d", vnfInstanceDescription: "repo https://bob:Hunter22@git.example/x", metadata: { password: "CreatePw9" } });
        assert.equal(created.status, 201);
        assert.ok(!JSON.stringify(created.body).includes("Hunter22") && !JSON.stringify(created.body).includes("CreatePw9"));
        assert.ok(!JSON.stringify(await service.store.get("vnf_instances", created.body.id)).match(/Hunter22|CreatePw9/), "not stored either");
    });

    it("links use the configured public URL, never the client's Host header", async () => {
        const created = await raw(base, "POST", "/vnflcm/v1/vnf_instances", { body: JSON.stringify({ vnfdId: "x" }), headers: { host: "evil.example", "content-type": "application/json" } });
        assert.equal(created.status, 201);
        assert.match(String(created.headers.location), /^https:\/\/lcm\.example:9890\/vnflcm\/v1\/vnf_instances\//);
        assert.ok(!JSON.stringify(created.body).includes("evil.example"));
    });

    it("callbacks: link-local and metadata addresses are refused, loopback only when allowed; the error tells nothing of the target", async () => {
        for (const uri of ["http://169.254.169.254/latest/meta-data/", "http://[fe80::1]/", "http://0.0.0.0:80/", "http://[::ffff:169.254.169.254]/", "http://[64:ff9b::a9fe:a9fe]/", "file:///etc/passwd"]) {
            const r = await api("POST", "/vnflcm/v1/subscriptions", { callbackUri: uri });
            assert.equal(r.status, 400, uri);
            assert.match(r.body.detail, /callbackUri: /);
        }
        assert.match(String(refusedAddress("127.0.0.1", { allowLoopback: false })), /loopback/);
        assert.equal(refusedAddress("127.0.0.1", { allowLoopback: true }), undefined);
        assert.equal(refusedAddress("10.20.30.40", { allowLoopback: false }), undefined, "private networks are where NFVOs live");
        // An IPv6 address that reaches an IPv4 one through a translator counts as that one, whatever its spelling.
        for (const carried of ["::ffff:a9fe:a9fe", "64:ff9b::169.254.169.254", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a9fe:a9fe", "2002:a9fe:a9fe::1", "100.100.100.200", "192.0.0.192"]) {
            assert.match(String(refusedAddress(carried, { allowLoopback: true })), /metadata/, carried);
        }
        for (const own of ["2002:7f00:1::", "::127.0.0.1", "64:ff9b::7f00:1"]) assert.match(String(refusedAddress(own, { allowLoopback: false })), /loopback/, own);
        assert.equal(refusedAddress("::1", { allowLoopback: true }), undefined, "IPv6 loopback is not 0.0.0.1");
        assert.equal(refusedAddress("64:ff9b::a14:1e28", { allowLoopback: false }), undefined, "10.20.30.40 through NAT64");
        const closed = await endpoint(204);
        await closed.stop();
        const redirect = await endpoint(302, { location: "http://169.254.169.254/" });
        const wrong = await endpoint(200);
        try {
            const details = [];
            for (const uri of [closed.url, redirect.url, wrong.url]) {
                const r = await api("POST", "/vnflcm/v1/subscriptions", { callbackUri: uri });
                assert.equal(r.status, 400, uri);
                details.push(r.body.detail);
            }
            assert.deepEqual(new Set(details).size, 1, `a closed port, a redirect and a wrong status read alike: ${details.join(" | ")}`);
        } finally {
            await redirect.stop();
            await wrong.stop();
        }
    });

    it("a service without --allow-loopback-callbacks refuses a callback on its own host", async () => {
        const otherDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-hostile-"));
        const other = await createService({ dataDir: otherDir, ...(await storeFor(kind, otherDir)), runner, env: {} });
        const subscriber = await endpoint(204);
        try {
            const r = await other.app.inject({ method: "POST", url: "/vnflcm/v1/subscriptions", payload: { callbackUri: subscriber.url } });
            assert.equal(r.statusCode, 400);
            assert.match(r.json().detail, /loopback/);
            const byName = await other.app.inject({ method: "POST", url: "/vnflcm/v1/subscriptions", payload: { callbackUri: subscriber.url.replace("127.0.0.1", "localhost") } });
            assert.equal(byName.statusCode, 400, "a name that resolves to loopback too");
            assert.equal(byName.json().detail, "callbackUri: the test GET did not answer 204 No Content", "where a name resolves is not told");
        } finally {
            await subscriber.stop();
            await other.close();
            fs.rmSync(otherDir, { recursive: true, force: true });
        }
    });

    it("malformed requests are 4xx ProblemDetails: deep nesting, a huge body, a wrong content type, a bad URL", async () => {
        const deep = `${"[".repeat(4000)}${"]".repeat(4000)}`;
        const cases = [
            { what: "4,000 levels deep", r: await raw(base, "POST", "/vnflcm/v1/vnf_instances", { body: `{"vnfdId":"x","metadata":{"a":${deep}}}`, headers: { "content-type": "application/json" } }), status: 400 },
            { what: "merge patch 4,000 levels deep", r: await raw(base, "PATCH", "/vnflcm/v1/vnf_instances/x", { body: `{"metadata":${"{\"a\":".repeat(4000)}1${"}".repeat(4000)}}`, headers: { "content-type": "application/merge-patch+json" } }), status: 400 },
            { what: "2 MiB", r: await raw(base, "POST", "/vnflcm/v1/vnf_instances", { body: JSON.stringify({ vnfdId: "x".repeat(2 << 20) }), headers: { "content-type": "application/json" } }), status: 413 },
            { what: "text/plain", r: await raw(base, "POST", "/vnflcm/v1/vnf_instances", { body: "hello", headers: { "content-type": "text/plain" } }), status: 415 },
            { what: "not JSON", r: await raw(base, "POST", "/vnflcm/v1/vnf_instances", { body: '{"vnfdId": secret-value}', headers: { "content-type": "application/json" } }), status: 400 },
            { what: "a bad percent-encoding", r: await raw(base, "GET", "/vnflcm/v1/vnf_instances/%E0%A4%A"), status: 400 },
        ];
        for (const { what, r, status } of cases) {
            assert.equal(r.status, status, `${what}: ${JSON.stringify(r.body)}`);
            assert.match(String(r.headers["content-type"]), /application\/problem\+json/, what);
            assert.equal(r.body.status, status, what);
            assert.equal(typeof r.body.detail, "string", what);
            assert.ok(!r.body.detail.includes("secret-value"), "the body is not echoed");
        }
    });

    it("api_versions under /vnflcm and /vnflcm/v1; an unsupported method on a known resource is a 405 with Allow", async () => {
        for (const route of ["/vnflcm/api_versions", "/vnflcm/v1/api_versions"]) {
            const r = await api("GET", route);
            assert.equal(r.status, 200, route);
            assert.deepEqual(r.body.apiVersions.map((v: any) => v.version), ["1.3.0"]);
        }
        const put = await api("PUT", "/vnflcm/v1/vnf_instances/some-id", {});
        assert.equal(put.status, 405);
        assert.deepEqual(String(put.headers.get("allow")).split(", ").sort(), ["DELETE", "GET", "HEAD", "PATCH"]);
        assert.equal(put.body.status, 405);
        assert.equal((await api("GET", "/vnflcm/v1/no_such_thing")).status, 404);
    });

    it("a dry run (POST /k8s-vnf/v1/vnf_instances/{id}/plan): the seed's body checked as the operation's, the config it would set previewed; no occurrence, no update, no secret in the answer", async () => {
        const id = (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177" })).body.id;
        const body = seed("kubespray-instantiate.json");
        delete body.vimConnectionInfo;
        body.additionalParams.k8s_cluster_installation_param.ansible.password = "ansible-pass-plan";
        const ups = runner.configs.length;
        const planned = await api("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, body);
        assert.equal(planned.status, 200, JSON.stringify(planned.body));
        assert.equal(planned.body.operation, "INSTANTIATE");
        assert.equal(planned.body.updates, 1);
        assert.match(planned.body.text, /^Plan of instantiate for VNF instance .*nothing was changed:\n  no changes: nothing would run/);
        const previewed = runner.previews.at(-1)!;
        assert.equal(previewed.destroy, false);
        assert.equal((previewed.config!.kubespray as any).password, "ansible-pass-plan", "the preview gets the config the instantiate would set");
        assert.ok(!JSON.stringify(planned.body).includes("ansible-pass-plan"));
        assert.equal(runner.configs.length, ups, "no update ran");
        assert.deepEqual((await api("GET", `/vnflcm/v1/vnf_lcm_op_occs?filter=(eq,vnfInstanceId,${id})`)).body, [], "no occurrence");
        assert.equal((await api("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiationState, "NOT_INSTANTIATED");

        const asText = await fetch(`${base}/k8s-vnf/v1/vnf_instances/${id}/plan?operation=instantiate`, { method: "POST", headers: { "content-type": "application/json", accept: "text/plain" }, body: JSON.stringify(body) });
        assert.equal(asText.status, 200);
        assert.match(String(asText.headers.get("content-type")), /^text\/plain/);
        assert.match(await asText.text(), /^Plan of instantiate/);
    });

    it("a dry run is refused as the operation would be, before any preview: no operation named, a bad body naming the field, the wrong state; a failed preview's error redacted", async () => {
        const id = (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "x" })).body.id;
        const previews = runner.previews.length;
        const refused = [
            { body: {}, query: "", status: 400, detail: /operation: the body names no operation/ },
            { body: {}, query: "?operation=reboot", status: 400, detail: /operation: must be one of instantiate, scale/ },
            { body: { type: "SCALE_OUT", aspectId: "worker_instance", numberOfSteps: "x" }, query: "", status: 400, detail: /body\.numberOfSteps/ },
            { body: { type: "SCALE_OUT", aspectId: "worker_instance" }, query: "", status: 409, detail: /NOT_INSTANTIATED; scale needs INSTANTIATED/ },
            { body: { terminationType: "FORCEFUL" }, query: "", status: 409, detail: /terminate needs INSTANTIATED/ },
        ];
        for (const r of refused) {
            const answer = await api("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan${r.query}`, r.body);
            assert.equal(answer.status, r.status, JSON.stringify(answer.body));
            assert.match(answer.body.detail, r.detail);
        }
        assert.equal((await api("POST", `/k8s-vnf/v1/vnf_instances/no-such-instance/plan`, { flavourId: "simple" })).status, 404);
        assert.equal(runner.previews.length, previews, "nothing was previewed");

        const body = seed("simple-instantiate.json");
        delete body.vimConnectionInfo;
        const password = JSON.stringify(body).match(/"password":\s*"([^"]+)"/)![1];
        runner.failWith = `error: preview failed: config ${password} and http://user1:password1@host1:port1`;
        try {
            const failed = await api("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, body);
            assert.equal(failed.status, 422, JSON.stringify(failed.body));
            assert.match(failed.body.detail, /^the preview failed: error: preview failed/);
            assert.ok(!failed.body.detail.includes(password) && !failed.body.detail.includes("password1"), failed.body.detail);
        } finally {
            runner.failWith = undefined;
        }
    });

    it("an empty body with Content-Type: application/json is no body (DELETE, fail), as many clients send it", async () => {
        const id = (await api("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "x" })).body.id;
        const r = await raw(base, "DELETE", `/vnflcm/v1/vnf_instances/${id}`, { headers: { "content-type": "application/json" } });
        assert.equal(r.status, 204, JSON.stringify(r.body));
    });
});
