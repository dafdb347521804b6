/**
 * The NFS storage server (seed 000) with PersistentVolumes, run by the real Pulumi CLI, engine and plugins
 * through the lab OpenStack API, on a cluster whose first master runs the real control plane (docs/testing.md, "The
 * lab's control plane"). The storage VM's Cinder volume is a lab block device the lab API attaches; NFS is
 * served by the lab's server from the exports the step wrote. The real Kubernetes plugin registers the PVs in
 * the real API server and waits for them to be Available; a real claim is bound by the real PV controller
 * (kube-controller-manager), and the storage server's heal gate reads the phases with the real kubectl on the
 * master (the kubectl stand-in hands PersistentVolumes to it when the lab runs a real API server).
 *
 * Not real yet (issue 26): the kubelet, so no Pod mounts a volume; the nodes' NFS client is the lab's
 * userspace one.
 */
import { strict as assert } from "node:assert";
import * as path from "node:path";
import { exportsFile } from "../components/storagePlan";
import { skipAfterFirstFailure, useLab } from "./support/labSuite";
import { LabOpenStackApi } from "./support/openstackApi/server";
import { PROJECT_DIR } from "./support/program";
import { claimFor } from "./support/realKubectl";
import { adminKubectl, realClusterStack } from "./support/realCluster";
import { PulumiRunError, RealStack } from "./support/realStack";
import { builtTools, useBuiltTools } from "./support/tools";

const CLUSTER = "rs";
const STORAGE = `${CLUSTER}-storage`;
const WORKER = `${CLUSTER}-worker-0`;
const DIRS = ["/volume/nfs/pv1", "/volume/nfs/pv2"];
const PV_PHASES = 'jsonpath={range .items[*]}{.metadata.name}{" "}{.status.phase}{"\\n"}{end}';

