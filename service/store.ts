/**
 * The service's state in SQLite (better-sqlite3), one database file in the data directory. Write-ahead
 * logging, with `synchronous = FULL`: each change is a transaction whose log is synced before the request
 * that made it is answered, so a crash loses nothing that was answered (https://sqlite.org/wal.html,
 * https://sqlite.org/pragma.html#pragma_synchronous). The store is the only writer.
 *
 * A data directory of an earlier release (the database file sql.js wrote, plus a journal of changes not yet
 * folded into it) is migrated at the first start: the journal's changes are applied in one transaction, then
 * the journal goes (migrateJournal).
 */
import Database from "better-sqlite3";
import * as fs from "node:fs";
import * as path from "node:path";

/** Tables: one JSON document per row, with the columns queries select on. */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS vnf_instances (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS op_occs (id TEXT PRIMARY KEY, vnf_instance_id TEXT NOT NULL, state TEXT NOT NULL, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS op_occs_instance ON op_occs (vnf_instance_id, created);
CREATE TABLE IF NOT EXISTS subscriptions (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vims (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
`;

export type Table = "vnf_instances" | "op_occs" | "subscriptions" | "vims";

const TABLES: readonly Table[] = ["vnf_instances", "op_occs", "subscriptions", "vims"];

/** A change as the earlier release's journal holds it, a JSON array of them per line. */
type Change = { op: "put"; table: Table; id: string; created: number; body: Record<string, unknown> } | { op: "remove"; table: Table; id: string };

export class Store {
    private readonly statements = new Map<string, Database.Statement>();

    private constructor(
        private readonly db: Database.Database,
        readonly file: string,
    ) {}

    static async open(dataDir: string): Promise<Store> {
        fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
        const file = path.join(dataDir, "k8s-vnf-lcm.sqlite");
        const created = !fs.existsSync(file);
        const db = new Database(file);
        if (created) fs.chmodSync(file, 0o600);
        db.pragma("journal_mode = WAL");
        db.pragma("synchronous = FULL");
        db.exec(SCHEMA);
        const store = new Store(db, file);
        store.migrateJournal(`${file}.journal`);
        fs.rmSync(`${file}.tmp`, { force: true });
        return store;
    }

    get(table: Table, id: string): Record<string, unknown> | undefined {
        const row = this.statement(`SELECT body FROM ${checked(table)} WHERE id = ?`).get(String(id)) as { body: string } | undefined;
        return row === undefined ? undefined : JSON.parse(row.body);
    }

    list(table: Table): Record<string, unknown>[] {
        return this.bodies(`SELECT body FROM ${checked(table)} ORDER BY created, id`, []);
    }

    opOccsOf(vnfInstanceId: string): Record<string, unknown>[] {
        return this.bodies("SELECT body FROM op_occs WHERE vnf_instance_id = ? ORDER BY created, id", [vnfInstanceId]);
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
                } else if (c.table === "op_occs") {
                    this.statement("INSERT OR REPLACE INTO op_occs (id, vnf_instance_id, state, created, body) VALUES (?, ?, ?, COALESCE((SELECT created FROM op_occs WHERE id = ?), ?), ?)").run(
                        String(c.id),
                        String(c.body.vnfInstanceId),
                        String(c.body.operationState),
                        String(c.id),
                        c.created,
                        JSON.stringify(c.body),
                    );
                } else {
                    const table = checked(c.table);
                    this.statement(`INSERT OR REPLACE INTO ${table} (id, created, body) VALUES (?, COALESCE((SELECT created FROM ${table} WHERE id = ?), ?), ?)`).run(String(c.id), String(c.id), c.created, JSON.stringify(c.body));
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

    private bodies(sql: string, params: (string | number)[]): Record<string, unknown>[] {
        return (this.statement(sql).all(...params) as { body: string }[]).map((row) => JSON.parse(row.body));
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
