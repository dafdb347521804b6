/**
 * A stack's outputs as the CLI keeps them in its state: secret outputs encrypted with the stack's secrets
 * manager, shown as "[secret]" unless `--show-secrets` (pkg/cmd/pulumi/stack/stack_output.go). The stand-in
 * keeps them next to the test engine's checkpoint, from each successful update's result.
 */
import * as fs from "node:fs";
import type { RunResult } from "../../engine";
import { Crypter } from "./passphrase";

type Stored = Record<string, { value: unknown } | { secure: string }>;

export function saveOutputs(file: string, outputs: RunResult["outputs"], crypter: Crypter): void {
    const stored: Stored = Object.fromEntries(Object.entries(outputs).map(([k, o]) => [k, o.secret ? { secure: crypter.encrypt(JSON.stringify(o.value)) } : { value: o.value }]));
    fs.writeFileSync(file, JSON.stringify(stored), { mode: 0o600 });
}

/** The outputs, secrets decrypted with `crypter` or, without one, shown as "[secret]". */
export function loadOutputs(file: string, crypter: Crypter | undefined): Record<string, unknown> {
    if (!fs.existsSync(file)) return {};
    const stored = JSON.parse(fs.readFileSync(file, "utf8")) as Stored;
    return Object.fromEntries(Object.entries(stored).map(([k, o]) => [k, "secure" in o ? (crypter ? JSON.parse(crypter.decrypt(o.secure)) : "[secret]") : o.value]));
}
