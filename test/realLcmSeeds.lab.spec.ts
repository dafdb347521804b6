/**
 * Seeds 000 (the NFS storage server with PersistentVolumes) and 002 (the private registry VNF) through the
 * LCM service on the real Pulumi CLI, sent by the real `openstack vnflcm` client with their bodies as they
 * are (only the login passwords the lab's). The lab OpenStack API has the network and the VIM those bodies
 * name (both seeds name the same). The storage cluster's first master runs the real control plane, so its
 * PersistentVolumes are registered in a real API server by the real Kubernetes plugin, and a claim is bound
 * by the real PV controller (see realStorage.lab.spec.ts for the storage server under `pulumi up`).
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { ociArchive } from "./support/ociImage";
import { PROJECT_DIR } from "./support/program";
import { claimFor, realKubectl } from "./support/realKubectl";
import { skipAfterFirstFailure } from "./support/labSuite";
import { leftInTemporaryFolder, useRealLcmService } from "./support/realLcmService";
import { registryImage } from "./support/registryImage";
import { useBuiltTools } from "./support/tools";

/** What seeds 000 and 002 name: the VIM, the network, and the packages' vnfdIds. */
const SEED_VIM = "8d8373fe-6977-49ff-83ac-7756572ed186";
const SEED_NETWORK = "f0c82461-36b5-4d86-8322-b0bc19cda65f";
const STORAGE_VNFD = "b1bb0ce7-ebca-4fa7-95ed-4840d70a1177";
const REGISTRY_VNFD = "7a2c5d4e-0002-4c1b-9f3a-5e6d7c8b9a02";

