/**
 * The service's state in an embedded SQLite database (sql.js: SQLite compiled to WebAssembly, nothing to
 * install), kept in the data directory as a database file plus a journal. Every change is appended to the
 * journal and fsynced before the request that made it is answered; the journal is folded into the
 * database file (written to a temporary file, fsynced, renamed) every COMPACT_EVERY changes, at a start that
 * replayed some, and at close. A crash loses nothing that was answered: the next start replays the journal.
 *
 * Reads of one record by id are answered from memory: each row's JSON text, by table and id, loaded at open
 * and changed with the database (after its transaction commits, so a change rolled back is never seen), and
 * parsed afresh on each read (callers may change what they get). The store is the only writer. Queries over
 * many rows (lists, an instance's occurrences) stay in SQL.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import initSqlJs, { Database, Statement } from "sql.js";

const COMPACT_EVERY = 1_000;

type Change = { op: "put"; table: Table; id: string; created: number; body: Record<string, unknown> } | { op: "remove"; table: Table; id: string };

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
    private journal: number;
    private journalled = 0;
    /** Prepared statements by SQL text (sql.js invalidates them when it exports the database). */
    private statements = new Map<string, Statement>();
    /** Each row's body (JSON text) by table and id: what `get` answers from. */
    private readonly bodies: Record<Table, Map<string, string>> = { vnf_instances: new Map(), op_occs: new Map(), subscriptions: new Map(), vims: new Map() };

    private constructor(
        private readonly db: Database,
        readonly file: string,
        private readonly journalFile: string,
    ) {
        this.journal = fs.openSync(journalFile, "a", 0o600);
    }

    static async open(dataDir: string): Promise<Store> {
        fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
        const file = path.join(dataDir, "k8s-vnf-lcm.sqlite");
        const journalFile = `${file}.journal`;
        const SQL = await initSqlJs();
        const db = fs.existsSync(file) ? new SQL.Database(fs.readFileSync(file)) : new SQL.Database();
        db.run(SCHEMA);
        const store = new Store(db, file, journalFile);
        store.load();
        // Folded in only when the journal held something: rewriting the whole file at every start costs time.
        if (store.replay() > 0) store.compact();
        return store;
    }

    get(table: Table, id: string): Record<string, unknown> | undefined {
        const body = this.bodies[table].get(String(id));
        return body === undefined ? undefined : JSON.parse(body);
    }

    list(table: Table): Record<string, unknown>[] {
        return this.query(`SELECT body FROM ${table} ORDER BY created, id`, []);
    }

    opOccsOf(vnfInstanceId: string): Record<string, unknown>[] {
        return this.query("SELECT body FROM op_occs WHERE vnf_instance_id = ? ORDER BY created, id", [vnfInstanceId]);
    }

    /** Inserts or replaces rows, in one transaction, durable when this returns. */
    put(changes: { table: Table; id: string; body: Record<string, unknown> }[]): void {
        const now = Date.now();
        this.commit(changes.map((c) => ({ op: "put", table: c.table, id: c.id, created: (c.body.__created as number | undefined) ?? now, body: c.body })));
    }

    remove(table: Table, id: string): void {
        this.commit([{ op: "remove", table, id }]);
    }

    /** Bytes on disk: the database file and the journal. */
    size(): number {
        return fs.statSync(this.file).size + fs.statSync(this.journalFile).size;
    }

    close(): void {
        this.compact();
        fs.closeSync(this.journal);
        this.db.close();
    }

    private commit(changes: Change[]): void {
        this.apply(changes);
        const line = Buffer.from(`${JSON.stringify(changes)}\n`);
        fs.writeSync(this.journal, line);
        fs.fsyncSync(this.journal);
        if (++this.journalled >= COMPACT_EVERY) this.compact();
    }

    private apply(changes: Change[]): void {
        const applied: { table: Table; id: string; body?: string }[] = [];
        this.db.run("BEGIN");
        try {
            for (const c of changes) {
                if (c.op === "remove") {
                    this.db.run(`DELETE FROM ${c.table} WHERE id = ?`, [c.id]);
                    applied.push({ table: c.table, id: String(c.id) });
                    continue;
                }
                const body = JSON.stringify(c.body);
                applied.push({ table: c.table, id: String(c.id), body });
                if (c.table === "op_occs") {
                    this.db.run("INSERT OR REPLACE INTO op_occs (id, vnf_instance_id, state, created, body) VALUES (?, ?, ?, COALESCE((SELECT created FROM op_occs WHERE id = ?), ?), ?)", [
                        c.id,
                        String(c.body.vnfInstanceId),
                        String(c.body.operationState),
                        c.id,
                        c.created,
                        body,
                    ]);
                } else {
                    this.db.run(`INSERT OR REPLACE INTO ${c.table} (id, created, body) VALUES (?, COALESCE((SELECT created FROM ${c.table} WHERE id = ?), ?), ?)`, [c.id, c.id, c.created, body]);
                }
            }
            this.db.run("COMMIT");
        } catch (e) {
            this.db.run("ROLLBACK");
            throw e;
        }
        for (const a of applied) {
            if (a.body === undefined) this.bodies[a.table].delete(a.id);
            else this.bodies[a.table].set(a.id, a.body);
        }
    }

    /** Fills the bodies by id from the database file's rows (before the journal is replayed onto both). */
    private load(): void {
        for (const table of Object.keys(this.bodies) as Table[]) {
            const statement = this.db.prepare(`SELECT id, body FROM ${table}`);
            try {
                while (statement.step()) {
                    const [id, body] = statement.get();
                    this.bodies[table].set(String(id), String(body));
                }
            } finally {
                statement.free();
            }
        }
    }

    /** Applies what the journal holds beyond the database file (after a crash). A torn last line is dropped. */
    private replay(): number {
        const lines = fs.readFileSync(this.journalFile, "utf8").split("\n").filter(Boolean);
        for (const line of lines) {
            let changes: Change[];
            try {
                changes = JSON.parse(line);
            } catch {
                continue;
            }
            this.apply(changes);
        }
        return lines.length;
    }

    /** Writes the database file and empties the journal. */
    private compact(): void {
        this.persist();
        fs.ftruncateSync(this.journal, 0);
        fs.fsyncSync(this.journal);
        this.journalled = 0;
    }

    private query(sql: string, params: (string | number)[]): Record<string, unknown>[] {
        let statement = this.statements.get(sql);
        if (!statement) {
            statement = this.db.prepare(sql);
            this.statements.set(sql, statement);
        }
        try {
            statement.bind(params);
            const out: Record<string, unknown>[] = [];
            while (statement.step()) out.push(JSON.parse(String(statement.get()[0])));
            return out;
        } finally {
            statement.reset();
        }
    }

    private persist(): void {
        for (const statement of this.statements.values()) statement.free();
        this.statements.clear();
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
