/**
 * The service's state in SQLite (better-sqlite3), one database file in the data directory. Write-ahead
 * logging, with `synchronous = FULL`: each change is a transaction whose log is synced before the request
 * that made it is answered, so a crash loses nothing that was answered (https://sqlite.org/wal.html,
 * https://sqlite.org/pragma.html#pragma_synchronous). The store is the only writer.
 *
 * A data directory of an earlier release (the database file sql.js wrote, plus a journal of changes not yet
 * folded into it) is migrated at the first start: the journal's changes are applied in one transaction, then
 * the journal goes (migrateJournal).
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

/** Tables: one JSON document per row, with the columns queries select on. */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS vnf_instances (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS op_occs (id TEXT PRIMARY KEY, vnf_instance_id TEXT NOT NULL, state TEXT NOT NULL, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS op_occs_instance ON op_occs (vnf_instance_id, created);
CREATE TABLE IF NOT EXISTS subscriptions (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vims (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

export type Table = "vnf_instances" | "op_occs" | "subscriptions" | "vims";

const TABLES: readonly Table[] = ["vnf_instances", "op_occs", "subscriptions", "vims"];

interface Row {
    id: string;
    body: string;
    sealed: string | null;
}

/** A change as the earlier release's journal holds it, a JSON array of them per line. */
type Change = { op: "put"; table: Table; id: string; created: number; body: Record<string, unknown> } | { op: "remove"; table: Table; id: string };

export class Store {
    private readonly statements = new Map<string, Database.Statement>();

    private constructor(
        private readonly db: Database.Database,
        readonly file: string,
        private readonly keyring: SecretsKeyring,
    ) {}

    /** The store in `dataDir`; secrets sealed with `keyring` (default: a key made once in `dataDir`). */
    static async open(dataDir: string, keyring?: SecretsKeyring): Promise<Store> {
        fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
        const file = path.join(dataDir, "k8s-vnf-lcm.sqlite");
        const created = !fs.existsSync(file);
        const db = new Database(file);
        if (created) fs.chmodSync(file, 0o600);
        db.pragma("journal_mode = WAL");
        db.pragma("synchronous = FULL");
        db.pragma("secure_delete = ON");
        db.exec(SCHEMA);
        for (const table of TABLES) {
            const columns = db.prepare(`SELECT name FROM pragma_table_info('${table}')`).all() as { name: string }[];
            if (!columns.some((c) => c.name === "sealed")) db.exec(`ALTER TABLE ${table} ADD COLUMN sealed TEXT`);
        }
        const store = new Store(db, file, keyring ?? SecretsKeyring.load({ dataDir }));
        store.migrateJournal(`${file}.journal`);
        store.sealAgainIfKeyChanged();
        fs.rmSync(`${file}.tmp`, { force: true });
        return store;
    }

    get(table: Table, id: string): Record<string, unknown> | undefined {
        const row = this.statement(`SELECT id, body, sealed FROM ${checked(table)} WHERE id = ?`).get(String(id)) as Row | undefined;
        return row === undefined ? undefined : this.opened(table, row);
    }

    list(table: Table): Record<string, unknown>[] {
        return this.bodies(table, `SELECT id, body, sealed FROM ${checked(table)} ORDER BY created, id`, []);
    }

    opOccsOf(vnfInstanceId: string): Record<string, unknown>[] {
        return this.bodies("op_occs", "SELECT id, body, sealed FROM op_occs WHERE vnf_instance_id = ? ORDER BY created, id", [vnfInstanceId]);
    }

    /** Inserts or replaces rows, in one transaction, durable when this returns. */
    put(changes: { table: Table; id: string; body: Record<string, unknown> }[]): void {
        const now = Date.now();
        this.apply(changes.map((c) => ({ op: "put", table: c.table, id: c.id, created: (c.body.__created as number | undefined) ?? now, body: c.body })));
    }

    remove(table: Table, id: string): void {
        this.apply([{ op: "remove", table, id }]);
    }

    /** Folds the write-ahead log into the database file and closes it. */
    close(): void {
        this.db.close();
    }

    private apply(changes: Change[]): void {
        this.db.transaction(() => {
            for (const c of changes) {
                if (c.op === "remove") {
                    this.statement(`DELETE FROM ${checked(c.table)} WHERE id = ?`).run(String(c.id));
                    continue;
                }
                const { body, sealed } = this.keyring.seal(c.table, String(c.id), c.body);
                if (c.table === "op_occs") {
                    this.statement("INSERT OR REPLACE INTO op_occs (id, vnf_instance_id, state, created, body, sealed) VALUES (?, ?, ?, COALESCE((SELECT created FROM op_occs WHERE id = ?), ?), ?, ?)").run(
                        String(c.id),
                        String(c.body.vnfInstanceId),
                        String(c.body.operationState),
                        String(c.id),
                        c.created,
                        JSON.stringify(body),
                        sealed ?? null,
                    );
                } else {
                    const table = checked(c.table);
                    this.statement(`INSERT OR REPLACE INTO ${table} (id, created, body, sealed) VALUES (?, COALESCE((SELECT created FROM ${table} WHERE id = ?), ?), ?, ?)`).run(
                        String(c.id),
                        String(c.id),
                        c.created,
                        JSON.stringify(body),
                        sealed ?? null,
                    );
                }
            }
        })();
    }

    /**
     * An earlier release's journal: each line a JSON array of changes made after its database file was last
     * written (a torn last line, cut by a crash, was never answered and is dropped). Applied in one
     * transaction; the journal goes once that has committed.
     */
    private migrateJournal(journal: string): void {
        if (!fs.existsSync(journal)) return;
        const batches: Change[][] = [];
        for (const line of fs.readFileSync(journal, "utf8").split("\n").filter(Boolean)) {
            try {
                batches.push(JSON.parse(line));
            } catch {
                continue;
            }
        }
        this.db.transaction(() => batches.forEach((changes) => this.apply(changes)))();
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
                const rows = this.db.prepare(`SELECT id, created, body, sealed FROM ${table}`).all() as (Row & { created: number })[];
                this.apply(rows.map((row) => ({ op: "put", table, id: row.id, created: row.created, body: this.opened(table, row) })));
                sealed += rows.length;
            }
            this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('sealing_key', ?)").run(keyId);
        })();
        if (sealed > 0) {
            this.db.exec("VACUUM");
            this.db.pragma("wal_checkpoint(TRUNCATE)");
        }
    }

    private opened(table: Table, row: Row): Record<string, unknown> {
        return this.keyring.open(table, row.id, JSON.parse(row.body), row.sealed);
    }

    private bodies(table: Table, sql: string, params: (string | number)[]): Record<string, unknown>[] {
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

/** A table name, checked before it is put in SQL text (statements cannot bind a table's name). */
function checked(table: Table): Table {
    if (!TABLES.includes(table)) throw new Error(`no table ${String(table)}`);
    return table;
}
