/**
 * The store several replicas share: PostgreSQL, through node-postgres (`pg`). Each change is a transaction,
 * committed before the request that made it is answered. What must hold across replicas is held here:
 * - one occurrence holding an instance (a unique index over the holding states: a second is refused, 23505);
 * - one writer of a row at a time (`SELECT … FOR UPDATE` in update());
 * - who runs an occurrence: its claim (owner and lease beside the row), leases by the database's clock, so
 *   replicas' clocks need not agree.
 * The schema is versioned (`schema_migrations`); replicas starting together run each migration once, under a
 * transaction-scoped advisory lock. Bodies are kept as text, not jsonb, so that a record reads back exactly as
 * written (its ETag depends on its fields' order).
 */
import { Pool, PoolClient } from "pg";
import { SecretsKeyError, SecretsKeyring } from "./secretsAtRest";
import { Body, Change, Claim, InstanceDecision, CLAIMED_STATES, HOLDING_STATES, HoldingConflict, Replica, sqlList, Store, Table, TABLES, checkedTable } from "./store";

/** Milliseconds since the epoch by the database's clock. */
const NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";
/** The advisory lock under which migrations and re-sealing run (any constant both replicas use). */
const SCHEMA_LOCK = 0x6b38_7666;

const MIGRATIONS: string[] = [
    `CREATE TABLE vnf_instances (id TEXT PRIMARY KEY, created BIGINT NOT NULL, body TEXT NOT NULL, sealed TEXT);
     CREATE TABLE op_occs (id TEXT PRIMARY KEY, vnf_instance_id TEXT NOT NULL, state TEXT NOT NULL, created BIGINT NOT NULL, body TEXT NOT NULL, sealed TEXT,
                           owner_id TEXT, owner TEXT, lease_until BIGINT);
     CREATE INDEX op_occs_instance ON op_occs (vnf_instance_id, created);
     CREATE UNIQUE INDEX op_occs_holding ON op_occs (vnf_instance_id) WHERE state IN (${sqlList(HOLDING_STATES)});
     CREATE TABLE subscriptions (id TEXT PRIMARY KEY, created BIGINT NOT NULL, body TEXT NOT NULL, sealed TEXT);
     CREATE TABLE vims (id TEXT PRIMARY KEY, created BIGINT NOT NULL, body TEXT NOT NULL, sealed TEXT);
     CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);`,
    // What each replica reads every second: its own claims, and the occurrences that are run.
    `CREATE INDEX op_occs_owner ON op_occs (owner_id) WHERE owner_id IS NOT NULL;
     CREATE INDEX op_occs_claimed ON op_occs (created) WHERE state IN (${sqlList(CLAIMED_STATES)});`,
];

interface Row {
    id: string;
    body: string;
    sealed: string | null;
}

export class PostgresStore implements Store {
    readonly shared = true;

    private constructor(
        private readonly pool: Pool,
        readonly location: string,
        private readonly keyring: SecretsKeyring,
        readonly leaseMs: number,
    ) {}

