/**
 * Three replicas of the LCM service (`k8s-vnf serve`, each its own process) on one PostgreSQL database, the
 * real Pulumi CLI running this project's program for them (one project folder, its file state, as replicas
 * on one host share it). Any replica answers any request; one operation per instance holds across replicas;
 * the replica that accepted an operation runs it, and a cancel accepted by another reaches it; a replica
 * killed mid-operation (SIGKILL, its `pulumi up` left running) has its claim taken over by another, which
 * stops that command, clears the stack's lock and makes the occurrence FAILED_TEMP, after which a retry runs
 * on the replica that accepts it; each notification is sent once. The OpenStack endpoint accepts connections
 * and never answers, so an update runs until it is stopped, and creates nothing.
 * A claim that lapses (a replica on another host) is the in-process suite's (lcmClaims.spec.ts).
 */
import { strict as assert } from "node:assert";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseRequestText } from "../config/requestText";
import { describeProcess, descendants, stillRunning } from "../service/pulumiProcess";
import { REQUESTS_DIR } from "./support/fixtures";
import { Callback } from "./support/lcmClient";
import { sharedPostgres, skipUnlessPostgres } from "./support/postgres";
import { killServiceTree, realServiceEnv } from "./support/realLcmService";
import { ServiceProcess } from "./support/serviceProcess";
import { ServiceProject, serviceProject } from "./support/serviceProject";
import { silentEndpoint } from "./support/silentEndpoint";
import { useBuiltTools } from "./support/tools";

type Body = Record<string, any>;

/** The seed's simple instantiate body, on the service's own OS_* credentials (the silent endpoint). */
function instantiateBody(): Body {
    const body = parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8"), "simple-instantiate.json") as Body;
    delete body.vimConnectionInfo;
    return body;
}

