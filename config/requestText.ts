/**
 * Reads a request body as operators keep them: JSON, possibly with `#` comments after values (Tacker's user
 * guide annotates its parameter files that way, e.g. `"vimId": "…", #Set the uuid of the VIM to use`).
 */
import { ConfigError } from "./spec";

/** Removes `#` comments that stand outside string literals; keeps line structure for error positions. */
export function stripHashComments(text: string): string {
    let out = "";
    let inString = false;
    for (let i = 0; i < text.length; i++) {
        const ch = text[i];
        if (inString) {
            out += ch;
            if (ch === "\\") out += text[++i] ?? "";
            else if (ch === '"') inString = false;
        } else if (ch === '"') {
            inString = true;
            out += ch;
        } else if (ch === "#") {
            while (i + 1 < text.length && text[i + 1] !== "\n") i++;
        } else {
            out += ch;
        }
    }
    return out;
}

export function parseRequestText(text: string, source = "request body"): unknown {
    const cleaned = stripHashComments(text.replace(/^\uFEFF/, ""));
    try {
        return JSON.parse(cleaned);
    } catch (e) {
        const message = (e as Error).message;
        const pos = /position (\d+)/.exec(message);
        let where = "";
        if (pos) {
            const before = cleaned.slice(0, Number(pos[1]));
            const line = before.split("\n").length;
            where = ` at line ${line}, column ${Number(pos[1]) - before.lastIndexOf("\n")}`;
        }
        throw new ConfigError([{ path: "", message: `not valid JSON${where}` }], source);
    }
}
