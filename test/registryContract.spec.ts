import { strict as assert } from "node:assert";
import { UNKNOWN } from "../providers/step";
import { ProviderHost } from "./support/providerHost";

/**
 * The registry steps' check and diff through the real dynamic-provider host (neither opens a session): what
 * the engine decides with these answers. A new VM replaces the registry step delete-first (the volume is one
 * VM's at a time); new settings, logins or images update it; a registry found down, or a preloaded image
 * found missing, is drift. A node's connections are replaced with its VM and updated by any other change.
 */
const connection = { host: "10.0.0.9", username: "ubuntu", password: "pw-not-shown" };
const SHA = "ab".repeat(32);
const REGISTRY = {
    vmId: "vm-1",
    volumes: [{ serial: "0b4c1cb7-92f3-4bd5-9", mountTo: "/var/lib/docker-registry" }],
    config: "version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: /var/lib/docker-registry\n",
    port: 5000,
    scheme: "https",
    certificate: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n",
    privateKey: "-----BEGIN PRIVATE KEY-----\nk\n-----END PRIVATE KEY-----\n",
    logins: "user01:pw-not-shown",
    preloadImages: [{ file: "/pkg/Files/images/app.tar", sha256: SHA, format: "oci-archive", image: "team/app:1.0" }],
};
const CONNECTIONS = {
    vmId: "vm-1",
    nodeName: "w-0",
    registries: [{ server: "192.168.0.10:5000", hostsToml: 'server = "http://192.168.0.10:5000"\n', caCertificate: "" }],
    hostsLines: ["192.168.0.20 registry.example.com"],
    credentials: '{"auths":{}}',
};

describe("registry steps: check and diff through the real dynamic-provider host", function () {
    this.timeout(60_000);
    let registry: ProviderHost;
    let connections: ProviderHost;
    before(async () => {
        [registry, connections] = await Promise.all([
            ProviderHost.start("providers/registry/registryServer.ts", "registryServerProvider"),
            ProviderHost.start("providers/kubernetes/registryConnections.ts", "registryConnectionsProvider"),
        ]);
    });
    after(() => {
        registry?.stop();
        connections?.stop();
    });
    const news = (over: Record<string, unknown> = {}) => ({ connection, providerVersion: "1", ...REGISTRY, ...over });
    const nodeNews = (over: Record<string, unknown> = {}) => ({ connection, providerVersion: "1", ...CONNECTIONS, ...over });

    it("RegistryServer: check names every bad input, before anything runs, and lets unknown values through", async () => {
        assert.deepEqual((await registry.check({}, news())).failures, []);
        const bad = {
            volumes: [{ serial: "../../sda", mountTo: "/" }, { serial: "b", mountTo: "/x" }],
            config: 3,
            port: 70000,
            scheme: "ftp",
            logins: "user01",
            registryImage: { file: "relative.tar", sha256: "x" },
            preloadImages: [REGISTRY.preloadImages[0], { ...REGISTRY.preloadImages[0], image: "Team/App" }],
        };
        const failures = (await registry.check({}, news(bad))).failures;
        assert.deepEqual([...new Set(failures.map((f) => f.property))].sort(), Object.keys(bad).sort());
        assert.deepEqual((await registry.check({}, news({ scheme: "http" }))).failures.map((f) => f.property), ["certificate"], "a key for http is a mistake too");
        assert.deepEqual((await registry.check({}, news(Object.fromEntries(Object.keys(bad).map((k) => [k, UNKNOWN]))))).failures, []);
    });

    it("RegistryServer: a new or unknown VM id replaces it delete first; settings, logins and images update it", async () => {
        const olds = { ...news(), running: "package", preloaded: ["team/app:1.0"], hostKeyFingerprint: "SHA256:x" };
        assert.equal((await registry.diff("id", olds, news())).changes, "none");
        for (const vmId of ["vm-2", UNKNOWN]) {
            const d = await registry.diff("id", olds, news({ vmId }));
            assert.deepEqual([d.replaces, d.deleteBeforeReplace], [["vmId"], true], String(vmId));
        }
        for (const change of [{ logins: "user01:new-pw" }, { config: `${REGISTRY.config}# more\n` }, { preloadImages: [] }, { registryImage: { file: "/pkg/r.tar", sha256: SHA } }, { privateKey: UNKNOWN }]) {
            const d = await registry.diff("id", olds, news(change));
            assert.deepEqual([d.changes, d.replaces], ["some", []], JSON.stringify(change));
        }
    });

    it("RegistryServer: a refresh that found the registry down, a preloaded image gone or the volume unmounted is drift an update repairs", async () => {
        const olds = { ...news(), running: "package", preloaded: ["team/app:1.0"] };
        assert.equal((await registry.diff("id", { ...olds, running: "none" }, news())).changes, "some");
        assert.equal((await registry.diff("id", { ...olds, preloaded: [] }, news())).changes, "some");
        assert.equal((await registry.diff("id", { ...olds, volumes: [] }, news())).changes, "some");
    });

    it("RegistryConnections: check names bad inputs; replaced with its VM; any other change (a registry added or removed, new logins) updates it; a connection found missing is drift", async () => {
        assert.deepEqual((await connections.check({}, nodeNews())).failures, []);
        const bad = { nodeName: "", registries: [{ server: "../../etc", hostsToml: "", caCertificate: "" }], hostsLines: ["192.168.0.20 reg; reboot"] };
        assert.deepEqual([...new Set((await connections.check({}, nodeNews(bad))).failures.map((f) => f.property))].sort(), Object.keys(bad).sort());
        const twice = { registries: [CONNECTIONS.registries[0], CONNECTIONS.registries[0]] };
        assert.deepEqual((await connections.check({}, nodeNews(twice))).failures.map((f) => f.property), ["registries"]);
        const olds = { ...nodeNews(), connected: ["192.168.0.10:5000"] };
        assert.equal((await connections.diff("id", olds, nodeNews())).changes, "none");
        assert.deepEqual((await connections.diff("id", olds, nodeNews({ vmId: UNKNOWN }))).replaces, ["vmId"]);
        for (const change of [{ registries: [] }, { credentials: undefined }, { hostsLines: [] }]) {
            const d = await connections.diff("id", olds, nodeNews(change));
            assert.deepEqual([d.changes, d.replaces], ["some", []], JSON.stringify(change));
        }
        assert.equal((await connections.diff("id", { ...olds, connected: [] }, nodeNews())).changes, "some");
    });
});
