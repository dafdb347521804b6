import { strict as assert } from "node:assert";
import { UNKNOWN } from "../providers/step";
import { ProviderHost } from "./support/providerHost";

/**
 * The ExternalLoadBalancer step's check and diff through the real dynamic-provider host (neither opens a
 * session): what the engine decides with these answers. A new VM (or one being replaced: its id unknown)
 * replaces it; masters or workers joining or leaving, other ports or range update it in place (HAProxy
 * reloads); a refresh that found the file edited by hand, other servers in it or HAProxy stopped is drift an
 * update repairs. Inputs still unknown at preview are never refused.
 */
const connection = { host: "192.0.2.10", username: "ubuntu", password: "pw-not-shown" };
const LB = {
    vmId: "vm-lb-1",
    apiPort: 8383,
    apiServerPort: 6443,
    controlPlanes: [
        { name: "m-0", address: "10.10.0.5" },
        { name: "m-1", address: "10.10.0.6" },
    ],
    workers: [{ name: "w-0", address: "10.10.0.7" }],
    nodePortRange: [30000, 32767],
};
const news = (over: Record<string, unknown> = {}) => ({ connection, providerVersion: "1", ...LB, ...over });
const backends = { controlPlanes: LB.controlPlanes, workers: LB.workers };
const olds = (over: Record<string, unknown> = {}) => ({ ...news(), backends, config: "current", haproxy: "running", hostKeyFingerprint: "SHA256:lb", ...over });

describe("ExternalLoadBalancer: check and diff through the real dynamic-provider host", function () {
    this.timeout(60_000);
    let host: ProviderHost;
    before(async () => {
        host = await ProviderHost.start("providers/kubespray/externalLoadBalancer.ts", "externalLoadBalancerProvider");
    });
    after(() => host?.stop());

    const failures = async (over: Record<string, unknown>) => (await host.check({}, news(over))).failures;
    const properties = async (over: Record<string, unknown>) => [...new Set((await failures(over)).map((f) => f.property))].sort();

    it("accepts a cluster with workers, one without (an empty list), and IPv6 addresses", async () => {
        assert.deepEqual(await failures({}), []);
        assert.deepEqual(await failures({ workers: [] }), []);
        assert.deepEqual(await failures({ controlPlanes: [{ name: "m-0", address: "fd00::5" }], workers: [{ name: "w-0", address: "fd00::7" }] }), []);
    });

    it("refuses bad inputs before anything runs, each failure naming its property", async () => {
        assert.deepEqual(await properties({ vmId: "", apiPort: 0, apiServerPort: 70000, nodePortRange: [32767, 30000] }), ["apiPort", "apiServerPort", "nodePortRange", "vmId"]);
        assert.deepEqual(await properties({ controlPlanes: [] }), ["controlPlanes"]);
        assert.deepEqual(await properties({ workers: undefined }), ["workers"]);
        assert.deepEqual(
            await properties({
                controlPlanes: [
                    { name: "M_0", address: "10.10.0.5" },
                    { name: "m-1", address: "10.10.0.6; reboot" },
                ],
                workers: [
                    { name: "w-0", address: "10.10.0.300" },
                    { name: "w-0", address: "10.10.0.8" },
                ],
            }),
            ["controlPlanes[0].name", "controlPlanes[1].address", "workers[0].address", "workers[1].name"],
        );
        const twice = (await failures({ workers: [LB.workers[0], LB.workers[0]] }))[0];
        assert.deepEqual([twice.property, twice.reason], ["workers[1].name", "w-0 is listed twice"]);
        for (const nodePortRange of [[30000], [0, 32767], [30000, "32767"], "30000-32767"]) assert.deepEqual(await properties({ nodePortRange }), ["nodePortRange"], JSON.stringify(nodePortRange));
        assert.deepEqual(await properties({ apiPort: 30080 }), ["apiPort"], "the API port inside the NodePort range");
        assert.deepEqual(await properties({ connection: { host: "a b", username: "ubuntu", password: "x" } }), ["connection.host"]);
    });

    it("lets values still unknown at preview through, also inside lists", async () => {
        for (const key of ["vmId", "apiPort", "apiServerPort", "controlPlanes", "workers", "nodePortRange", "connection"]) {
            assert.deepEqual(await failures({ [key]: UNKNOWN }), [], key);
        }
        assert.deepEqual(await failures({ controlPlanes: [{ name: "m-0", address: UNKNOWN }], workers: [{ name: UNKNOWN, address: "10.10.0.7" }] }), []);
    });

    it("a new or unknown VM id, or another host, replaces it (not delete-first: the new VM is set up before the old goes)", async () => {
        assert.equal((await host.diff("id", olds(), news())).changes, "none");
        for (const vmId of ["vm-lb-2", UNKNOWN]) {
            const d = await host.diff("id", olds(), news({ vmId }));
            assert.deepEqual([d.changes, d.replaces, d.deleteBeforeReplace], ["some", ["vmId"], false], String(vmId));
        }
        assert.deepEqual((await host.diff("id", olds(), news({ connection: { ...connection, host: "192.0.2.11" } }))).replaces, ["connection"]);
    });

    it("a worker added or removed, a master replaced, other ports or range (also still unknown) update it in place", async () => {
        const changes = [
            { workers: [...LB.workers, { name: "w-1", address: "10.10.0.8" }] },
            { workers: [] },
            { controlPlanes: [LB.controlPlanes[0], { name: "m-2", address: "10.10.0.9" }] },
            { apiPort: 8443 },
            { apiServerPort: 16443 },
            { nodePortRange: [30000, 30999] },
            { workers: UNKNOWN },
            { controlPlanes: [LB.controlPlanes[0], { name: "m-1", address: UNKNOWN }] },
        ];
        for (const change of changes) {
            const d = await host.diff("id", olds(), news(change));
            assert.deepEqual([d.changes, d.replaces], ["some", []], JSON.stringify(change));
        }
    });

    it("a refresh that found the file edited, other servers in it, or HAProxy stopped is drift an update repairs", async () => {
        for (const found of [{ config: "edited" }, { config: "missing" }, { haproxy: "stopped" }, { backends: { ...backends, workers: [] } }, { backends: { ...backends, controlPlanes: [{ name: "m-0", address: "10.10.0.99" }] } }]) {
            const d = await host.diff("id", olds(found), news());
            assert.deepEqual([d.changes, d.replaces], ["some", []], JSON.stringify(found));
        }
    });
});
