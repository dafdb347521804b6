/**
 * Secrets at rest: what the project's one rule calls secret (config/secrets.ts findSecretLeaves: a VIM's
 * password and tokens, a subscription's callback credentials, a request's passwords kept for retry and
 * rollback) never reaches the database as it is. A stored row holds its body masked, as a GET would show it,
 * and beside it one sealed value: its secret leaves, encrypted with AES-256-GCM under the operator's key,
 * bound to the row's table and id (the additional data), so a sealed value copied into another row does not
 * open.
 *
 * Keys are 32 random bytes in base64 (`openssl rand -base64 32`), one per line in a key file or in the
 * `K8S_VNF_LCM_SECRETS_KEY` environment variable (which no child process gets). The first seals; every one
 * opens. To rotate, put a new key first and keep the old one after it; at start the store seals every row
 * again with the first key, after which the old key may go: the way Kubernetes rotates its encryption at
 * rest (https://kubernetes.io/docs/tasks/administer-cluster/encrypt-data/#rotating-a-decryption-key).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { findSecretLeaves, maskSecrets } from "../config/secrets";

export const SECRETS_KEY_VARIABLE = "K8S_VNF_LCM_SECRETS_KEY";
/** Where the store makes a key when the operator gives none: beside the data, so it guards copies of the database alone. */
export const GENERATED_KEY_FILE = "secrets.key";

const FORMAT = "v1";
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

type Body = Record<string, unknown>;
type Trail = (string | number)[];

interface Key {
    id: string;
    bytes: Buffer;
}

/** Where the keys came from, as a start-up line may say it (never the keys). */
export type KeySource = { kind: "file"; file: string } | { kind: "environment" } | { kind: "generated"; file: string };

/** Keys that cannot be read or do not open what is stored: the service does not start. */
export class SecretsKeyError extends Error {}

export class SecretsKeyring {
    private constructor(
        private readonly keys: Key[],
        readonly source: KeySource,
    ) {}

