/**
 * `k8s-vnf serve` as an operator starts it (its own process): authentication that fails closed, the
 * address it really listens on, and what each child process gets of its environment. The Pulumi CLI here
 * is a recording script under K8S_VNF_PULUMI_ROOT: what is checked is what the service hands it (its
 * arguments and environment), not what Pulumi does, which the real-CLI suites check.
 */
import { strict as assert } from "node:assert";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseRequestText } from "../config/requestText";
import { REQUESTS_DIR } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";
import { ServiceProcess } from "./support/serviceProcess";

/** A secrets key's id as the service names it: its SHA-256's first 12 hex digits. */
function keyId(base64Key: string): string {
    return createHash("sha256").update(Buffer.from(base64Key, "base64")).digest("hex").slice(0, 12);
}

/** The seed's instantiate body, on the service's own OS_* credentials. */
function instantiateBody(): Record<string, unknown> {
    const body = parseRequestText(fs.readFileSync(path.join(REQUESTS_DIR, "simple-instantiate.json"), "utf8"), "simple-instantiate.json") as Record<string, unknown>;
    delete body.vimConnectionInfo;
    return body;
}

/** `serve` that is expected to refuse to start: its exit code and what it printed. */
function refusedServe(args: string[], env: Record<string, string>): Promise<{ code: number | null; printed: string }> {
    return new Promise((resolve, reject) => {
        const child = spawn(path.join(PROJECT_DIR, "bin/k8s-vnf"), ["serve", "--port", "0", ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
        let printed = "";
        child.stdout.on("data", (d) => (printed += d));
        child.stderr.on("data", (d) => (printed += d));
        const timer = setTimeout(() => {
            child.kill("SIGKILL");
            reject(new Error(`serve did not refuse within 20 s: ${printed}`));
        }, 20_000);
        child.once("exit", (code) => {
            clearTimeout(timer);
            resolve({ code, printed });
        });
    });
}

/**
 * A Pulumi CLI that records each command's arguments and environment (one file per command), answers
 * `version` with `versionAnswer`, and fails every other command as a CLI without a backend would.
 */
function recordingPulumi(dir: string, versionAnswer: string): { root: string; commands: () => { args: string; env: Record<string, string> }[] } {
    const root = path.join(dir, "pulumi-root");
    const log = path.join(dir, "commands");
    fs.mkdirSync(path.join(root, "bin"), { recursive: true });
    fs.mkdirSync(log);
    fs.writeFileSync(
        path.join(root, "bin", "pulumi"),
        `#!/bin/sh
record=$(mktemp "${log}/command.XXXXXX")
printf '%s\\n' "$*" > "$record"
env -0 >> "$record"
case "$1" in
version) ${versionAnswer} ;;
*) echo "error: no backend here" >&2; exit 255 ;;
esac
`,
        { mode: 0o755 },
    );
    const commands = () =>
        fs.readdirSync(log).map((name) => {
            const [args, ...env] = fs.readFileSync(path.join(log, name), "utf8").split(/\n/);
            const variables = env.join("\n").split("\0").filter(Boolean);
            return { args, env: Object.fromEntries(variables.map((v) => [v.slice(0, v.indexOf("=")), v.slice(v.indexOf("=") + 1)])) };
        });
    return { root, commands };
}

describe("k8s-vnf serve: authentication fails closed, the address it listens on, each child's environment", function () {
    this.timeout(60_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-serve-"));
    const services: ServiceProcess[] = [];
    after(async () => {
        for (const service of services) await service.stop();
        fs.rmSync(dir, { recursive: true, force: true });
    });

    it("an empty K8S_VNF_LCM_TOKEN is refused at start, as an empty basic-auth setting is", async () => {
        const settings: Record<string, string>[] = [{ K8S_VNF_LCM_TOKEN: "" }, { K8S_VNF_LCM_TOKEN: "   " }, { K8S_VNF_LCM_BASIC_AUTH: "" }];
        for (const env of settings) {
            const { code, printed } = await refusedServe(["--data-dir", path.join(dir, "empty")], env);
            assert.notEqual(code, 0, printed);
            assert.match(printed, /K8S_VNF_LCM_(TOKEN: is set but empty|BASIC_AUTH: user:password)/);
        }
    });

    it("an address other than loopback without credentials is refused, unless --no-authentication says so; the banner shows the address it listens on", async () => {
        const refused = await refusedServe(["--listen", "0.0.0.0", "--data-dir", path.join(dir, "open")], {});
        assert.notEqual(refused.code, 0);
        assert.match(refused.printed, /--listen 0\.0\.0\.0: reachable from other hosts, and no client authentication is set/);
        const both = await refusedServe(["--listen", "0.0.0.0", "--no-authentication", "--data-dir", path.join(dir, "open")], { K8S_VNF_LCM_TOKEN: "t0ken" });
        assert.notEqual(both.code, 0);
        assert.match(both.printed, /--no-authentication: K8S_VNF_LCM_TOKEN or K8S_VNF_LCM_BASIC_AUTH is set too/);
        // In a network namespace of its own, which has only a loopback device (down): nothing outside reaches it.
        const child = spawn("unshare", ["--net", path.join(PROJECT_DIR, "bin/k8s-vnf"), "serve", "--port", "0", "--listen", "0.0.0.0", "--no-authentication", "--data-dir", path.join(dir, "open")], {
            env: process.env,
            stdio: ["ignore", "pipe", "pipe"],
        });
        try {
            let printed = "";
            child.stdout.on("data", (d) => (printed += d));
            child.stderr.on("data", (d) => (printed += d));
            for (let i = 0; i < 200 && !/LCM service on/.test(printed) && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 50));
            assert.match(printed, /k8s-vnf LCM service on http:\/\/0\.0\.0\.0:\d+\/vnflcm\/v1 .*no authentication/, printed);
        } finally {
            const exited = new Promise((r) => child.once("exit", r));
            if (child.exitCode === null) child.kill("SIGTERM");
            await exited;
        }
    });

    it("`pulumi version` and every later Pulumi command get the CLI's environment only: no API token, no NFVO token, no secrets key; `pulumi version` no OpenStack credentials", async () => {
        const pulumi = recordingPulumi(fs.mkdtempSync(path.join(dir, "env-")), "echo v3.248.0");
        const token = "lcm-token-4c1d";
        const secretsKey = randomBytes(32).toString("base64");
        const service = await ServiceProcess.start(path.join(dir, "env-data"), {
            K8S_VNF_PULUMI_ROOT: pulumi.root,
            K8S_VNF_LCM_TOKEN: token,
            K8S_VNF_LCM_SECRETS_KEY: secretsKey,
            K8S_VNF_TACKER_NFVO_TOKEN: "nfvo-token-77aa",
            OS_AUTH_URL: "http://127.0.0.1:1/v3",
            OS_PASSWORD: "os-pass-5e",
            PULUMI_CONFIG_PASSPHRASE: "passphrase-9",
        });
        services.push(service);
        assert.match(service.output, new RegExp(`secrets sealed with key ${keyId(secretsKey)} from K8S_VNF_LCM_SECRETS_KEY`), "the banner names the key by its id only");
        assert.ok(!service.output.includes(secretsKey));
        const call = async (method: string, route: string, body?: unknown) => {
            const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) };
            const r = await fetch(`${service.url}${route}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
            return { status: r.status, location: r.headers.get("location"), body: (await r.json().catch(() => undefined)) as any };
        };
        const id = (await call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "x" })).body.id;
        const accepted = await call("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, instantiateBody());
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        let op: any;
        for (let i = 0; i < 200 && !["FAILED_TEMP", "COMPLETED"].includes(op?.operationState); i++) {
            await new Promise((r) => setTimeout(r, 50));
            op = (await call("GET", new URL(accepted.location!).pathname)).body;
        }
        assert.equal(op.operationState, "FAILED_TEMP", JSON.stringify(op));
        const commands = pulumi.commands();
        assert.ok(commands.some((c) => c.args.startsWith("version")), commands.map((c) => c.args).join("; "));
        assert.ok(commands.some((c) => !c.args.startsWith("version")), "a command after `pulumi version` ran");
        for (const { args, env } of commands) {
            const names = Object.keys(env);
            assert.ok(!names.some((n) => n.startsWith("K8S_VNF_LCM_") || n === "K8S_VNF_TACKER_NFVO_TOKEN"), `${args}: ${names.join(" ")}`);
            const forms = [token, "nfvo-token-77aa", secretsKey].flatMap((t) => [t, Buffer.from(t).toString("base64")]);
            assert.ok(!Object.values(env).some((v) => forms.some((f) => v.includes(f))) && !forms.some((f) => args.includes(f)), args);
            assert.equal(env.PULUMI_CONFIG_PASSPHRASE, "passphrase-9", `${args}: the CLI gets what it needs`);
            if (args.startsWith("version")) assert.ok(!names.some((n) => n.startsWith("OS_")), `pulumi version got ${names.filter((n) => n.startsWith("OS_")).join(" ")}`);
            else assert.equal(env.OS_PASSWORD, "os-pass-5e", `${args}: the operation's VIM credentials`);
        }
    });

    it("a secrets key that cannot be read or is no 32-byte base64 key is refused at start, naming where it was given and never printing it", async () => {
        const unreadable = await refusedServe(["--data-dir", path.join(dir, "key-a"), "--secrets-key-file", path.join(dir, "no-such-key")], {});
        assert.equal(unreadable.code, 1, unreadable.printed);
        assert.match(unreadable.printed, /^--secrets-key-file: cannot read .*no-such-key \(ENOENT\)\n$/);
        const short = path.join(dir, "short.key");
        fs.writeFileSync(short, `# rotated 2026-11\n${randomBytes(32).toString("base64")}\nc2hvcnQta2V5LTk5\n`, { mode: 0o600 });
        const refused = await refusedServe(["--data-dir", path.join(dir, "key-b"), "--secrets-key-file", short], {});
        assert.equal(refused.code, 1, refused.printed);
        assert.match(refused.printed, /^--secrets-key-file .*short\.key: key 2 is not 32 bytes in base64 \(openssl rand -base64 32\)\n$/);
        assert.ok(!refused.printed.includes("c2hvcnQta2V5LTk5"));
        const fromEnv = await refusedServe(["--data-dir", path.join(dir, "key-c")], { K8S_VNF_LCM_SECRETS_KEY: "not a key" });
        assert.match(fromEnv.printed, /^K8S_VNF_LCM_SECRETS_KEY: key 1 is not 32 bytes in base64/);
        assert.ok(!fs.existsSync(path.join(dir, "key-a", "k8s-vnf-lcm.sqlite")) && !fs.existsSync(path.join(dir, "key-b", "k8s-vnf-lcm.sqlite")), "nothing is stored before the keys are read");
    });

    it("--log-format json: the banner, the ready line and each step of an operation are JSON lines (GET /readyz then ready); another format is refused at start", async () => {
        const refused = await refusedServe(["--log-format", "xml"], {});
        assert.equal(refused.code, 2);
        assert.match(refused.printed, /^--log-format: text or json/);
        const pulumi = recordingPulumi(fs.mkdtempSync(path.join(dir, "log-")), "echo v3.248.0");
        const service = await ServiceProcess.start(path.join(dir, "log-data"), { K8S_VNF_PULUMI_ROOT: pulumi.root }, ["--log-format", "json"]);
        services.push(service);
        const id = (await service.call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "x" })).body.id;
        const opId = (await service.call("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, instantiateBody())).location!.split("/").pop();
        for (let i = 0; i < 200 && !service.output.includes('"operationState":"FAILED_TEMP"'); i++) await new Promise((r) => setTimeout(r, 50));
        const lines = service.output.trim().split("\n").map((l) => JSON.parse(l));
        assert.deepEqual([lines[0].msg, lines[0].url], ["listening", `${service.url}/vnflcm/v1`]);
        assert.equal(lines[1].msg, "ready");
        assert.ok(Number.isInteger(lines[1].warmUpMs), JSON.stringify(lines[1]));
        assert.deepEqual(await (await fetch(`${service.url}/readyz`)).json(), { status: "ready" });
        assert.deepEqual(lines.slice(2).map((l) => [l.vnfLcmOpOccId, l.operationState]), [[opId, "STARTING"], [opId, "PROCESSING"], [opId, "FAILED_TEMP"]]);
        assert.match(lines.at(-1).error, /no backend here/);
    });

    it("a failing `pulumi version` is reported as what failed, not as a missing CLI, in the operation and as a warning once the service is ready", async () => {
        const pulumi = recordingPulumi(fs.mkdtempSync(path.join(dir, "broken-")), 'echo "error: could not read /root/.pulumi/credentials.json: permission denied" >&2; exit 3');
        const service = await ServiceProcess.start(path.join(dir, "broken-data"), { K8S_VNF_PULUMI_ROOT: pulumi.root });
        services.push(service);
        const id = (await service.call("POST", "/vnflcm/v1/vnf_instances", { vnfdId: "x" })).body.id;
        const accepted = await service.call("POST", `/vnflcm/v1/vnf_instances/${id}/instantiate`, instantiateBody());
        assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
        let op: any;
        for (let i = 0; i < 200 && op?.operationState !== "FAILED_TEMP"; i++) {
            await new Promise((r) => setTimeout(r, 50));
            op = (await service.call("GET", new URL(accepted.location!).pathname)).body;
        }
        assert.equal(op.operationState, "FAILED_TEMP");
        assert.match(op.error.detail, /`pulumi version` at .*\/bin\/pulumi failed \(exit 3\): error: could not read \/root\/\.pulumi\/credentials\.json: permission denied/);
        assert.doesNotMatch(op.error.detail, /not installed/);
        // Said at start too, once warmed up, before any operation met it (its line may reach this process after the answer).
        for (let i = 0; i < 100 && !service.output.includes("warning:"); i++) await new Promise((r) => setTimeout(r, 20));
        assert.match(service.output, /^warning: `pulumi version` at .*\/bin\/pulumi failed \(exit 3\): error: could not read/m);
    });
});
