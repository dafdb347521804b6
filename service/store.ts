/**
 * The service's state in an embedded SQLite database (sql.js: SQLite compiled to WebAssembly, nothing to
 * install), kept in one file in the data directory. Every change is written through before the request
 * that made it is answered: the file is replaced atomically (write, fsync, rename), so a crash leaves the
 * last committed state.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import initSqlJs, { Database } from "sql.js";

export interface Row {
    id: string;
    body: Record<string, unknown>;
}

/** Tables: one JSON document per row, with the columns queries select on. */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS vnf_instances (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS op_occs (id TEXT PRIMARY KEY, vnf_instance_id TEXT NOT NULL, state TEXT NOT NULL, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS op_occs_instance ON op_occs (vnf_instance_id, created);
CREATE TABLE IF NOT EXISTS subscriptions (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vims (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
`;

export type Table = "vnf_instances" | "op_occs" | "subscriptions" | "vims";

export class Store {
    private constructor(
        private readonly db: Database,
        readonly file: string,
    ) {}

    static async open(dataDir: string): Promise<Store> {
        fs.mkdirSync(dataDir, { recursive: true });
        const file = path.join(dataDir, "k8s-vnf-lcm.sqlite");
        const SQL = await initSqlJs();
        const db = fs.existsSync(file) ? new SQL.Database(fs.readFileSync(file)) : new SQL.Database();
        db.run(SCHEMA);
        const store = new Store(db, file);
        store.persist();
        return store;
    }

    get(table: Table, id: string): Record<string, unknown> | undefined {
        const rows = this.query(`SELECT body FROM ${table} WHERE id = ?`, [id]);
        return rows[0];
    }

    list(table: Table): Record<string, unknown>[] {
        return this.query(`SELECT body FROM ${table} ORDER BY created, id`, []);
    }

    opOccsOf(vnfInstanceId: string): Record<string, unknown>[] {
        return this.query("SELECT body FROM op_occs WHERE vnf_instance_id = ? ORDER BY created, id", [vnfInstanceId]);
    }

    /** Inserts or replaces rows and writes the database file, in one transaction. */
    put(changes: { table: Table; id: string; body: Record<string, unknown> }[]): void {
        this.db.run("BEGIN");
        try {
            for (const c of changes) {
                const created = (c.body.__created as number | undefined) ?? Date.now();
                if (c.table === "op_occs") {
                    this.db.run("INSERT OR REPLACE INTO op_occs (id, vnf_instance_id, state, created, body) VALUES (?, ?, ?, COALESCE((SELECT created FROM op_occs WHERE id = ?), ?), ?)", [
                        c.id,
                        String(c.body.vnfInstanceId),
                        String(c.body.operationState),
                        c.id,
                        created,
                        JSON.stringify(c.body),
                    ]);
                } else {
                    this.db.run(`INSERT OR REPLACE INTO ${c.table} (id, created, body) VALUES (?, COALESCE((SELECT created FROM ${c.table} WHERE id = ?), ?), ?)`, [c.id, c.id, created, JSON.stringify(c.body)]);
                }
            }
            this.db.run("COMMIT");
        } catch (e) {
            this.db.run("ROLLBACK");
            throw e;
        }
        this.persist();
    }

    remove(table: Table, id: string): void {
        this.db.run(`DELETE FROM ${table} WHERE id = ?`, [id]);
        this.persist();
    }

    close(): void {
        this.db.close();
    }

    private query(sql: string, params: (string | number)[]): Record<string, unknown>[] {
        const statement = this.db.prepare(sql);
        try {
            statement.bind(params);
            const out: Record<string, unknown>[] = [];
            while (statement.step()) out.push(JSON.parse(String(statement.get()[0])));
            return out;
        } finally {
            statement.free();
        }
    }

    private persist(): void {
        const tmp = `${this.file}.tmp`;
        const fd = fs.openSync(tmp, "w", 0o600);
        try {
            fs.writeSync(fd, this.db.export());
            fs.fsyncSync(fd);
        } finally {
            fs.closeSync(fd);
        }
        fs.renameSync(tmp, this.file);
    }
}
