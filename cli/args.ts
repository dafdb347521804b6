/** The command line of `k8s-vnf`: options, flags and how a command reaches its input and output. */

export interface Io {
    out: (text: string) => void;
    err: (text: string) => void;
    env: NodeJS.ProcessEnv;
    cwd: string;
}

export const DEFAULT_IO: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t), env: process.env, cwd: process.cwd() };

export class UsageError extends Error {}

export interface Args {
    command?: string;
    positional: string[];
    options: Map<string, string>;
}

const OPTIONS_WITH_VALUES = new Set(["--stack", "--package-dir", "--project", "--port", "--listen", "--data-dir", "--max-parallel", "--max-dry-runs", "--page-size", "--public-url", "--packages", "--tacker-nfvo", "--log-format", "--secrets-key-file", "--database", "--claim-lease"]);
const FLAGS = new Set(["--allow-loopback-callbacks", "--no-authentication", "--json", "--version"]);

export function parseArgs(argv: string[]): Args {
    const args: Args = { positional: [], options: new Map() };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        if (a === "-h" || a === "--help") args.options.set("--help", "");
        else if (FLAGS.has(a)) args.options.set(a, "");
        else if (OPTIONS_WITH_VALUES.has(a)) {
            if (i + 1 >= argv.length) throw new UsageError(`${a} needs a value`);
            args.options.set(a, argv[++i]);
        } else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
        else if (!args.command) args.command = a;
        else args.positional.push(a);
    }
    return args;
}
