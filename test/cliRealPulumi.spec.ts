/** import-request --stack with the real Pulumi CLI: secrets on stdin only, the stack lock, a failing CLI, an existing stack file. */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { requestWithSecrets } from "./support/fixtures";
import { PROJECT_DIR } from "./support/program";
import { serviceProject } from "./support/serviceProject";
import { silentEndpoint } from "./support/silentEndpoint";
import { cli, escapeRegExp, exitWithin, killCli, scratchProject, SECRETS, StartedCli, startCli, useRealPulumi } from "./support/cliRun";

describe("k8s-vnf import-request --stack with the real Pulumi CLI", function () {
    this.timeout(120_000);
    const realPulumi = useRealPulumi();

    it("import-request --stack writes the stack file and hands secrets to the Pulumi CLI on stdin only, encrypted in the stack file", async () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            const run = await cli(["import-request", p.request, "--stack", "edge", "--package-dir", path.join(p.dir, "package"), "--project", p.dir], real.env);
            assert.equal(run.code, 0, run.err);
            const written = fs.readFileSync(p.stackFile, "utf8");
            assert.doesNotMatch(written, SECRETS);
            const doc = YAML.parse(written);
            assert.match(doc.encryptionsalt, /^v1:/);
            assert.match(doc.config["k8s-vnf:masters"].password.secure, /^v1:/);
            assert.equal(doc.config["k8s-vnf:storageServer"].volumes[0].mountTo, "/volume");

            const calls = real.calls();
            assert.equal(calls[0], "stack select --create edge --non-interactive");
            const sets = calls.slice(1);
            assert.ok(sets.every((c) => /^config set --stack edge --secret --raw --path \S+ --non-interactive$/.test(c)), sets.join("\n"));
            assert.deepEqual(sets.map((c) => c.split(" ").at(-2)).sort(), ["masters.password", "proxy.httpProxy", "proxy.httpsProxy", "storageServer.password", "workers.password"]);
            assert.doesNotMatch(calls.join("\n"), SECRETS, "no secret on a command line");
            const get = (leaf: string) => real.pulumi(["config", "get", "--stack", "edge", "--path", leaf]).stdout.trim();
            assert.equal(get("masters.password"), "master-Secret-1", "the CLI decrypts what it was given on stdin");
            assert.match(get("proxy.httpProxy"), /proxySecret3@/);
        } finally {
            p.cleanup();
        }
    });

    it("secrets reach the stack exactly as given, as text: one that looks like a number, one with spaces and a line break at its end (--secret --raw, no --type)", async () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            const odd = { masters: "0123", workers: " worker Secret 2 \n" };
            fs.writeFileSync(p.request, requestWithSecrets().replace('"master-Secret-1"', JSON.stringify(odd.masters)).replace('"worker-Secret-2"', JSON.stringify(odd.workers)));
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], real.env);
            assert.equal(run.code, 0, run.err);
            // What the program gets: the config as the CLI hands it over, each secret decrypted.
            const shown = real.pulumi(["config", "--json", "--show-secrets", "--stack", "edge"]);
            assert.equal(shown.status, 0, shown.stderr);
            const config = JSON.parse(shown.stdout);
            assert.deepEqual({ masters: config["k8s-vnf:masters"].objectValue.password, workers: config["k8s-vnf:workers"].objectValue.password }, odd);
            assert.equal(config["k8s-vnf:masters"].secret, true);
        } finally {
            p.cleanup();
        }
    });

    it("a fresh clone opens its state: Pulumi.yaml's backend folder is created on first use, in the directory the CLI runs in", () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            assert.equal(fs.existsSync(path.join(p.dir, ".pulumi-state")), false);
            const created = real.pulumi(["stack", "init", "edge"]);
            assert.equal(created.status, 0, created.stderr);
            assert.ok(fs.existsSync(path.join(p.dir, ".pulumi-state/.pulumi/stacks/k8s-vnf/edge.json")));

            // What the CLI does with a relative file:// URL without create_dir (diy backend.go massageBlobPath, fileblob).
            const bare = fs.readFileSync(path.join(p.dir, "Pulumi.yaml"), "utf8").replace("file://./.pulumi-state?create_dir=true", "file://./.state-elsewhere");
            fs.writeFileSync(path.join(p.dir, "Pulumi.yaml"), bare);
            const refused = real.pulumi(["stack", "init", "other"]);
            assert.equal(refused.status, 1);
            assert.match(refused.stderr, new RegExp(`error: unable to open bucket file://${escapeRegExp(p.dir)}/\\.state-elsewhere\\?no_tmp_dir=true: stat ${escapeRegExp(p.dir)}/\\.state-elsewhere: no such file or directory`));
        } finally {
            p.cleanup();
        }
    });

    it("the Pulumi CLI's stack lock: a second update is refused while one runs, a killed one leaves its lock, pulumi cancel clears it", async function () {
        this.timeout(300_000);
        // The program runs (its project folder links this one's), against an OpenStack endpoint that never answers.
        const project = serviceProject();
        const endpoint = await silentEndpoint();
        const started: StartedCli[] = [];
        try {
            const packageDir = path.join(project.dir, "package");
            fs.cpSync(path.join(PROJECT_DIR, "examples/package"), packageDir, { recursive: true });
            fs.writeFileSync(path.join(project.dir, "request.json"), requestWithSecrets());
            const real = realPulumi(project.dir);
            const env = { ...real.env, ...endpoint.env };
            const imported = await cli(["import-request", path.join(project.dir, "request.json"), "--stack", "edge", "--package-dir", packageDir, "--project", project.dir], env);
            assert.equal(imported.code, 0, imported.err);
            const up = () => {
                const one = startCli(["up", "--yes", "--skip-preview", "--stack", "edge"], project.dir, env);
                started.push(one);
                return one;
            };
            /** Until the endpoint has had more than `seen` connections: the update's provider sent its first request. */
            const reached = async (update: StartedCli, seen: number) => {
                for (const deadline = Date.now() + 180_000; endpoint.connections() <= seen; await new Promise((resolve) => setTimeout(resolve, 100))) {
                    assert.ok(update.child.exitCode === null && update.child.signalCode === null, `the update ended before its provider reached OpenStack:\n${update.printed()}`);
                    assert.ok(Date.now() < deadline, `the update's provider reached no OpenStack in 3 minutes:\n${update.printed()}`);
                }
            };
            const lockDir = path.join(project.dir, ".pulumi-state/.pulumi/locks/organization/k8s-vnf/edge");
            // The blob store (gocloud.dev fileblob) writes each lock's attributes beside it, `<lock>.attrs`.
            const locks = () => (fs.existsSync(lockDir) ? fs.readdirSync(lockDir).filter((f) => f.endsWith(".json")) : []);

            const first = up();
            await reached(first, 0);
            const held = locks();
            assert.equal(held.length, 1, "the update holds the stack's lock");
            const locked = new RegExp(
                `^error: the stack is currently locked by 1 lock\\(s\\)\\. Either wait for the other process\\(es\\) to end or delete the lock file with \`pulumi cancel\`\\.\\n {2}file://${escapeRegExp(path.join(lockDir, held[0]))}\\?create_dir=true&no_tmp_dir=true: created by \\S+@\\S+ \\(pid ${first.child.pid}\\) at `,
                "m",
            );
            const refused = async (when: string) => {
                const second = up();
                const code = await exitWithin(second, 60_000);
                assert.notEqual(code, undefined, `${when}: a second update was not refused (still running after a minute):\n${second.printed()}`);
                assert.equal(code, 1, second.printed());
                assert.match(second.printed(), locked, when);
            };
            await refused("while the first runs");
            await killCli(first);
            assert.deepEqual(locks(), held, "a killed update leaves its lock");
            await refused("after the first was killed");
            const cancel = real.pulumi(["cancel", "--yes", "--stack", "edge"]);
            assert.equal(cancel.status, 0, cancel.stderr);
            assert.match(cancel.stdout, /^The currently running update for 'edge' has been canceled!$/m);
            assert.deepEqual(locks(), [], "pulumi cancel removed the lock");
            // Past the lock: the next update runs the program, and its provider reaches the endpoint again.
            const seen = endpoint.connections();
            const next = up();
            await reached(next, seen);
            assert.equal(locks().length, 1, "under a lock of its own");
            assert.notDeepEqual(locks(), held);
        } finally {
            for (const one of started) await killCli(one);
            await endpoint.close();
            project.remove();
        }
    });

    it("a failing Pulumi CLI leaves the stack file as it was", async () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            // The stack's secrets were set up with another passphrase: the CLI refuses to encrypt with this one.
            assert.equal(real.pulumi(["stack", "init", "edge"], { PULUMI_CONFIG_PASSPHRASE: "another-passphrase" }).status, 0);
            fs.appendFileSync(p.stackFile, "config:\n  openstack:cloud: mycloud\n  k8s-vnf:image: golden-image\n");
            const before = fs.readFileSync(p.stackFile, "utf8");
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], real.env);
            assert.equal(run.code, 1);
            assert.match(run.err, /pulumi config set exited 1: error: incorrect passphrase/);
            assert.doesNotMatch(run.err, SECRETS);
            assert.equal(fs.readFileSync(p.stackFile, "utf8"), before);
        } finally {
            p.cleanup();
        }
    });

    it("an existing stack file is the base: its image, other namespaces and encryption salt survive; its secrets are set again", async () => {
        const p = scratchProject();
        try {
            const real = realPulumi(p.dir);
            assert.equal(real.pulumi(["stack", "init", "edge"]).status, 0);
            assert.equal(real.pulumi(["config", "set", "--stack", "edge", "--secret", "--path", "masters.password"], {}, "old-Secret-0").status, 0);
            const salt = YAML.parse(fs.readFileSync(p.stackFile, "utf8")).encryptionsalt;
            fs.appendFileSync(p.stackFile, "  openstack:cloud: mycloud\n  k8s-vnf:image: golden-image\n");
            const run = await cli(["import-request", p.request, "--stack", "edge", "--project", p.dir], real.env);
            assert.equal(run.code, 0, run.err);
            const doc = YAML.parse(fs.readFileSync(p.stackFile, "utf8"));
            assert.equal(doc.encryptionsalt, salt);
            assert.equal(doc.config["openstack:cloud"], "mycloud");
            assert.equal(doc.config["k8s-vnf:image"], "golden-image");
            assert.equal(real.pulumi(["config", "get", "--stack", "edge", "--path", "masters.password"]).stdout.trim(), "master-Secret-1");
        } finally {
            p.cleanup();
        }
    });
});