describe("LCM service replicas on one PostgreSQL database (three `serve` processes, the real Pulumi CLI)", function () {
    this.timeout(180_000);
    useBuiltTools();
    let root = "";
    const replicas: ServiceProcess[] = [];
    let project: ServiceProject | undefined;
    let endpoint: Awaited<ReturnType<typeof silentEndpoint>> | undefined;
    let callback: Callback | undefined;
    let database = "";
    const secretsKey = randomBytes(32).toString("base64");

    const start = async (i: number) => {
        const env = { ...realServiceEnv(path.join(root, `replica-${i}`)), ...endpoint!.env, K8S_VNF_LCM_DATABASE: database, K8S_VNF_LCM_SECRETS_KEY: secretsKey };
        fs.mkdirSync(path.join(root, `replica-${i}`, "data"), { recursive: true });
        return ServiceProcess.start(path.join(root, `replica-${i}`, "data"), {}, ["--project", project!.dir, "--max-parallel", "1", "--claim-lease", "3"], env);
    };
    const call = async (replica: ServiceProcess, method: string, route: string, body?: unknown) => replica.call(method, route, body);
    const occurrence = async (replica: ServiceProcess, opId: string): Promise<Body> => (await call(replica, "GET", `/vnflcm/v1/vnf_lcm_op_occs/${opId}`)).body;
    const until = async (what: string, ready: () => Promise<boolean>, timeoutMs = 60_000) => {
        for (const deadline = Date.now() + timeoutMs; !(await ready()); await new Promise((r) => setTimeout(r, 200))) {
            if (Date.now() > deadline) assert.fail(`not within ${timeoutMs / 1000} s: ${what}`);
        }
    };
    const opIdOf = (location: string | null) => String(location).split("/").pop()!;

    before(async function () {
        skipUnlessPostgres(this);
        // Made here, not when the suite is declared: a suite filtered out leaves nothing.
        root = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-replicas-"));
        database = await (await sharedPostgres()).newDatabase();
        project = serviceProject();
        endpoint = await silentEndpoint();
        callback = await Callback.start();
        for (let i = 0; i < 3; i++) replicas.push(await start(i));
    });
    after(async () => {
        // Killed, not stopped: a replica stops only once its operations end, and an update here never does.
        for (const replica of replicas) await killServiceTree(replica);
        await endpoint?.close();
        await callback?.stop();
        project?.remove();
        if (root) fs.rmSync(root, { recursive: true, force: true });
    });

    let instanceId = "";

    it("any replica answers any request: an instance made on one is shown by the others with the same ETag; a subscription made on one is notified by another, once", async () => {
        const [a, b, c] = replicas;
        assert.equal((await call(c, "POST", "/vnflcm/v1/subscriptions", { callbackUri: callback!.url })).status, 201);
        const created = await call(a, "POST", "/vnflcm/v1/vnf_instances", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177", vnfInstanceName: "replicated" });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        instanceId = created.body.id;
        const etags = await Promise.all([a, b, c].map(async (r) => (await fetch(`${r.url}/vnflcm/v1/vnf_instances/${instanceId}`)).headers.get("etag")));
        assert.ok(etags[0] && etags.every((e) => e === etags[0]), etags.join(" "));
        assert.deepEqual((await call(b, "GET", "/vnflcm/v1/subscriptions")).body.length, 1);
        assert.ok(await callback!.until((got) => got.some((n) => n.notificationType === "VnfIdentifierCreationNotification")));
        await new Promise((r) => setTimeout(r, 1_000));
        assert.equal(callback!.received.filter((n) => n.notificationType === "VnfIdentifierCreationNotification").length, 1, "sent by the replica that made it only");
    });

    let opId = "";
    let runner: ServiceProcess | undefined;

    it("one operation per instance across replicas: of instantiates sent to two replicas at once, one is accepted (202) and the other refused (409); the replica that accepted it runs it", async () => {
        const [a, b] = replicas;
        const answers = await Promise.all([a, b].map((r) => call(r, "POST", `/vnflcm/v1/vnf_instances/${instanceId}/instantiate`, instantiateBody())));
        assert.deepEqual(answers.map((x) => x.status).sort(), [202, 409], JSON.stringify(answers.map((x) => x.body)));
        const accepted = answers.find((x) => x.status === 202)!;
        assert.match(answers.find((x) => x.status === 409)!.body.detail, /one operation at a time/);
        opId = opIdOf(accepted.location);
        runner = replicas[answers.indexOf(accepted)];
        // Its `pulumi up` runs (the provider has reached the endpoint) under the replica that accepted it.
        await until("the update reaches the OpenStack endpoint", async () => endpoint!.connections() > 0);
        const pulumiUnder = (r: ServiceProcess) => descendants(r.pid).some((pid) => /pulumi/.test(fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] ?? ""));
        assert.ok(pulumiUnder(runner), "the accepting replica runs the Pulumi command");
        assert.ok(!replicas.filter((r) => r !== runner).some(pulumiUnder), "no other replica does");
        assert.equal((await occurrence(replicas[2], opId)).operationState, "PROCESSING");
    });

    it("a replica killed mid-operation: another takes its claim over, stops the `pulumi up` it left, clears the stack's lock and makes it FAILED_TEMP; START and RESULT notified once each", async () => {
        const victim = runner!;
        const left = descendants(victim.pid)
            .map(describeProcess)
            .filter((p) => p !== undefined);
        assert.ok(left.length > 0);
        await victim.crash();
        assert.ok(left.some(stillRunning), "the killed replica's Pulumi command outlives it (its own process group)");
        const others = replicas.filter((r) => r !== victim);
        await until("the occurrence is FAILED_TEMP", async () => (await occurrence(others[0], opId)).operationState === "FAILED_TEMP", 60_000);
        const op = await occurrence(others[1], opId);
        assert.match(op.error.detail, /the service \(.*, pid \d+\) stopped while the operation was running: its Pulumi command \(pid \d+\) (was cancelled|did not stop within \d+ s of SIGINT and was killed with its plugins); the stack's lock was cleared \(pulumi cancel\)/);
        await until("nothing of the killed replica runs", async () => !left.some(stillRunning), 30_000);
        const about = (status: string) => callback!.received.filter((n) => n.vnfLcmOpOccId === opId && n.notificationStatus === status);
        assert.ok(await callback!.until(() => about("RESULT").length > 0));
        await new Promise((r) => setTimeout(r, 1_500));
        assert.equal(about("START").length, 1);
        assert.deepEqual(about("RESULT").map((n) => n.operationState), ["FAILED_TEMP"], "one replica took it over and notified");
        replicas[replicas.indexOf(victim)] = await start(replicas.indexOf(victim));
    });

    it("a retry runs on the replica that accepts it, the stack no longer locked; a GRACEFUL cancel waits for the step the VIM never ends, a FORCEFUL one accepted by another replica stops it (killed, the lock cleared) within seconds; the progress stream of a third follows it to FAILED_TEMP", async () => {
        const [a, b, c] = replicas;
        const connected = endpoint!.connections();
        assert.equal((await call(a, "POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/retry`)).status, 202);
        const watched = fetch(`${b.url}/vnflcm/v1/vnf_lcm_op_occs/${opId}/progress`);
        await until("the retry's update reaches the OpenStack endpoint", async () => endpoint!.connections() > connected);
        const stream = await watched;
        // GRACEFUL: Pulumi's own cancel waits for the step under way, which the endpoint never ends.
        assert.equal((await call(c, "POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/cancel`, { cancelMode: "GRACEFUL" })).status, 202);
        await new Promise((r) => setTimeout(r, 4_000));
        const waiting = await occurrence(b, opId);
        assert.deepEqual([waiting.operationState, waiting.isCancelPending, waiting.cancelMode], ["PROCESSING", true, "GRACEFUL"]);
        assert.equal((await call(b, "POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/cancel`, { cancelMode: "GRACEFUL" })).status, 409, "a GRACEFUL cancel once");
        // FORCEFUL, asked of another replica, escalates it.
        assert.equal((await call(b, "POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/cancel`, { cancelMode: "FORCEFUL" })).status, 202);
        assert.equal((await occurrence(c, opId)).cancelMode, "FORCEFUL");
        assert.equal((await call(c, "POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/cancel`, { cancelMode: "FORCEFUL" })).status, 409, "and a FORCEFUL one once");
        await until("the cancel stops the retry", async () => (await occurrence(c, opId)).operationState === "FAILED_TEMP", 45_000);
        const op = await occurrence(b, opId);
        assert.match(op.error.detail, /^cancelled \(FORCEFUL\): [\s\S]*the stack's lock was cleared \(pulumi cancel\)$/, op.error.detail);
        assert.equal(op.cancelMode, undefined, "shown only while pending");
        assert.doesNotMatch(op.error.detail, /locked|concurrent update/i, "the lock of the killed replica's update is gone");
        const events = await stream.text();
        assert.match(events, /event: state\ndata: \{"operationState":"PROCESSING"\}[\s\S]*event: state\ndata: \{"operationState":"FAILED_TEMP"\}/, events);
        assert.equal((await call(b, "POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/fail`)).status, 200);
    });
});
