/**
 * The LCM service's own handling of its operations, on the real Pulumi CLI: `k8s-vnf serve` as in
 * realLcm.lab.spec.ts (the lab OpenStack API, the seed's VIM registered at its Keystone, the real `openstack
 * vnflcm` client, the seed's simple cluster whose first master runs the real control plane). Notifications and
 * the stack config; the cluster as a Kubernetes VIM; refusals before anything runs; operate, a graceful stop
 * being two updates; the progress stream; a subscriber that is gone; a crash that also killed the `pulumi up`;
 * a failed update made FAILED; where the lab's secrets must not appear. What ran is read from the stack's
 * update history (`pulumi stack history`), the lab API's call record and the lab hosts.
 *
 * Faults come from the lab: the lab API failing a call, a join slowed on a lab host, processes killed by PID.
 */
import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { descendants } from "../service/pulumiProcess";
import { Callback, seedBody } from "./support/lcmClient";
import { skipAfterFirstFailure } from "./support/labSuite";
import { alive } from "./support/processAlive";
import { PROJECT_DIR } from "./support/program";
import { realKubectl } from "./support/realKubectl";
import { useRealLcmService } from "./support/realLcmService";
import { useBuiltTools } from "./support/tools";

const exec = promisify(execFile);
const SEED_VIM = "05ef7ca5-7e32-4a6b-a03d-52f811f04496";
const SEED_NETWORK = "71a3fbd1-f31e-4c2c-b0e2-26267d64a9ee";
/** The vnfdId of the seeds' package (examples/package under `serve --packages`). */
const VNFD = "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177";

