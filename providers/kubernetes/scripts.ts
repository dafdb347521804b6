/**
 * The node scripts, read when the program loads: each is sent to the host as `lib.sh` followed by the
 * script, and travels with its serialized provider as a string.
 */
import * as fs from "node:fs";
import * as path from "node:path";

export function loadNodeScript(file: string): string {
    const read = (name: string) => fs.readFileSync(path.join(__dirname, name), "utf8");
    return `${read("lib.sh")}\n${read(file)}`;
}
