/**
 * The host scripts, read when the program loads: each is sent to the host as `lib.sh`, then the shared
 * `libraries` it names, then the script itself (beside its step, in `dir`), and travels with its serialized
 * provider as a string. Their `report` actions print `key=value` lines.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { HostScript } from "../transport/ssh";

/** containerd's copy of the registry logins, a block of its config.toml (containerdLogins.sh). */
export const CONTAINERD_LOGINS_LIBRARY = path.join(__dirname, "containerdLogins.sh");

/** Cinder volumes found, formatted once and mounted (providers/storage/volumes.sh). */
export const VOLUMES_LIBRARY = path.join(__dirname, "..", "storage", "volumes.sh");

export function loadNodeScript(file: string, dir = __dirname, ...libraries: string[]): HostScript {
    return { text: [path.join(__dirname, "lib.sh"), ...libraries, path.join(dir, file)].map((p) => fs.readFileSync(p, "utf8")).join("\n") };
}

/** A script's `key=value` report lines as an object (a value may itself contain '='). */
export function parseReport(text: string): Record<string, string> {
    return Object.fromEntries(text.split("\n").filter((l) => l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
}
