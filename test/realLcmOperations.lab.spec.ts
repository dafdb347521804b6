/**
 * The LCM service's own handling of its operations, on the real Pulumi CLI: `k8s-vnf serve` as in
 * realLcm.lab.spec.ts (the lab OpenStack API, the seed's VIM registered at its Keystone, the real `openstack
 * vnflcm` client, the seed's simple cluster whose first master runs the real control plane), with `--max-parallel 1`.
 * Notifications and the stack config; the cluster as a Kubernetes VIM; refusals before anything runs; a cancel
 * while `pulumi stack select` runs; change-ext-conn moving the workers to the lab API's second network; operate, a graceful stop being two
 * updates; the progress stream; a subscriber that is gone, one that refuses a notification; a crash that also
 * killed the `pulumi up` while another instance's operation waited for its slot; a failed update made FAILED;
 * where the lab's secrets must not appear; a GRACEFUL terminate's wait. What ran is read from the stack's update
 * history (`pulumi stack history`), the lab API's call record, the service's process tree and the lab hosts.
 *
 * Faults come from the lab: the lab API failing a call, a join slowed on a lab host, processes stopped or
 * killed by PID.
 */
import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { descendants } from "../service/pulumiProcess";
import { Callback, seedBody } from "./support/lcmClient";
import { skipAfterFirstFailure } from "./support/labSuite";
import { alive, commandLine } from "./support/processAlive";
import { PROJECT_DIR } from "./support/program";
import { realKubectl } from "./support/realKubectl";
import { useRealLcmService } from "./support/realLcmService";
import { useBuiltTools } from "./support/tools";

const exec = promisify(execFile);
/** Whether process `pid` is a Pulumi CLI (its program's name), not its plugins or the language host. */
const isPulumi = (pid: number) => path.basename(commandLine(pid).split(" ")[0]) === "pulumi";
const SEED_VIM = "05ef7ca5-7e32-4a6b-a03d-52f811f04496";
const SEED_NETWORK = "71a3fbd1-f31e-4c2c-b0e2-26267d64a9ee";
/** The lab API's second tenant network, where change-ext-conn moves the workers. */
const OTHER_NETWORK = "5b2f2a8e-3f0c-4f6e-9d1e-7f3c2a1b9c00";
/** The vnfdId of the seeds' package (examples/package under `serve --packages`). */
const VNFD = "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177";

