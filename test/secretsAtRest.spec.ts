/**
 * Secrets at rest (service/secretsAtRest.ts, service/store.ts): what the one secrets rule finds in a stored
 * record (a VIM's password, a subscription's callback credentials, a request's passwords kept for retry) is
 * sealed in the SQLite file and opened again after a restart, where the service needs it; no file of the data
 * directory holds one in any spelling. Keys rotate (a new key first: every row sealed again), an unknown or
 * altered seal is refused, and a database of a release that did not seal is sealed at its first start. The
 * service runs in process on loopback with a runner recording what each update gets.
 */
import Database from "better-sqlite3";
import { strict as assert } from "node:assert";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { redactText } from "../config/secrets";
import { createService, Service } from "../service/app";
import { PostgresStore } from "../service/postgresStore";
import { SecretsKeyError, SecretsKeyring } from "../service/secretsAtRest";
import { DEFAULT_LEASE_MS } from "../service/store";
import { RunOptions, StackRunner } from "../service/stackRunner";
import { request } from "./support/fixtures";
import { query, sharedPostgres, skipUnlessPostgres } from "./support/postgres";
import { openSqlite, STORE_KINDS, StoreKind, storeFor } from "./support/stores";

const KEYSTONE_PASSWORD = "keystone-Secret-5a";
const CALLBACK_PASSWORD = "callback-Secret-4b";
const LB_PASSWORD = "lb-ssh-Secret-6c";
const ANSIBLE_PASSWORD = "ansible-Secret-7d";
const SECRETS = [KEYSTONE_PASSWORD, CALLBACK_PASSWORD, LB_PASSWORD, ANSIBLE_PASSWORD];

/** The spellings a secret could take in a file: as it is, base64 (any alignment), hex, URL-encoded, UTF-16. */
function spelledIn(bytes: Buffer, secret: string): string | undefined {
    const text = bytes.toString("latin1");
    if (redactText(text, [secret]) !== text) return "as it is or in base64";
    if (text.toLowerCase().includes(Buffer.from(secret).toString("hex"))) return "hex";
    if (text.includes(encodeURIComponent(secret).replace(/-/g, "%2D"))) return "URL-encoded";
    if (bytes.includes(Buffer.from(secret, "utf16le"))) return "UTF-16";
    return undefined;
}

/** Rows of the service's store: its SQLite file in `dataDir`, or the PostgreSQL database `url`. */
async function rows(kind: StoreKind, dataDir: string, url: string | undefined, sql: string): Promise<Record<string, unknown>[]> {
    if (kind === "sqlite") {
        const raw = new Database(path.join(dataDir, "k8s-vnf-lcm.sqlite"), { readonly: true });
        try {
            return raw.prepare(sql).all() as Record<string, unknown>[];
        } finally {
            raw.close();
        }
    }
    return query(url!, sql);
}

/**
 * Where a test secret is kept: any file of the data directory; with PostgreSQL also any row of the database
 * and any file of its server (its tables, its write-ahead log, once checkpointed).
 */
async function holding(kind: StoreKind, dataDir: string, url: string | undefined): Promise<string[]> {
    if (kind === "sqlite") return filesHolding(dataDir, SECRETS, "k8s-vnf-lcm.sqlite");
    const found = filesHolding(dataDir, SECRETS);
    const all = await rows(kind, dataDir, url, "SELECT 'vnf_instances' AS t, id, body, sealed FROM vnf_instances UNION ALL SELECT 'op_occs', id, body, sealed FROM op_occs UNION ALL SELECT 'subscriptions', id, body, sealed FROM subscriptions UNION ALL SELECT 'vims', id, body, sealed FROM vims");
    assert.ok(all.length >= 4, "the rows are among what is searched");
    for (const row of all) for (const secret of SECRETS) if (spelledIn(Buffer.from(JSON.stringify(row)), secret)) found.push(`row ${row.t} ${row.id}: ${secret}`);
    const server = await sharedPostgres();
    await query(server.url, "CHECKPOINT");
    return [...found, ...filesHolding(server.dir, SECRETS, "PG_VERSION")];
}

