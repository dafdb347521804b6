/**
 * A suite of the LCM service on the real Pulumi CLI: `k8s-vnf serve` (its own process) with the built tools,
 * a lab OpenStack API set up as an operator would set up a cloud for the seeds' bodies, the seeds' VIMs
 * registered with the service at that API's Keystone, a subscriber, and the real `openstack vnflcm` client.
 * Stopped after the suite: the service and whatever its Pulumi commands left, by PID.
 */
import { strict as assert } from "node:assert";
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { descendants } from "../../service/pulumiProcess";
import { clusterState } from "./clusterState";
import { Callback, clientAvailable, seedBody, vnflcmClient } from "./lcmClient";
import { LabSuite, useLab } from "./labSuite";
import { LabOpenStackApi } from "./openstackApi/server";
import { alive } from "./processAlive";
import { ApiResponse, ServiceProcess } from "./serviceProcess";
import { serviceProject, ServiceProject } from "./serviceProject";
import { query, sharedPostgres, skipUnlessPostgres } from "./postgres";
import { builtTools, realPulumiEnv } from "./tools";

/** What the seeds name: Tacker's sample VNFD's image and flavor (config/tacker.ts VNFD_DEFAULTS). */
export const SAMPLE_IMAGE = "ubuntu-20.04-server-cloudimg-amd64";
export const SAMPLE_FLAVOR = "m1.medium";
const RUNNING = ["STARTING", "PROCESSING", "ROLLING_BACK"];

export interface RealLcmOptions {
    /** The lab's cluster state name (the stand-ins' shared state on the lab hosts). */
    cluster: string;
    /** The Neutron network id the seeds' bodies name. */
    networkId: string;
    /** The id of the lab API's second tenant network (lab-net-2), for a move of the workers' ports. */
    otherNetworkId?: string;
    /** The VIM ids the seeds' bodies name, each registered with the service at the lab's Keystone. */
    vimIds: string[];
    /** `serve --packages`: one unpacked VNF package per vnfdId, made before the service starts. */
    packages?: (dir: string) => Promise<void>;
    /** More options of `k8s-vnf serve` (its start and every restart), e.g. `--max-parallel 1`. */
    serveArgs?: string[];
    /** Whether the first master runs the real control plane (the lab's hosts get kube and etcd); default true. */
    realControlPlane?: boolean;
    /**
     * The service's state and the stacks' Pulumi state in one PostgreSQL database (the test server,
     * support/postgres.ts: `K8S_VNF_LCM_DATABASE`, `PULUMI_BACKEND_URL`), so that more replicas can run.
     */
    postgres?: boolean;
}

export interface RealLcm {
    suite: LabSuite;
    api: LabOpenStackApi;
    service: ServiceProcess;
    callback: Callback;
    project: ServiceProject;
    /** The suite's own folder (removed after it). */
    dataDir: string;
    /** With `postgres`: the database's URL (its password in it). */
    database?: string;
    /** The service's environment: TMPDIR is its temporary folder. */
    env: Record<string, string>;
    /** `openstack vnflcm …` against the service; its standard output. */
    openstack: (...args: string[]) => Promise<string>;
    call: (method: string, route: string, body?: unknown) => Promise<ApiResponse>;
    /** Starts the service again (after a crash), on the same data. */
    startService: () => Promise<void>;
    /** The instance's newest operation once it has left STARTING/PROCESSING/ROLLING_BACK. */
    settle: (instanceId: string) => Promise<any>;
    vnfcs: (instanceId: string) => Promise<any[]>;
    /** A seed's body, its passwords the lab's, as a file for the client. */
    seedFile: (name: string) => string;
    /** Credentials a test came across (a kubeconfig's key), looked for in the suite's output too. */
    credentials: string[];
    /** Each kubeadm join on the lab hosts takes this long from now on (the stand-ins' delay), or no time. */
    slowJoins: (seconds: number | undefined) => void;
    /** The stand-ins' calls on the lab hosts, in the order they started. */
    standInCalls: () => string[];
    /** Waits until a kubeadm join runs on a lab host, among the stand-ins' calls after the first `after`. */
    joinStarted: (after: number) => Promise<void>;
    /** The locks the backend holds on `stack` (the file backend: a file each, named by the CLI's lock id; PostgreSQL: a row each). */
    locks: (stack: string) => Promise<string[]>;
    /** The stacks' Pulumi state as the backend holds it (but its backups), as text: what a preview must not change. */
    stateSnapshot: () => Promise<string[]>;
    /** With `postgres`: another replica, on a project folder and data of its own (as on another host); stopped after the suite. */
    startReplica: () => Promise<ServiceProcess>;
    /** The kinds of the updates recorded for `stack` (update, refresh, destroy), oldest first (`pulumi stack history`). */
    history: (stack: string) => string[];
}

