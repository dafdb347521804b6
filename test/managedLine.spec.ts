import { strict as assert } from "node:assert";
import * as pulumi from "@pulumi/pulumi";
import { managedLineStep } from "../providers/managedLine";
import { UNKNOWN } from "../providers/step";
import { SshSession } from "../providers/transport/ssh";
import { sh } from "../providers/transport/shell";
import { failure, useLab } from "./support/labSuite";
import { ProviderCallError, ProviderHost } from "./support/providerHost";

const FILE = "/etc/k8s-vnf-hosts";

describe("ManagedLine through the real dynamic-provider host, on lab hosts", function () {
    this.timeout(120_000);
    const suite = useLab(["node"]);
    let host: ProviderHost;

    before(async function () {
        if (!suite.lab) this.skip();
        host = await ProviderHost.start("providers/managedLine.ts", "managedLineProvider");
    });
    after(() => {
        if (!host) return;
        suite.captured.push(host.output);
        host.stop();
    });

    const inputs = (over: Record<string, unknown> = {}) => ({
        connection: suite.lab.target("node"),
        providerVersion: managedLineStep.version,
        path: FILE,
        line: "10.0.0.5 worker-5",
        mode: "0644",
        sudo: true,
        ...over,
    });
    const lines = () => suite.lab.inside("node", `cat ${FILE} 2>/dev/null || true`);

    it("the SDK's unknown placeholder is the one the provider tolerates", () => {
        assert.equal(UNKNOWN, pulumi.runtime.unknownValue);
    });

    it("check names bad inputs, and lets unknown values through during preview", async () => {
        const bad = await host.check({}, inputs({ path: "relative/file", line: "two\nlines", connection: { host: "a b", username: "ubuntu" } }));
        assert.deepEqual(bad.failures.map((f) => f.property).sort(), ["connection", "connection.host", "line", "path"]);
        const preview = await host.check({}, inputs({ connection: UNKNOWN, line: UNKNOWN }));
        assert.deepEqual(preview.failures, []);
    });

    it("create adds the line once; running create again (a retried up) adds nothing", async () => {
        await suite.lab.inside("node", `printf '127.0.0.1 localhost\\n10.0.0.5 worker-50\\n' > ${FILE}; chmod 0600 ${FILE}`);
        const first = await host.create(inputs());
        assert.equal(first.id, `${suite.lab.host("node").address}:${FILE}`);
        assert.match(String(first.outs.hostKeyFingerprint), /^SHA256:/);
        assert.equal(first.outs.line, "10.0.0.5 worker-5", "outputs carry every input");
        await host.create(inputs());
        assert.equal(await lines(), "127.0.0.1 localhost\n10.0.0.5 worker-50\n10.0.0.5 worker-5\n", "exact match: worker-50 is not worker-5");
        assert.equal(await suite.lab.inside("node", `stat -c %a ${FILE}`), "600\n", "mode kept");
    });

    it("diff: the host or the path replace; the line or the code version update; nothing else is a change", async () => {
        const { outs } = await host.create(inputs());
        assert.deepEqual(await host.diff("x", outs, inputs()), { changes: "none", replaces: [], deleteBeforeReplace: false });
        assert.deepEqual((await host.diff("x", outs, inputs({ line: "10.0.0.6 worker-6" }))).replaces, []);
        assert.equal((await host.diff("x", outs, inputs({ line: "10.0.0.6 worker-6" }))).changes, "some");
        assert.equal((await host.diff("x", outs, inputs({ providerVersion: "2" }))).changes, "some");
        assert.deepEqual((await host.diff("x", outs, inputs({ path: "/etc/other" }))).replaces, ["path"]);
        assert.deepEqual((await host.diff("x", outs, inputs({ connection: { ...suite.lab.target("node"), host: "10.231.0.99" } }))).replaces, ["connection"]);
        assert.deepEqual((await host.diff("x", outs, inputs({ connection: UNKNOWN }))).replaces, ["connection"], "an unknown host (VM being replaced) replaces");
        assert.deepEqual((await host.diff("x", outs, inputs({ path: UNKNOWN }))).replaces, ["path"]);
    });

    it("update swaps the old line for the new one; read sees it; delete removes it; read then reports it gone", async () => {
        const { id, outs } = await host.create(inputs());
        const updated = await host.update(id, outs, inputs({ line: "10.0.0.6 worker-6" }));
        assert.equal(await lines(), "127.0.0.1 localhost\n10.0.0.5 worker-50\n10.0.0.6 worker-6\n");
        assert.equal((await host.read(id, updated)).id, id);
        await host.delete(id, updated);
        assert.equal(await lines(), "127.0.0.1 localhost\n10.0.0.5 worker-50\n");
        assert.equal((await host.read(id, updated)).id, "", "refresh drops a line that is gone");
        await host.delete(id, updated);
        assert.equal(await lines(), "127.0.0.1 localhost\n10.0.0.5 worker-50\n", "delete twice is harmless");
    });

    it("a fault mid-step fails the create; the re-run completes without a duplicate", async () => {
        // Another step holds the file's lock, so create blocks inside the script; then sshd dies under it.
        const holder = await SshSession.open(suite.lab.target("node"), {}, { step: "lock-holder", log: suite.log });
        const lockFile = (await holder.exec(sh`printf '/run/lock/k8s-vnf-%s.lock' "$(printf '%s' ${FILE} | sha256sum | cut -c1-16)"`)).stdout;
        const holding = holder.exec(sh`flock ${lockFile} sleep 20`, { sudo: true, allowFailure: true }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 500));
        const outcome = host.create(inputs({ line: "10.0.0.7 worker-7" })).then(
            () => assert.fail("create survived its host's sshd"),
            (e: Error) => e,
        );
        await new Promise((r) => setTimeout(r, 1_000));
        await suite.lab.killSshd("node");
        const error = await outcome;
        suite.captured.push(error.message);
        assert.ok(error instanceof ProviderCallError, error.message);
        await holding;
        holder.close();

        await suite.lab.startSshd("node");
        assert.doesNotMatch(await lines(), /worker-7/, "nothing written by the interrupted step");
        await host.create(inputs({ line: "10.0.0.7 worker-7" }));
        await host.create(inputs({ line: "10.0.0.7 worker-7" }));
        assert.equal((await lines()).split("\n").filter((l) => l === "10.0.0.7 worker-7").length, 1);
    });

    it("a host whose key changed since create is refused on update, naming both keys", async () => {
        const { id, outs } = await host.create(inputs({ line: "10.0.0.8 worker-8" }));
        await suite.lab.rekey("node");
        const error = await failure(suite, () => host.update(id, outs, inputs({ line: "10.0.0.9 worker-9" })));
        assert.match(error.message, new RegExp(`host key of ${suite.lab.host("node").address} changed: expected ${String(outs.hostKeyFingerprint).replace(/[+/]/g, "\\$&")}, got SHA256:`));
    });

    it("the step's output reaches the host's stdout with its prefix, and no secret", () => {
        assert.match(host.output, /\[ManagedLine 10\.231\.\d+\.10:\/etc\/k8s-vnf-hosts 10\.231\.\d+\.10\] changed/);
        assert.ok(!host.output.includes(suite.lab.password));
    });
});

describe("ManagedLine as a resource (mocks)", () => {
    it("registers with its type, a secret connection, the step's code version, and connection as a secret output", async () => {
        const { Graph, installMocks, recordingTransformation } = await import("./support/program");
        const { ManagedLine } = await import("../providers/managedLine");
        const graph = new Graph();
        await installMocks(graph, "mocks");
        const connection = { host: "10.0.0.5", username: "ubuntu", password: "not-in-the-clear" };
        new ManagedLine("hosts-entry", { connection, path: "/etc/hosts", line: "10.0.0.5 worker-0" }, { transformations: [recordingTransformation(graph)] });
        await new Promise((r) => setTimeout(r, 200));
        const r = graph.named("hosts-entry");
        assert.equal(r.type, "pulumi-nodejs:dynamic/k8s-vnf:ManagedLine");
        assert.equal(r.inputs.providerVersion, managedLineStep.version);
        assert.equal(r.inputs.connection["4dabf18193072939515e22adb298388d"], "1b47061264138c4ac30d75fd1eb44270", "connection is secret");
        assert.match(r.inputs.__provider, /exports\.handler/);
        assert.ok(r.opts.additionalSecretOutputs?.includes("connection"));
    });
});