    /** Connects (the password from the URL's environment: PGPASSWORD or ~/.pgpass), migrates, re-seals if the key changed. */
    static async open(url: string, keyring: SecretsKeyring, leaseMs: number): Promise<PostgresStore> {
        const pool = new Pool({ connectionString: url, max: 10 });
        // An idle connection the server drops is replaced at the next query; the error must not end the process.
        pool.on("error", () => undefined);
        const store = new PostgresStore(pool, withoutPassword(url), keyring, leaseMs);
        try {
            await store.transaction(async (client) => {
                await client.query("SELECT pg_advisory_xact_lock($1)", [SCHEMA_LOCK]);
                await client.query("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied BIGINT NOT NULL)");
                const done = new Set((await client.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map((r) => r.version));
                for (const [i, sql] of MIGRATIONS.entries()) {
                    if (done.has(i + 1)) continue;
                    await client.query(sql);
                    await client.query(`INSERT INTO schema_migrations (version, applied) VALUES ($1, ${NOW_MS})`, [i + 1]);
                }
                await store.sealAgainWithSealingKey(client);
            });
        } catch (e) {
            await pool.end();
            // A key that does not open what is stored says so as such (cli/main.ts prints it without a trace).
            if (e instanceof SecretsKeyError) throw e;
            throw new Error(`the database ${store.location}: ${(e as Error).message}`);
        }
        return store;
    }

    async get(table: Table, id: string): Promise<Body | undefined> {
        const { rows } = await this.pool.query<Row>({ name: `get-${table}`, text: `SELECT id, body, sealed FROM ${checkedTable(table)} WHERE id = $1`, values: [String(id)] });
        return rows[0] && this.opened(table, rows[0]);
    }

    async list(table: Table): Promise<Body[]> {
        const { rows } = await this.pool.query<Row>(`SELECT id, body, sealed FROM ${checkedTable(table)} ORDER BY created, id`);
        return rows.map((row) => this.opened(table, row));
    }

    async getMasked(table: Table, id: string): Promise<Body | undefined> {
        const { rows } = await this.pool.query<{ body: string }>({ name: `masked-${table}`, text: `SELECT body FROM ${checkedTable(table)} WHERE id = $1`, values: [String(id)] });
        return rows[0] && (JSON.parse(rows[0].body) as Body);
    }

    async listMasked(table: Table): Promise<Body[]> {
        const { rows } = await this.pool.query<{ body: string }>(`SELECT body FROM ${checkedTable(table)} ORDER BY created, id`);
        return rows.map((row) => JSON.parse(row.body) as Body);
    }

    async holdingOpOccs(): Promise<Body[]> {
        const { rows } = await this.pool.query<Row>(`SELECT id, body, sealed FROM op_occs WHERE state IN (${sqlList(HOLDING_STATES)}) ORDER BY created, id`);
        return rows.map((row) => this.opened("op_occs", row));
    }

    async opOccsOf(vnfInstanceId: string): Promise<Body[]> {
        const { rows } = await this.pool.query<Row>("SELECT id, body, sealed FROM op_occs WHERE vnf_instance_id = $1 ORDER BY created, id", [vnfInstanceId]);
        return rows.map((row) => this.opened("op_occs", row));
    }

    async put(changes: Change[]): Promise<void> {
        await this.transaction(async (client) => {
            for (const c of changes) await this.write(client, c);
        });
    }

    async update(table: Table, id: string, change: (current: Body | undefined, claim: Claim) => Body | undefined, claim?: Replica | null): Promise<Body | undefined> {
        return this.transaction(async (client) => {
            const claimColumns = table === "op_occs" ? `, owner, (owner IS NULL OR lease_until < ${NOW_MS}) AS lapsed` : "";
            const { rows } = await client.query<Row & { owner?: string | null; lapsed?: boolean }>(`SELECT id, body, sealed${claimColumns} FROM ${checkedTable(table)} WHERE id = $1 FOR UPDATE`, [String(id)]);
            const row = rows[0];
            const next = change(row && this.opened(table, row), { owner: row?.owner ? (JSON.parse(row.owner) as Replica) : undefined, lapsed: row?.lapsed ?? true });
            if (next !== undefined) await this.write(client, { table, id, body: next, ...(claim === undefined ? {} : { claim }) });
            return next;
        });
    }

    async onInstance(instanceId: string, decide: (instance: Body | undefined, occurrences: Body[]) => InstanceDecision): Promise<void> {
        await this.transaction(async (client) => {
            const row = (await client.query<Row>("SELECT id, body, sealed FROM vnf_instances WHERE id = $1 FOR UPDATE", [instanceId])).rows[0];
            const occurrences = (await client.query<Row>("SELECT id, body, sealed FROM op_occs WHERE vnf_instance_id = $1 ORDER BY created, id", [instanceId])).rows.map((r) => this.opened("op_occs", r));
            const decision = decide(row && this.opened("vnf_instances", row), occurrences);
            for (const c of decision.put ?? []) await this.write(client, c);
            for (const r of decision.remove ?? []) await client.query(`DELETE FROM ${checkedTable(r.table)} WHERE id = $1`, [String(r.id)]);
        });
    }

    async remove(table: Table, id: string): Promise<void> {
        await this.pool.query(`DELETE FROM ${checkedTable(table)} WHERE id = $1`, [String(id)]);
    }

    async claimed(): Promise<{ id: string; claim: Claim }[]> {
        const { rows } = await this.pool.query<{ id: string; owner: string | null; lapsed: boolean }>(
            `SELECT id, owner, (owner IS NULL OR lease_until < ${NOW_MS}) AS lapsed FROM op_occs WHERE state IN (${sqlList(CLAIMED_STATES)}) ORDER BY created, id`,
        );
        return rows.map((r) => ({ id: r.id, claim: { owner: r.owner ? (JSON.parse(r.owner) as Replica) : undefined, lapsed: r.lapsed } }));
    }

    async renewClaims(replicaId: string, ids: string[]): Promise<void> {
        await this.pool.query(`UPDATE op_occs SET lease_until = ${NOW_MS} + $1 WHERE owner_id = $2 AND id = ANY($3)`, [this.leaseMs, replicaId, ids]);
    }

    async ping(): Promise<void> {
        await this.pool.query("SELECT 1");
    }

    async close(): Promise<void> {
        await this.pool.end();
    }

    private async write(client: PoolClient, c: Change): Promise<void> {
        const { body, sealed } = this.keyring.seal(c.table, String(c.id), c.body);
        const created = (c.body.__created as number | undefined) ?? Date.now();
        const table = checkedTable(c.table);
        if (table !== "op_occs") {
            await client.query(`INSERT INTO ${table} (id, created, body, sealed) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET body = excluded.body, sealed = excluded.sealed`, [String(c.id), created, JSON.stringify(body), sealed ?? null]);
            return;
        }
        const values: unknown[] = [String(c.id), String(c.body.vnfInstanceId), String(c.body.operationState), created, JSON.stringify(body), sealed ?? null];
        const claimed = c.claim !== undefined;
        if (claimed) values.push(c.claim?.id ?? null, c.claim ? JSON.stringify(c.claim) : null, c.claim ? this.leaseMs : null);
        const sql = claimed
            ? `INSERT INTO op_occs (id, vnf_instance_id, state, created, body, sealed, owner_id, owner, lease_until) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ${NOW_MS} + $9)
               ON CONFLICT (id) DO UPDATE SET state = excluded.state, body = excluded.body, sealed = excluded.sealed, owner_id = excluded.owner_id, owner = excluded.owner, lease_until = excluded.lease_until`
            : `INSERT INTO op_occs (id, vnf_instance_id, state, created, body, sealed) VALUES ($1, $2, $3, $4, $5, $6)
               ON CONFLICT (id) DO UPDATE SET state = excluded.state, body = excluded.body, sealed = excluded.sealed`;
        try {
            await client.query(sql, values);
        } catch (e) {
            if ((e as { code?: string; constraint?: string }).code === "23505" && (e as { constraint?: string }).constraint === "op_occs_holding") {
                throw new HoldingConflict(`VNF instance ${String(c.body.vnfInstanceId)} is held by another operation`);
            }
            throw e;
        }
    }

    /**
     * In the opening transaction: every row sealed with the sealing key when the rows were last sealed with
     * another (or never); else each row sealed with another key. During a rolling rotation a replica that still
     * seals with the old key writes such rows after another has sealed every row with the new one; its own
     * restart seals them again, so once every replica has restarted with the new key first, the old one can go.
     */
    private async sealAgainWithSealingKey(client: PoolClient): Promise<void> {
        const keyId = this.keyring.sealingKeyId;
        const last = (await client.query<{ value: string }>("SELECT value FROM meta WHERE key = 'sealing_key'")).rows[0];
        const keyChanged = last?.value !== keyId;
        const prefix = this.keyring.sealedPrefix;
        for (const table of TABLES) {
            // Locked while sealed again: a replica still running changes none of them meanwhile.
            const { rows } = keyChanged
                ? await client.query<Row>(`SELECT id, body, sealed FROM ${table} FOR UPDATE`)
                : await client.query<Row>(`SELECT id, body, sealed FROM ${table} WHERE sealed IS NOT NULL AND left(sealed, $1) <> $2 FOR UPDATE`, [prefix.length, prefix]);
            for (const row of rows) await this.write(client, { table, id: row.id, body: this.opened(table, row) });
        }
        if (keyChanged) await client.query("INSERT INTO meta (key, value) VALUES ('sealing_key', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [keyId]);
    }

    private async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
        const client = await this.pool.connect();
        try {
            await client.query("BEGIN");
            const result = await work(client);
            await client.query("COMMIT");
            return result;
        } catch (e) {
            await client.query("ROLLBACK").catch(() => undefined);
            throw e;
        } finally {
            client.release();
        }
    }

    private opened(table: Table, row: Row): Body {
        return this.keyring.open(table, row.id, JSON.parse(row.body), row.sealed);
    }
}

/** Query parameters of a PostgreSQL URL that carry a credential (pg-connection-string reads them as options). */
export const URL_CREDENTIAL_PARAMETERS = ["password", "sslpassword", "sslkey"];

/** The URL as it may be shown: without a password, in its user part or its query. */
export function withoutPassword(url: string): string {
    try {
        const parsed = new URL(url);
        parsed.password = "";
        for (const name of URL_CREDENTIAL_PARAMETERS) parsed.searchParams.delete(name);
        return parsed.toString();
    } catch {
        return "the database (its URL does not parse)";
    }
}
