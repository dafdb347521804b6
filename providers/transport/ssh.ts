/**
 * The SSH transport every remote step uses (on ssh2): key or password login, host-key pinning, connect
 * retries for VMs still booting, a deadline per command, sudo without a password on any command line,
 * SFTP uploads, output streamed with a host/step prefix, and secrets redacted from logs and errors.
 *
 * Nothing here is created at module load: a provider opens a session inside each method and closes it.
 */
import { createHash, randomBytes } from "node:crypto";
import { connect as tcpConnect } from "node:net";
import { Client, ClientChannel, ConnectConfig, SFTPWrapper } from "ssh2";
import { Redactor } from "./redact";
import { sh, ShellText } from "./shell";

/** How to reach a host; part of a step's inputs, so it is serializable (and secret: it holds credentials). */
export interface SshTarget {
    host: string;
    port?: number;
    username: string;
    /** PEM/OpenSSH private key; preferred over the password for login. */
    privateKey?: string;
    /** Login password; also what `sudo` is given (on its standard input) when it asks. */
    password?: string;
    /** Expected host key, `SHA256:…` as `ssh-keygen -lf` prints it. Absent: trust on first use. */
    hostKeyFingerprint?: string;
}

/** Retry and deadline policy; Pulumi's customTimeouts never reach dynamic providers. */
export interface SshPolicy {
    /** Dial attempts before giving up (VMs take a while to boot). */
    connectAttempts: number;
    /** Pause between attempts. */
    connectIntervalMs: number;
    /** Overall limit for connecting, whatever the attempts. */
    connectDeadlineMs: number;
    /** SSH handshake limit per attempt. */
    handshakeTimeoutMs: number;
    /** Limit for one command, enforced on the host (coreutils `timeout`) and here. */
    commandTimeoutMs: number;
}

const DEFAULT_SSH_POLICY: SshPolicy = {
    connectAttempts: 10,
    connectIntervalMs: 15_000,
    connectDeadlineMs: 10 * 15_000 + 60_000,
    handshakeTimeoutMs: 20_000,
    commandTimeoutMs: 30 * 60_000,
};
// Module-local in provider code: see UNKNOWN in ../step.ts.
export { DEFAULT_SSH_POLICY as DEFAULT_POLICY };

/** Who is asking: named in every log line and error. */
export interface StepContext {
    /** Step name, e.g. `ManagedLine cluster-worker-0-hosts`. */
    step: string;
    /** Receives output lines, already prefixed and redacted; default: the console (reaches the Pulumi CLI). */
    log?: (line: string) => void;
    /** Extra values to redact besides the target's own credentials. */
    secrets?: ReadonlyArray<string | undefined>;
}

export interface ExecOptions {
    /** Run as root through sudo. */
    sudo?: boolean;
    /** Data for the command's standard input. */
    stdin?: string | Buffer;
    /** Override of the policy's command limit. */
    timeoutMs?: number;
    /** Return a non-zero exit as a result instead of throwing. */
    allowFailure?: boolean;
    /** Do not stream the output lines (still captured). */
    quiet?: boolean;
}

export interface ExecResult {
    code: number;
    stdout: string;
    stderr: string;
}

// These classes are serialized into the stack state with the provider, where classes are rewritten:
// `super(message)` to the built-in Error no longer sets the message, and `new.target` is gone. So the
// message and the name are set explicitly.
export class SshError extends Error {
    constructor(message: string, name = "SshError") {
        super(message);
        this.message = message;
        this.name = name;
    }
}

/** The host presented another key than the one pinned or recorded. Never retried. */
export class HostKeyMismatchError extends SshError {
    constructor(message: string) {
        super(message, "HostKeyMismatchError");
    }
}
/** Could not log in or reach the host within the policy. */
export class ConnectError extends SshError {
    constructor(message: string) {
        super(message, "ConnectError");
    }
}
/** A command exited non-zero or ran past its deadline. */
export class RemoteCommandError extends SshError {
    constructor(
        message: string,
        readonly code: number | undefined,
    ) {
        super(message, "RemoteCommandError");
    }
}