describe("the real Pulumi CLI and plugins: an NFS storage server whose PersistentVolumes the real API server holds and the real PV controller binds", function () {
    useBuiltTools();
    this.timeout(900_000);
    let api: LabOpenStackApi;
    const credentials: string[] = [];
    const suite = useLab([], { secrets: () => [api?.credentials.password ?? "", ...credentials] });
    let stack: RealStack;
    const inside = (host: string, command: string) => suite.lab.inside(host, command);
    const storageAddress = () => api.servers().find((s) => s.name === STORAGE)!.address;
    const nfsUrl = (file: string) => `nfs://${storageAddress()}${file}?version=4`;
    const formatted = () => stack.output.filter((l) => /was blank: formatted ext4/.test(l)).length;
    const vmId = () => stack.state().find((r) => r.urn.endsWith(`::${STORAGE}-server-vm`))!.id;
    // After a restart with clients on record, an NFSv4 server refuses OPENs for its grace period (90 s) but
    // answers READDIR: a listing shows it serves.
    const listed = async (dir: string) => (await inside(WORKER, `nfs-ls '${nfsUrl(dir)}'`)).split("\n").map((l) => l.split(/\s+/).pop()).filter(Boolean).sort();
    const nonSame = (since: number) => stack.stepsOf(since, /./).filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`);

    const kubectl = adminKubectl(() => stack, credentials);
    const phases = () => kubectl("get", "pv", "-o", PV_PHASES);

    skipAfterFirstFailure();

    before(async function () {
        if (!suite.lab) this.skip();
        const tools = builtTools();
        suite.lab.giveTools({ kube: tools.bins.kube, etcd: tools.bins.etcd });
        ({ api, stack } = await realClusterStack(suite, CLUSTER, () => ({
            packageDir: path.join(PROJECT_DIR, "examples/package"),
            masters: { count: 1, password: suite.lab.password },
            workers: { count: 1, maxCount: 5, password: suite.lab.password },
            kubernetes: { version: "1.31.4", cniManifest: "https://projectcalico.example/calico.yaml", drainTimeout: 5 },
            storageServer: { password: suite.lab.password, volumes: [{ name: "data", mountTo: "/volume" }], exports: DIRS.map((d) => ({ dir: d, exportTo: `${suite.lab.subnet}.0/24` })) },
            persistentVolumes: [1, 2].map((i) => ({ manifestFile: `Files/kubernetes/nfs-pv${i}.yaml` })),
        })));
    });

    it("up: the volume attached by the lab API, formatted once, mounted by UUID, its exports written whole, NFSv4 only, served; every node has the NFS client before it joins; the PVs registered in the real API server on the storage server's address, Available", async () => {
        await stack.up();
        assert.equal(formatted(), 1);
        assert.deepEqual(api.volumes().map((v) => v.status), ["in-use"]);
        const uuid = (await inside(STORAGE, "blkid -p -o value -s UUID /dev/disk/by-id/virtio-*")).trim();
        assert.equal(await inside(STORAGE, "awk '/BEGIN k8s-vnf volumes/,/END k8s-vnf volumes/' /etc/fstab"), `# BEGIN k8s-vnf volumes\nUUID=${uuid} /volume ext4 defaults,nofail 0 2\n# END k8s-vnf volumes\n`);
        assert.equal((await inside(STORAGE, "findmnt -rn -o UUID --mountpoint /volume")).trim(), uuid);
        const exportTo = `${suite.lab.subnet}.0/24`;
        assert.equal(await inside(STORAGE, "cat /etc/exports.d/k8s-vnf.exports"), exportsFile(DIRS.map((dir) => ({ dir, exportTo, squash: "root" as const, insecure: false }))));
        assert.equal(await inside(STORAGE, "cat /etc/nfs.conf.d/k8s-vnf.conf"), "[nfsd]\nvers3=n\n");
        assert.equal(await inside(STORAGE, "exportfs -s | awk '{ print $1 }' | sort"), `${DIRS.join("\n")}\n`);
        assert.equal(await inside(STORAGE, "stat -c %u:%g:%a /volume/nfs/pv1"), "65534:65534:775\n", "created for the anonymous ids root is squashed to");
        for (const role of ["master", "worker"]) {
            const client = stack.steps.find((s) => s.op === "create" && s.name === `${CLUSTER}-kubeadm-${role}-0-nfs-client`)!;
            const member = stack.steps.find((s) => s.op === "create" && s.name === `${CLUSTER}-kubeadm-${role}-0-member`)!;
            assert.ok(client.ended! <= member.started, `${role}: the NFS client is installed before the node joins`);
        }
        assert.equal(await phases(), "nfs-pv1 Available\nnfs-pv2 Available\n", "the real PV controller made them Available");
        const pv1 = JSON.parse(await kubectl("get", "pv", "nfs-pv1", "-o", "json"));
        assert.deepEqual(pv1.spec.nfs, { server: storageAddress(), path: "/volume/nfs/pv1" });
        assert.equal(stack.outputsOf(`${CLUSTER}-pv-nfs-pv1`).status.phase, "Available", "the real Kubernetes plugin's await read the phase");
        assert.deepEqual(Object.keys((await stack.up()).changes), ["same"], "a second up changes nothing");
    });

    it("a worker writes and reads through NFS", async () => {
        await inside(WORKER, `for i in 1 2 3; do echo "file $i" >/tmp/f$i && nfs-cp /tmp/f$i "nfs://${storageAddress()}/volume/nfs/pv1/f$i?version=4"; done`);
        assert.equal(await inside(WORKER, `nfs-cat '${nfsUrl("/volume/nfs/pv1/f2")}'`), "file 2\n");
        assert.equal(await inside(STORAGE, "cat /volume/nfs/pv1/f3"), "file 3\n");
    });

    it("a claim bound by the real PV controller: a heal of the storage server is refused before anything changes, naming the PV", async () => {
        await kubectl.input(claimFor("nfs-pv2"), "create", "-f", "-");
        await kubectl("wait", "--for=jsonpath={.status.phase}=Bound", "pv/nfs-pv2", "--timeout=90s");
        const before = vmId();
        stack.set("heal.nodes.storage", 1);
        const since = stack.steps.length;
        const error = await stack.up().then(
            () => assert.fail("the heal should be refused"),
            (e: Error) => e,
        );
        assert.ok(error instanceof PulumiRunError, String(error));
        assert.match(error.message, /the storage server is not replaced: PersistentVolume nfs-pv2 is Bound.*storageServer\.healWhileInUse: true/s);
        assert.deepEqual(nonSame(since), ["update rs-storage-heal-check"], "no other step started");
        assert.equal(vmId(), before, "the same VM");
    });

    it("the claim deleted (the PV Released, its data kept): the heal goes on, a new VM on the same port gets the volume back unformatted, the PVs the same objects", async () => {
        const uids = JSON.parse(await kubectl("get", "pv", "-o", "json")).items.map((pv: { metadata: { uid: string } }) => pv.metadata.uid);
        await kubectl("delete", "pvc", "claim-nfs-pv2", "-n", "default", "--wait");
        await kubectl("wait", "--for=jsonpath={.status.phase}=Released", "pv/nfs-pv2", "--timeout=90s");
        const [vm, address] = [vmId(), storageAddress()];
        // `k8s-vnf plan` first (the Automation API against the real CLI): the gate's check, then the NFS server's stop, then the VM goes.
        const text = await stack.plan();
        const at = (pattern: RegExp) => text.split("\n").findIndex((line) => pattern.test(line));
        const gate = at(/^\s+update: check on a control-plane node that none of the storage server's PersistentVolumes is Bound/);
        const stop = at(/^\s+delete: stop serving NFS and unmount the volumes on /);
        const vmGoes = at(/^\s*--\s+delete-replaced\s+\S*storage\S*\s+\(Instance\)/);
        assert.ok(gate >= 0 && stop > gate && vmGoes > stop, text);
        assert.doesNotMatch(text, /worker|master/, "only the storage server changes");
        const json = JSON.parse(await stack.plan(["--json"]));
        assert.ok(json.changes.some((c: any) => c.op === "create-replacement" && c.actions.some((a: any) => a.phase === "create" && /export them over NFSv4/.test(a.action))), JSON.stringify(json.changes));
        assert.equal(vmId(), vm, "a plan changes nothing");
        const since = stack.steps.length;
        await stack.up();
        assert.notEqual(vmId(), vm, "a new VM");
        const order = stack.stepsOf(since, new RegExp(`^${STORAGE}-(heal-check|nfs|attach-data|server-vm)$`)).map((s) => `${s.op} ${s.name}`);
        assert.deepEqual(
            order.slice(0, 4),
            [`update ${STORAGE}-heal-check`, `delete-replaced ${STORAGE}-nfs`, `delete-replaced ${STORAGE}-attach-data`, `delete-replaced ${STORAGE}-server-vm`],
            "checked, then stop serving, detach, and the VM goes",
        );
        assert.equal(storageAddress(), address, "at the same address");
        assert.equal(formatted(), 1, "the volume was not formatted again");
        for (const i of [1, 2, 3]) assert.equal(await inside(WORKER, `nfs-cat '${nfsUrl(`/volume/nfs/pv1/f${i}`)}'`), `file ${i}\n`);
        assert.deepEqual(JSON.parse(await kubectl("get", "pv", "-o", "json")).items.map((pv: { metadata: { uid: string } }) => pv.metadata.uid), uids, "the same PersistentVolumes");
        assert.equal(await phases(), "nfs-pv1 Available\nnfs-pv2 Released\n");
        assert.deepEqual(Object.keys((await stack.up()).changes), ["same"], "a run after it changes nothing");
    });

    it("drift: the NFS server found stopped by refresh is started again by the next up, the only update", async () => {
        await inside(STORAGE, "service nfs-kernel-server stop >/dev/null");
        await stack.refresh();
        assert.equal(stack.outputsOf(`${STORAGE}-nfs`).serverRunning, false);
        const result = await stack.up();
        assert.deepEqual(result.changes, { same: result.changes.same, update: 1 });
        assert.equal(stack.outputsOf(`${STORAGE}-nfs`).serverRunning, true);
        assert.deepEqual(await listed("/volume/nfs/pv1"), ["f1", "f2", "f3"]);
    });

    it("healWhileInUse, set in the same update as the heal: with a claim bound the heal goes on (the clients wait, as across a reboot); the files are still there", async () => {
        await kubectl.input(claimFor("nfs-pv1"), "create", "-f", "-");
        await kubectl("wait", "--for=jsonpath={.status.phase}=Bound", "pv/nfs-pv1", "--timeout=90s");
        const vm = vmId();
        stack.set("storageServer.healWhileInUse", true);
        stack.set("heal.nodes.storage", 2);
        await stack.up();
        assert.notEqual(vmId(), vm, "a new VM");
        assert.equal(formatted(), 1);
        assert.equal(await inside(STORAGE, "cat /volume/nfs/pv1/f1 /volume/nfs/pv1/f2 /volume/nfs/pv1/f3"), "file 1\nfile 2\nfile 3\n");
        assert.deepEqual(await listed("/volume/nfs/pv1"), ["f1", "f2", "f3"]);
    });

    it("a new zone for the storage server: the gate checks it as a heal (refused while the claim is bound), then the VM is replaced in that zone, the volume and its files kept", async () => {
        stack.set("storageServer.healWhileInUse", false);
        await stack.up();
        const volume = () => stack.state().find((r) => r.urn.endsWith(`::${STORAGE}-volume-data`))!.id;
        const [vm, vol] = [vmId(), volume()];
        stack.set("storageServer.availabilityZone", "az-2");
        const error = await stack.up().then(
            () => assert.fail("the zone change should be refused while nfs-pv1 is Bound"),
            (e: Error) => e,
        );
        assert.match(error.message, /PersistentVolume nfs-pv1 is Bound/);
        assert.equal(vmId(), vm);
        await kubectl("delete", "pvc", "claim-nfs-pv1", "-n", "default", "--wait");
        await kubectl("wait", "--for=jsonpath={.status.phase}=Released", "pv/nfs-pv1", "--timeout=90s");
        await stack.up();
        assert.notEqual(vmId(), vm, "a VM in the new zone");
        assert.equal(api.servers().find((s) => s.name === STORAGE)!.availabilityZone, "az-2");
        assert.equal(volume(), vol, "the same volume: its zone is kept as made (ignoreChanges)");
        assert.equal(formatted(), 1);
        assert.equal(await inside(STORAGE, "cat /volume/nfs/pv1/f1"), "file 1\n");
    });

    it("a second volume is formatted and mounted beside the first; removed again, it is unmounted before it detaches and is deleted, the first untouched", async () => {
        const volumes = [{ name: "data", mountTo: "/volume" }];
        stack.set("storageServer.volumes", [...volumes, { name: "logs", mountTo: "/logs" }]);
        await stack.up();
        assert.equal(formatted(), 2, "only the new, blank volume");
        assert.equal((await inside(STORAGE, "findmnt -rn -o TARGET --target /logs")).trim(), "/logs");
        assert.deepEqual(api.volumes().map((v) => v.status), ["in-use", "in-use"]);
        stack.set("storageServer.volumes", volumes);
        await stack.up();
        assert.equal((await inside(STORAGE, "mountpoint -q /logs && echo mounted || echo unmounted")).trim(), "unmounted");
        assert.doesNotMatch(await inside(STORAGE, "cat /etc/fstab"), /\/logs/);
        assert.equal(api.volumes().length, 1, "the removed volume is deleted");
        assert.equal(await inside(STORAGE, "cat /volume/nfs/pv1/f1"), "file 1\n");
        assert.deepEqual(Object.keys((await stack.up()).changes), ["same"]);
    });

    it("destroy: every resource deleted, no server, volume or lab host left", async () => {
        const calls = api.calls().length;
        await stack.destroy();
        const deletes = api.calls().slice(calls).filter((c) => c.method === "DELETE").map((c) => c.path.replace(/\/[0-9a-f-]{36}$/, "/{id}"));
        assert.equal(deletes.filter((p) => p.endsWith("/security-groups/{id}")).length, 2, "the nodes' and the NFS server's groups");
        assert.deepEqual(deletes.filter((p) => p.includes("/security-group-rules/")), [], "their rules go with them (deletedWith), not one by one");
        assert.deepEqual(stack.state().filter((r) => r.type !== "pulumi:pulumi:Stack"), []);
        assert.deepEqual(api.servers(), []);
        assert.deepEqual(api.volumes(), []);
        assert.deepEqual(suite.lab.hostNames(), []);
    });
});
