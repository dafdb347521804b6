/**
 * The project's one rule for what is secret, wherever a value comes from (stack config, a Tacker request, a
 * PATCH, a subscription, an error text): a string is secret when the name of its field says it holds a
 * credential, or when the value itself carries one. No list of known fields: Tacker's `ssh_password`,
 * `accessInfo.password`, `paramsBasic.password` and any future `clientSecret` or `bearer_token` fall under the
 * same words.
 */

export const MASK = "[secret]";

/** A field name's last word that makes its value a credential (`ssh_password`, `clientSecrets`, `OS_TOKEN`). */
const SECRET_LAST_WORDS = new Set(["password", "passwd", "passphrase", "passcode", "secret", "token", "credential", "kubeconfig", "authorization"]);
/** The word before a final `key` that makes it a credential (`privateKey`, `api_key`); `publicKey` is none. */
const SECRET_KEY_KINDS = new Set(["private", "api", "access", "secret", "encryption", "signing"]);

/**
 * `ssh_password` → [ssh, password]; `privateKey` → [private, key]; `OS_PASSWORD` → [os, password];
 * `SSHPassword` → [ssh, password]; plurals singular (`passwords` → password).
 */
function words(name: string): string[] {
    return name
        .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
        .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
        .split(/[^A-Za-z0-9]+/)
        .filter(Boolean)
        .map((w) => w.toLowerCase().replace(/(?<=[a-z]{3})s$/, ""));
}

/**
 * Whether a field of this name holds a credential: its last word says so (`tokenEndpoint` does not), or it is
 * a private or API key, or a key's data (a kubeconfig's `client-key-data`).
 */
export function isSecretName(name: string): boolean {
    if (name.length > NAME_KEPT_CHARS) return decideSecretName(name);
    let secret = secretNames.get(name);
    if (secret === undefined) {
        secret = decideSecretName(name);
        if (secretNames.size >= SECRET_NAMES_KEPT) secretNames.clear();
        secretNames.set(name, secret);
    }
    return secret;
}

/**
 * Field names met so far and whether each is secret: the same few recur in every record a service reads. Only
 * names of a field's length are kept, at most so many: a request's keys are the client's to choose.
 */
const secretNames = new Map<string, boolean>();
const SECRET_NAMES_KEPT = 10_000;
const NAME_KEPT_CHARS = 64;

function decideSecretName(name: string): boolean {
    const w = words(name);
    const [before, last] = [w[w.length - 2] ?? "", w[w.length - 1]];
    if (last === undefined) return false;
    return SECRET_LAST_WORDS.has(last) || (last === "key" && SECRET_KEY_KINDS.has(before)) || (last === "data" && before === "key");
}

/** Whether a value carries a credential whatever its field: see {@link redactText}, which takes it out. */
export function carriesCredential(value: string): boolean {
    return MIGHT_CARRY.test(value) && redactText(value) !== value;
}

