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
    const walk = (value: unknown, trail: (string | number)[], underSecretName: boolean): void => {
        if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...trail, i], underSecretName));
        else if (value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) walk(v, [...trail, k], underSecretName || isSecretName(k));
        else if ((typeof value === "string" && value !== "") || typeof value === "number") {
            const text = String(value);
            if (underSecretName) found.push({ trail, value: text, byName: true });
            else if (typeof value === "string" && carriesCredential(text)) found.push({ trail, value: text, byName: false });
        }
    };
    walk(root, [], false);
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

/** The spellings a secret value may take in a text: as it is, JSON-escaped, URL-encoded, base64, a URL's password. */
function spellings(secret: string): string[] {
    const forms = [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret), Buffer.from(secret).toString("base64").replace(/=+$/, "")];
    const password = /^[a-z][a-z0-9+.-]*:\/\/[^\s/@:]*:([^\s/@]+)@/i.exec(secret)?.[1];
    if (password) forms.push(password, safeDecode(password));
    return forms;
}

function safeDecode(text: string): string {
    try {
        return decodeURIComponent(text);
    } catch {
        return text;
    }
}

/**
 * Text for logs, errors and notifications with secrets taken out: every value in `known`, in each of its
 * spellings (at least 4 characters, longest first, so a secret containing another goes whole), then what the
 * text itself shows to be one: a URL's user info, a PEM private key's body, an Authorization header's
 * credentials, and the value of a quoted secret-named key (`'masternode_password': '…'`, a dict in a string).
 */
export function redactText(text: string, known: Iterable<string> = []): string {
    let out = text;
    const values = [...new Set([...known].flatMap(spellings))].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
    for (const secret of values) out = out.split(secret).join(MASK);
    return out
        .replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, `$1${MASK}@`)
        .replace(/-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?(-----END \1PRIVATE KEY-----|$)/g, `-----BEGIN $1PRIVATE KEY-----${MASK}-----END $1PRIVATE KEY-----`)
        .replace(/\b(Basic|Bearer) (?=[A-Za-z0-9+/=._~-]*\d)[A-Za-z0-9+/=._~-]{12,}/g, `$1 ${MASK}`)
        .replace(/(["'])([A-Za-z0-9_.-]+)\1(\s*:\s*)(["'])((?:\\.|(?!\4).)*)\4/g, (all, q, name, colon, vq, value) => (isSecretName(name) && value !== MASK ? `${q}${name}${q}${colon}${vq}${MASK}${vq}` : all));
}
