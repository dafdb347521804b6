/**
 * The one way a value reaches a remote shell: as a single-quoted word. Used by every remote step; nothing
 * builds shell text from user input by hand.
 */

/** A piece of shell text that is already safe (a fixed command, or the output of {@link sh}). */
export class ShellText {
    constructor(readonly text: string) {}
    toString(): string {
        return this.text;
    }
}

export type ShellValue = string | number | boolean | ShellText | ReadonlyArray<string | number>;

/** Quotes one value as a single shell word: `it's` → `'it'\''s'`. */
export function quote(value: string | number | boolean): string {
    const text = String(value);
    if (text.includes("\0")) throw new Error("a shell argument cannot contain a NUL byte");
    if (/^[A-Za-z0-9_./:=@%+,-]+$/.test(text)) return text;
    return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * A command with every interpolated value quoted: sh`install -m ${mode} ${src} ${dest}`. Lists become one
 * quoted word each; {@link ShellText} is inserted as it is.
 */
export function sh(strings: TemplateStringsArray, ...values: ShellValue[]): ShellText {
    let out = strings[0];
    values.forEach((value, i) => {
        if (value instanceof ShellText) out += value.text;
        else if (Array.isArray(value)) out += value.map((v) => quote(v)).join(" ");
        else out += quote(value as string | number | boolean);
        out += strings[i + 1];
    });
    return new ShellText(out);
}
