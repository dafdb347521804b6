import { strict as assert } from "node:assert";
import { ConnectError, HostKeyMismatchError, RemoteCommandError, SshSession, SshTarget, withSession } from "../providers/transport/ssh";
import { sh } from "../providers/transport/shell";
import { failure, LabSuite, useLab } from "./support/labSuite";
import { HOSTILE_VALUES } from "./shell.spec";

const FAST = { connectAttempts: 3, connectIntervalMs: 200, connectDeadlineMs: 5_000, handshakeTimeoutMs: 2_000 };

/**
 * Every process's command line on the host, read repeatedly while `running` runs, until one shows `seen`
 * (or it ends): a loaded machine may start the command late, so no fixed wait.
 */
async function commandLinesWhile(suite: LabSuite, host: string, running: Promise<unknown>, seen: string): Promise<string> {
    let done = false;
    void running.finally(() => (done = true)).catch(() => undefined);
    let all = "";
    while (!all.includes(seen) && !done) {
        all += await suite.lab.inside(host, "cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; echo");
        await new Promise((r) => setTimeout(r, 100));
    }
    return all;
}

describe("SSH transport on lab hosts (real sshd)", function () {
    this.timeout(120_000);
    const suite = useLab(["alpha", "beta", "gamma"]);
    const ctx = (step = "transport-test") => ({ step, log: suite.log });
    const open = (target: SshTarget, policy = FAST) => SshSession.open(target, policy, ctx());

    it("logs in with a key and with a password", async () => {
        for (const auth of ["key", "password"] as const) {
            const target = suite.lab.target("alpha", auth);
            const out = await withSession(target, FAST, ctx(), (s) => s.exec(sh`hostname; id -un`));
            assert.deepEqual(out.stdout.trim().split("\n"), ["alpha", "ubuntu"], auth);
        }
    });

    it("records the host key on first use and enforces a pinned one", async () => {
        const first = await open(suite.lab.target("alpha"));
        const fingerprint = first.hostKeyFingerprint;
        first.close();
        assert.match(fingerprint, /^SHA256:[A-Za-z0-9+/]{43}$/);
        const pinned = await open({ ...suite.lab.target("alpha"), hostKeyFingerprint: fingerprint });
        pinned.close();
        const expected = fingerprint.replace(/.$/, (c) => (c === "A" ? "B" : "A"));
        const error = await failure(suite, () => open({ ...suite.lab.target("alpha"), hostKeyFingerprint: expected }));
        assert.ok(error instanceof HostKeyMismatchError);
        assert.ok(error.message.includes(suite.lab.host("alpha").address) && error.message.includes(expected) && error.message.includes(fingerprint), error.message);
    });

    it("a host whose key changed fails at once with the host and both fingerprints (no retries)", async () => {
        const before = await open(suite.lab.target("gamma"));
        const old = before.hostKeyFingerprint;
        before.close();
        await suite.lab.rekey("gamma");
        const started = Date.now();
        const error = await failure(suite, () => open({ ...suite.lab.target("gamma"), hostKeyFingerprint: old }, { ...FAST, connectAttempts: 10, connectIntervalMs: 1_000, connectDeadlineMs: 30_000 }));
        assert.ok(error instanceof HostKeyMismatchError, error.message);
        assert.match(error.message, new RegExp(`${suite.lab.host("gamma").address}.*expected ${old.replace(/[+/]/g, "\\$&")}, got SHA256:`));
        assert.ok(Date.now() - started < 3_000, "not retried");
    });

    it("retries while a host is still coming up, then connects", async () => {
        await suite.lab.killSshd("beta");
        const connecting = open(suite.lab.target("beta"), { connectAttempts: 40, connectIntervalMs: 250, connectDeadlineMs: 20_000, handshakeTimeoutMs: 2_000 });
        await new Promise((r) => setTimeout(r, 1_500));
        await suite.lab.startSshd("beta");
        const session = await connecting;
        assert.equal((await session.exec(sh`hostname`)).stdout.trim(), "beta");
        session.close();
    });

    it("gives up after its attempts and its deadline, saying how long it tried", async () => {
        await suite.lab.link("beta", "down");
        try {
            const started = Date.now();
            const error = await failure(suite, () => open(suite.lab.target("beta"), { connectAttempts: 3, connectIntervalMs: 300, connectDeadlineMs: 4_000, handshakeTimeoutMs: 800 }));
            assert.ok(error instanceof ConnectError);
            assert.match(error.message, /cannot connect to ubuntu@10\.231\.\d+\.11 after 3 attempt\(s\)/);
            assert.ok(Date.now() - started < 6_000);
        } finally {
            await suite.lab.link("beta", "up");
        }
    });

    it("a command past its deadline is stopped, on the host too", async () => {
        await withSession(suite.lab.target("alpha"), FAST, ctx(), async (s) => {
            const error = await failure(suite, () => s.exec(sh`sleep 30`, { timeoutMs: 1_000 }));
            assert.ok(error instanceof RemoteCommandError);
            assert.match(error.message, /deadline/);
            // Dead children may linger as zombies under the lab's PID 1, which does not reap them; count live ones.
            const left = await s.exec(sh`ps -eo stat=,comm= | awk '$2 == "sleep" && $1 !~ /^Z/'`);
            assert.equal(left.stdout.trim(), "", "the remote process is gone");
        });
    });

    it("a failing command's error names the step, the host, the exit code and the end of stderr", async () => {
        const error = await failure(suite, () =>
            withSession(suite.lab.target("alpha"), FAST, ctx("install-thing"), (s) => s.exec(sh`for i in $(seq 1 30); do echo "line $i" >&2; done; exit 7`)),
        );
        assert.ok(error instanceof RemoteCommandError && error.code === 7);
        assert.match(error.message, /^install-thing on 10\.231\.\d+\.10: command exited 7:\n/);
        assert.ok(error.message.includes("line 30") && !error.message.includes("line 10\n"), "the tail, not everything");
    });

    it("sudo works when it asks for a password, which never appears on a command line", async () => {
        await withSession(suite.lab.target("alpha"), FAST, ctx(), async (s) => {
            const probe = s.exec(sh`sleep 2; id -u`, { sudo: true });
            const commandLines = await commandLinesWhile(suite, "alpha", probe, "sleep 2");
            assert.equal((await probe).stdout.trim(), "0");
            assert.ok(commandLines.includes("sleep 2"), "the probe was seen running");
            assert.ok(!commandLines.includes(suite.lab.password), "no password in any process's arguments");
            const piped = await s.exec(sh`cat`, { sudo: true, stdin: "first\nsecond\n" });
            assert.equal(piped.stdout, "first\nsecond\n", "stdin after the password reaches the command");
        });
    });

    it("a script's environment travels in its standard input: exact values, on no command line", async () => {
        const secret = "http://user:p'a ss$(touch /tmp/canary)@proxy.example:3128";
        await withSession(suite.lab.target("alpha"), FAST, ctx(), async (s) => {
            const probe = s.runScript({ text: 'sleep 2; printf "%s" "$https_proxy"' }, [], { sudo: true, quiet: true, env: { https_proxy: secret } });
            const commandLines = await commandLinesWhile(suite, "alpha", probe, "bash -s");
            assert.equal((await probe).stdout, secret);
            assert.ok(commandLines.includes("bash -s"), "the script was seen running");
            assert.ok(!commandLines.includes("proxy.example"), "the value is in no process's arguments");
            await assert.rejects(s.runScript({ text: "true" }, [], { env: { "a=b; reboot #": "x" } }), /is not an environment variable name/);
            const failed = await s.runScript({ text: 'echo "$https_proxy" >&2; exit 3' }, [], { quiet: true, env: { https_proxy: secret } }).catch((e: Error) => e);
            assert.ok(failed instanceof Error && !failed.message.includes(secret) && failed.message.includes("[secret]"), "redacted from the error's stderr");
        });
        assert.equal(await suite.lab.inside("alpha", "ls /tmp/canary 2>/dev/null || true"), "", "nothing in the value ran");
    });

    it("uploads content over SFTP with mode and owner, atomically", async () => {
        await withSession(suite.lab.target("alpha"), FAST, ctx(), async (s) => {
            await s.upload("root-owned\n", "/etc/k8s-vnf/test.conf", { sudo: true, mode: "0640", owner: "root:root" });
            await s.upload("user-owned\n", "/home/ubuntu/notes.txt", { mode: "0600" });
            const stat = await s.exec(sh`stat -c '%a %U %n' /etc/k8s-vnf/test.conf /home/ubuntu/notes.txt; ls -a /tmp`, { sudo: true });
            assert.match(stat.stdout, /^640 root \/etc\/k8s-vnf\/test\.conf\n600 ubuntu \/home\/ubuntu\/notes\.txt\n/);
            assert.doesNotMatch(stat.stdout, /\.k8s-vnf-/, "no temporary file left behind");
            assert.equal(await suite.lab.inside("alpha", "cat /etc/k8s-vnf/test.conf"), "root-owned\n");
        });
    });

    it("streams output lines with a step/host prefix", async () => {
        const lines: string[] = [];
        await withSession(suite.lab.target("alpha"), FAST, { step: "stream-test", log: (l) => lines.push(l) }, (s) => s.exec(sh`echo one; echo two >&2`));
        suite.captured.push(...lines);
        const host = suite.lab.host("alpha").address;
        assert.deepEqual(lines.sort(), [`[stream-test ${host}] (stderr) two`, `[stream-test ${host}] one`]);
    });

    it("hostile values reach the host as single arguments and run nothing there", async () => {
        await withSession(suite.lab.target("alpha"), FAST, ctx(), async (s) => {
            for (const raw of HOSTILE_VALUES) {
                const value = raw.replace(/CANARY/g, "/tmp/canary");
                const out = await s.exec(sh`cd /tmp && printf '%s\\0' ${value}`, { quiet: true });
                assert.deepEqual(out.stdout.split("\0").slice(0, -1), [value], JSON.stringify(value));
                const asRoot = await s.exec(sh`cd /tmp && printf '%s\\0' ${value}`, { quiet: true, sudo: true });
                assert.deepEqual(asRoot.stdout.split("\0").slice(0, -1), [value]);
            }
        });
        assert.equal(await suite.lab.inside("alpha", "ls /tmp/canary 2>/dev/null || true"), "", "the canary file never appeared");
    });

    it("secrets are redacted from streamed output and errors", async () => {
        const lines: string[] = [];
        const error = await failure(suite, () =>
            withSession(suite.lab.target("alpha"), FAST, { step: "leaky", log: (l) => lines.push(l), secrets: ["token-abcdef"] }, (s) =>
                s.exec(sh`echo ${suite.lab.password}; echo token-abcdef >&2; exit 1`),
            ),
        );
        suite.captured.push(...lines);
        assert.ok(lines.every((l) => !l.includes(suite.lab.password) && !l.includes("token-abcdef")));
        assert.ok(lines.some((l) => l.endsWith("[secret]")));
        assert.ok(!error.message.includes("token-abcdef"));
    });
});
