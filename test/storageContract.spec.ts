import { strict as assert } from "node:assert";
import { UNKNOWN } from "../providers/step";
import { ProviderHost } from "./support/providerHost";

/**
 * The storage steps' check and diff through the real dynamic-provider host (neither opens a session): what
 * the engine decides with these answers. A new VM (or one being replaced: its id unknown) replaces the NFS
 * server step delete-first, which is where a storage heal is checked; changed exports are an update; a
 * server found stopped or an export missing at refresh is drift an update repairs.
 */
const connection = { host: "10.0.0.9", username: "ubuntu", password: "pw-not-shown" };
const controlPlanes = [{ name: "m-0", connection: { ...connection, host: "10.0.0.5" } }];
const SERVER = {
    vmId: "vm-1",
    volumes: [{ serial: "0b4c1cb7-92f3-4bd5-9", mountTo: "/volume" }],
    exportsFile: "/volume/nfs/pv1 10.10.0.0/24(rw,sync,no_subtree_check,root_squash,sec=sys,fsid=42)\n",
    exportDirs: ["/volume/nfs/pv1"],
};
const GATE = { healGeneration: 0, serverIdentity: "a".repeat(64), persistentVolumes: ["nfs-pv1"], healWhileInUse: false, controlPlanes };

describe("storage steps: check and diff through the real dynamic-provider host", function () {
    this.timeout(60_000);
    let server: ProviderHost;
    let client: ProviderHost;
    let gate: ProviderHost;
    before(async () => {
        [server, client, gate] = await Promise.all([
            ProviderHost.start("providers/storage/nfsServer.ts", "nfsServerProvider"),
            ProviderHost.start("providers/storage/nfsClient.ts", "nfsClientProvider"),
            ProviderHost.start("providers/storage/storageHealCheck.ts", "storageHealCheckProvider"),
        ]);
    });
    after(() => {
        server?.stop();
        client?.stop();
        gate?.stop();
    });
    const news = (over: Record<string, unknown> = {}) => ({ connection, providerVersion: "1", ...SERVER, ...over });

    it("NfsServer: check names every bad input, before anything runs, and lets unknown values through", async () => {
        assert.deepEqual((await server.check({}, news())).failures, []);
        const bad = { volumes: [{ serial: "../../sda", mountTo: "/" }], exportsFile: 3, exportDirs: ["relative/dir"] };
        const failures = (await server.check({}, news(bad))).failures;
        assert.deepEqual([...new Set(failures.map((f) => f.property))].sort(), Object.keys(bad).sort());
        assert.deepEqual((await server.check({}, news(Object.fromEntries(Object.keys(bad).map((k) => [k, UNKNOWN]))))).failures, []);
    });

    it("StorageHealCheck: check names bad inputs; a new heal generation, VM identity or healWhileInUse updates it (where it checks), nothing replaces it", async () => {
        const inputs = (over: Record<string, unknown> = {}) => ({ connection, providerVersion: "1", ...GATE, ...over });
        assert.deepEqual((await gate.check({}, inputs())).failures, []);
        const bad = { healGeneration: -1, serverIdentity: "x", persistentVolumes: ["Not A Name"], healWhileInUse: "yes", controlPlanes: [] };
        assert.deepEqual([...new Set((await gate.check({}, inputs(bad))).failures.map((f) => f.property))].sort(), Object.keys(bad).sort());
        const olds = inputs();
        assert.equal((await gate.diff("id", olds, inputs())).changes, "none");
        for (const change of [{ healGeneration: 1 }, { serverIdentity: "b".repeat(64) }, { healWhileInUse: true }, { controlPlanes: UNKNOWN }]) {
            const d = await gate.diff("id", olds, inputs(change));
            assert.deepEqual([d.changes, d.replaces], ["some", []], JSON.stringify(change));
        }
    });

    it("NfsServer: a new or unknown VM id replaces it delete first (one VM has the volumes at a time); new exports update it", async () => {
        const olds = { ...news(), served: ["/volume/nfs/pv1"], serverRunning: true, hostKeyFingerprint: "SHA256:x" };
        assert.equal((await server.diff("id", olds, news())).changes, "none");
        for (const vmId of ["vm-2", UNKNOWN]) {
            const d = await server.diff("id", olds, news({ vmId }));
            assert.deepEqual([d.replaces, d.deleteBeforeReplace], [["vmId"], true], String(vmId));
        }
        for (const change of [{ exportsFile: SERVER.exportsFile.replace("root_squash", "all_squash") }, { exportDirs: ["/volume/nfs/pv1", "/volume/nfs/pv2"] }, { healWhileInUse: true }, { volumes: UNKNOWN }]) {
            const d = await server.diff("id", olds, news(change));
            assert.deepEqual([d.changes, d.replaces], ["some", []], JSON.stringify(change));
        }
    });

    it("NfsServer: a refresh that found the server stopped or an export missing is drift an update repairs", async () => {
        const olds = { ...news(), served: ["/volume/nfs/pv1"], serverRunning: true };
        assert.equal((await server.diff("id", { ...olds, serverRunning: false }, news())).changes, "some");
        assert.equal((await server.diff("id", { ...olds, served: [] }, news())).changes, "some");
        assert.equal((await server.diff("id", { ...olds, volumes: [] }, news())).changes, "some", "a volume found unmounted");
    });

    it("NfsClient: replaced with its VM; a client found missing is drift", async () => {
        const inputs = { connection, providerVersion: "1", vmId: "vm-1", nodeName: "w-0" };
        assert.deepEqual((await client.check({}, inputs)).failures, []);
        assert.deepEqual((await client.check({}, { ...inputs, nodeName: "" })).failures.map((f) => f.property), ["nodeName"]);
        const olds = { ...inputs, client: "2.6.2" };
        assert.equal((await client.diff("id", olds, inputs)).changes, "none");
        assert.deepEqual((await client.diff("id", olds, { ...inputs, vmId: UNKNOWN })).replaces, ["vmId"]);
        assert.equal((await client.diff("id", { ...olds, client: "" }, inputs)).changes, "some");
    });
});