/** OpenSSH's fingerprint form of a raw host key: `SHA256:` + unpadded base64 of its SHA-256. */
export function fingerprintOf(key: Buffer): string {
    return `SHA256:${createHash("sha256").update(key).digest("base64").replace(/=+$/, "")}`;
}

const STDERR_TAIL_LINES = 12;

/**
 * A script a step sends to its hosts. An object, not a bare string: the SDK's closure serializer writes a
 * captured object once and shares it, but copies a captured string into every function that uses it, so a step
 * whose create, update, delete and read run one script would carry it four times in every resource's state.
 */
export interface HostScript {
    readonly text: string;
}

export class SshSession {
    private sudoMode?: "nopasswd" | "password";

    private constructor(
        private readonly client: Client,
        readonly target: SshTarget,
        readonly hostKeyFingerprint: string,
        private readonly policy: SshPolicy,
        private readonly ctx: StepContext,
        private redactor: Redactor,
    ) {}

    /** Connects with retries; a changed host key fails at once with both fingerprints. */
    static async open(target: SshTarget, policy: Partial<SshPolicy>, ctx: StepContext): Promise<SshSession> {
        const p = { ...DEFAULT_SSH_POLICY, ...policy };
        const redactor = new Redactor([target.password, target.privateKey, ...(ctx.secrets ?? [])]);
        const started = Date.now();
        let lastError = "";
        for (let attempt = 1; attempt <= p.connectAttempts; attempt++) {
            const remaining = p.connectDeadlineMs - (Date.now() - started);
            if (remaining <= 0) break;
            try {
                const { client, fingerprint } = await connectOnce(target, Math.min(p.handshakeTimeoutMs, remaining));
                return new SshSession(client, target, fingerprint, p, ctx, redactor);
            } catch (e) {
                if (e instanceof HostKeyMismatchError) throw e;
                lastError = redactor.redact((e as Error).message);
                const wait = Math.min(p.connectIntervalMs, p.connectDeadlineMs - (Date.now() - started));
                if (attempt < p.connectAttempts && wait > 0) await sleep(wait);
            }
        }
        throw new ConnectError(`${ctx.step}: cannot connect to ${target.username}@${hostLabel(target)} after ${p.connectAttempts} attempt(s) in ${Math.round((Date.now() - started) / 1000)}s: ${lastError}`);
    }

    /** Runs a command (shell text from {@link sh}) and streams its output lines. */
    async exec(command: ShellText, options: ExecOptions = {}): Promise<ExecResult> {
        const timeoutMs = options.timeoutMs ?? this.policy.commandTimeoutMs;
        const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
        let remote = sh`timeout --kill-after=5 ${seconds} sh -c ${command.text}`;
        let stdin: Buffer | undefined = options.stdin === undefined ? undefined : Buffer.from(options.stdin);
        if (options.sudo) {
            if ((await this.sudoNeedsPassword()) === "password") {
                if (!this.target.password) throw new RemoteCommandError(`${this.where()}: sudo asks for a password and none is configured`, undefined);
                // sudo reads the first line of its standard input as the password; the rest is the command's.
                remote = sh`sudo -S -p '' -- ${remote}`;
                stdin = Buffer.concat([Buffer.from(`${this.target.password}\n`), stdin ?? Buffer.alloc(0)]);
            } else {
                remote = sh`sudo -n -- ${remote}`;
            }
        }
        const result = await this.run(remote.text, stdin, timeoutMs + 10_000, options.quiet ?? false);
        if (result.code === 124 || result.code === 137) {
            throw new RemoteCommandError(`${this.where()}: command ran past its ${seconds}s deadline${this.tail(result.stderr)}`, result.code);
        }
        if (result.code !== 0 && !options.allowFailure) {
            throw new RemoteCommandError(`${this.where()}: command exited ${result.code}${this.tail(result.stderr)}`, result.code);
        }
        return result;
    }

