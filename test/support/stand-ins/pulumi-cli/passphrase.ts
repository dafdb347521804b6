/**
 * The passphrase secrets manager, as the Pulumi CLI implements it (v3.248.0):
 * pkg/secrets/passphrase/manager.go (`NewPassphraseSecretsManager`, `symmetricCrypterFromPhraseAndState`,
 * `readPassphrase`) and sdk/go/common/resource/config/crypt.go (`NewSymmetricCrypterFromPassphrase`,
 * `symmetricCrypter`): a key from PBKDF2-SHA256 (1,000,000 iterations, 8-byte salt), values sealed with
 * AES-256-GCM under a fresh 12-byte nonce and written `v1:<nonce>:<ciphertext+tag>` (base64). The stack's
 * `encryptionsalt` is `v1:<salt>:` followed by the word "pulumi" sealed with that key, which is how a
 * wrong passphrase is recognised.
 */
import { createCipheriv, createDecipheriv, pbkdf2Sync, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

const ITERATIONS = 1_000_000;
const TAG_BYTES = 16;

export class Crypter {
    private constructor(private readonly key: Buffer) {}

    static fromPassphrase(phrase: string, salt: Buffer): Crypter {
        return new Crypter(pbkdf2Sync(phrase, salt, ITERATIONS, 32, "sha256"));
    }

    encrypt(plaintext: string): string {
        const nonce = randomBytes(12);
        const cipher = createCipheriv("aes-256-gcm", this.key, nonce);
        const sealed = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
        return `v1:${nonce.toString("base64")}:${sealed.toString("base64")}`;
    }

    decrypt(value: string): string {
        const parts = value.split(":");
        if (parts.length !== 3) throw new Error("bad value");
        if (parts[0] !== "v1") throw new Error("unknown value version");
        const nonce = Buffer.from(parts[1], "base64");
        const sealed = Buffer.from(parts[2], "base64");
        if (nonce.length !== 12) throw new Error("bad value: nonce size is incorrect");
        const decipher = createDecipheriv("aes-256-gcm", this.key, nonce);
        decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
        return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    }
}

/** A new passphrase secrets manager: its state (the stack's `encryptionsalt`) and its crypter. */
export function newPassphraseState(phrase: string): { state: string; crypter: Crypter } {
    const salt = randomBytes(8);
    const crypter = Crypter.fromPassphrase(phrase, salt);
    return { state: `v1:${salt.toString("base64")}:${crypter.encrypt("pulumi")}`, crypter };
}

/** The crypter of an existing `encryptionsalt`; a wrong passphrase is "incorrect passphrase". */
export function crypterFromState(phrase: string, state: string): Crypter {
    const splits = state.split(":");
    if (splits.length < 3) throw new Error("malformed state value");
    if (splits[0] !== "v1") throw new Error("unknown state version");
    const crypter = Crypter.fromPassphrase(phrase, Buffer.from(splits[1], "base64"));
    let check: string | undefined;
    try {
        check = crypter.decrypt(splits.slice(2).join(":"));
    } catch {
        check = undefined;
    }
    if (check !== "pulumi") throw new Error("incorrect passphrase");
    return crypter;
}

/** `readPassphrase` in non-interactive mode: the environment, or a refusal. */
export function readPassphrase(env: NodeJS.ProcessEnv): string {
    if (env.PULUMI_CONFIG_PASSPHRASE !== undefined) return env.PULUMI_CONFIG_PASSPHRASE;
    const file = env.PULUMI_CONFIG_PASSPHRASE_FILE;
    if (file) {
        try {
            return fs.readFileSync(path.resolve(file), "utf8").trim();
        } catch (e) {
            throw new Error(`unable to read PULUMI_CONFIG_PASSPHRASE_FILE: ${(e as Error).message}`);
        }
    }
    throw new Error("passphrase must be set with PULUMI_CONFIG_PASSPHRASE or PULUMI_CONFIG_PASSPHRASE_FILE environment variables");
}
