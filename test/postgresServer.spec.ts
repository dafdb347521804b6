import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { alive, commandLine } from "./support/processAlive";
import { type PostgresServer, query, sharedPostgres, skipUnlessPostgres } from "./support/postgres";

/** A file under /proc, "" once its process has ended. */
function proc(file: string): string {
    try {
        return fs.readFileSync(`/proc/${file}`, "utf8");
    } catch {
        return "";
    }
}

/** `pid` and every process under it. */
function processTree(pid: number): number[] {
    const parents = new Map<number, number[]>();
    for (const entry of fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
        const stat = proc(`${entry}/stat`);
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        if (stat) parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry)]);
    }
    const tree = [pid];
    for (let i = 0; i < tree.length; i++) tree.push(...(parents.get(tree[i]) ?? []));
    return tree;
}

/** The local addresses (hex, as /proc/net/tcp* spell them) of the listening TCP sockets these processes hold. */
function listening(pids: number[]): string[] {
    const inodes = new Set<string>();
    for (const pid of pids) {
        try {
            for (const fd of fs.readdirSync(`/proc/${pid}/fd`)) inodes.add(/^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? "");
        } catch {} // ended meanwhile
    }
    const rows = ["tcp", "tcp6"].flatMap((t) => fs.readFileSync(`/proc/net/${t}`, "utf8").trim().split("\n").slice(1)).map((l) => l.trim().split(/\s+/));
    return rows.filter((r) => r[3] === "0A" && inodes.has(r[9])).map((r) => r[1]);
}


describe("a private PostgreSQL server for tests (test/support/postgres.ts)", () => {
    let server: PostgresServer;
    before(async function () {
        skipUnlessPostgres(this);
        server = await sharedPostgres();
    });

    it("gives each test a fresh database of its own", async () => {
        const [a, b] = [await server.newDatabase(), await server.newDatabase()];
        assert.notEqual(a, b);
        assert.match(a, /^postgres:\/\/postgres:[0-9a-f]+@127\.0\.0\.1:\d+\/test_[0-9a-f]+$/);
        await query(a, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)");
        assert.deepEqual(await query(a, "SELECT x FROM t"), [{ x: 1 }]);
        assert.deepEqual(await query(b, "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"), []);
        await assert.rejects(query(a.replace(server.password, "wrong"), "SELECT 1"), /password authentication failed/);
    });

    it("keeps its password off every command line and out of its processes' environments", () => {
        const tree = processTree(server.pid);
        assert.ok(tree.length > 3, `the postmaster and its workers: ${tree}`);
        for (const entry of fs.readdirSync("/proc").filter((e) => /^\d+$/.test(e))) {
            assert.ok(!commandLine(Number(entry)).includes(server.password), `process ${entry}'s command line holds the password`);
        }
        for (const pid of tree) assert.ok(!proc(`${pid}/environ`).includes(server.password), `process ${pid}'s environment holds the password`);
        assert.ok(!fs.readdirSync(server.dir).includes("pwfile"), "initdb's password file is removed");
        if (process.getuid!() === 0) assert.doesNotMatch(proc(`${server.pid}/status`), /^Uid:\s+0\s/m, "not as root");
    });

    it("listens on 127.0.0.1 only, at its port", () => {
        const port = Number(new URL(server.url).port);
        const hex = `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")}`;
        assert.deepEqual(listening(processTree(server.pid)), [hex]);
        assert.equal(fs.statSync(server.dir).mode & 0o777, 0o700);
    });

    it("stop() ends every process of its own and removes its directory", async () => {
        const tree = processTree(server.pid);
        await server.stop();
        assert.deepEqual(tree.filter(alive), []);
        assert.equal(fs.existsSync(server.dir), false);
        await server.stop(); // again: nothing left to do
    });
});
