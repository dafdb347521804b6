/**
 * Text from a request (values, field names, the file's own name) as the CLI shows it: on a terminal, in a
 * stack file's comments. Such text may carry escape sequences that clear or retitle a terminal, line breaks
 * that forge lines (or YAML keys after a `#`), and megabytes of a single value.
 */

/** Longest piece of request-derived text shown (field paths, names, values). */
export const PRINTABLE_LIMIT = 200;

/**
 * Characters never shown raw: C0 controls (ESC starts terminal escape sequences), DEL, C1 controls (U+009B is
 * an 8-bit CSI), the line and paragraph separators and NEL (line breaks to YAML 1.1 readers such as Pulumi's
 * go-yaml), and the bidirectional controls that reorder text on screen.
 */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The unsafe characters that JSON-style escaping (the yaml package's double-quoted style) leaves raw. */
const UNSAFE_ABOVE_ASCII = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `\x1b`, `\u2028`: a visible escape that is also valid in a YAML double-quoted scalar. */
function escapeChar(ch: string): string {
    const code = ch.charCodeAt(0);
    return NAMED[ch] ?? (code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`);
}

export function hasUnsafeChars(text: string): boolean {
    return text.search(UNSAFE) >= 0;
}

/** Escapes the unsafe characters that are left raw in a YAML double-quoted scalar's JSON-style escaping. */
export function escapeAboveAscii(yamlText: string): string {
    return yamlText.replace(UNSAFE_ABOVE_ASCII, escapeChar);
}

/**
 * One line of text safe to print: unsafe characters shown as escapes (`\x1b[2J`, `\n`), and at most `limit`
 * characters, a longer text cut with its original length (`… [1048576 characters]`).
 */
export function printable(text: string, limit = PRINTABLE_LIMIT): string {
    const escaped = text.replace(UNSAFE, escapeChar);
    if (escaped.length <= limit) return escaped;
    // Cut neither an escape nor a surrogate pair in half.
    let cut = escaped.slice(0, limit).replace(/\\(x[0-9a-f]?|u[0-9a-f]{0,3})?$/, "");
    if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
    return `${cut}… [${text.length} characters]`;
}
