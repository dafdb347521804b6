/**
 * The LCM service's two stores for suites that must pass on both: SQLite in the data directory, and a
 * database of the shared test PostgreSQL server (support/postgres.ts), the same one again for the same data
 * directory (a restart finds what it stored).
 */
import { SecretsKeyring } from "../../service/secretsAtRest";
import { SqliteStore } from "../../service/sqliteStore";
import { DEFAULT_LEASE_MS } from "../../service/store";
import { sharedPostgres, skipUnlessPostgres } from "./postgres";

export type StoreKind = "sqlite" | "postgres";

export const STORE_KINDS: readonly StoreKind[] = ["sqlite", "postgres"];

const databases = new Map<string, string>();

/** What createService needs to keep the data of `dataDir` in a store of `kind`. */
export async function storeFor(kind: StoreKind, dataDir: string): Promise<{ database?: string }> {
    if (kind === "sqlite") return {};
    let url = databases.get(dataDir);
    if (!url) {
        url = await (await sharedPostgres()).newDatabase();
        databases.set(dataDir, url);
    }
    return { database: url };
}

/** `body` as a suite once per store, titled with the store's name; PostgreSQL's skipped only where it is missing outside CI. */
export function describeEachStore(title: string, body: (this: Mocha.Suite, kind: StoreKind) => void): void {
    for (const kind of STORE_KINDS) {
        describe(`${title} [${kind === "sqlite" ? "SQLite" : "PostgreSQL"}]`, function () {
            if (kind === "postgres") {
                before(function () {
                    skipUnlessPostgres(this);
                });
            }
            body.call(this, kind);
        });
    }
}

/** The embedded store in `dir`, its secrets sealed with `keyring` (default: a key made in `dir`). */
export const openSqlite = (dir: string, keyring?: SecretsKeyring) => SqliteStore.open(dir, keyring ?? SecretsKeyring.load({ dataDir: dir }), DEFAULT_LEASE_MS);
