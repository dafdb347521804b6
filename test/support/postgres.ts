/**
 * A private PostgreSQL server for tests: Debian's binaries (/usr/lib/postgresql/<version>/bin, the newest; not
 * on PATH), a fresh cluster in a temp directory of its own, password authentication (scram-sha-256) with a
 * random superuser password, listening on 127.0.0.1 only at a free port. Tests that need a real PostgreSQL
 * get one without touching the machine's own cluster or a shared one, and each test takes a fresh database
 * (`newDatabase`). PostgreSQL refuses to run as root: under root (CI) it runs as the `postgres` system user.
 * The password goes to initdb through a 0600 file, removed right after; it is on no command line and in no
 * child's environment. `stop` ends only the process it spawned, by its PID, then removes the directory.
 */
import { strict as assert } from "node:assert";
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { Client } from "pg";
import { alive } from "./processAlive";
import { runTeardowns } from "./teardowns";

export interface PostgresServer {
    url: string; // postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres: the superuser, the maintenance database
    password: string;
    pid: number; // the postmaster's: the process spawned
    dir: string; // the temp directory: the cluster, its socket, its log; gone after `stop`
    /** Creates a fresh, empty database (a new name unless given) and returns its URL. */
    newDatabase(name?: string): Promise<string>;
    stop(): Promise<void>;
}

const missing = "PostgreSQL is not installed (/usr/lib/postgresql/*/bin/postgres; .ci/run installs it)";

/** The newest installed PostgreSQL's bin directory, if any. */
function binDir(): string | undefined {
    const versions = fs.existsSync("/usr/lib/postgresql") ? fs.readdirSync("/usr/lib/postgresql") : [];
    const installed = versions.filter((v) => ["initdb", "postgres"].every((b) => fs.existsSync(`/usr/lib/postgresql/${v}/bin/${b}`)));
    const newest = installed.sort((a, b) => Number(a) - Number(b)).pop();
    return newest && `/usr/lib/postgresql/${newest}/bin`;
}

export function postgresAvailable(): boolean {
    return binDir() !== undefined;
}

/** Call in a `before`: skips the suite without PostgreSQL, but fails it in CI (.ci/run installs it). */
export function skipUnlessPostgres(ctx: Mocha.Context): void {
    if (postgresAvailable()) return;
    if (process.env.CI) assert.fail(missing);
    ctx.skip();
}

/** Every server started and not yet stopped: ended at process exit whatever happened. */
const live = new Map<string, ChildProcess>();
process.once("exit", () => {
    for (const [dir, server] of live) {
        if (running(server)) server.kill("SIGQUIT"); // immediate shutdown: only a synchronous wait is possible here
        for (let i = 0; i < 250 && alive(server.pid!); i++) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
        fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
    }
});

const running = (child: ChildProcess) => child.exitCode === null && child.signalCode === null;
const exitOf = (child: ChildProcess) => new Promise<number | null>((resolve) => child.once("exit", resolve).once("error", () => resolve(null)));

