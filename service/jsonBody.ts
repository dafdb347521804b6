/**
 * Request bodies as the service reads them (application/json and application/merge-patch+json): an empty
 * body is no body (many clients send the content type with every request, a DELETE or a retry included);
 * nesting is bounded before the text is parsed, so no handler or validator ever recurses into a hostile
 * depth. The size is bounded by the server (`bodyLimit`).
 */
import { ProblemError } from "./problem";

/** Deeper than any SOL003 body (Tacker's fixed addresses sit at about 12 levels). */
export const MAX_JSON_DEPTH = 32;

/** The deepest nesting of objects and arrays in JSON text, counted outside strings; stops past `limit`. */
function nestingDepth(text: string, limit: number): number {
    let depth = 0;
    let deepest = 0;
    let inString = false;
    for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (inString) {
            if (c === 0x5c) i++; // backslash: skip the escaped character
            else if (c === 0x22) inString = false;
        } else if (c === 0x22) inString = true;
        else if (c === 0x7b || c === 0x5b) {
            if (++depth > deepest && (deepest = depth) > limit) return deepest;
        } else if (c === 0x7d || c === 0x5d) depth--;
    }
    return deepest;
}

export function parseJsonBody(text: string): unknown {
    if (text.trim() === "") return undefined;
    if (nestingDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) throw new ProblemError(400, `the body nests deeper than ${MAX_JSON_DEPTH} levels`);
    try {
        return JSON.parse(text);
    } catch (e) {
        // V8's message quotes the text around the error, which may be a secret: only the position is told.
        const position = /position (\d+)/.exec((e as Error).message)?.[1];
        throw new ProblemError(400, `the body is not JSON${position ? ` (at character ${position})` : ""}`);
    }
}
