/**
 * Command lines as the Pulumi CLI's cobra/pflag parse them (cobra v1.10.2, pflag v1.0.10, pinned by
 * pkg/go.mod at v3.248.0): `--flag value`, `--flag=value`, `-s value`, booleans without a value, `--` ending
 * the flags; an unknown flag, a missing flag value or a wrong number of arguments is refused, and so are
 * flags a command marks mutually exclusive (`MarkFlagsMutuallyExclusive`, cobra flag_groups.go) — checked
 * before the command runs.
 */

export type FlagKind = "bool" | "string" | "strings";

export interface FlagSpec {
    name: string;
    short?: string;
    kind: FlagKind;
}

export interface CommandSpec {
    /** Words naming the command (`config set-all`), and its aliases. */
    names: string[];
    flags: FlagSpec[];
    args: { min: number; max: number };
    /** Flags of which at most one may be set. */
    exclusive?: string[];
}

export interface CommandLine {
    command: CommandSpec;
    args: string[];
    bool(name: string): boolean;
    string(name: string): string | undefined;
    strings(name: string): string[];
}

/** Persistent flags of the root command that the SDK passes. */
const GLOBAL_FLAGS: FlagSpec[] = [
    { name: "non-interactive", kind: "bool" },
    { name: "color", kind: "string" },
];

export function parseCommandLine(argv: string[], commands: CommandSpec[]): CommandLine {
    let words = 0;
    while (words < argv.length && !argv[words].startsWith("-")) words++;
    let command: CommandSpec | undefined;
    let used = words;
    for (; used > 0 && !command; used--) {
        const name = argv.slice(0, used).join(" ");
        command = commands.find((c) => c.names.includes(name));
        if (command) break;
    }
    if (!command) throw new Error(`unknown command "${argv[0] ?? ""}" for "pulumi"`);
    const flags = [...command.flags, ...GLOBAL_FLAGS];
    const values = new Map<string, boolean | string | string[]>();
    const args: string[] = [];
    const rest = argv.slice(used);
    for (let i = 0; i < rest.length; i++) {
        const token = rest[i];
        if (token === "--") {
            args.push(...rest.slice(i + 1));
            break;
        }
        if (!token.startsWith("-") || token === "-") {
            args.push(token);
            continue;
        }
        const long = token.startsWith("--");
        const [name, inline] = long ? splitOnce(token.slice(2), "=") : [token.slice(1, 2), token.length > 2 ? token.slice(2) : undefined];
        const spec = flags.find((f) => (long ? f.name === name : f.short === name));
        if (!spec) throw new Error(long ? `unknown flag: --${name}` : `unknown shorthand flag: '${name}' in ${token}`);
        if (spec.kind === "bool") {
            if (inline !== undefined && inline !== "true" && inline !== "false") throw new Error(`invalid argument "${inline}" for "--${spec.name}" flag: strconv.ParseBool: parsing "${inline}": invalid syntax`);
            values.set(spec.name, inline !== "false");
            continue;
        }
        let value = inline;
        if (value === undefined) {
            if (i + 1 >= rest.length) throw new Error(`flag needs an argument: ${long ? `--${name}` : `'${name}' in -${name}`}`);
            value = rest[++i];
        }
        if (spec.kind === "strings") values.set(spec.name, [...((values.get(spec.name) as string[] | undefined) ?? []), value]);
        else values.set(spec.name, value);
    }
    if (command.exclusive) {
        const set = command.exclusive.filter((f) => values.has(f)).sort();
        if (set.length > 1) throw new Error(`if any flags in the group [${command.exclusive.join(" ")}] are set none of the others can be; [${set.join(" ")}] were all set`);
    }
    const { min, max } = command.args;
    if (args.length < min || args.length > max) {
        throw new Error(min === max ? `accepts ${min} arg(s), received ${args.length}` : args.length < min ? `requires at least ${min} arg(s), only received ${args.length}` : `accepts at most ${max} arg(s), received ${args.length}`);
    }
    return {
        command,
        args,
        bool: (name) => values.get(name) === true,
        string: (name) => values.get(name) as string | undefined,
        strings: (name) => (values.get(name) as string[] | undefined) ?? [],
    };
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
    const i = text.indexOf(separator);
    return i < 0 ? [text, undefined] : [text.slice(0, i), text.slice(i + 1)];
}
