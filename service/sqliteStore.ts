/**
 * The store on one machine: SQLite (better-sqlite3), one database file in the data directory. Write-ahead
 * logging, with `synchronous = FULL`: each change is a transaction whose log is synced before the request
 * that made it is answered, so a crash loses nothing that was answered (https://sqlite.org/wal.html,
 * https://sqlite.org/pragma.html#pragma_synchronous).
 *
 * The schema is versioned (`schema_migrations`); each migration runs once, at start, in a transaction. A data
 * directory of an earlier release (the database file sql.js wrote, plus a journal of changes not yet folded
 * into it) is migrated at the first start: the journal's changes are applied in one transaction, then the
 * journal goes (migrateJournal).
 *
 * Secrets never reach the file as they are: each row holds its body masked and its secrets sealed beside it
 * (secretsAtRest.ts). When the sealing key is not the one the rows were last sealed with (a rotation, or rows of
 * a release that did not seal), every row is sealed again at start, and the file rebuilt (VACUUM) with deleted
 * content zeroed (`secure_delete`), so no earlier copy of a secret stays in it or in its log.
 */
import Database from "better-sqlite3";
import * as fs from "node:fs";
import * as path from "node:path";
import { SecretsKeyring } from "./secretsAtRest";
import { Body, Change, Claim, InstanceDecision, CLAIMED_STATES, HOLDING_STATES, HoldingConflict, Replica, sqlList, Store, Table, TABLES, checkedTable } from "./store";

/** Each a step of the schema, run once in order; the first is what releases before versioning made. */
const MIGRATIONS: ((db: Database.Database) => void)[] = [
    (db) =>
        db.exec(`
            CREATE TABLE IF NOT EXISTS vnf_instances (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS op_occs (id TEXT PRIMARY KEY, vnf_instance_id TEXT NOT NULL, state TEXT NOT NULL, created INTEGER NOT NULL, body TEXT NOT NULL);
            CREATE INDEX IF NOT EXISTS op_occs_instance ON op_occs (vnf_instance_id, created);
            CREATE TABLE IF NOT EXISTS subscriptions (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS vims (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);`),
    (db) => {
        for (const table of TABLES) {
            const columns = db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as { name: string }[];
            if (!columns.some((c) => c.name === "sealed")) db.exec(`ALTER TABLE ${table} ADD COLUMN sealed TEXT`);
        }
        db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    },
    (db) =>
        db.exec(`
            ALTER TABLE op_occs ADD COLUMN owner_id TEXT;
            ALTER TABLE op_occs ADD COLUMN owner TEXT;
            ALTER TABLE op_occs ADD COLUMN lease_until INTEGER;
            CREATE UNIQUE INDEX op_occs_holding ON op_occs (vnf_instance_id) WHERE state IN (${sqlList(HOLDING_STATES)});`),
    (db) =>
        db.exec(`
            CREATE INDEX op_occs_owner ON op_occs (owner_id) WHERE owner_id IS NOT NULL;
            CREATE INDEX op_occs_claimed ON op_occs (created) WHERE state IN (${sqlList(CLAIMED_STATES)});`),
];

interface Row {
    id: string;
    body: string;
    sealed: string | null;
}

/** A change as the earlier release's journal holds it, a JSON array of them per line. */
type JournalChange = { op: "put"; table: Table; id: string; body: Body } | { op: "remove"; table: Table; id: string };

export class SqliteStore implements Store {
    readonly shared = false;
    private readonly statements = new Map<string, Database.Statement>();

    private constructor(
        private readonly db: Database.Database,
        readonly location: string,
        private readonly keyring: SecretsKeyring,
        readonly leaseMs: number,
    ) {}

    static async open(dataDir: string, keyring: SecretsKeyring, leaseMs: number): Promise<SqliteStore> {
        fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
        const file = path.join(dataDir, "k8s-vnf-lcm.sqlite");
        const created = !fs.existsSync(file);
        const db = new Database(file);
        if (created) fs.chmodSync(file, 0o600);
        db.pragma("journal_mode = WAL");
        db.pragma("synchronous = FULL");
        db.pragma("secure_delete = ON");
        migrate(db);
        const store = new SqliteStore(db, file, keyring, leaseMs);
        store.migrateJournal(`${file}.journal`);
        store.sealAgainIfKeyChanged();
        fs.rmSync(`${file}.tmp`, { force: true });
        return store;
    }

