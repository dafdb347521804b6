import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as os from "node:os";
import { readEntry, writeEntry } from "../loader/cacheEntry";
import { sourceFiles } from "../providers/providerCodeCache";
import { ProviderHost } from "./support/providerHost";
import { PROJECT_DIR } from "./support/program";

describe("packed step providers", () => {
    let host: ProviderHost;
    before(async function () {
        this.timeout(60_000);
        host = await ProviderHost.start("test/fixtures/packedEcho.ts", "packedEcho");
    });
    after(() => host?.stop());

    it("carry their code compressed, not in the clear", () => {
        assert.match(host.providerText!, /exports\.handler/);
        assert.ok(!host.providerText!.includes("echo-provider-3f9c"), "the wrapped provider's code is not readable in __provider");
        assert.ok(!host.providerText!.includes("echoed"));
    });

    it("run that code in the real provider host, every method", async () => {
        assert.equal((await host.check({}, { value: "a" })).inputs.value, "a");
        const created = await host.create({ value: "a" });
        assert.equal(created.id, "echo-a");
        assert.equal(created.outs.echoed, "echo-provider-3f9c");
        assert.deepEqual((await host.diff(created.id, created.outs, { value: "b" })).replaces, ["value"]);
        assert.equal((await host.update(created.id, created.outs, { value: "a" })).echoed, "echo-provider-3f9c");
        assert.equal((await host.read(created.id, created.outs)).id, "echo-a");
        await assert.rejects(host.delete(created.id, created.outs), /deleted by echo-provider-3f9c/);
    });
});

describe("step providers' code cache", () => {
    const run = (script: string) =>
        execFileSync(process.execPath, ["-r", path.join(PROJECT_DIR, "loader", "typescript.js"), "-e", script], { cwd: PROJECT_DIR, encoding: "utf8" }).trim();

    it("serializes a step's code once for the same sources, under the program's loader", () => {
        const kind = `CacheTest${process.pid}`;
        const script = `
            const { cachedProviderCode } = require("./providers/providerCodeCache.ts");
            let serialized = 0;
            const serialize = async () => "code-" + ++serialized;
            (async () => {
                const first = await cachedProviderCode(${JSON.stringify(kind)}, serialize);
                const second = await cachedProviderCode(${JSON.stringify(kind)}, serialize);
                console.log(JSON.stringify({ first, second, serialized }));
            })();`;
        const cacheDir = path.join(PROJECT_DIR, "node_modules", ".cache", "k8s-vnf", "providers");
        try {
            assert.deepEqual(JSON.parse(run(script)), { first: "code-1", second: "code-1", serialized: 1 });
            // A new process with the same sources reads it back.
            assert.deepEqual(JSON.parse(run(script)), { first: "code-1", second: "code-1", serialized: 0 });
        } finally {
            for (const f of fs.existsSync(cacheDir) ? fs.readdirSync(cacheDir) : []) if (f.startsWith(`${kind}-`)) fs.rmSync(path.join(cacheDir, f));
        }
    });

    it("uses an entry only when it is whole, and keeps one per thing", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-cache-"));
        try {
            const file = path.join(dir, "Kind-key1.txt");
            writeEntry(file, "line 1\nline 2", "Kind-");
            assert.equal(readEntry(file), "line 1\nline 2");
            const whole = fs.readFileSync(file, "utf8");
            fs.writeFileSync(file, whole.slice(0, whole.length - 10));
            assert.equal(readEntry(file), undefined, "cut short");
            fs.writeFileSync(file, whole.replace("line 2", "line 3"));
            assert.equal(readEntry(file), undefined, "edited");
            fs.writeFileSync(file, "");
            assert.equal(readEntry(file), undefined, "empty");
            writeEntry(path.join(dir, "Kind-key2.txt"), "new", "Kind-");
            assert.deepEqual(fs.readdirSync(dir), ["Kind-key2.txt"]);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("its key is made of regular files only: an editor's dangling lock link fails nothing", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-sources-"));
        try {
            fs.mkdirSync(path.join(dir, "sub"));
            fs.writeFileSync(path.join(dir, "sub", "step.ts"), "x");
            fs.symlinkSync("user@host.1234:1700000000", path.join(dir, "sub", ".#step.ts"));
            assert.deepEqual(sourceFiles(dir), [path.join(dir, "sub", "step.ts")]);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

    it("its key covers every project file the program loads", () => {
        const script = `
            const { PROGRAM_SOURCES } = require("./providers/providerCodeCache.ts");
            try { require("./index.ts"); } catch { /* no engine here: the imports are what counts */ }
            const project = process.cwd() + "/";
            const loaded = Object.keys(require.cache).filter((f) => f.startsWith(project) && !f.includes("/node_modules/")).map((f) => f.slice(project.length));
            console.log(JSON.stringify({ loaded, uncovered: loaded.filter((f) => !PROGRAM_SOURCES.some((s) => f === s || f.startsWith(s + "/"))) }));`;
        const { loaded, uncovered } = JSON.parse(run(script));
        assert.ok(loaded.includes("providers/kubernetes/workerMember.ts") && loaded.includes("components/vnf.ts"), loaded.join(" "));
        assert.deepEqual(uncovered, []);
    });
});
