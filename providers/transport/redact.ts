/** Replaces every known secret in text meant for logs and errors. */
const REDACTED_TEXT = "[secret]";
// Module-local in provider code: see UNKNOWN in ../step.ts.
export { REDACTED_TEXT as REDACTED };

export class Redactor {
    private readonly secrets: string[];

    constructor(secrets: ReadonlyArray<string | undefined>) {
        // Longest first, so a secret containing another is replaced whole. Very short values would blank out
        // ordinary text and are not secrets worth the name.
        this.secrets = [...new Set(secrets.filter((s): s is string => typeof s === "string" && s.length >= 4))].sort((a, b) => b.length - a.length);
    }

    redact(text: string): string {
        let out = text;
        for (const secret of this.secrets) out = out.split(secret).join(REDACTED_TEXT);
        return out;
    }

    with(more: ReadonlyArray<string | undefined>): Redactor {
        return new Redactor([...this.secrets, ...more]);
    }
}