/** Every file under `dir` that holds one of `secrets` in some spelling (`expected`: a file that must be among them). */
function filesHolding(dir: string, secrets: string[], expected?: string): string[] {
    const files = fs.readdirSync(dir, { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
    if (expected) assert.ok(files.some((f) => f.name === expected), `${expected} is among the files searched`);
    return files.flatMap((f) => {
        const file = path.join(f.parentPath, f.name);
        const bytes = fs.readFileSync(file);
        return secrets.flatMap((s) => {
            const how = spelledIn(bytes, s);
            return how ? [`${path.relative(dir, file)}: ${s} (${how})`] : [];
        });
    });
}

class RecordingRunner implements StackRunner {
    failNext = false;
    readonly ups: { config: Record<string, any>; env: Record<string, string> }[] = [];
    async up(_stack: string, config: Record<string, any>, options: RunOptions): Promise<Record<string, unknown>> {
        this.ups.push({ config: structuredClone(config), env: options.env });
        if (this.failNext) {
            this.failNext = false;
            throw new Error("the update failed (a test's fault)");
        }
        return { vnfcResources: [], scale: { worker_instance: { count: 2, min: 2, max: 4 } } };
    }
    async preview(): Promise<void> {}
    async destroy(): Promise<void> {}
    async recover(): Promise<string> {
        return "nothing was running";
    }
}

/** A loopback callback endpoint recording each POST's Authorization header. */
async function callbackEndpoint() {
    const authorizations: string[] = [];
    const server = http.createServer((req, res) => {
        req.resume();
        req.on("end", () => {
            if (req.method === "POST") authorizations.push(String(req.headers.authorization));
            res.writeHead(204).end();
        });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`, authorizations, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const newKey = () => randomBytes(32).toString("base64");


describe("LCM service: secrets at rest, sealed in the database and opened where they are needed", function () {
    this.timeout(60_000);
    let dir: string;
    beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-sealed-"))));
    afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

    for (const kind of STORE_KINDS) {
        it(`${kind === "sqlite" ? "SQLite" : "PostgreSQL"}: a VIM's password, a subscription's credentials and a request's passwords are in no file of the data directory${kind === "postgres" ? ", no row of the database and no file of its server" : ""}, and a retry after a restart still gets them`, async function () {
            if (kind === "postgres") skipUnlessPostgres(this);
            const dataDir = path.join(dir, "data");
            const store = await storeFor(kind, dataDir);
            const keyFile = path.join(dir, "secrets.key");
            fs.writeFileSync(keyFile, `${newKey()}\n`, { mode: 0o600 });
            const runner = new RecordingRunner();
            const callback = await callbackEndpoint();
            const start = () => createService({ dataDir, ...store, runner, env: {}, secretsKeyFile: keyFile, allowLoopbackCallbacks: true, delivery: { attempts: 1, firstPauseMs: 10 } });
            let service: Service | undefined = await start();
            try {
                const call = async (method: string, route: string, body?: unknown) => {
                    const answer = await service!.app.inject({ method: method as "GET", url: route, payload: body as object | undefined });
                    return { status: answer.statusCode, body: answer.body ? answer.json() : undefined, location: answer.headers.location as string | undefined };
                };
                const subscribed = await call("POST", "/vnflcm/v1/subscriptions", {
                    callbackUri: callback.url,
                    authentication: { authType: ["BASIC"], paramsBasic: { userName: "nfvo", password: CALLBACK_PASSWORD } },
                });
                assert.equal(subscribed.status, 201, JSON.stringify(subscribed.body));
                const vim = await call("POST", "/k8s-vnf/v1/vims", { name: "tenant-cloud", authUrl: "http://keystone.example:5000/v3", username: "nfv_user", password: KEYSTONE_PASSWORD, projectName: "nfv" });
                assert.equal(vim.status, 201, JSON.stringify(vim.body));
                const id = (await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177" })).body.id;
                const body = request("kubespray-instantiate.json");
                body.vimConnectionInfo = [{ id: "vim-1", vimId: vim.body.id, vimType: "ETSINFV.OPENSTACK_KEYSTONE.V_3" }];
                body.additionalParams.k8s_cluster_installation_param.external_lb_param.ssh_password = LB_PASSWORD;
                body.additionalParams.k8s_cluster_installation_param.ansible.password = ANSIBLE_PASSWORD;
                runner.failNext = true;
                const accepted = await call("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, body);
                assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
                const opId = accepted.location!.split("/").pop()!;
                const settled = async () => {
                    for (let i = 0; i < 400; i++) {
                        const op = (await call("GET", `/vnflcm/v1/vnf_lcm_op_occs/${opId}`)).body;
                        if (!["STARTING", "PROCESSING"].includes(op.operationState)) return op;
                        await new Promise((r) => setTimeout(r, 25));
                    }
                    assert.fail(`${opId} did not settle`);
                };
                assert.equal((await settled()).operationState, "FAILED_TEMP");
                await service.close();
                service = undefined;

                assert.deepEqual(await holding(kind, dataDir, store.database), []);
                const sealedRows = await rows(kind, dataDir, store.database, "SELECT 'vims' AS t, sealed FROM vims UNION ALL SELECT 'subscriptions', sealed FROM subscriptions UNION ALL SELECT 'op_occs', sealed FROM op_occs");
                for (const t of ["vims", "subscriptions", "op_occs"]) assert.ok(sealedRows.some((r) => r.t === t && /^v1\.[0-9a-f]{12}\./.test(String(r.sealed))), `${t} has a sealed row`);

                service = await start();
                const retried = await call("POST", `/vnflcm/v1/vnf_lcm_op_occs/${opId}/retry`);
                assert.equal(retried.status, 202, JSON.stringify(retried.body));
                assert.equal((await settled()).operationState, "COMPLETED");
                const retry = runner.ups[runner.ups.length - 1];
                assert.equal(runner.ups.length, 2);
                const config = JSON.stringify(retry.config);
                assert.ok(config.includes(LB_PASSWORD) && config.includes(ANSIBLE_PASSWORD), "the retry's stack config has the request's passwords");
                assert.equal(retry.env.OS_PASSWORD, KEYSTONE_PASSWORD, "the retry runs with the VIM's password");
                for (let i = 0; i < 200 && !callback.authorizations.some((a) => a.startsWith("Basic")); i++) await new Promise((r) => setTimeout(r, 20));
                assert.ok(callback.authorizations.includes(`Basic ${Buffer.from(`nfvo:${CALLBACK_PASSWORD}`).toString("base64")}`), "notifications after the restart carry the subscription's credentials");
                const shown = JSON.stringify([(await call("GET", "/k8s-vnf/v1/vims")).body, (await call("GET", "/vnflcm/v1/subscriptions")).body, (await call("GET", "/vnflcm/v1/vnf_lcm_op_occs?all_fields")).body]);
                for (const secret of SECRETS) assert.ok(!shown.includes(secret), `${secret} shown by a GET`);
                await service.close();
                service = undefined;
                assert.deepEqual(await holding(kind, dataDir, store.database), []);
            } finally {
                await service?.close();
                await callback.stop();
            }
        });
    }

    it("a database of a release that did not seal: its rows are sealed at the first start, no plain copy left in the file or its log (a deleted row's leftovers included)", async () => {
        const file = path.join(dir, "k8s-vnf-lcm.sqlite");
        const old = new Database(file);
        old.pragma("journal_mode = WAL");
        // The earlier release's schema, as it made it.
        old.exec(`
            CREATE TABLE vnf_instances (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
            CREATE TABLE op_occs (id TEXT PRIMARY KEY, vnf_instance_id TEXT NOT NULL, state TEXT NOT NULL, created INTEGER NOT NULL, body TEXT NOT NULL);
            CREATE INDEX op_occs_instance ON op_occs (vnf_instance_id, created);
            CREATE TABLE subscriptions (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);
            CREATE TABLE vims (id TEXT PRIMARY KEY, created INTEGER NOT NULL, body TEXT NOT NULL);`);
        old.prepare("INSERT INTO vims VALUES (?, ?, ?)").run("v1", 1, JSON.stringify({ id: "v1", name: "cloud", __password: KEYSTONE_PASSWORD, __created: 1 }));
        old.prepare("INSERT INTO op_occs VALUES (?, ?, ?, ?, ?)").run("o1", "i1", "FAILED_TEMP", 2, JSON.stringify({ id: "o1", vnfInstanceId: "i1", operationState: "FAILED_TEMP", __plan: { config: { externalLoadBalancer: { password: LB_PASSWORD } } } }));
        // A VIM the old release deleted: its row's content stays in the file's free space until it is rebuilt.
        old.prepare("INSERT INTO vims VALUES (?, ?, ?)").run("v0", 0, JSON.stringify({ id: "v0", notes: "n".repeat(30_000), __password: CALLBACK_PASSWORD }));
        old.prepare("DELETE FROM vims WHERE id = 'v0'").run();
        old.close();
        assert.deepEqual(filesHolding(dir, [KEYSTONE_PASSWORD, CALLBACK_PASSWORD], "k8s-vnf-lcm.sqlite").length, 2, "the old file holds both passwords: the test can fail");

        const store = await openSqlite(dir);
        try {
            assert.equal((await store.get("vims", "v1"))!.__password, KEYSTONE_PASSWORD);
            assert.equal(((await store.get("op_occs", "o1"))!.__plan as any).config.externalLoadBalancer.password, LB_PASSWORD);
        } finally {
            await store.close();
        }
        assert.deepEqual(filesHolding(dir, [KEYSTONE_PASSWORD, LB_PASSWORD, CALLBACK_PASSWORD], "k8s-vnf-lcm.sqlite"), []);
        const raw = new Database(file, { readonly: true });
        try {
            assert.deepEqual(JSON.parse((raw.prepare("SELECT body FROM vims WHERE id = 'v1'").get() as { body: string }).body), { id: "v1", name: "cloud", __password: "[secret]", __created: 1 }, "the row keeps its body masked");
        } finally {
            raw.close();
        }
    });

    it("rotation: a new key first seals every row again at start; then the old key can go; a key that opens none of them is refused, naming the one that would", async () => {
        const [k1, k2, k3] = [newKey(), newKey(), newKey()];
        const keyFile = path.join(dir, "keys");
        const keyring = (...keys: string[]) => {
            fs.writeFileSync(keyFile, keys.join("\n"));
            return SecretsKeyring.load({ keyFile, dataDir: dir });
        };
        const sealedWith = () => {
            const raw = new Database(path.join(dir, "k8s-vnf-lcm.sqlite"), { readonly: true });
            try {
                return (raw.prepare("SELECT sealed FROM subscriptions").all() as { sealed: string }[]).map((r) => r.sealed.split(".")[1]);
            } finally {
                raw.close();
            }
        };
        const first = keyring(k1);
        let store = await openSqlite(dir, first);
        await store.put([0, 1, 2].map((i) => ({ table: "subscriptions" as const, id: `s${i}`, body: { id: `s${i}`, __authentication: { paramsBasic: { userName: "u", password: `${CALLBACK_PASSWORD}-${i}` } } } })));
        await store.close();
        assert.deepEqual(sealedWith(), [first.sealingKeyId, first.sealingKeyId, first.sealingKeyId]);

        const rotated = keyring(k2, k1);
        store = await openSqlite(dir, rotated);
        await store.close();
        assert.notEqual(rotated.sealingKeyId, first.sealingKeyId);
        assert.deepEqual(sealedWith(), [rotated.sealingKeyId, rotated.sealingKeyId, rotated.sealingKeyId]);

        store = await openSqlite(dir, keyring(k2));
        try {
            assert.deepEqual((await store.list("subscriptions")).map((s) => (s.__authentication as any).paramsBasic.password), [0, 1, 2].map((i) => `${CALLBACK_PASSWORD}-${i}`));
        } finally {
            await store.close();
        }
        await assert.rejects(openSqlite(dir, keyring(k3)), (e: Error) => {
            assert.ok(e instanceof SecretsKeyError);
            assert.match(e.message, new RegExp(`^subscriptions s0: its secrets are sealed with key ${rotated.sealingKeyId}, which the secrets keys given \\(--secrets-key-file .*keys\\) do not hold; give that key too$`));
            return true;
        });
        assert.deepEqual(sealedWith(), [rotated.sealingKeyId, rotated.sealingKeyId, rotated.sealingKeyId], "a refused start changes nothing");
    });

    it("PostgreSQL, a rolling rotation: what a replica still sealing with the old key writes after another has sealed every row with the new one is sealed again at its own restart; then the old key can go", async function () {
        skipUnlessPostgres(this);
        const database = await (await sharedPostgres()).newDatabase();
        const [k1, k2] = [newKey(), newKey()];
        const keyring = (...keys: string[]) => SecretsKeyring.load({ env: { K8S_VNF_LCM_SECRETS_KEY: keys.join(",") }, dataDir: dir });
        const open = (ring: SecretsKeyring) => PostgresStore.open(database, ring, DEFAULT_LEASE_MS);
        const subscription = (i: number) => ({ table: "subscriptions" as const, id: `s${i}`, body: { id: `s${i}`, __authentication: { paramsBasic: { userName: "u", password: `${CALLBACK_PASSWORD}-${i}` } } } });
        const sealedWith = async () => (await query(database, "SELECT id, sealed FROM subscriptions ORDER BY id")).map((r) => `${r.id} ${String(r.sealed).split(".")[1]}`);
        const [old, rotated] = [keyring(k1, k2), keyring(k2, k1)];
        // The first rolling restart is done: replica A opens both keys, and still seals with the old one.
        const a = await open(old);
        await a.put([subscription(0)]);
        // The second: B restarts with the new key first, and seals every row with it; A has not restarted yet.
        const b = await open(rotated);
        await a.put([subscription(1)]);
        assert.deepEqual(await sealedWith(), [`s0 ${rotated.sealingKeyId}`, `s1 ${old.sealingKeyId}`]);
        await a.close();
        // A's restart with the new key first seals its row again.
        const restarted = await open(keyring(k2, k1));
        assert.deepEqual(await sealedWith(), [`s0 ${rotated.sealingKeyId}`, `s1 ${rotated.sealingKeyId}`]);
        await Promise.all([b.close(), restarted.close()]);
        const newOnly = await open(keyring(k2));
        try {
            assert.deepEqual((await newOnly.list("subscriptions")).map((s) => (s.__authentication as any).paramsBasic.password), [`${CALLBACK_PASSWORD}-0`, `${CALLBACK_PASSWORD}-1`]);
        } finally {
            await newOnly.close();
        }
    });

    for (const kind of STORE_KINDS) {
        it(`${kind === "sqlite" ? "SQLite" : "PostgreSQL"}: a GET shows a row as stored, masked, without opening its seal: one no key opens is still shown, where the service's own reads refuse it`, async function () {
            if (kind === "postgres") skipUnlessPostgres(this);
            const dataDir = path.join(dir, `data-${kind}`);
            const store = await storeFor(kind, dataDir);
            const service = await createService({ dataDir, ...store, runner: new RecordingRunner(), env: {} });
            try {
                const registered = await service.app.inject({ method: "POST", url: "/k8s-vnf/v1/vims", payload: { name: "cloud", authUrl: "http://keystone.example:5000/v3", username: "nfv_user", password: KEYSTONE_PASSWORD, projectName: "nfv" } });
                assert.equal(registered.statusCode, 201, registered.body);
                const id = registered.json().id as string;
                // Its seal now names a key nobody gave.
                const alter = "UPDATE vims SET sealed = 'v1.0123456789ab.' || substr(sealed, 17)";
                if (kind === "sqlite") {
                    const raw = new Database(path.join(dataDir, "k8s-vnf-lcm.sqlite"));
                    raw.prepare(alter).run();
                    raw.close();
                } else {
                    await query(store.database!, alter);
                }
                await assert.rejects(service.store.get("vims", id), (e: Error) => e instanceof SecretsKeyError && /sealed with key 0123456789ab/.test(e.message));
                assert.equal((await service.store.getMasked("vims", id))?.__password, "[secret]");
                for (const url of [`/k8s-vnf/v1/vims/${id}`, `/k8s-vnf/v1/vims`, `/v1.0/vims/${id}`, `/v1.0/vims`]) {
                    const shown = await service.app.inject({ method: "GET", url });
                    assert.equal(shown.statusCode, 200, `${url}: ${shown.body}`);
                    assert.match(shown.body, /keystone\.example/);
                    assert.ok(!shown.body.includes(KEYSTONE_PASSWORD) && !shown.body.includes("__password"), shown.body);
                }
            } finally {
                await service.close();
            }
        });
    }

    it("a sealed value moved to another row, or altered, does not open; a row with no secret has no seal; with no key given one is made once, the database's alone", async () => {
        const store = await openSqlite(dir);
        try {
            await store.put([
                { table: "vims", id: "a", body: { id: "a", __password: "pw-a-1234" } },
                { table: "vims", id: "b", body: { id: "b", __password: "pw-b-5678" } },
                { table: "vims", id: "c", body: { id: "c", name: "no secret" } },
            ]);
        } finally {
            await store.close();
        }
        const keyFile = path.join(dir, "secrets.key");
        assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
        const key = fs.readFileSync(keyFile, "utf8");
        const raw = new Database(path.join(dir, "k8s-vnf-lcm.sqlite"));
        const sealed = (id: string) => (raw.prepare("SELECT sealed FROM vims WHERE id = ?").get(id) as { sealed: string | null }).sealed;
        assert.equal(sealed("c"), null);
        const ofA = sealed("a")!;
        raw.prepare("UPDATE vims SET sealed = ? WHERE id = 'b'").run(ofA);
        raw.close();
        let reopened = await openSqlite(dir);
        try {
            assert.equal(fs.readFileSync(keyFile, "utf8"), key, "the key made at first start is kept");
            assert.equal((await reopened.get("vims", "a"))!.__password, "pw-a-1234");
            await assert.rejects(reopened.get("vims", "b"), /^Error: vims b: its sealed secrets do not open with key [0-9a-f]{12} \(altered, or sealed for another row\)$/);
        } finally {
            await reopened.close();
        }
        const altered = new Database(path.join(dir, "k8s-vnf-lcm.sqlite"));
        const [format, keyId, iv, data] = ofA.split(".");
        const bytes = Buffer.from(data, "base64");
        bytes[0] ^= 1;
        altered.prepare("UPDATE vims SET sealed = ? WHERE id = 'a'").run([format, keyId, iv, bytes.toString("base64")].join("."));
        altered.close();
        reopened = await openSqlite(dir);
        try {
            await assert.rejects(reopened.get("vims", "a"), /vims a: its sealed secrets do not open/);
        } finally {
            await reopened.close();
        }
    });
});