describe("the LCM service's handling of its operations on the real Pulumi CLI: refusals, operate, progress, crashes, failures and secrets", function () {
    useBuiltTools();
    this.timeout(900_000);
    const lcm = useRealLcmService({
        cluster: "lcmops",
        networkId: SEED_NETWORK,
        vimIds: [SEED_VIM],
        packages: async (dir) => fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(dir, VNFD), { recursive: true }),
    });
    const { suite, openstack, call } = lcm;
    let id = "";
    const stack = () => `vnf-${id}`;
    const settle = () => lcm.settle(id);
    const vnfcs = () => lcm.vnfcs(id);
    const workers = async () => (await vnfcs()).filter((v) => v.vduId === "workerNode").map((v) => v.id);
    const updates = () => lcm.history(stack()).filter((kind) => kind === "update").length;
    const occurrences = async () => (await call("GET", "/vnflcm/v1/vnf_lcm_op_occs")).body.length as number;
    const refused = (...args: string[]) =>
        openstack(...args).then(
            () => assert.fail(`openstack vnflcm ${args.join(" ")} succeeded`),
            (e: { stderr: string }) => e.stderr,
        );
    /** What shows that nothing ran: the stack's history, the lab API's calls, the occurrences. */
    const nothingRan = async () => ({ history: lcm.history(stack()).length, cloud: lcm.api.calls().length, occurrences: await occurrences() });

    skipAfterFirstFailure();

    it("instantiate with the seed's body: COMPLETED, START and RESULT notified; the stack config as the real CLI holds it: maps as maps, each secret an encrypted leaf", async () => {
        id = JSON.parse(await openstack("create", VNFD, "--name", "vnf-ops", "-f", "json")).ID;
        assert.match(await openstack("instantiate", id, lcm.seedFile("simple-instantiate.json")), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const kinds = () => lcm.callback.received.filter((n) => n.vnfInstanceId === id).map((n) => [n.notificationStatus, n.operation, n.operationState]);
        await lcm.callback.until(() => kinds().length >= 2);
        assert.deepEqual(kinds().slice(0, 2), [
            ["START", "INSTANTIATE", "STARTING"],
            ["RESULT", "INSTANTIATE", "COMPLETED"],
        ]);
        const config = lcm.project.stackConfig(stack());
        assert.deepEqual(config["k8s-vnf:masters"], { aspectId: "master_instance", connectionPoint: "masterNode_CP1", username: "ubuntu", count: 1, networkId: SEED_NETWORK, password: "[secure]" });
        assert.deepEqual([(config["k8s-vnf:proxy"] as any).httpProxy, (config["k8s-vnf:proxy"] as any).httpsProxy], ["[secure]", "[secure]"]);
        assert.deepEqual(lcm.history(stack()), ["update"]);
    });

    it("the cluster is a Kubernetes VIM: `openstack vim list` (client) shows kubernetes_vim; the instance names it in vimConnectionInfo; its token, read from the real API server, is in no answer", async () => {
        const vimCommand = async (...args: string[]) => JSON.parse((await exec("openstack", ["--os-auth-type", "none", "--os-endpoint", lcm.service.url, "vim", ...args, "-f", "json"], { timeout: 60_000 })).stdout);
        const vim = (await vimCommand("list")).find((v: any) => v.Name === "kubernetes_vim");
        assert.equal(vim?.Type, "kubernetes");
        const instance = (await call("GET", `/vnflcm/v1/vnf_instances/${id}`)).body;
        assert.ok(instance.vimConnectionInfo.some((v: any) => v.vimId === vim.ID && v.vimType === "ETSINFV.KUBERNETES.V_1"), JSON.stringify(instance.vimConnectionInfo));
        const kubeconfig = await suite.lab.inside(`${stack()}-master-0`, "cat /etc/kubernetes/admin.conf");
        lcm.credentials.push(/client-key-data: (\S+)/.exec(kubeconfig)?.[1] ?? "");
        const secret = JSON.parse(await realKubectl(kubeconfig, ["get", "secret", "k8s-vnf-vim-token", "-n", "kube-system", "-o", "json"]));
        const token = Buffer.from(secret.data.token, "base64").toString();
        lcm.credentials.push(token);
        for (const route of ["/v1.0/vims", `/v1.0/vims/${vim.ID}`, `/vnflcm/v1/vnf_instances/${id}`, "/vnflcm/v1/vnf_lcm_op_occs"]) assert.ok(!JSON.stringify((await call("GET", route)).body).includes(token), route);
    });

    it("refused before anything runs, naming the field: an instantiate the program would refuse, an instance without a package, a heal of the only master, a scale-in below the minimum", async () => {
        const before = await nothingRan();
        const other = JSON.parse(await openstack("create", VNFD, "--name", "vnf-registry", "-f", "json")).ID;
        const registry = await call("POST", `/vnflcm/v1/vnf_instances/${other}/instantiate`, seedBody(suite.lab, "registry-vnf-instantiate.json", { withoutVim: true }));
        assert.equal(registry.status, 400);
        assert.match(registry.body.detail, /additionalParams\.private_registry_installation_param\.image_path: Files\/images\/private_registry\.tar does not exist in the package directory/);
        assert.equal((await call("DELETE", `/vnflcm/v1/vnf_instances/${other}`)).status, 204);
        const unpackaged = JSON.parse(await openstack("create", "no-such-vnfd", "-f", "json")).ID;
        const noPackage = await call("POST", `/vnflcm/v1/vnf_instances/${unpackaged}/instantiate`, seedBody(suite.lab, "storage-instantiate.json", { withoutVim: true }));
        assert.equal(noPackage.status, 400);
        assert.match(noPackage.body.detail, /no package for vnfdId "no-such-vnfd": put the unpacked package in .*\/packages\/<vnfdId>/);
        assert.equal((await call("DELETE", `/vnflcm/v1/vnf_instances/${unpackaged}`)).status, 204);

        const master = (await vnfcs()).find((v) => v.vduId === "masterNode");
        assert.match(await refused("heal", "--vnfc-instance", master.id, "--", id), /heal\.nodes\.master-0: a single-master cluster cannot heal its master node by node/);
        assert.match(await refused("scale", "--type", "SCALE_IN", "--aspect-id", "worker_instance", "--number-of-steps", "5", id), /numberOfSteps: SCALE_IN by 5 would leave -3 workers, below the minimum 2/);
        assert.deepEqual(await nothingRan(), before, "no update, no OpenStack call, no occurrence");
    });

    it("operate: a graceful stop is two updates (drain, then every VM shut off), not held up by a subscriber that is gone; while STOPPED a scale is a 409; a start is one update back to STARTED, its progress streamed", async () => {
        const gone = await Callback.start();
        const subscription = await call("POST", "/vnflcm/v1/subscriptions", { callbackUri: gone.url });
        assert.equal(subscription.status, 201);
        await gone.stop();
        const instance = async () => (await call("GET", `/vnflcm/v1/vnf_instances/${id}`)).body;
        assert.ok((await instance())._links.operate?.href.endsWith(`/vnf_instances/${id}/operate`), "the operate link");
        const operate = (body: unknown) => call("POST", `/vnflcm/v1/vnf_instances/${id}/operate`, body);
        assert.equal((await operate({ changeStateTo: "STARTED" })).status, 409, "already STARTED");
        const misplaced = await operate({ changeStateTo: "STARTED", stopType: "GRACEFUL" });
        assert.deepEqual([misplaced.status, misplaced.body.detail], [400, "stopType: only for changeStateTo STOPPED"]);

        let before = updates();
        const started = Date.now();
        assert.equal((await operate({ changeStateTo: "STOPPED", stopType: "GRACEFUL", gracefulStopTimeout: 5 })).status, 202);
        let op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.ok(Date.now() - started < 300_000, "not held up by notification retries");
        assert.equal(updates() - before, 2, "drain first, then the VMs");
        assert.deepEqual(lcm.project.stackConfig(stack())["k8s-vnf:operate"], { vnfState: "STOPPED", drained: true, drainTimeout: 5 });
        assert.equal((await instance()).instantiatedVnfInfo.vnfState, "STOPPED");
        assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]).sort(), (await vnfcs()).map((v) => [v.id, "MODIFIED"]).sort());
        assert.deepEqual([...new Set(lcm.api.servers().map((s) => s.status))], ["SHUTOFF"]);
        for (const v of await vnfcs()) await assert.rejects(suite.lab.inside(v.id, "true"), `${v.id} is shut off`);

        const stopped = await nothingRan();
        const scale = await call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" });
        assert.equal(scale.status, 409);
        assert.match(scale.body.detail, /is STOPPED: its VMs are shut off, so scale cannot reach them; start it first/);
        assert.equal((await operate({ changeStateTo: "STOPPED" })).status, 409, "already STOPPED");
        assert.deepEqual(await nothingRan(), stopped, "nothing ran");

        before = updates();
        const accepted = await operate({ changeStateTo: "STARTED" });
        assert.equal(accepted.status, 202);
        const stream = await fetch(`${accepted.location}/progress`);
        assert.match(String(stream.headers.get("content-type")), /text\/event-stream/);
        const text = await stream.text();
        assert.match(text, /event: state\ndata: \{"operationState":"(STARTING|PROCESSING)"\}/);
        assert.match(text, /event: progress\ndata: \{"engineEvents":\d+/);
        assert.match(text, /event: state\ndata: \{"operationState":"COMPLETED"\}/);
        op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.ok(op.progress.resourcesDone > 0, JSON.stringify(op.progress));
        assert.equal(updates() - before, 1);
        assert.equal((await instance()).instantiatedVnfInfo.vnfState, "STARTED");
        for (const v of await vnfcs()) assert.equal((await suite.lab.inside(v.id, "echo up")).trim(), "up", `${v.id} runs`);
        assert.equal((await call("DELETE", `/vnflcm/v1/subscriptions/${subscription.body.id}`)).status, 204);
    });

    it("a crash that also killed the `pulumi up` and its plugins: its stale lock is cleared with pulumi cancel on restart, FAILED_TEMP saying so; op retry (client) completes", async () => {
        lcm.slowJoins(20);
        const since = lcm.standInCalls().length;
        let opId = "";
        try {
            opId = (await call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" })).location!.split("/").pop()!;
            await lcm.joinStarted(since);
            const tree = descendants(lcm.service.pid);
            assert.ok(tree.length >= 4, "the CLI, its language host, the program and the plugins");
            await lcm.service.crash();
            for (const pid of tree.filter(alive)) {
                try {
                    process.kill(pid, "SIGKILL");
                } catch {
                    // ended meanwhile
                }
            }
            for (let i = 0; i < 100 && tree.some(alive); i++) await new Promise((r) => setTimeout(r, 50));
            assert.deepEqual(tree.filter(alive), []);
            assert.equal(lcm.locks(stack()).length, 1, "a killed update leaves its lock");
            await lcm.startService();
            const op = (await call("GET", `/vnflcm/v1/vnf_lcm_op_occs/${opId}`)).body;
            assert.equal(op.operationState, "FAILED_TEMP");
            assert.match(op.error.detail, /its Pulumi command \(pid \d+\) was no longer running; the stack's lock was cleared \(pulumi cancel\)/);
            assert.deepEqual(lcm.locks(stack()), []);
        } finally {
            lcm.slowJoins(undefined);
        }
        await openstack("op", "retry", opId);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.deepEqual(await workers(), [0, 1, 2].map((i) => `${stack()}-worker-${i}`));
    });

    it("a failed update (Nova answers 500 to a server create): FAILED_TEMP with the provider's error; op fail (client) makes it FAILED", async () => {
        lcm.api.failNext("POST", /\/compute\/v2\.1\/servers$/, 500, { computeFault: { code: 500, message: "lab: the scheduler is down" } });
        assert.match(await openstack("scale", "--type", "SCALE_OUT", "--aspect-id", "worker_instance", id), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "FAILED_TEMP");
        assert.match(op.error.detail, /Error creating OpenStack server: Internal Server Error/);
        const failed = JSON.parse(await openstack("op", "fail", op.id, "-f", "json"));
        assert.equal(failed["Operation State"], "FAILED");
    });

    it("the lab's passwords are nowhere to be seen: not in a stack file, a GET, a notification or the service's output", async () => {
        const seen = [
            ...fs.readdirSync(path.join(lcm.project.dir, "stacks")).map((f) => fs.readFileSync(path.join(lcm.project.dir, "stacks", f), "utf8")),
            JSON.stringify((await call("GET", "/vnflcm/v1/vnf_instances?all_fields")).body),
            JSON.stringify((await call("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields")).body),
            JSON.stringify((await call("GET", "/v1.0/vims")).body),
            JSON.stringify(lcm.callback.received),
            lcm.service.output,
        ];
        for (const secret of [suite.lab.password, lcm.api.credentials.password]) for (const text of seen) assert.ok(!text.includes(secret), text.slice(0, 200));
    });

    it("terminate FORCEFUL (client): the stack destroyed, NOT_INSTANTIATED, no server or lab host left; then delete works", async () => {
        assert.match(await openstack("terminate", "--termination-type", "FORCEFUL", id), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.equal(JSON.parse(await openstack("show", id, "-f", "json"))["Instantiation State"], "NOT_INSTANTIATED");
        assert.equal(lcm.history(stack()).at(-1), "destroy");
        assert.deepEqual(lcm.api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
        assert.match(await openstack("delete", id), /deleted successfully/);
    });
});