    /**
     * Runs a script sent on standard input, with its arguments (each quoted): how every step's `.sh` runs.
     * `env` is exported ahead of the script, inside standard input: for values that must stay off every
     * command line (proxy URLs may carry credentials); they are redacted from this session's logs and errors,
     * and so is each of `redact` (the secrets an encoded env value carries, e.g. each password of a list).
     */
    async runScript(
        script: HostScript,
        args: ReadonlyArray<string | number>,
        options: Omit<ExecOptions, "stdin"> & { env?: Record<string, string>; redact?: string[] } = {},
    ): Promise<ExecResult> {
        const { env = {}, redact = [], ...exec } = options;
        const preamble = Object.entries(env).map(([name, value]) => {
            if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`${JSON.stringify(name)} is not an environment variable name`);
            return sh`export ${new ShellText(name)}=${value}\n`.text;
        });
        this.redactor = this.redactor.with([...Object.values(env), ...redact]);
        return this.exec(sh`bash -s -- ${args}`, { ...exec, stdin: preamble.join("") + script.text });
    }

    /** Writes content to a remote file (atomically: a private temporary file, then `install`). */
    async upload(content: string | Buffer, remotePath: string, options: { mode?: string; owner?: string; sudo?: boolean } = {}): Promise<void> {
        const tmp = `/tmp/.k8s-vnf-${randomBytes(8).toString("hex")}`;
        await this.withSftp((sftp, done) => sftp.writeFile(tmp, content, { mode: 0o600 }, done));
        const [user, group = user] = options.owner?.split(":") ?? [];
        const owner = user ? sh`-o ${user} -g ${group}` : sh``;
        await this.exec(sh`install -D -m ${options.mode ?? "0644"} ${owner} ${tmp} ${remotePath}; rc=$?; rm -f ${tmp}; exit $rc`, { sudo: options.sudo, quiet: true });
    }

    /**
     * Copies a local file of any size (an image archive) to a new private file in the login user's part of
     * /var/tmp, streamed over SFTP, and returns its path: the caller's script moves or deletes it.
     */
    async uploadFile(localPath: string): Promise<string> {
        const remote = `/var/tmp/.k8s-vnf-${randomBytes(8).toString("hex")}`;
        await this.withSftp((sftp, done) => sftp.fastPut(localPath, remote, { mode: 0o600 }, done));
        return remote;
    }

    close(): void {
        this.client.end();
    }

    private async withSftp(fn: (sftp: SFTPWrapper, done: (err?: Error | null) => void) => void): Promise<void> {
        const sftp = await new Promise<SFTPWrapper>((resolve, reject) => this.client.sftp((err, s) => (err ? reject(err) : resolve(s))));
        try {
            await new Promise<void>((resolve, reject) => fn(sftp, (err) => (err ? reject(new RemoteCommandError(`${this.where()}: ${this.redactor.redact(err.message)}`, undefined)) : resolve())));
        } finally {
            sftp.end();
        }
    }

    /** How errors name the step and the host. */
    private where(): string {
        return `${this.ctx.step} on ${hostLabel(this.target)}`;
    }

    private async sudoNeedsPassword(): Promise<"nopasswd" | "password"> {
        if (!this.sudoMode) {
            const probe = await this.run("sudo -n true", undefined, this.policy.handshakeTimeoutMs, true);
            this.sudoMode = probe.code === 0 ? "nopasswd" : "password";
        }
        return this.sudoMode;
    }

    private tail(stderr: string): string {
        const lines = this.redactor.redact(stderr).trimEnd().split("\n").filter(Boolean).slice(-STDERR_TAIL_LINES);
        return lines.length ? `:\n${lines.map((l) => `  ${l}`).join("\n")}` : "";
    }

    private run(command: string, stdin: Buffer | undefined, limitMs: number, quiet: boolean): Promise<ExecResult> {
        const log = this.ctx.log ?? ((line: string) => console.log(line));
        const prefix = `[${this.ctx.step} ${hostLabel(this.target)}]`;
        return new Promise((resolve, reject) => {
            this.client.exec(command, (err: Error | undefined, channel: ClientChannel) => {
                if (err) return reject(new RemoteCommandError(`${this.where()}: ${this.redactor.redact(err.message)}`, undefined));
                const out: Buffer[] = [];
                const errs: Buffer[] = [];
                const lines = { out: new LineSplitter(), err: new LineSplitter() };
                const logLine = (stream: "out" | "err", line: string) => log(`${prefix}${stream === "err" ? " (stderr)" : ""} ${this.redactor.redact(line)}`);
                const emit = (text: string, stream: "out" | "err") => {
                    if (quiet) return;
                    for (const line of lines[stream].push(text)) logLine(stream, line);
                };
                const timer = setTimeout(() => {
                    channel.close();
                    reject(new RemoteCommandError(`${this.where()}: no answer within ${Math.round(limitMs / 1000)}s`, undefined));
                }, limitMs);
                channel.on("data", (d: Buffer) => {
                    out.push(d);
                    emit(d.toString(), "out");
                });
                channel.stderr.on("data", (d: Buffer) => {
                    errs.push(d);
                    emit(d.toString(), "err");
                });
                channel.on("close", (code: number | null, signal?: string) => {
                    clearTimeout(timer);
                    if (!quiet) {
                        for (const stream of ["out", "err"] as const) {
                            const rest = lines[stream].flush();
                            if (rest) logLine(stream, rest);
                        }
                    }
                    resolve({ code: code ?? (signal ? 128 + 9 : 255), stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(errs).toString() });
                });
                if (stdin) channel.end(stdin);
                else channel.end();
            });
        });
    }
}

