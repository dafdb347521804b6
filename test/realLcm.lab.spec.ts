/**
 * The LCM service (`bin/k8s-vnf serve`, its own process) driving the real Pulumi CLI through the Automation
 * API, driven in turn by the real `openstack vnflcm` client with the seeds' bodies (only their login
 * passwords replaced by the lab's). The cloud is the lab OpenStack API, set up as an operator would have it
 * before sending those bodies: the seeds' network id, Tacker's sample image and flavor names, and the VIM the
 * seeds name registered with the service at the lab API's Keystone. The first master runs the real control
 * plane (docs/testing.md, "The lab's control plane").
 *
 * Faults come from the lab, not from knobs of a CLI: an OpenStack call answered 500 by the lab API, a lab
 * host slow to join (the kubeadm stand-in's delay), the service killed while its `pulumi up` runs.
 *
 * The service keeps its state, and the stacks their Pulumi state (Pulumi's DIY PostgreSQL backend,
 * `PULUMI_BACKEND_URL=postgres://…`), in one PostgreSQL database, so that a second replica on a project folder
 * of its own (as on another host) plans and runs an operation on a stack the first made. The other real-CLI
 * LCM suites run on SQLite and the file backend.
 */
import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { descendants } from "../service/pulumiProcess";
import { REQUESTS_DIR } from "./support/fixtures";
import { vnflcmCancel } from "./support/lcmClient";
import { skipAfterFirstFailure } from "./support/labSuite";
import { alive, commandLine } from "./support/processAlive";
import { leftInTemporaryFolder, stopServiceTree, useRealLcmService } from "./support/realLcmService";
import { ServiceProcess } from "./support/serviceProcess";
import { useBuiltTools } from "./support/tools";

const exec = promisify(execFile);
/** What the seeds name: the VIM and the network. */
const SEED_VIM = "05ef7ca5-7e32-4a6b-a03d-52f811f04496";
const SEED_NETWORK = "71a3fbd1-f31e-4c2c-b0e2-26267d64a9ee";
const VNFD = "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177";
const CLUSTER_STATE = "lcm";

