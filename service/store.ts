/**
 * The service's state: instances, operation occurrences, subscriptions and VIMs, one JSON document per row.
 * Two engines behind one interface: SQLite in the data directory for one machine (sqliteStore.ts), PostgreSQL
 * for several replicas (postgresStore.ts). What must hold across replicas is held by the database, not by a
 * process: one occurrence holding an instance at a time (a unique index), a change of an occurrence made by one
 * replica at a time (the row locked while it is read and written), and who runs an occurrence (its claim, a
 * lease the running replica renews; claims.ts).
 */
import { SecretsKeyring } from "./secretsAtRest";

export type Table = "vnf_instances" | "op_occs" | "subscriptions" | "vims";

export const TABLES: readonly Table[] = ["vnf_instances", "op_occs", "subscriptions", "vims"];

export { HOLDING_STATES, RUNNING_STATES as CLAIMED_STATES } from "./operationStates";

export type Body = Record<string, unknown>;

/** A table name, checked before it is put in SQL text (statements cannot bind a table's name). */
export function checkedTable(table: Table): Table {
    if (!TABLES.includes(table)) throw new Error(`no table ${String(table)}`);
    return table;
}

/** States as an SQL list (`'A', 'B'`): constants of this file, never input. */
export function sqlList(states: readonly string[]): string {
    return states.map((s) => `'${s}'`).join(", ");
}

/** A replica as a claim records it: enough for another on the same host to tell whether it still runs. */
export interface Replica {
    /** Unique per start of a service process. */
    id: string;
    /** Its host's boot id and PID namespace (pulumiProcess.ts thisBoot): only within them can PIDs be compared. */
    bootId: string;
    hostname: string;
    pid: number;
    /** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22). */
    startTime: string;
}

/** Who runs an occurrence, as the store holds it beside the row. */
export interface Claim {
    owner: Replica | undefined;
    /** Its lease ran out (by the database's clock), or no one holds it. */
    lapsed: boolean;
}

export interface Change {
    table: Table;
    id: string;
    body: Body;
    /** For an occurrence: who runs it from now (null: no one), its lease starting now. Absent: unchanged. */
    claim?: Replica | null;
}

/** What a request decided about an instance (Store.onInstance). */
export interface InstanceDecision {
    put?: Change[];
    remove?: { table: Table; id: string }[];
}

/** An occurrence that would hold an instance another one holds already. */
export class HoldingConflict extends Error {}

export interface Store {
    /** Where the data is, for the start-up line (a file, or a database without its password). */
    readonly location: string;
    /** Whether other replicas may share it (their claims are then honoured until they lapse). */
    readonly shared: boolean;
    /** How long a claim lasts unless renewed. */
    readonly leaseMs: number;

    /** A row with its secrets unsealed, for the service's own work. */
    get(table: Table, id: string): Promise<Body | undefined>;
    list(table: Table): Promise<Body[]>;
    /** A row as it is stored, its secrets masked and never unsealed: what a GET shows starts from this. */
    getMasked(table: Table, id: string): Promise<Body | undefined>;
    listMasked(table: Table): Promise<Body[]>;
    opOccsOf(vnfInstanceId: string): Promise<Body[]>;
    /** Every occurrence in a holding state (at most one per instance), in one query. */
    holdingOpOccs(): Promise<Body[]>;
    /**
     * Inserts or replaces rows in one transaction, durable when it resolves. An occurrence that would hold an
     * instance another occurrence holds is refused with HoldingConflict, and nothing of the transaction stays.
     */
    put(changes: Change[]): Promise<void>;
    /**
     * One row changed by one writer at a time: `change` gets the row as stored now and its claim (for an
     * occurrence), the row locked until what it returns is stored; undefined stores nothing. What it throws
     * is thrown, nothing stored.
     */
    update(table: Table, id: string, change: (current: Body | undefined, claim: Claim) => Body | undefined, claim?: Replica | null): Promise<Body | undefined>;
    remove(table: Table, id: string): Promise<void>;
    /**
     * What an instance's request does, decided and done in one transaction with the instance's row locked:
     * `decide` gets the instance as stored now (undefined: none) and its occurrences, and says what to store and
     * what to remove; what it throws is thrown, nothing done. Of an operation accepted, a PATCH and a DELETE of
     * one instance, on any replicas, each sees what the one before did.
     */
    onInstance(instanceId: string, decide: (instance: Body | undefined, occurrences: Body[]) => InstanceDecision): Promise<void>;
    /** Every occurrence in a claimed state, with its claim. */
    claimed(): Promise<{ id: string; claim: Claim }[]>;
    /** Resolves when the database answers a query. */
    ping(): Promise<void>;
    /** Extends the leases of the claims `replicaId` holds on `ids` (what it runs, or is taking over). */
    renewClaims(replicaId: string, ids: string[]): Promise<void>;
    close(): Promise<void>;
}

export interface StoreOptions {
    /** The data directory (SQLite's file, a generated secrets key). */
    dataDir: string;
    /** A PostgreSQL URL (postgres://…): the store several replicas share. Default: SQLite in dataDir. */
    database?: string;
    /** What seals secrets at rest. */
    keyring: SecretsKeyring;
    /** How long a claim lasts unless renewed; default 15 s. */
    leaseMs?: number;
}

export const DEFAULT_LEASE_MS = 15_000;

export async function openStore(options: StoreOptions): Promise<Store> {
    if (options.database !== undefined) {
        const { PostgresStore } = require("./postgresStore") as typeof import("./postgresStore");
        return PostgresStore.open(options.database, options.keyring, options.leaseMs ?? DEFAULT_LEASE_MS);
    }
    const { SqliteStore } = require("./sqliteStore") as typeof import("./sqliteStore");
    return SqliteStore.open(options.dataDir, options.keyring, options.leaseMs ?? DEFAULT_LEASE_MS);
}
