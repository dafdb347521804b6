/**
 * The host scripts, read when the program loads: each is sent to the host as `lib.sh` followed by the
 * script (beside its step, in `dir`), and travels with its serialized provider as a string. Their `report`
 * actions print `key=value` lines.
 */
import * as fs from "node:fs";
import * as path from "node:path";

export function loadNodeScript(file: string, dir = __dirname): string {
    const lib = fs.readFileSync(path.join(__dirname, "lib.sh"), "utf8");
    return `${lib}\n${fs.readFileSync(path.join(dir, file), "utf8")}`;
}

/** A script's `key=value` report lines as an object (a value may itself contain '='). */
export function parseReport(text: string): Record<string, string> {
    return Object.fromEntries(text.split("\n").filter((l) => l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
}