/** Opens a session, runs `fn`, and always closes it. */
export async function withSession<T>(target: SshTarget, policy: Partial<SshPolicy>, ctx: StepContext, fn: (session: SshSession) => Promise<T>): Promise<T> {
    const session = await SshSession.open(target, policy, ctx);
    try {
        return await fn(session);
    } finally {
        session.close();
    }
}

function hostLabel(t: SshTarget): string {
    return t.port && t.port !== 22 ? `${t.host}:${t.port}` : t.host;
}

function connectOnce(target: SshTarget, timeoutMs: number): Promise<{ client: Client; fingerprint: string }> {
    return new Promise((resolve, reject) => {
        const client = new Client();
        // Small SSH packets (a channel request, a short command) otherwise wait on Nagle + delayed ACK (~40 ms each).
        const sock = tcpConnect({ host: target.host, port: target.port ?? 22 });
        sock.setNoDelay(true);
        let fingerprint = "";
        let mismatch: HostKeyMismatchError | undefined;
        const config: ConnectConfig = {
            sock,
            username: target.username,
            privateKey: target.privateKey,
            password: target.password,
            readyTimeout: timeoutMs,
            keepaliveInterval: 15_000,
            hostVerifier: (key: Buffer) => {
                fingerprint = fingerprintOf(key);
                if (target.hostKeyFingerprint && target.hostKeyFingerprint !== fingerprint) {
                    mismatch = new HostKeyMismatchError(
                        `host key of ${hostLabel(target)} changed: expected ${target.hostKeyFingerprint}, got ${fingerprint}. ` +
                            "If the host was rebuilt on purpose, replace the step (or clear its recorded key); otherwise someone may be in the middle.",
                    );
                    return false;
                }
                return true;
            },
        };
        client.once("ready", () => resolve({ client, fingerprint }));
        const fail = (err: Error) => {
            client.end();
            sock.destroy();
            reject(mismatch ?? err);
        };
        client.once("error", fail);
        sock.once("error", fail);
        sock.setTimeout(timeoutMs, () => fail(new Error(`no TCP connection within ${timeoutMs}ms`)));
        sock.once("connect", () => sock.setTimeout(0));
        client.connect(config);
    });
}

class LineSplitter {
    private buffer: string;
    constructor() {
        this.buffer = "";
    }
    push(text: string): string[] {
        this.buffer += text;
        const parts = this.buffer.split("\n");
        this.buffer = parts.pop() ?? "";
        return parts;
    }
    flush(): string {
        const rest = this.buffer;
        this.buffer = "";
        return rest;
    }
}

function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
}