describe("the LCM service's handling of its operations on the real Pulumi CLI: refusals, a cancel between commands, change-ext-conn, operate, progress, a parallel limit, crashes, failures, secrets, a graceful terminate", function () {
    useBuiltTools();
    this.timeout(900_000);
    const lcm = useRealLcmService({
        cluster: "lcmops",
        networkId: SEED_NETWORK,
        otherNetworkId: OTHER_NETWORK,
        vimIds: [SEED_VIM],
        serveArgs: ["--max-parallel", "1"],
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

    it("a cancel that arrives while `pulumi stack select` runs (the real command, held with SIGSTOP until the cancel is accepted) is not lost: no update starts, FAILED_TEMP; op rollback makes it ROLLED_BACK", async () => {
        const updatesBefore = updates();
        const opId = (await call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" })).location!.split("/").pop()!;
        let select: number | undefined;
        for (let i = 0; i < 3000 && !select; i++) {
            select = descendants(lcm.service.pid).find((pid) => isPulumi(pid) && / stack select /.test(commandLine(pid)));
            if (!select) await new Promise((r) => setTimeout(r, 10));
        }
        assert.ok(select, "the operation ran pulumi stack select");
        process.kill(select, "SIGSTOP");
        try {
            assert.equal((await call("POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/cancel`, { cancelMode: "GRACEFUL" })).status, 202);
        } finally {
            process.kill(select, "SIGCONT");
        }
        const op = await settle();
        assert.equal(op.operationState, "FAILED_TEMP");
        assert.match(op.error.detail, /cancelled/);
        assert.equal(updates(), updatesBefore, "no update started");
        assert.equal((await call("POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/rollback`)).status, 202);
        assert.equal((await settle()).operationState, "ROLLED_BACK");
        assert.deepEqual(await workers(), [0, 1].map((i) => `${stack()}-worker-${i}`));
    });

    it("change-ext-conn (client) moves the workers to lab-net-2 one worker per update: each a new port and VM there, joined again; the master stays. The master's connection point and change_flavour are refused, nothing run", async () => {
        const before = await vnfcs();
        const address = (name: string) => suite.lab.host(name).address;
        const addressesBefore = Object.fromEntries(before.map((v) => [v.id, address(v.id)]));
        const file = path.join(lcm.dataDir, "change-ext-conn.json");
        fs.writeFileSync(file, JSON.stringify({ extVirtualLinks: [{ id: "net1_worker", resourceId: OTHER_NETWORK, extCps: [{ cpdId: "workerNode_CP2", cpConfig: [{ cpProtocolData: [{ layerProtocol: "IP_OVER_ETHERNET" }] }] }] }] }));
        const updatesBefore = updates();
        const joinsBefore = lcm.standInCalls().filter((l) => / kubeadm join /.test(l)).length;
        assert.match(await openstack("change-ext-conn", id, file), /has been accepted/);
        const op = await settle();
        assert.deepEqual([op.operation, op.operationState], ["CHANGE_EXT_CONN", "COMPLETED"], JSON.stringify(op.error));
        assert.equal(updates() - updatesBefore, 2, "one update per worker");
        assert.equal(lcm.standInCalls().filter((l) => / kubeadm join /.test(l)).length - joinsBefore, 2, "each moved worker joined again");
        const after = await vnfcs();
        assert.deepEqual(after.filter((v, i) => v.computeResource.resourceId !== before[i].computeResource.resourceId).map((v) => v.vduId), ["workerNode", "workerNode"]);
        const ports = lcm.api.ports();
        for (const v of after.filter((x) => x.vduId === "workerNode")) {
            const port = ports.find((p) => p.deviceId === v.computeResource.resourceId);
            assert.deepEqual([port?.networkId, port?.address], [OTHER_NETWORK, address(v.id)], `${v.id} on its port of lab-net-2`);
            assert.ok(Number(address(v.id).split(".").pop()) >= 130 && address(v.id) !== addressesBefore[v.id], `${v.id} at ${address(v.id)}, an address of lab-net-2`);
        }
        const master = after.find((v) => v.vduId === "masterNode")!;
        assert.equal(address(master.id), addressesBefore[master.id]);
        const workersConfig = lcm.project.stackConfig(stack())["k8s-vnf:workers"] as any;
        assert.deepEqual([workersConfig.networkId, workersConfig.portMove], [OTHER_NETWORK, undefined]);

        const settled = await nothingRan();
        const refusedMaster = await call("POST", `/vnflcm/v1/vnf_instances/${id}/change_ext_conn`, { extVirtualLinks: [{ id: "x", resourceId: OTHER_NETWORK, extCps: [{ cpdId: "masterNode_CP1" }] }] });
        assert.equal(refusedMaster.status, 422);
        assert.match(refusedMaster.body.detail, /extVirtualLinks\[0\]\.extCps\[0\]\.cpdId: masterNode_CP1 carries the control plane's addresses/);
        const flavour = await call("POST", `/vnflcm/v1/vnf_instances/${id}/change_flavour`, { newFlavourId: "complex" });
        assert.deepEqual([flavour.status, flavour.body.detail], [422, "newFlavourId: simple → complex changes the control plane's endpoint (the master's address ↔ the HA VIP), which is in the API server's certificate and every node's kubeconfig; instantiate a new VNF of flavour complex instead"]);
        assert.deepEqual(await nothingRan(), settled, "a refusal runs nothing");
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

    it("with --max-parallel 1, a crash that also killed the `pulumi up` and its plugins while another instance's instantiate waited: on restart the stale lock is cleared with pulumi cancel, FAILED_TEMP saying so, the waiting one ROLLED_BACK having run nothing; op retry (client) completes; an instantiated instance is not deleted (409)", async () => {
        lcm.slowJoins(20);
        const since = lcm.standInCalls().length;
        let opId = "";
        let other = "";
        let waiting = "";
        try {
            opId = (await call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" })).location!.split("/").pop()!;
            await lcm.joinStarted(since);
            other = (await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: VNFD })).body.id;
            waiting = (await call("POST", `/vnflcm/v1/vnf_instances/${other}/instantiate`, seedBody(suite.lab, "simple-instantiate.json"))).location!.split("/").pop()!;
            await new Promise((r) => setTimeout(r, 1000));
            assert.equal((await call("GET", `/vnflcm/v1/vnf_lcm_op_occs/${waiting}`)).body.operationState, "STARTING", "waits for the one slot --max-parallel 1 gives");
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
            assert.equal((await lcm.locks(stack())).length, 1, "a killed update leaves its lock");
            await lcm.startService();
            const op = (await call("GET", `/vnflcm/v1/vnf_lcm_op_occs/${opId}`)).body;
            assert.equal(op.operationState, "FAILED_TEMP");
            assert.match(op.error.detail, /its Pulumi command \(pid \d+\) was no longer running; the stack's lock was cleared \(pulumi cancel\)/);
            assert.deepEqual(await lcm.locks(stack()), []);
            assert.equal((await call("GET", `/vnflcm/v1/vnf_lcm_op_occs/${waiting}`)).body.operationState, "ROLLED_BACK");
            assert.equal((await call("GET", `/vnflcm/v1/vnf_instances/${other}`)).body.instantiationState, "NOT_INSTANTIATED");
            assert.deepEqual(lcm.api.servers().filter((s) => s.name.startsWith(`vnf-${other}-`)), [], "the waiting instantiate made nothing");
        } finally {
            lcm.slowJoins(undefined);
        }
        await openstack("op", "retry", opId);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.deepEqual(await workers(), [0, 1, 2].map((i) => `${stack()}-worker-${i}`));
        const instantiated = await call("DELETE", `/vnflcm/v1/vnf_instances/${id}`);
        assert.deepEqual([instantiated.status, instantiated.body.detail], [409, `VNF instance ${id} is INSTANTIATED: terminate it before deleting it`]);
        assert.equal((await call("DELETE", `/vnflcm/v1/vnf_instances/${other}`)).status, 204);
    });

    it("a notification a subscriber refuses is delivered again, once", async () => {
        const refusing = await Callback.start();
        try {
            const subscription = await call("POST", "/vnflcm/v1/subscriptions", { callbackUri: refusing.url, filter: { notificationTypes: ["VnfIdentifierCreationNotification"] } });
            refusing.failFirst = 1;
            const created = JSON.parse(await openstack("create", VNFD, "--name", "vnf-notified", "-f", "json")).ID;
            assert.ok(await refusing.until((r) => r.length > 0, 30_000), "delivered");
            await new Promise((r) => setTimeout(r, 3000)); // a third attempt, were there one, would come meanwhile
            assert.equal(refusing.attempts, 2);
            assert.deepEqual(refusing.received.map((n) => [n.notificationType, n.vnfInstanceId]), [["VnfIdentifierCreationNotification", created]]);
            assert.equal((await call("DELETE", `/vnflcm/v1/subscriptions/${subscription.body.id}`)).status, 204);
            assert.equal((await call("DELETE", `/vnflcm/v1/vnf_instances/${created}`)).status, 204);
        } finally {
            await refusing.stop();
        }
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
            JSON.stringify((await call("GET", "/k8s-vnf/v1/vims")).body),
            JSON.stringify((await call("GET", `/k8s-vnf/v1/vims/${SEED_VIM}`)).body),
            JSON.stringify(lcm.callback.received),
            lcm.service.output,
        ];
        for (const secret of [suite.lab.password, lcm.api.credentials.password]) for (const text of seen) assert.ok(!text.includes(secret), text.slice(0, 200));
    });

    it("terminate GRACEFUL with a 20 s timeout: no Pulumi command before the timeout; the stack destroyed, NOT_INSTANTIATED, no server or lab host left; then delete (client) works", async () => {
        const asked = Date.now();
        assert.equal((await call("POST", `/vnflcm/v1/vnf_instances/${id}/terminate`, { terminationType: "GRACEFUL", gracefulTerminationTimeout: 20 })).status, 202);
        let firstCommand = 0;
        for (const deadline = asked + 120_000; !firstCommand && Date.now() < deadline; ) {
            if (descendants(lcm.service.pid).some(isPulumi)) firstCommand = Date.now();
            else await new Promise((r) => setTimeout(r, 50));
        }
        assert.ok(firstCommand, "no Pulumi command started within 2 minutes of the request");
        assert.ok(firstCommand - asked >= 20_000, `its first Pulumi command ${firstCommand - asked} ms after the request`);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.equal(JSON.parse(await openstack("show", id, "-f", "json"))["Instantiation State"], "NOT_INSTANTIATED");
        assert.equal(lcm.history(stack()).at(-1), "destroy");
        assert.deepEqual(lcm.api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
        assert.match(await openstack("delete", id), /deleted successfully/);
    });
});