describe("the LCM service on the real Pulumi CLI: the seeds' bodies through the real openstack vnflcm client, the lab OpenStack API, faults from the lab", function () {
    useBuiltTools();
    this.timeout(900_000);
    const lcm = useRealLcmService({ cluster: CLUSTER_STATE, networkId: SEED_NETWORK, vimIds: [SEED_VIM], postgres: true });
    const { suite, openstack, call, seedFile } = lcm;
    let id = "";
    const stack = () => `vnf-${id}`;
    const settle = () => lcm.settle(id);
    const vnfcs = () => lcm.vnfcs(id);
    const workers = async () => (await vnfcs()).filter((v) => v.vduId === "workerNode").map((v) => v.id);
    const servers = () => lcm.api.servers().map((s) => s.name).sort();
    const { slowJoins, joinStarted } = lcm;
    const calls = lcm.standInCalls;
    const locks = () => lcm.locks(stack());

    skipAfterFirstFailure();

    it("instantiate with the seed's body: COMPLETED; the real OpenStack provider made 1 master + 2 workers, each VNFC its Nova server; the master runs the real control plane", async () => {
        id = JSON.parse(await openstack("create", VNFD, "--name", "vnf-real", "-f", "json")).ID;
        assert.match(await openstack("instantiate", id, seedFile("simple-instantiate.json")), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        const byName = new Map(lcm.api.servers().map((s) => [s.name, s]));
        assert.deepEqual([...byName.keys()].sort(), [`${stack()}-master-0`, `${stack()}-worker-0`, `${stack()}-worker-1`]);
        const shown = await vnfcs();
        assert.deepEqual(
            shown.map((v) => [v.id, v.vduId, v.computeResource.resourceId]),
            [
                [`${stack()}-master-0`, "masterNode", byName.get(`${stack()}-master-0`)!.id],
                [`${stack()}-worker-0`, "workerNode", byName.get(`${stack()}-worker-0`)!.id],
                [`${stack()}-worker-1`, "workerNode", byName.get(`${stack()}-worker-1`)!.id],
            ],
            "each VNFC's compute resource is the server the lab's Nova made",
        );
        assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]).sort(), shown.map((v) => [v.id, "ADDED"]));
        const vim = JSON.parse((await exec("openstack", ["--os-auth-type", "none", "--os-endpoint", lcm.service.url, "vim", "show", "kubernetes_vim", "-f", "json"], { timeout: 60_000 })).stdout);
        assert.equal(vim.auth_url, `https://${byName.get(`${stack()}-master-0`)!.address}:6443`, "the Kubernetes VIM at the master (vim show, client)");
        const version = JSON.parse(await suite.lab.inside(`${stack()}-master-0`, "curl -sk https://127.0.0.1:6443/version"));
        assert.equal(version.gitVersion, "v1.31.4", "the real API server answers there");
        const stackFile = lcm.project.stackFileText(stack())!;
        assert.ok(!stackFile.includes(suite.lab.password) && /secure: /.test(stackFile), "the passwords encrypted in the stack file");
        assert.deepEqual(leftInTemporaryFolder(lcm), [], "no kubeconfig (or anything else) of the Pulumi commands left in the service's temporary folder");
    });

    it("plans (POST /k8s-vnf/v1/vnf_instances/{id}/plan), the real CLI's preview with a scratch config file: the seed's scale-out body lists only the new worker's changes and its join; a worker heal its drain before its VM goes, then its join; nothing is changed", async () => {
        const snapshot = async () => [lcm.project.stackFileText(stack()), ...(await lcm.stateSnapshot())];
        const unchanged = { files: await snapshot(), servers: servers(), ops: (await call("GET", "/vnflcm/v1/vnf_lcm_op_occs")).body.length };
        const actionsOf = (plan: any) => plan.changes.flatMap((c: any) => c.actions.map((a: any) => `${c.name} ${a.phase}: ${a.action}`)) as string[];

        const scaleOut = await call("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, JSON.parse(fs.readFileSync(path.join(REQUESTS_DIR, "scale-out.json"), "utf8")));
        assert.equal(scaleOut.status, 200, JSON.stringify(scaleOut.body));
        assert.equal(scaleOut.body.operation, "SCALE");
        const added = scaleOut.body.changes.map((c: any) => `${c.op} ${c.name}`);
        assert.ok(added.length > 0 && added.every((c: string) => /^create \S*worker-2\b/.test(c)), added.join("\n"));
        assert.ok(added.includes(`create ${stack()}-worker-2-vm`), added.join("\n"));
        const joins = actionsOf(scaleOut.body);
        assert.ok(joins.some((a) => a === `${stack()}-kubeadm-worker-2-member create: kubeadm join ${stack()}-worker-2 (a bootstrap token fetched from a control-plane node)`), joins.join("\n"));
        assert.ok(joins.every((a) => a.includes(`${stack()}-worker-2`)), `only the new node's actions:\n${joins.join("\n")}`);
        assert.match(scaleOut.body.text, /Resources: \d+ to create, \d+ unchanged/);

        const worker = (await vnfcs()).find((v) => v.id.endsWith("-worker-1"));
        const heal = await fetch(`${lcm.service.url}/k8s-vnf/v1/vnf_instances/${id}/plan`, { method: "POST", headers: { "content-type": "application/json", accept: "text/plain" }, body: JSON.stringify({ vnfcInstanceId: [worker.id] }) });
        const text = await heal.text();
        assert.equal(heal.status, 200, text);
        const order = (pattern: RegExp) => text.split("\n").findIndex((line) => pattern.test(line));
        const drain = order(new RegExp(`^\\s+delete: drain ${stack()}-worker-1 on a control-plane node`));
        const vmGoes = order(new RegExp(`^\\s*--\\s+delete-replaced\\s+${stack()}-worker-1-vm `));
        const join = order(new RegExp(`^\\s+create: kubeadm join ${stack()}-worker-1 `));
        assert.ok(drain >= 0 && vmGoes > drain && join > vmGoes, text);
        assert.ok(!/worker-0|worker-2|master-0/.test(text.split("\nResources:")[0].split("\n").slice(1).join("\n")), `only worker-1 changes:\n${text}`);

        assert.deepEqual(await snapshot(), unchanged.files, "neither the stack's file nor its state changed");
        assert.deepEqual(servers(), unchanged.servers);
        assert.equal((await call("GET", "/vnflcm/v1/vnf_lcm_op_occs")).body.length, unchanged.ops, "no occurrence");
        assert.deepEqual(leftInTemporaryFolder(lcm), [], "the scratch config file and the previews' temporary files are gone");
    });

    it("scale out and in with the seeds' bodies: a third worker ADDED through the service; then a second replica with a project folder of its own (the state in PostgreSQL, no stack file, as on another host) plans the scale-in and REMOVES it with its server; no password on any command line of either's processes", async () => {
        const seen = new Set<string>();
        let other: ServiceProcess | undefined;
        const sample = setInterval(() => {
            for (const pid of [...descendants(lcm.service.pid), ...(other ? descendants(other.pid) : [])]) {
                const line = commandLine(pid); // "" once ended
                if (line) seen.add(line);
            }
        }, 100);
        try {
            assert.equal((await call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, JSON.parse(fs.readFileSync(path.join(REQUESTS_DIR, "scale-out.json"), "utf8")))).status, 202);
            let op = await settle();
            assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
            assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]), [[`${stack()}-worker-2`, "ADDED"]]);
            assert.deepEqual(await workers(), [0, 1, 2].map((i) => `${stack()}-worker-${i}`));
            other = await lcm.startReplica();
            assert.deepEqual((await other.call("GET", `/vnflcm/v1/vnf_instances/${id}`)).body.instantiatedVnfInfo.vnfcResourceInfo.map((v: any) => v.id), (await vnfcs()).map((v) => v.id), "the other replica shows the same instance");
            const scaleIn = JSON.parse(fs.readFileSync(path.join(REQUESTS_DIR, "scale-in.json"), "utf8"));
            const plan = await other.call("POST", `/k8s-vnf/v1/vnf_instances/${id}/plan`, scaleIn);
            assert.equal(plan.status, 200, JSON.stringify(plan.body));
            const planned = plan.body.changes.map((c: any) => `${c.op} ${c.name}`);
            assert.ok(planned.includes(`delete ${stack()}-worker-2-vm`) && planned.every((c: string) => /^delete \S*worker-2\b/.test(c)), `the other replica plans from the shared state: only worker-2 goes\n${planned.join("\n")}`);
            assert.equal((await other.call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, scaleIn)).status, 202);
            op = await settle();
            assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
            assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]), [[`${stack()}-worker-2`, "REMOVED"]]);
            assert.ok(!servers().includes(`${stack()}-worker-2`), "its server deleted");
        } finally {
            clearInterval(sample);
            // One replica again: the crash test's restart is the one to take the killed service's update over.
            if (other) await stopServiceTree(other);
        }
        assert.ok([...seen].some((c) => /\bpulumi up\b|\bup --yes\b/.test(c)), `the sample saw the update: ${[...seen].slice(0, 5).join(" | ")}`);
        for (const secret of [suite.lab.password, lcm.api.credentials.password]) assert.ok(![...seen].some((c) => c.includes(secret)), "no secret on a command line");
    });

    it("heal of one worker VNFC with the client: exactly its Nova server replaced, reported MODIFIED", async () => {
        const before = await vnfcs();
        const worker = before.find((v) => v.id.endsWith("-worker-1"))!;
        assert.match(await openstack("heal", "--vnfc-instance", worker.id, "--", id), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]), [[worker.id, "MODIFIED"]]);
        const after = await vnfcs();
        assert.deepEqual(after.map((v) => v.id), before.map((v) => v.id), "the VNFC ids stay");
        assert.deepEqual(after.filter((v, i) => v.computeResource.resourceId !== before[i].computeResource.resourceId).map((v) => v.id), [worker.id]);
        assert.equal(lcm.api.servers().find((s) => s.name === worker.id)!.id, after.find((v) => v.id === worker.id).computeResource.resourceId);
    });

    it("Nova refusing a server create (the lab API answers 500): FAILED_TEMP with the provider's error for that VM; op retry (client) completes", async () => {
        lcm.api.failNext("POST", /\/compute\/v2\.1\/servers$/, 500, { computeFault: { code: 500, message: "lab: the scheduler is down" } });
        assert.equal((await call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" })).status, 202);
        const op = await settle();
        assert.equal(op.operationState, "FAILED_TEMP");
        // The provider reports a 500 by its status text only (gophercloud's ErrDefault500), not Nova's message.
        assert.match(op.error.detail, new RegExp(`^${stack()}-worker-2-vm: .*Error creating OpenStack server: Internal Server Error`, "s"));
        assert.ok(!JSON.stringify(op.error).includes(lcm.api.credentials.password));
        await openstack("op", "retry", op.id);
        const retried = await settle();
        assert.equal(retried.operationState, "COMPLETED", JSON.stringify(retried.error));
        assert.deepEqual(await workers(), [0, 1, 2].map((i) => `${stack()}-worker-${i}`));
    });

    it("op cancel (client) while a new worker joins: the real CLI's graceful cancel, FAILED_TEMP, the lock released; op rollback (client) restores the config exactly and removes it again", async () => {
        const configBefore = lcm.project.stackConfig(stack());
        slowJoins(20);
        const since = calls().length;
        try {
            const accepted = await call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" });
            assert.equal(accepted.status, 202);
            const opId = accepted.location!.split("/").pop()!;
            await joinStarted(since);
            assert.equal((await call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_IN", aspectId: "worker_instance" })).status, 409, "one operation at a time");
            const printed = await vnflcmCancel(lcm.service.url, opId);
            assert.match(printed, /has been accepted/);
            const op = await settle();
            assert.equal(op.operationState, "FAILED_TEMP");
            assert.equal(op.isCancelPending, false, "no cancel is pending once it has ended (SOL003 table 5.5.2.13-1)");
            assert.match(op.error.detail, /cancel/i);
            assert.deepEqual(await locks(), [], "the cancelled update released its lock");
        } finally {
            slowJoins(undefined);
        }
        await openstack("op", "rollback", (await settle()).id);
        const rolled = await settle();
        assert.equal(rolled.operationState, "ROLLED_BACK", JSON.stringify(rolled.error));
        assert.deepEqual(lcm.project.stackConfig(stack()), configBefore, "the rollback restored the stack's config exactly");
        assert.deepEqual(await workers(), [0, 1, 2].map((i) => `${stack()}-worker-${i}`));
        assert.deepEqual(servers(), [`${stack()}-master-0`, ...[0, 1, 2].map((i) => `${stack()}-worker-${i}`)]);
    });

    it("the service killed while its update waits on a slow join: the restart stops that `pulumi up` and every plugin it started, clears the lock; op retry (client) completes", async () => {
        slowJoins(45);
        const since = calls().length;
        let tree: number[] = [];
        let opId = "";
        try {
            opId = (await call("POST", `/vnflcm/v1/vnf_instances/${id}/scale`, { type: "SCALE_OUT", aspectId: "worker_instance" })).location!.split("/").pop()!;
            await joinStarted(since);
            tree = descendants(lcm.service.pid);
            assert.ok(tree.length >= 4, "the CLI, its language host, the program and the plugins");
            await lcm.service.crash();
            assert.ok(tree.every(alive), "the dead service's Pulumi processes still run");
            await lcm.startService();
            const op = (await call("GET", `/vnflcm/v1/vnf_lcm_op_occs/${opId}`)).body;
            assert.equal(op.operationState, "FAILED_TEMP");
            // The join on the lab host outlasts SIGINT's grace: a graceful cancel waits for the steps under way.
            assert.match(op.error.detail, /^the service \(\S+, pid \d+\) stopped while the operation was running: its Pulumi command \(pid \d+\) did not stop within 15 s of SIGINT and was killed with its plugins; the stack's lock was cleared/);
            assert.deepEqual(tree.filter(alive), [], "no process of the old update left");
            assert.deepEqual(await locks(), []);
        } finally {
            slowJoins(undefined);
        }
        await openstack("op", "retry", opId);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.deepEqual(await workers(), [0, 1, 2, 3].map((i) => `${stack()}-worker-${i}`));
    });

    it("terminate (client): the stack destroyed, no server or lab host left; the instance deleted", async () => {
        assert.match(await openstack("terminate", id), /has been accepted/);
        const op = await settle();
        assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
        assert.deepEqual(lcm.api.servers(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
        assert.deepEqual(leftInTemporaryFolder(lcm), [], "nothing of the Pulumi commands, the crashed one's included, left in the service's temporary folder");
        assert.match(await openstack("delete", id), /deleted successfully/);
        const expected = ["INSTANTIATE", "SCALE", "HEAL", "TERMINATE"].map((operation) => `${operation} RESULT`);
        const kinds = (received: Record<string, any>[]) => received.filter((n) => n.vnfInstanceId === id).map((n) => `${n.operation} ${n.notificationStatus}`);
        await lcm.callback.until((received) => expected.every((k) => kinds(received).includes(k)));
        assert.deepEqual(expected.filter((k) => !kinds(lcm.callback.received).includes(k)), [], "each operation's RESULT notified");
    });
});