    /**
     * The operator's keys: a file, else the environment variable, else a key made once in the data directory.
     * Refused with the place it was read from when a line is no 32-byte base64 key.
     */
    static load(options: { keyFile?: string; env?: NodeJS.ProcessEnv; dataDir: string }): SecretsKeyring {
        if (options.keyFile !== undefined) {
            let text: string;
            try {
                text = fs.readFileSync(options.keyFile, "utf8");
            } catch (e) {
                throw new SecretsKeyError(`--secrets-key-file: cannot read ${options.keyFile} (${(e as NodeJS.ErrnoException).code ?? "unreadable"})`);
            }
            return new SecretsKeyring(parseKeys(text, `--secrets-key-file ${options.keyFile}`), { kind: "file", file: options.keyFile });
        }
        const fromEnv = options.env?.[SECRETS_KEY_VARIABLE];
        if (fromEnv !== undefined && fromEnv.trim() !== "") return new SecretsKeyring(parseKeys(fromEnv, SECRETS_KEY_VARIABLE), { kind: "environment" });
        const file = path.join(options.dataDir, GENERATED_KEY_FILE);
        fs.mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
        if (!fs.existsSync(file)) fs.writeFileSync(file, `${randomBytes(KEY_BYTES).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
        return new SecretsKeyring(parseKeys(fs.readFileSync(file, "utf8"), file), { kind: "generated", file });
    }

    /** The id of the key that seals (a hash's prefix: it tells keys apart and reveals nothing of them). */
    get sealingKeyId(): string {
        return this.keys[0].id;
    }

    /** How a `sealed` value sealed with the sealing key begins. */
    get sealedPrefix(): string {
        return `${FORMAT}.${this.sealingKeyId}.`;
    }

    /** The row's body with its secrets masked, and its secrets sealed (undefined: it has none). */
    seal(table: string, id: string, body: Body): { body: Body; sealed: string | undefined } {
        const leaves = findSecretLeaves(body);
        if (leaves.length === 0) return { body, sealed: undefined };
        const secrets: [Trail, unknown][] = leaves.map(({ trail }) => [trail, valueAt(body, trail)]);
        const key = this.keys[0];
        const iv = randomBytes(IV_BYTES);
        const cipher = createCipheriv("aes-256-gcm", key.bytes, iv);
        cipher.setAAD(additionalData(table, id));
        const encrypted = Buffer.concat([cipher.update(JSON.stringify(secrets), "utf8"), cipher.final(), cipher.getAuthTag()]);
        return { body: maskSecrets(body), sealed: [FORMAT, key.id, iv.toString("base64"), encrypted.toString("base64")].join(".") };
    }

    /** The row's body with its secrets back in place; a row stored before sealing (none) is as it was. */
    open(table: string, id: string, body: Body, sealed: string | null | undefined): Body {
        if (!sealed) return body;
        const [format, keyId, iv, encrypted] = sealed.split(".");
        if (format !== FORMAT) throw new SecretsKeyError(`${table} ${id}: its secrets are sealed in a format this release does not know (${format})`);
        const key = this.keys.find((k) => k.id === keyId);
        if (!key) throw new SecretsKeyError(`${table} ${id}: its secrets are sealed with key ${keyId}, which the secrets keys given (${describeKeySource(this.source)}) do not hold; give that key too`);
        const data = Buffer.from(encrypted ?? "", "base64");
        let text: string;
        try {
            if (data.length < TAG_BYTES) throw new Error("too short");
            // The tag's length fixed: a cut-down tag would otherwise be taken as a shorter one.
            const decipher = createDecipheriv("aes-256-gcm", key.bytes, Buffer.from(iv ?? "", "base64"), { authTagLength: TAG_BYTES });
            decipher.setAAD(additionalData(table, id));
            decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
            text = Buffer.concat([decipher.update(data.subarray(0, data.length - TAG_BYTES)), decipher.final()]).toString("utf8");
        } catch {
            throw new SecretsKeyError(`${table} ${id}: its sealed secrets do not open with key ${keyId} (altered, or sealed for another row)`);
        }
        for (const [trail, value] of JSON.parse(text) as [Trail, unknown][]) setAt(body, trail, value);
        return body;
    }
}

/** Where keys came from, for messages. */
export function describeKeySource(source: KeySource): string {
    return source.kind === "environment" ? SECRETS_KEY_VARIABLE : source.kind === "file" ? `--secrets-key-file ${source.file}` : `the generated ${source.file}`;
}

function parseKeys(text: string, where: string): Key[] {
    const lines = text
        .split(/[\n,]/)
        .map((l) => l.trim())
        .filter((l) => l !== "" && !l.startsWith("#"));
    if (lines.length === 0) throw new SecretsKeyError(`${where}: no key; each line is 32 random bytes in base64 (openssl rand -base64 32)`);
    return lines.map((line, i) => {
        const bytes = Buffer.from(line, "base64");
        if (!/^[A-Za-z0-9+/]+={0,2}$/.test(line) || bytes.length !== KEY_BYTES) throw new SecretsKeyError(`${where}: key ${i + 1} is not 32 bytes in base64 (openssl rand -base64 32)`);
        return { id: createHash("sha256").update(bytes).digest("hex").slice(0, 12), bytes };
    });
}

function additionalData(table: string, id: string): Buffer {
    return Buffer.from(JSON.stringify([table, id]), "utf8");
}

function valueAt(root: unknown, trail: Trail): unknown {
    return trail.reduce<any>((node, step) => node[step], root);
}

function setAt(root: Body, trail: Trail, value: unknown): void {
    const parent = valueAt(root, trail.slice(0, -1)) as Record<string | number, unknown> | undefined;
    if (parent !== null && typeof parent === "object") parent[trail[trail.length - 1]] = value;
}