    async get(table: Table, id: string): Promise<Body | undefined> {
        const row = this.statement(`SELECT id, body, sealed FROM ${checkedTable(table)} WHERE id = ?`).get(String(id)) as Row | undefined;
        return row === undefined ? undefined : this.opened(table, row);
    }

    async list(table: Table): Promise<Body[]> {
        return this.bodies(table, `SELECT id, body, sealed FROM ${checkedTable(table)} ORDER BY created, id`, []);
    }

    async getMasked(table: Table, id: string): Promise<Body | undefined> {
        const row = this.statement(`SELECT body FROM ${checkedTable(table)} WHERE id = ?`).get(String(id)) as { body: string } | undefined;
        return row === undefined ? undefined : (JSON.parse(row.body) as Body);
    }

    async listMasked(table: Table): Promise<Body[]> {
        return (this.statement(`SELECT body FROM ${checkedTable(table)} ORDER BY created, id`).all() as { body: string }[]).map((row) => JSON.parse(row.body) as Body);
    }

    async holdingOpOccs(): Promise<Body[]> {
        return this.bodies("op_occs", `SELECT id, body, sealed FROM op_occs WHERE state IN (${sqlList(HOLDING_STATES)}) ORDER BY created, id`, []);
    }

    async opOccsOf(vnfInstanceId: string): Promise<Body[]> {
        return this.bodies("op_occs", "SELECT id, body, sealed FROM op_occs WHERE vnf_instance_id = ? ORDER BY created, id", [vnfInstanceId]);
    }

    async put(changes: Change[]): Promise<void> {
        this.db.transaction(() => changes.forEach((c) => this.write(c)))();
    }

    async update(table: Table, id: string, change: (current: Body | undefined, claim: Claim) => Body | undefined, claim?: Replica | null): Promise<Body | undefined> {
        return this.db
            .transaction(() => {
                const row = this.statement(`SELECT id, body, sealed${table === "op_occs" ? ", owner, lease_until" : ""} FROM ${checkedTable(table)} WHERE id = ?`).get(String(id)) as (Row & { owner?: string | null; lease_until?: number | null }) | undefined;
                const owner = row?.owner ? (JSON.parse(row.owner) as Replica) : undefined;
                const next = change(row && this.opened(table, row), { owner, lapsed: !owner || Number(row?.lease_until ?? 0) < Date.now() });
                if (next !== undefined) this.write({ table, id, body: next, ...(claim === undefined ? {} : { claim }) });
                return next;
            })
            .immediate();
    }

    async onInstance(instanceId: string, decide: (instance: Body | undefined, occurrences: Body[]) => InstanceDecision): Promise<void> {
        this.db
            .transaction(() => {
                const row = this.statement("SELECT id, body, sealed FROM vnf_instances WHERE id = ?").get(instanceId) as Row | undefined;
                const occurrences = this.bodies("op_occs", "SELECT id, body, sealed FROM op_occs WHERE vnf_instance_id = ? ORDER BY created, id", [instanceId]);
                const decision = decide(row && this.opened("vnf_instances", row), occurrences);
                for (const c of decision.put ?? []) this.write(c);
                for (const r of decision.remove ?? []) this.statement(`DELETE FROM ${checkedTable(r.table)} WHERE id = ?`).run(String(r.id));
            })
            .immediate();
    }

    async remove(table: Table, id: string): Promise<void> {
        this.statement(`DELETE FROM ${checkedTable(table)} WHERE id = ?`).run(String(id));
    }

    async claimed(): Promise<{ id: string; claim: Claim }[]> {
        const rows = this.statement(`SELECT id, owner, lease_until FROM op_occs WHERE state IN (${sqlList(CLAIMED_STATES)}) ORDER BY created, id`).all() as { id: string; owner: string | null; lease_until: number | null }[];
        const now = Date.now();
        return rows.map((r) => ({ id: r.id, claim: { owner: r.owner ? JSON.parse(r.owner) : undefined, lapsed: !r.owner || Number(r.lease_until ?? 0) < now } }));
    }

    async renewClaims(replicaId: string, ids: string[]): Promise<void> {
        this.statement("UPDATE op_occs SET lease_until = ? WHERE owner_id = ? AND id IN (SELECT value FROM json_each(?))").run(Date.now() + this.leaseMs, replicaId, JSON.stringify(ids));
    }

    async ping(): Promise<void> {
        this.statement("SELECT 1").get();
    }

    /** Folds the write-ahead log into the database file and closes it. */
    async close(): Promise<void> {
        this.db.close();
    }