/** Call inside `describe`: the suite's service, started before its tests. */
export function useRealLcmService(options: RealLcmOptions): RealLcm {
    const ctx = { credentials: [] as string[] } as RealLcm;
    ctx.suite = useLab([], { secrets: () => [ctx.api?.credentials.password ?? "", ...ctx.credentials] });
    const packagesDir = () => path.join(ctx.dataDir, "packages");
    ctx.openstack = vnflcmClient(() => ctx.service.url);
    ctx.call = (method, route, body) => ctx.service.call(method, route, body);
    ctx.startService = async () => {
        ctx.service = await startService(ctx.dataDir, ctx.project, ctx.env, options.packages ? packagesDir() : undefined, options.serveArgs);
    };
    ctx.settle = (instanceId) => settledOperation(ctx.service, instanceId);
    ctx.vnfcs = async (instanceId) => (await ctx.call("GET", `/vnflcm/v1/vnf_instances/${instanceId}`)).body.instantiatedVnfInfo.vnfcResourceInfo;
    ctx.slowJoins = (seconds) => {
        const file = path.join(ctx.suite.lab.clusterState, options.cluster, "delay");
        if (seconds === undefined) fs.rmSync(file, { force: true });
        else fs.writeFileSync(file, String(seconds));
    };
    ctx.standInCalls = () => clusterState(ctx.suite.lab, options.cluster).calls();
    ctx.joinStarted = async (after) => {
        for (let i = 0; i < 1200; i++) {
            if (ctx.standInCalls().slice(after).some((l) => / kubeadm join /.test(l))) return;
            await new Promise((r) => setTimeout(r, 250));
        }
        assert.fail("no kubeadm join started");
    };
    // Keys of the DIY backend's blobs (pkg/backend/diy: `.pulumi/locks/<org>/<project>/<stack>/<lock>.json`):
    // files under the project's `.pulumi-state`, or rows of the PostgreSQL backend's `pulumi_state` table
    // (pkg/backend/diy/postgres/schema.sql).
    const lockPrefix = (stack: string) => `.pulumi/locks/organization/k8s-vnf/${stack}/`;
    ctx.locks = async (stack) => {
        if (options.postgres) return (await query(ctx.database!, `SELECT key FROM pulumi_state WHERE key LIKE '${lockPrefix(stack)}%' ORDER BY key`)).map((r) => String(r.key).slice(lockPrefix(stack).length));
        const dir = path.join(ctx.project.dir, ".pulumi-state", lockPrefix(stack));
        // The file backend's blob store (gocloud.dev fileblob) writes each lock's attributes beside it, `<lock>.attrs`.
        return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => !f.endsWith(".attrs")) : [];
    };
    ctx.stateSnapshot = async () => {
        if (options.postgres) return (await query(ctx.database!, "SELECT key, data::text AS data FROM pulumi_state WHERE key NOT LIKE '.pulumi/backups/%' ORDER BY key")).map((r) => `${r.key}\n${r.data}`);
        const files = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]));
        return files(path.join(ctx.project.dir, ".pulumi-state"))
            .filter((f) => !f.includes("/backups/"))
            .map((f) => `${f}\n${fs.readFileSync(f, "utf8")}`);
    };
    ctx.startReplica = async () => {
        if (!options.postgres) throw new Error("a second replica needs the PostgreSQL store (postgres: true)");
        const project = serviceProject();
        ctx.suite.onTeardown(() => project.remove());
        const dataDir = fs.mkdtempSync(path.join(ctx.dataDir, "replica-"));
        const replica = await ServiceProcess.start(dataDir, {}, ["--project", project.dir, ...(options.packages ? ["--packages", packagesDir()] : []), ...(options.serveArgs ?? [])], ctx.env);
        ctx.suite.onTeardown(async () => {
            ctx.suite.captured.push(replica.output);
            await stopServiceTree(replica);
        });
        return replica;
    };
    ctx.history = (stack) => {
        const r = spawnSync("pulumi", ["stack", "history", "--json", "--stack", stack, "--non-interactive"], { cwd: ctx.project.dir, env: ctx.env, encoding: "utf8", timeout: 60_000 });
        if (r.status !== 0) throw new Error(`pulumi stack history exited ${r.status}: ${r.stderr.trim()}`);
        // Newest first, as `pulumi stack history` lists them.
        return (JSON.parse(r.stdout || "[]") as { kind: string }[]).map((u) => u.kind).reverse();
    };
    ctx.seedFile = (name) => {
        const file = path.join(ctx.dataDir, name);
        // The client parses the file as strict JSON; the seeds carry Tacker's '#' comments.
        fs.writeFileSync(file, JSON.stringify(seedBody(ctx.suite.lab, name)));
        return file;
    };

    before(async function () {
        const suite = ctx.suite;
        if (!suite.lab) this.skip();
        if (!clientAvailable()) {
            if (process.env.CI) assert.fail("the openstack client is missing; .ci/run installs python3-openstackclient and python3-tackerclient");
            this.skip();
        }
        if (options.realControlPlane ?? true) {
            const tools = builtTools();
            suite.lab.giveTools({ kube: tools.bins.kube, etcd: tools.bins.etcd });
        }
        ctx.api = await LabOpenStackApi.start(suite.lab, { cluster: options.cluster, networkId: options.networkId, otherNetworkId: options.otherNetworkId, imageName: SAMPLE_IMAGE, flavorNames: [SAMPLE_FLAVOR] });
        suite.onTeardown(() => ctx.api.stop());
        // Made here, not when the suite is declared, so that a suite that is skipped or filtered out leaves none.
        ctx.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-real-lcm-"));
        suite.onTeardown(() => fs.rmSync(ctx.dataDir, { recursive: true, force: true }));
        ctx.project = serviceProject();
        suite.onTeardown(() => ctx.project.remove());
        if (options.packages) {
            fs.mkdirSync(packagesDir());
            await options.packages(packagesDir());
        }
        ctx.env = realServiceEnv(ctx.dataDir);
        if (options.postgres) {
            skipUnlessPostgres(this);
            ctx.database = await (await sharedPostgres()).newDatabase();
            // One database for both: the service's tables and the Pulumi backend's `pulumi_state`.
            Object.assign(ctx.env, { K8S_VNF_LCM_DATABASE: ctx.database, K8S_VNF_LCM_SECRETS_KEY: randomBytes(32).toString("base64"), PULUMI_BACKEND_URL: ctx.database });
        }
        await ctx.startService();
        ctx.callback = await Callback.start();
        suite.onTeardown(async () => {
            suite.captured.push(ctx.service.output, ...ctx.callback.received.map((n) => JSON.stringify(n)));
            await stopServiceTree(ctx.service);
            await ctx.callback.stop();
        });
        const file = path.join(ctx.dataDir, "subscription.json");
        fs.writeFileSync(file, JSON.stringify({ callbackUri: ctx.callback.url, filter: { notificationTypes: ["VnfLcmOperationOccurrenceNotification"] } }));
        await ctx.openstack("subsc", "create", file);
        const c = ctx.api.credentials;
        for (const id of options.vimIds) {
            const vim = await ctx.call("POST", "/k8s-vnf/v1/vims", { id, name: `lab-openstack-${id.slice(0, 8)}`, authUrl: ctx.api.authUrl, username: c.username, password: c.password, projectName: c.projectName, userDomainName: c.userDomainName, projectDomainName: c.projectDomainName, region: c.region });
            assert.equal(vim.status, 201, JSON.stringify(vim.body));
        }
    });

    return ctx;
}