export async function startPostgres(): Promise<PostgresServer> {
    const bin = binDir();
    if (!bin) throw new Error(missing);
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }));
    const owner = process.getuid!() === 0 ? { uid: id("-u"), gid: id("-g") } : {};
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-pg-"));
    const [data, log, pwfile] = ["data", "server.log", "pwfile"].map((f) => path.join(dir, f));
    const password = randomBytes(24).toString("hex");
    let child: ChildProcess | undefined;
    // Nothing of the caller's environment (PG*, secrets) reaches initdb or the server; output goes to the log.
    const run = (command: string, args: string[]) => {
        const fd = fs.openSync(log, "a");
        const env = { PATH: "/usr/bin:/bin", LC_ALL: "C", HOME: "/nonexistent" };
        child = spawn(`${bin}/${command}`, args, { ...owner, env, stdio: ["ignore", fd, fd] });
        fs.closeSync(fd);
        return child;
    };
    try {
        fs.chmodSync(dir, 0o700);
        fs.writeFileSync(pwfile, password, { mode: 0o600, flag: "wx" });
        for (const p of [dir, pwfile]) if (owner.uid !== undefined) fs.chownSync(p, owner.uid, owner.gid);
        const initdb = await exitOf(run("initdb", ["-D", data, "-U", "postgres", "--auth=scram-sha-256", `--pwfile=${pwfile}`, "-E", "UTF8", "--locale=C"]));
        fs.rmSync(pwfile);
        if (initdb !== 0) throw new Error(`initdb failed (exit code ${initdb})`);
        // A free port can be taken between the look and the bind (another suite's server): then another one.
        for (let attempt = 1; ; attempt++) {
            const port = await freePort();
            const server = run("postgres", ["-D", data, "-h", "127.0.0.1", "-p", String(port), "-k", dir]);
            const exited = exitOf(server);
            live.set(dir, server);
            const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
            if ((await waitReady(url, exited)) === "exited") {
                if (attempt < 3 && /could not bind/.test(fs.readFileSync(log, "utf8"))) continue;
                throw new Error("postgres exited while starting");
            }
            return {
                url,
                password,
                pid: server.pid!,
                dir,
                async newDatabase(name = `test_${randomBytes(6).toString("hex")}`) {
                    assert.match(name, /^[a-z_][a-z0-9_]{0,62}$/, "a database name is a plain lower-case identifier");
                    await withClient(url, (c) => c.query(`CREATE DATABASE "${name}" TEMPLATE template0`));
                    return url.replace(/\/postgres$/, `/${name}`);
                },
                async stop() {
                    if (!live.delete(dir)) return;
                    if (running(server)) {
                        server.kill("SIGINT"); // fast shutdown (SIGTERM, a smart one, waits for clients to leave)
                        const timer = setTimeout(() => server.kill("SIGKILL"), 10_000);
                        await exited.finally(() => clearTimeout(timer));
                    }
                    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
                },
            };
        }
    } catch (e) {
        if (child && running(child)) child.kill("SIGKILL");
        live.delete(dir);
        const output = fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "";
        fs.rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
        throw new Error(`${(e as Error).message}${output ? `\nserver log:\n${output}` : ""}`);
    }
}

const freePort = () =>
    new Promise<number>((resolve, reject) => {
        const probe = net.createServer().once("error", reject);
        probe.listen(0, "127.0.0.1", () => {
            const { port } = probe.address() as net.AddressInfo;
            probe.close(() => resolve(port));
        });
    });

async function withClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
    const client = new Client({ connectionString: url });
    client.on("error", () => {}); // a server going away mid-query is reported by the query itself
    await client.connect();
    try {
        return await fn(client);
    } finally {
        await client.end().catch(() => {});
    }
}

/** Connects until the server answers (30 s at most), or it exits. */
async function waitReady(url: string, exited: Promise<unknown>): Promise<"ready" | "exited"> {
    let gone = false;
    void exited.then(() => (gone = true));
    for (const deadline = Date.now() + 30_000; !gone; await new Promise((r) => setTimeout(r, 100))) {
        try {
            await withClient(url, (c) => c.query("SELECT 1"));
            return "ready";
        } catch (e) {
            if (Date.now() > deadline) throw new Error(`postgres did not accept connections within 30 s: ${(e as Error).message}`);
        }
    }
    return "exited";
}

let shared: Promise<PostgresServer> | undefined;
const teardowns: (() => unknown)[] = [];

/** One server for the whole test process, started on first use, stopped by mocha's root `after` (else at exit). */
export function sharedPostgres(): Promise<PostgresServer> {
    if (!shared) {
        // A test may stop it too: the next call then starts another.
        const starting: Promise<PostgresServer> = (shared = startPostgres().then((server) => ({
            ...server,
            stop: async () => {
                if (shared === starting) shared = undefined;
                await server.stop();
            },
        })));
        starting.catch(() => (shared = undefined));
        teardowns.push(async () => (await starting.catch(() => undefined))?.stop());
    }
    return shared;
}

if (typeof after === "function") after(() => runTeardowns(teardowns));

/** The rows of one statement, on a connection of its own. */
export async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
        return (await client.query(sql)).rows;
    } finally {
        await client.end();
    }
}
