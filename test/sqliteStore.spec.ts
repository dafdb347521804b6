/**
 * The LCM service's store (service/store.ts) on SQLite through better-sqlite3: records by table, the order
 * they were made in, durability of what was answered across a killed process, and the migration of an
 * earlier release's data directory (its database file plus a journal of changes not yet folded in).
 */
import Database from "better-sqlite3";
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PROJECT_DIR } from "./support/program";
import { openSqlite } from "./support/stores";


describe("LCM service store: SQLite (better-sqlite3, write-ahead log)", function () {
    this.timeout(60_000);
    let dir: string;
    beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-store-"))));
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    it("keeps records by table and id, lists them in the order they were made (a replace keeps its place), an instance's occurrences by instance", async () => {
        const store = await openSqlite(dir);
        try {
            await store.put([{ table: "vnf_instances", id: "b", body: { id: "b", __created: 2 } }]);
            await store.put([{ table: "vnf_instances", id: "a", body: { id: "a", __created: 1 } }]);
            await store.put([
                { table: "op_occs", id: "o1", body: { id: "o1", vnfInstanceId: "a", operationState: "STARTING", __created: 3 } },
                { table: "op_occs", id: "o2", body: { id: "o2", vnfInstanceId: "b", operationState: "STARTING", __created: 4 } },
            ]);
            await store.put([{ table: "vnf_instances", id: "a", body: { id: "a", name: "renamed", __created: 9 } }]);
            assert.deepEqual((await store.get("vnf_instances", "a")), { id: "a", name: "renamed", __created: 9 });
            assert.deepEqual((await store.list("vnf_instances")).map((r) => r.id), ["a", "b"], "a replace keeps the row's first time");
            assert.deepEqual((await store.opOccsOf("a")).map((r) => r.id), ["o1"]);
            await store.remove("op_occs", "o1");
            assert.equal((await store.get("op_occs", "o1")), undefined);
            const shown = (await store.get("vnf_instances", "b"))!;
            shown.changed = true;
            assert.equal((await store.get("vnf_instances", "b"))!.changed, undefined, "what a read returns is the caller's own copy");
        } finally {
            await store.close();
        }
        const check = new Database(path.join(dir, "k8s-vnf-lcm.sqlite"), { readonly: true });
        try {
            assert.equal(check.pragma("journal_mode", { simple: true }), "wal");
        } finally {
            check.close();
        }
        assert.equal(fs.statSync(path.join(dir, "k8s-vnf-lcm.sqlite")).mode & 0o777, 0o600, "the database is the service's alone");
    });

    it("a change answered is kept when the process is killed right after (SIGKILL, no close)", async () => {
        const script = `
            const { SqliteStore } = require(${JSON.stringify(path.join(PROJECT_DIR, "service/sqliteStore"))});
            const { SecretsKeyring } = require(${JSON.stringify(path.join(PROJECT_DIR, "service/secretsAtRest"))});
            SqliteStore.open(${JSON.stringify(dir)}, SecretsKeyring.load({ dataDir: ${JSON.stringify(dir)} }), 15000).then(async (store) => {
                await store.put([{ table: "subscriptions", id: "s1", body: { id: "s1", callbackUri: "http://127.0.0.1:1/cb" } }]);
                process.stdout.write("answered\\n");
                setInterval(() => undefined, 1000);
            });`;
        const child = spawn(process.execPath, ["-r", "ts-node/register/transpile-only", "-e", script], { cwd: PROJECT_DIR, stdio: ["ignore", "pipe", "inherit"] });
        await new Promise<void>((resolve, reject) => {
            child.stdout!.on("data", (d) => String(d).includes("answered") && resolve());
            child.once("exit", (code) => reject(new Error(`the writer exited ${code} before answering`)));
        });
        child.kill("SIGKILL");
        await new Promise((r) => child.once("exit", r));
        const store = await openSqlite(dir);
        try {
            assert.deepEqual((await store.get("subscriptions", "s1")), { id: "s1", callbackUri: "http://127.0.0.1:1/cb" });
        } finally {
            await store.close();
        }
    });

    it("an earlier release's data directory is migrated at the first start: its journal's changes applied (a torn last line dropped), then the journal gone", async () => {
        // What the earlier release left: a plain SQLite file (sql.js wrote the database image) with the same
        // tables, and beside it a journal whose lines are JSON arrays of changes made since.
        const file = path.join(dir, "k8s-vnf-lcm.sqlite");
        const old = new Database(file);
        old.exec(`CREATE TABLE vnf_instances (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE op_occs (id TEXT PRIMARY KEY, vnf_instance_id TEXT NOT NULL, state TEXT NOT NULL, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX op_occs_instance ON op_occs (vnf_instance_id, created);
CREATE TABLE subscriptions (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE vims (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);`);
        old.prepare("INSERT INTO vnf_instances VALUES (?, ?, ?)").run("kept", 1, JSON.stringify({ id: "kept" }));
        old.prepare("INSERT INTO vnf_instances VALUES (?, ?, ?)").run("gone", 2, JSON.stringify({ id: "gone" }));
        old.close();
        const journal = [
            [{ op: "put", table: "vnf_instances", id: "new", created: 3, body: { id: "new" } }],
            [
                { op: "remove", table: "vnf_instances", id: "gone" },
                { op: "put", table: "op_occs", id: "op", created: 4, body: { id: "op", vnfInstanceId: "new", operationState: "PROCESSING" } },
            ],
        ];
        fs.writeFileSync(`${file}.journal`, `${journal.map((j) => JSON.stringify(j)).join("\n")}\n[{"op":"put","table":"vims","id":"torn`);
        const store = await openSqlite(dir);
        try {
            assert.deepEqual((await store.list("vnf_instances")).map((r) => r.id), ["kept", "new"]);
            assert.deepEqual((await store.opOccsOf("new")), [{ id: "op", vnfInstanceId: "new", operationState: "PROCESSING" }]);
            assert.deepEqual((await store.list("vims")), [], "the torn line was never answered");
        } finally {
            await store.close();
        }
        assert.equal(fs.existsSync(`${file}.journal`), false, "the journal is gone once applied");
        const again = await openSqlite(dir);
        try {
            assert.deepEqual((await again.list("vnf_instances")).map((r) => r.id), ["kept", "new"], "the next start finds the same");
        } finally {
            await again.close();
        }
    });
});