/** The environment of a service running the built Pulumi CLI, its Pulumi home in `dataDir`. */
export function realServiceEnv(dataDir: string): Record<string, string> {
    const home = path.join(dataDir, "pulumi-home");
    fs.mkdirSync(home, { recursive: true });
    return { ...realPulumiEnv(home, "lcm-lab-passphrase"), K8S_VNF_PULUMI_ROOT: builtTools().pulumiRoot };
}

/** `k8s-vnf serve` on `project` with its data in `dataDir`/service, the packages in `packagesDir`, and `more` options. */
export async function startService(dataDir: string, project: ServiceProject, env: Record<string, string>, packagesDir?: string, more: string[] = []): Promise<ServiceProcess> {
    fs.mkdirSync(path.join(dataDir, "service"), { recursive: true });
    return ServiceProcess.start(path.join(dataDir, "service"), {}, ["--project", project.dir, ...(packagesDir ? ["--packages", packagesDir] : []), ...more], env);
}

/**
 * Stops the service, and then whatever its Pulumi commands left (a test that failed between a crash and the
 * restart, or while an operation ran): the service's own process tree, by PID.
 */
export async function stopServiceTree(service: ServiceProcess): Promise<void> {
    await endServiceTree(service, () => service.stop());
}

/** Kills the service and every process of its tree (by PID): what its operations run goes with it. */
export async function killServiceTree(service: ServiceProcess): Promise<void> {
    await endServiceTree(service, () => service.crash());
}

async function endServiceTree(service: ServiceProcess, end: () => Promise<void>): Promise<void> {
    const tree = [service.pid, ...descendants(service.pid)];
    await end();
    for (const pid of tree.filter(alive)) {
        try {
            process.kill(pid, "SIGKILL");
        } catch {
            // gone meanwhile
        }
    }
}

/** An instance's newest operation once it has left STARTING/PROCESSING/ROLLING_BACK. */
export async function settledOperation(service: ServiceProcess, instanceId: string): Promise<any> {
    for (let i = 0; i < 2400; i++) {
        const last = (await service.call("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields")).body.filter((o: any) => o.vnfInstanceId === instanceId).at(-1);
        if (last && !RUNNING.includes(last.operationState)) return last;
        await new Promise((r) => setTimeout(r, 250));
    }
    assert.fail("the operation did not finish");
}

/**
 * What is left in the service's temporary folder. Each Pulumi command's private folder is its TMPDIR, where
 * the real Kubernetes plugin writes the cluster's admin kubeconfig at every start and never removes it
 * (pulumi-kubernetes provider/pkg/provider/util.go `writeKubeconfigToFile`): nothing should be left.
 */
export function leftInTemporaryFolder(ctx: RealLcm): string[] {
    return fs.readdirSync(ctx.env.TMPDIR);
}