describe("the LCM service on the real Pulumi CLI: seed 000 (storage and PersistentVolumes) and seed 002 (registry VNF) as they are, through the real openstack vnflcm client", function () {
    useBuiltTools();
    this.timeout(900_000);
    const lcm = useRealLcmService({
        cluster: "lcm-seeds",
        networkId: SEED_NETWORK,
        vimIds: [SEED_VIM],
        packages: async (dir) => {
            fs.cpSync(path.join(PROJECT_DIR, "examples/package"), path.join(dir, STORAGE_VNFD), { recursive: true });
            fs.mkdirSync(path.join(dir, REGISTRY_VNFD, "Files/images"), { recursive: true });
            await registryImage(path.join(dir, REGISTRY_VNFD, "Files/images/private_registry.tar"), "docker-archive");
        },
    });
    const { suite, openstack } = lcm;
    const inside = (host: string, command: string, input?: Buffer) => suite.lab.inside(host, command, { input });
    const serverIds = (vnfcs: any[]) => Object.fromEntries(vnfcs.map((v) => [v.id, v.computeResource.resourceId]));

    describe("seed 000: the storage server, its PersistentVolumes in the cluster's real API server", () => {
        let id = "";
        const storageVnfc = () => `vnf-${id}-storage`;
        /** The real kubectl on the test machine with the master's admin kubeconfig (its key among the credentials looked for). */
        const kubectl = async (args: string[], input?: string) => {
            const kubeconfig = await inside(`vnf-${id}-master-0`, "cat /etc/kubernetes/admin.conf");
            lcm.credentials.push(/client-key-data: (\S+)/.exec(kubeconfig)?.[1] ?? "");
            return realKubectl(kubeconfig, args, input);
        };
        const uids = async () => JSON.parse(await kubectl(["get", "pv", "-o", "json"])).items.map((pv: any) => `${pv.metadata.name} ${pv.metadata.uid}`);

        skipAfterFirstFailure();

        it("instantiate (client, the seed's body): COMPLETED; every VNFC its Nova server, the storage server among them; the three PVs on the storage server's address, Available", async () => {
            id = JSON.parse(await openstack("create", STORAGE_VNFD, "--name", "vnf-storage", "-f", "json")).ID;
            assert.match(await openstack("instantiate", id, lcm.seedFile("storage-instantiate.json")), /has been accepted/);
            const op = await lcm.settle(id);
            assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
            const vnfcs = await lcm.vnfcs(id);
            const byName = Object.fromEntries(lcm.api.servers().map((s) => [s.name, s]));
            assert.deepEqual(Object.keys(serverIds(vnfcs)).sort(), Object.keys(byName).sort(), "a VNFC per server");
            for (const [vnfc, server] of Object.entries(serverIds(vnfcs))) assert.equal(server, byName[vnfc].id, vnfc);
            assert.ok(vnfcs.some((v) => v.id === storageVnfc()), vnfcs.map((v) => v.id).join(", "));
            assert.deepEqual(op.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]).sort(), vnfcs.map((v) => [v.id, "ADDED"]).sort());
            assert.deepEqual(lcm.api.volumes().map((v) => v.status), ["in-use"]);
            await kubectl(["wait", "--for=jsonpath={.status.phase}=Available", "pv/nfs-pv1", "pv/nfs-pv2", "pv/nfs-pv3", "--timeout=60s"]);
            const pvs = JSON.parse(await kubectl(["get", "pv", "-o", "json"])).items;
            assert.deepEqual(
                pvs.map((pv: any) => [pv.metadata.name, pv.spec.nfs.server]),
                [1, 2, 3].map((i) => [`nfs-pv${i}`, byName[storageVnfc()].address]),
                "from the instance's package, on the storage server's address",
            );
        });

        it("heal of the storage VNFC (client): FAILED_TEMP while a claim the real PV controller bound holds a PV, nothing replaced; the claim deleted, op retry replaces exactly the storage server and keeps the PVs", async () => {
            await kubectl(["create", "-f", "-"], claimFor("nfs-pv3"));
            await kubectl(["wait", "--for=jsonpath={.status.phase}=Bound", "pv/nfs-pv3", "--timeout=90s"]);
            const before = serverIds(await lcm.vnfcs(id));
            const pvs = await uids();
            assert.match(await openstack("heal", "--vnfc-instance", storageVnfc(), "--", id), /has been accepted/);
            const refused = await lcm.settle(id);
            assert.equal(refused.operationState, "FAILED_TEMP");
            assert.match(refused.error.detail, /the storage server is not replaced: PersistentVolume nfs-pv3 is Bound/);
            assert.deepEqual(serverIds(await lcm.vnfcs(id)), before, "nothing replaced");
            await kubectl(["delete", "pvc", "claim-nfs-pv3", "-n", "default", "--wait"]);
            await kubectl(["wait", "--for=jsonpath={.status.phase}=Released", "pv/nfs-pv3", "--timeout=90s"]);
            await openstack("op", "retry", refused.id);
            const healed = await lcm.settle(id);
            assert.equal(healed.operationState, "COMPLETED", JSON.stringify(healed.error));
            assert.deepEqual(healed.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]), [[storageVnfc(), "MODIFIED"]]);
            const after = serverIds(await lcm.vnfcs(id));
            assert.deepEqual(Object.keys(after).filter((vnfc) => after[vnfc] !== before[vnfc]), [storageVnfc()], "only the storage server is new");
            assert.deepEqual(await uids(), pvs, "the same PersistentVolumes");
        });

        it("terminate (client): no server, volume or lab host of it left, nothing of the Pulumi commands in the service's temporary folder", async () => {
            assert.match(await openstack("terminate", id), /has been accepted/);
            const op = await lcm.settle(id);
            assert.equal(op.operationState, "COMPLETED", JSON.stringify(op.error));
            assert.deepEqual(lcm.api.servers(), []);
            assert.deepEqual(lcm.api.volumes(), []);
            assert.deepEqual(suite.lab.hostNames(), []);
            assert.deepEqual(leftInTemporaryFolder(lcm), []);
            assert.match(await openstack("delete", id), /deleted successfully/);
        });
    });

    describe("seed 002: the registry VNF", () => {
        let id = "";
        const vnfc = () => `vnf-${id}-registry`;

        it("instantiate (client, the seed's body): the package's registry image runs on containerd on its own volume; heal (client) gives a new server at the same address that serves the image pushed before; terminate leaves nothing", async () => {
            id = JSON.parse(await openstack("create", REGISTRY_VNFD, "--name", "vnf-registry", "-f", "json")).ID;
            assert.match(await openstack("instantiate", id, lcm.seedFile("registry-vnf-instantiate.json")), /has been accepted/);
            const instantiated = await lcm.settle(id);
            assert.equal(instantiated.operationState, "COMPLETED", JSON.stringify(instantiated.error));
            const vnfcs = await lcm.vnfcs(id);
            assert.deepEqual(vnfcs.map((v) => [v.id, v.vduId]), [[vnfc(), "PrivateRegistryVDU"]]);
            const server = lcm.api.servers().find((s) => s.name === vnfc())!;
            assert.equal(vnfcs[0].computeResource.resourceId, server.id);
            assert.match(await inside(vnfc(), "ctr -n k8s-vnf-registry tasks ls"), /^registry\s+\d+\s+RUNNING$/m, "the package's image runs on containerd");
            assert.equal(await inside(vnfc(), `curl -s -o /dev/null -w '%{http_code}' http://${server.address}:5000/v2/`), "200");
            const app = ociArchive(path.join(lcm.dataDir, "app.tar"), { files: { "app.txt": "pushed before the heal\n" } });
            await inside(vnfc(), "cat >/root/app.tar", fs.readFileSync(app.file));
            await inside(vnfc(), `skopeo copy --quiet --dest-tls-verify=false oci-archive:/root/app.tar docker://${server.address}:5000/team/app:1.0`);

            assert.match(await openstack("heal", "--vnfc-instance", vnfc(), "--", id), /has been accepted/);
            const healed = await lcm.settle(id);
            assert.equal(healed.operationState, "COMPLETED", JSON.stringify(healed.error));
            assert.deepEqual(healed.resourceChanges.affectedVnfcs.map((v: any) => [v.id, v.changeType]), [[vnfc(), "MODIFIED"]]);
            const replacement = lcm.api.servers().find((s) => s.name === vnfc())!;
            assert.notEqual(replacement.id, server.id, "a new server");
            assert.equal(replacement.address, server.address, "at the same address");
            const manifest = await inside(vnfc(), `curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' -o /dev/null -w '%{http_code}' http://${server.address}:5000/v2/team/app/manifests/1.0`);
            assert.equal(manifest, "200", "the image pushed before the heal is served after it");

            assert.match(await openstack("terminate", id), /has been accepted/);
            const terminated = await lcm.settle(id);
            assert.equal(terminated.operationState, "COMPLETED", JSON.stringify(terminated.error));
            assert.deepEqual(lcm.api.servers(), []);
            assert.deepEqual(lcm.api.volumes(), []);
            assert.deepEqual(leftInTemporaryFolder(lcm), []);
            const expected = ["INSTANTIATE", "HEAL", "TERMINATE"].map((operation) => `${operation} RESULT`);
            const kinds = (received: Record<string, any>[]) => received.filter((n) => n.vnfInstanceId === id).map((n) => `${n.operation} ${n.notificationStatus}`);
            await lcm.callback.until((received) => expected.every((k) => kinds(received).includes(k)));
            assert.deepEqual(expected.filter((k) => !kinds(lcm.callback.received).includes(k)), [], "each operation's RESULT notified");
        });
    });
});