/** What every credential {@link redactText} finds by itself contains: a cheap test before the full one. */
const MIGHT_CARRY = /@|-----BEGIN|Basic |Bearer |['"]\s*:/;

export interface SecretLeaf {
    /** Keys and indices from the root (`["masters", "password"]`). */
    trail: (string | number)[];
    value: string;
    /** Secret by a field name on its trail (the whole value), not only by what the value carries. */
    byName: boolean;
}

/**
 * Every secret leaf in a JSON-like value: every string or number under a field whose name says secret (so each
 * element of a `passwords` list, each field of a `credentials` object), and every string that carries one.
 */
export function findSecretLeaves(root: unknown): SecretLeaf[] {
    const found: SecretLeaf[] = [];
    // One trail for the whole walk, copied only for a leaf found.
    const trail: (string | number)[] = [];
    const walk = (value: unknown, underSecretName: boolean): void => {
        if (Array.isArray(value)) {
            value.forEach((v, i) => {
                trail.push(i);
                walk(v, underSecretName);
                trail.pop();
            });
        } else if (value !== null && typeof value === "object") {
            for (const [k, v] of Object.entries(value)) {
                trail.push(k);
                walk(v, underSecretName || isSecretName(k));
                trail.pop();
            }
        } else if ((typeof value === "string" && value !== "") || typeof value === "number") {
            const text = String(value);
            if (underSecretName) found.push({ trail: [...trail], value: text, byName: true });
            else if (typeof value === "string" && carriesCredential(text)) found.push({ trail: [...trail], value: text, byName: false });
        }
    };
    walk(root, false);
    return found;
}

/**
 * A copy with every secret taken out, everything else as it was: a leaf under a secret name becomes
 * {@link MASK}; a value that only carries one keeps the rest (`http://[secret]@proxy:3128`).
 */
export function maskSecrets<T>(root: T): T {
    const leaves = findSecretLeaves(root);
    if (leaves.length === 0) return root;
    const copy = structuredClone(root) as any;
    for (const { trail, value, byName } of leaves) {
        let node = copy;
        for (const step of trail.slice(0, -1)) node = node[step];
        node[trail[trail.length - 1]] = byName ? MASK : redactText(value);
    }
    return copy;
}

/** Below this length a secret is taken out only where it stands as a whole token (`ab` is not taken out of `table`). */
const SHORT = 4;

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** One spelling of a secret in a text: `core` as it stands, with the base64 edge characters it may have. */
interface Spelling {
    core: string;
    /** The characters the one before `core` may be: base64 whose low bits are the secret's first. */
    lead?: string;
    /** The characters the one after `core` may be: base64 whose high bits are the secret's last; then any `=`. */
    trail?: string;
    /** A short secret's: only where it stands as a whole token, edges included. */
    token: boolean;
}

/** The base64 characters whose 6-bit value has `bits` where `mask` has ones. */
function base64Chars(mask: number, bits: number): string {
    return [...BASE64].filter((_, value) => (value & mask) === bits).join("");
}

/**
 * The secret's bytes inside any base64 text, at each of the three offsets mod 3 it may start at (the base64 of a
 * `user:password`, of a URL, of a file that holds it): the characters all six bits of which are the secret's,
 * and at either edge the characters that mix its bits with a neighbour's, as the set they can be.
 */
function base64Spellings(text: string, token: boolean): Spelling[] {
    const bytes = Buffer.from(text);
    const [first, last] = [bytes[0], bytes[bytes.length - 1]];
    return (token ? [0] : [0, 1, 2]).map((offset) => {
        const bits = (offset + bytes.length) * 8;
        const core = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64").slice(Math.ceil((offset * 8) / 6), Math.floor(bits / 6));
        const lead = offset === 1 ? base64Chars(0b001111, first >> 4) : offset === 2 ? base64Chars(0b000011, first >> 6) : undefined;
        const trail = bits % 6 === 2 ? base64Chars(0b110000, (last & 0b11) << 4) : bits % 6 === 4 ? base64Chars(0b111100, (last & 0b1111) << 2) : undefined;
        return { core, lead, trail, token };
    });
}

/** The secrets a value holds besides itself: each URL's password (as written and decoded) and `user:password`. */
function withUserInfo(value: string): string[] {
    const found = [value];
    for (const [, user, password] of value.matchAll(/[a-z][a-z0-9+.-]*:\/\/([^\s/@:]*):([^\s/@]+)@/gi)) {
        found.push(password, safeDecode(password));
        if (user) found.push(`${user}:${password}`, `${safeDecode(user)}:${safeDecode(password)}`);
    }
    return found;
}

/**
 * Every spelling of a secret: as it is, JSON-escaped (once, and twice as in JSON inside a JSON string),
 * URL-encoded (also with `+` for a space, as a form is), and the base64 of it and of its JSON-escaped form.
 */
function spellings(secret: string): Spelling[] {
    const token = secret.length < SHORT;
    const json = JSON.stringify(secret).slice(1, -1);
    const uri = encodeURIComponent(secret);
    const texts = [secret, json, JSON.stringify(json).slice(1, -1), uri, uri.replace(/%20/g, "+"), new URLSearchParams([["", secret]]).toString().slice(1)];
    return [...texts.map((core) => ({ core, token })), ...[...new Set([secret, json])].flatMap((text) => base64Spellings(text, token))];
}

function safeDecode(text: string): string {
    try {
        return decodeURIComponent(text);
    } catch {
        return text;
    }
}

const isWordChar = (c: string | undefined) => c !== undefined && /[A-Za-z0-9]/.test(c);

/** Whether [start, end) stands as a whole token; a JSON escape (`\n`, `\t`, `\r`) before it counts as a break. */
function standsAlone(text: string, start: number, end: number): boolean {
    const before = text[start - 1];
    return (!isWordChar(before) || ("nrt".includes(before) && text[start - 2] === "\\")) && !isWordChar(text[end]);
}

/** Where in `text` a spelling occurs, edges included, as [start, end) pairs. */
function occurrences(text: string, s: Spelling, found: [number, number][]): void {
    if (s.core === "") return;
    for (let at = text.indexOf(s.core); at !== -1; at = text.indexOf(s.core, at + 1)) {
        let [start, end] = [at, at + s.core.length];
        if (s.lead !== undefined) {
            if (start > 0 && s.lead.includes(text[start - 1])) start--;
            else if (s.token) continue;
        }
        if (s.trail !== undefined) {
            if (end < text.length && s.trail.includes(text[end])) for (end++; text[end] === "=" && end - at < s.core.length + 3; ) end++;
            else if (s.token) continue;
        }
        if (!s.token || standsAlone(text, start, end)) found.push([start, end]);
    }
}

/** The text with every spelling of every known value taken out, overlapping ones as one {@link MASK}. */
function redactKnown(text: string, known: Iterable<string>): string {
    const unique = new Map<string, Spelling>();
    for (const secret of new Set([...known].filter(Boolean).flatMap(withUserInfo))) for (const s of spellings(secret)) unique.set(`${s.token}\0${s.lead}\0${s.core}\0${s.trail}`, s);
    const found: [number, number][] = [];
    for (const s of unique.values()) occurrences(text, s, found);
    if (found.length === 0) return text;
    found.sort((a, b) => a[0] - b[0]);
    let out = "";
    let done = 0;
    for (let i = 0; i < found.length; ) {
        let end = found[i][1];
        const start = found[i][0];
        for (i++; i < found.length && found[i][0] < end; i++) end = Math.max(end, found[i][1]);
        out += text.slice(done, start) + MASK;
        done = end;
    }
    return out + text.slice(done);
}

/**
 * Text for logs, errors and notifications with secrets taken out: every value in `known`, in each spelling the
 * program, Pulumi or a tool shows it in, whatever its length (a short one only as a whole token); the
 * passwords and `user:password` of the URLs among them likewise. Then what the text itself shows to be one: a
 * URL's user info, a PEM private key's body, an Authorization header's credentials, and the value of a quoted
 * secret-named key (`'masternode_password': '…'`, a dict in a string).
 */
export function redactText(text: string, known: Iterable<string> = []): string {
    const out = redactKnown(text, known);
    return out
        .replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, `$1${MASK}@`)
        .replace(/-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?(-----END \1PRIVATE KEY-----|$)/g, `-----BEGIN $1PRIVATE KEY-----${MASK}-----END $1PRIVATE KEY-----`)
        .replace(/\b(Basic|Bearer) (?=[A-Za-z0-9+/=._~-]*\d)[A-Za-z0-9+/=._~-]{12,}/g, `$1 ${MASK}`)
        .replace(/(["'])([A-Za-z0-9_.-]+)\1(\s*:\s*)(["'])((?:\\.|(?!\4).)*)\4/g, (all, q, name, colon, vq, value) => (isSecretName(name) && value !== MASK ? `${q}${name}${q}${colon}${vq}${MASK}${vq}` : all));
}