    private write(c: Change): void {
        const { body, sealed } = this.keyring.seal(c.table, String(c.id), c.body);
        const created = (c.body.__created as number | undefined) ?? Date.now();
        const table = checkedTable(c.table);
        if (table !== "op_occs") {
            this.statement(`INSERT INTO ${table} (id, created, body, sealed) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET body = excluded.body, sealed = excluded.sealed`).run(String(c.id), created, JSON.stringify(body), sealed ?? null);
            return;
        }
        const values = [String(c.id), String(c.body.vnfInstanceId), String(c.body.operationState), created, JSON.stringify(body), sealed ?? null];
        try {
            if (c.claim === undefined) {
                this.statement(
                    "INSERT INTO op_occs (id, vnf_instance_id, state, created, body, sealed) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET state = excluded.state, body = excluded.body, sealed = excluded.sealed",
                ).run(...values);
            } else {
                this.statement(
                    "INSERT INTO op_occs (id, vnf_instance_id, state, created, body, sealed, owner_id, owner, lease_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET state = excluded.state, body = excluded.body, sealed = excluded.sealed, owner_id = excluded.owner_id, owner = excluded.owner, lease_until = excluded.lease_until",
                ).run(...values, c.claim?.id ?? null, c.claim ? JSON.stringify(c.claim) : null, c.claim ? Date.now() + this.leaseMs : null);
            }
        } catch (e) {
            if ((e as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE" && /op_occs\.vnf_instance_id/.test((e as Error).message)) throw new HoldingConflict(`VNF instance ${String(c.body.vnfInstanceId)} is held by another operation`);
            throw e;
        }
    }

    /**
     * An earlier release's journal: each line a JSON array of changes made after its database file was last
     * written (a torn last line, cut by a crash, was never answered and is dropped). Applied in one
     * transaction; the journal goes once that has committed.
     */
    private migrateJournal(journal: string): void {
        if (!fs.existsSync(journal)) return;
        const batches: JournalChange[][] = [];
        for (const line of fs.readFileSync(journal, "utf8").split("\n").filter(Boolean)) {
            try {
                batches.push(JSON.parse(line));
            } catch {
                continue;
            }
        }
        this.db.transaction(() => {
            for (const c of batches.flat()) {
                if (c.op === "remove") this.statement(`DELETE FROM ${checkedTable(c.table)} WHERE id = ?`).run(String(c.id));
                else this.write(c);
            }
        })();
        fs.rmSync(journal);
    }

    /**
     * Every row sealed with the sealing key, when the rows were last sealed with another (or never): one
     * transaction, then the file rebuilt and its log emptied, so no copy sealed otherwise, or not at all, stays.
     */
    private sealAgainIfKeyChanged(): void {
        const keyId = this.keyring.sealingKeyId;
        const last = this.db.prepare("SELECT value FROM meta WHERE key = 'sealing_key'").get() as { value: string } | undefined;
        if (last?.value === keyId) return;
        let sealed = 0;
        this.db.transaction(() => {
            for (const table of TABLES) {
                const rows = this.db.prepare(`SELECT id, body, sealed${table === "op_occs" ? ", vnf_instance_id, state" : ""} FROM ${table}`).all() as Row[];
                for (const row of rows) this.write({ table, id: row.id, body: this.opened(table, row) });
                sealed += rows.length;
            }
            this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('sealing_key', ?)").run(keyId);
        })();
        if (sealed > 0) {
            this.db.exec("VACUUM");
            this.db.pragma("wal_checkpoint(TRUNCATE)");
        }
    }

    private opened(table: Table, row: Row): Body {
        return this.keyring.open(table, row.id, JSON.parse(row.body), row.sealed);
    }

    private bodies(table: Table, sql: string, params: (string | number)[]): Body[] {
        return (this.statement(sql).all(...params) as Row[]).map((row) => this.opened(table, row));
    }

    private statement(sql: string): Database.Statement {
        let statement = this.statements.get(sql);
        if (!statement) {
            statement = this.db.prepare(sql);
            this.statements.set(sql, statement);
        }
        return statement;
    }
}

/** Runs the migrations this file has not had yet, each in its own transaction. */
function migrate(db: Database.Database): void {
    db.exec("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied INTEGER NOT NULL)");
    const done = new Set((db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map((r) => r.version));
    MIGRATIONS.forEach((step, i) => {
        if (done.has(i + 1)) return;
        db.transaction(() => {
            step(db);
            db.prepare("INSERT INTO schema_migrations (version, applied) VALUES (?, ?)").run(i + 1, Date.now());
        })();
    });
}
