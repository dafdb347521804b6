/**
 * The project's one rule for what is secret, wherever a value comes from (stack config, a Tacker request, a
 * PATCH, a subscription, an error text): a string is secret when the name of its field says it holds a
 * credential, or when the value itself carries one. No list of known fields: Tacker's `ssh_password`,
 * `accessInfo.password`, `paramsBasic.password` and any future `clientSecret` or `bearer_token` fall under the
 * same words.
 */

export const MASK = "[secret]";

/** A field name's last word that makes its value a credential (`ssh_password`, `clientSecret`, `OS_TOKEN`). */
const SECRET_LAST_WORDS = new Set(["password", "passwd", "passphrase", "secret", "token", "credential", "credentials", "kubeconfig"]);
/** The word before a final `key` that makes it a credential (`privateKey`, `api_key`); `publicKey` is none. */
const SECRET_KEY_KINDS = new Set(["private", "api", "access", "secret", "encryption", "signing"]);

/** `ssh_password` → [ssh, password]; `privateKey` → [private, key]; `OS_PASSWORD` → [os, password]. */
function words(name: string): string[] {
    return name
        .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
        .split(/[^A-Za-z0-9]+/)
        .filter(Boolean)
        .map((w) => w.toLowerCase());
}

/** Whether a field of this name holds a credential: its last word says so (`tokenEndpoint` does not). */
export function isSecretName(name: string): boolean {
    const w = words(name);
    const last = w[w.length - 1];
    if (last === undefined) return false;
    return SECRET_LAST_WORDS.has(last) || (last === "key" && SECRET_KEY_KINDS.has(w[w.length - 2] ?? ""));
}

const URL_WITH_USERINFO = /[a-z][a-z0-9+.-]*:\/\/[^\s/@]+@/i;
const PEM_PRIVATE_KEY = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;

/** Whether a value carries a credential whatever its field: a URL with user info, a PEM private key. */
export function carriesCredential(value: string): boolean {
    return URL_WITH_USERINFO.test(value) || PEM_PRIVATE_KEY.test(value);
}

export interface SecretLeaf {
    /** Keys and indices from the root (`["masters", "password"]`). */
    trail: (string | number)[];
    value: string;
}

/**
 * Every secret string in a JSON-like value. A leaf is judged by the nearest field name above it, so each
 * element of a `passwords: [...]` list is secret too.
 */
export function findSecretLeaves(root: unknown): SecretLeaf[] {
    const found: SecretLeaf[] = [];
    const walk = (value: unknown, trail: (string | number)[], field: string | undefined): void => {
        if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...trail, i], field));
        else if (value !== null && typeof value === "object") for (const [k, v] of Object.entries(value)) walk(v, [...trail, k], k);
        else if (typeof value === "string" && value !== "" && ((field !== undefined && isSecretName(field)) || carriesCredential(value))) found.push({ trail, value });
    };
    walk(root, [], undefined);
    return found;
}

/** A copy with every secret leaf replaced by {@link MASK}; everything else as it was. */
export function maskSecrets<T>(root: T): T {
    const leaves = findSecretLeaves(root);
    if (leaves.length === 0) return root;
    const copy = structuredClone(root) as any;
    for (const { trail } of leaves) {
        let node = copy;
        for (const step of trail.slice(0, -1)) node = node[step];
        node[trail[trail.length - 1]] = MASK;
    }
    return copy;
}

/**
 * Text for logs, errors and notifications with secrets taken out: every value in `known` (at least 4
 * characters, longest first, so a secret containing another goes whole), then what the text itself shows to
 * be one: a URL's user info and a PEM private key's body.
 */
export function redactText(text: string, known: Iterable<string> = []): string {
    let out = text;
    const values = [...new Set(known)].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
    for (const secret of values) out = out.split(secret).join(MASK);
    return out
        .replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, `$1${MASK}@`)
        .replace(/-----BEGIN ([A-Z ]*)PRIVATE KEY-----[\s\S]*?(-----END \1PRIVATE KEY-----|$)/g, `-----BEGIN $1PRIVATE KEY-----${MASK}-----END $1PRIVATE KEY-----`);
}
