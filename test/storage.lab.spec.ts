/**
 * The NFS storage server (seed 000) on lab hosts, driven as a user drives it: stack config, the real program
 * through the test engine. The storage VM is a lab host with a lab volume as its Cinder volume (real ext4 on
 * a loop device); NFS is served for real by the lab's userspace server from the exports the step wrote, and
 * read and written from a worker with the userspace client. PersistentVolumes go through the Kubernetes
 * provider's stand-in into the cluster state the kubectl stand-in reads.
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { exportsFile } from "../components/storagePlan";
import { Lab } from "./lab/lab";
import { LabStack } from "./support/labStack";
import { failure, useLab } from "./support/labSuite";

const STACK = "storage";
const STORAGE = "st-storage";
const MASTER = "st-master-0";
const WORKER = "st-worker-0";
const DIRS = ["/volume/nfs/pv1", "/volume/nfs/pv2"];

function storageConfig(lab: Lab): Record<string, unknown> {
    return {
        vnfName: "st",
        flavour: "simple",
        image: "lab-image",
        flavor: "lab-flavor",
        network: { networkId: "lab-net", subnetId: "lab-subnet" },
        packageDir: "examples/package",
        masters: { count: 1, password: lab.password },
        workers: { count: 1, maxCount: 5, password: lab.password },
        kubernetes: { cniManifest: "https://projectcalico.example/calico.yaml" },
        storageServer: { password: lab.password, volumes: [{ name: "data", mountTo: "/volume" }], exports: DIRS.map((dir) => ({ dir, exportTo: `${lab.subnet}.0/24` })) },
        persistentVolumes: [1, 2].map((i) => ({ manifestFile: `Files/kubernetes/nfs-pv${i}.yaml` })),
    };
}

describe("NFS storage server on lab hosts (seed 000): the real program through the test engine", function () {
    this.timeout(300_000);
    const suite = useLab([]);
    let stack: LabStack;
    const inside = (host: string, command: string) => suite.lab.inside(host, command);
    const nfsUrl = (file: string) => `nfs://${suite.lab.host(STORAGE).address}${file}?version=4`;
    const pvState = (name: string) => path.join(suite.lab.clusterState, STACK, "pvs", name, "state");
    const setPhase = (name: string, phase: string) => fs.writeFileSync(pvState(name), fs.readFileSync(pvState(name), "utf8").replace(/^phase=.*$/m, `phase=${phase}`));
    // After a restart with clients on record, an NFSv4 server refuses OPENs for its grace period (90 s) but
    // answers READDIR: a listing shows it serves.
    const listed = async (dir: string) => (await inside(WORKER, `nfs-ls '${nfsUrl(dir)}'`)).split("\n").map((l) => l.split(/\s+/).pop()).filter(Boolean).sort();
    const formatted = () => stack.output.filter((l) => /was blank: formatted ext4/.test(l)).length;
    const vmId = () => stack.state().find((r) => r.urn.endsWith("::st-storage-server-vm"))!.id;

    before(function () {
        if (!suite.lab) this.skip();
        stack = new LabStack(suite.lab, STACK, storageConfig(suite.lab));
    });
    after(() => suite.captured.push(...(stack?.output ?? [])));

    it("instantiate: the volume formatted once and mounted by UUID, the exports written whole, NFSv4 only, served; every node has the client before it joins", async () => {
        await stack.up();
        assert.equal(formatted(), 1);
        const fstab = await inside(STORAGE, "awk '/BEGIN k8s-vnf volumes/,/END k8s-vnf volumes/' /etc/fstab");
        const uuid = (await inside(STORAGE, "blkid -p -o value -s UUID /dev/disk/by-id/virtio-*")).trim();
        assert.equal(fstab, `# BEGIN k8s-vnf volumes\nUUID=${uuid} /volume ext4 defaults,nofail 0 2\n# END k8s-vnf volumes\n`);
        assert.equal((await inside(STORAGE, "findmnt -rn -o UUID --mountpoint /volume")).trim(), uuid);
        const expected = exportsFile(DIRS.map((dir) => ({ dir, exportTo: `${suite.lab.subnet}.0/24`, squash: "root" as const, insecure: false })));
        assert.equal(await inside(STORAGE, "cat /etc/exports.d/k8s-vnf.exports"), expected);
        assert.equal(await inside(STORAGE, "cat /etc/nfs.conf.d/k8s-vnf.conf"), "[nfsd]\nvers3=n\n");
        assert.equal(await inside(STORAGE, "exportfs -s | awk '{ print $1 }' | sort"), `${DIRS.join("\n")}\n`);
        assert.equal(await inside(STORAGE, "stat -c %u:%g:%a /volume/nfs/pv1"), "65534:65534:775\n", "created for the anonymous ids root is squashed to");
        for (const role of ["master", "worker"]) {
            const client = stack.steps.find((s) => s.op === "create" && s.name === `st-kubeadm-${role}-0-nfs-client`)!;
            const member = stack.steps.find((s) => s.op === "create" && s.name === `st-kubeadm-${role}-0-member`)!;
            assert.ok(client.ended! <= member.started, `${role}: the NFS client is installed before the node joins`);
        }
    });

    it("the PersistentVolumes are registered on the storage server's address and Available; kubectl on the master sees them", async () => {
        const address = suite.lab.host(STORAGE).address;
        for (const i of [1, 2]) {
            const object = JSON.parse(fs.readFileSync(path.join(path.dirname(pvState(`nfs-pv${i}`)), "object.json"), "utf8"));
            assert.deepEqual(object.spec.nfs, { server: address, path: `/volume/nfs/pv${i}` });
        }
        const listed = await inside(MASTER, `kubectl --kubeconfig /etc/kubernetes/admin.conf get pv -o 'jsonpath={range .items[*]}{.metadata.name}{" "}{.status.phase}{"\\n"}{end}'`);
        assert.equal(listed, "nfs-pv1 Available\nnfs-pv2 Available\n");
        assert.equal(stack.outputsOf("st-pv-nfs-pv1").status.phase, "Available");
    });

    it("a second run changes nothing", async () => {
        const result = await stack.up();
        assert.deepEqual(Object.keys(result.changes), ["same"]);
        assert.equal(formatted(), 1);
    });

    it("a worker writes and reads through NFS", async () => {
        const address = suite.lab.host(STORAGE).address;
        await inside(WORKER, `for i in 1 2 3; do echo "file $i" >/tmp/f$i && nfs-cp /tmp/f$i "nfs://${address}/volume/nfs/pv1/f$i?version=4"; done`);
        assert.equal(await inside(WORKER, `nfs-cat '${nfsUrl("/volume/nfs/pv1/f2")}'`), "file 2\n");
        assert.equal(await inside(STORAGE, "cat /volume/nfs/pv1/f3"), "file 3\n");
    });

    it("drift: a server found stopped by refresh is started again by the next update", async () => {
        await inside(STORAGE, "service nfs-kernel-server stop >/dev/null");
        await stack.refresh();
        assert.equal(stack.outputsOf("st-storage-nfs").serverRunning, false);
        const result = await stack.up();
        assert.deepEqual(result.changes, { same: result.changes.same, update: 1 });
        assert.equal(stack.outputsOf("st-storage-nfs").serverRunning, true);
        assert.deepEqual(await listed("/volume/nfs/pv1"), ["f1", "f2", "f3"]);
    });

    it("heal while a registered PV is Bound: refused before anything changes, naming the PV and the way on", async () => {
        setPhase("nfs-pv2", "Bound");
        const before = vmId();
        stack.set("heal.nodes.storage", 1);
        const since = stack.steps.length;
        const e = await failure(suite, () => stack.up());
        assert.deepEqual(stack.stepsOf(since, /./).filter((s) => s.op !== "same").map((s) => `${s.op} ${s.name}`), ["update st-storage-heal-check"], "no other step started");
        assert.match(e.message, /the storage server is not replaced: PersistentVolume nfs-pv2 is Bound.*Nothing was changed.*storageServer\.healWhileInUse: true/s);
        assert.equal(vmId(), before, "the same VM");
        assert.deepEqual(await listed("/volume/nfs/pv1"), ["f1", "f2", "f3"], "still serving");
    });

    it("heal once released: a new VM on the same port gets the same volume back, never formatted; the files read back; the PVs untouched", async () => {
        setPhase("nfs-pv2", "Available");
        const before = vmId();
        const uids = [1, 2].map((i) => fs.readFileSync(pvState(`nfs-pv${i}`), "utf8"));
        const since = stack.steps.length;
        await stack.up();
        assert.notEqual(vmId(), before, "a new VM");
        assert.equal(formatted(), 1, "the volume was not formatted again");
        const changed = [...new Set(stack.stepsOf(since, /./).filter((s) => s.op !== "same").map((s) => s.name))].sort();
        assert.deepEqual(changed, ["st-storage-attach-data", "st-storage-heal-check", "st-storage-nfs", "st-storage-server-vm"]);
        const order = stack.stepsOf(since, /^st-storage-(heal-check|nfs|attach-data|server-vm)$/).map((s) => `${s.op} ${s.name}`);
        assert.deepEqual(
            order.slice(0, 4),
            ["update st-storage-heal-check", "delete-replaced st-storage-nfs", "delete-replaced st-storage-attach-data", "delete-replaced st-storage-server-vm"],
            "checked, then stop serving, detach, and the VM goes",
        );
        for (const i of [1, 2, 3]) assert.equal(await inside(WORKER, `nfs-cat '${nfsUrl(`/volume/nfs/pv1/f${i}`)}'`), `file ${i}\n`);
        assert.deepEqual([1, 2].map((i) => fs.readFileSync(pvState(`nfs-pv${i}`), "utf8")), uids, "the same PersistentVolumes");
        assert.deepEqual(Object.keys((await stack.up()).changes), ["same"], "and a run after it changes nothing");
    });

    it("healWhileInUse, set in the same update as the heal: with a PV Bound the heal goes on (the clients wait, as across a reboot); the files are still there", async () => {
        setPhase("nfs-pv1", "Bound");
        const before = vmId();
        stack.set("storageServer.healWhileInUse", true);
        stack.set("heal.nodes.storage", 2);
        await stack.up();
        assert.notEqual(vmId(), before);
        assert.equal(formatted(), 1);
        assert.equal(await inside(STORAGE, "cat /volume/nfs/pv1/f1 /volume/nfs/pv1/f2 /volume/nfs/pv1/f3"), "file 1\nfile 2\nfile 3\n");
        assert.deepEqual(await listed("/volume/nfs/pv1"), ["f1", "f2", "f3"]);
    });

    it("a new zone for the storage server: the gate checks it as a heal (refused while Bound), the VM is replaced, the volume and its files kept", async () => {
        setPhase("nfs-pv1", "Available");
        stack.set("storageServer.healWhileInUse", false);
        await stack.up();
        const volume = () => stack.state().find((r) => r.urn.endsWith("::st-storage-volume-data"))!.id;
        const [vm, vol] = [vmId(), volume()];
        setPhase("nfs-pv2", "Bound");
        stack.set("storageServer.availabilityZone", "az-2");
        const e = await failure(suite, () => stack.up());
        assert.match(e.message, /PersistentVolume nfs-pv2 is Bound/);
        assert.equal(vmId(), vm);
        setPhase("nfs-pv2", "Available");
        await stack.up();
        assert.notEqual(vmId(), vm, "a VM in the new zone");
        assert.equal(volume(), vol, "the same volume: its zone is kept as made (ignoreChanges)");
        assert.equal(formatted(), 1);
        assert.equal(await inside(STORAGE, "cat /volume/nfs/pv1/f1"), "file 1\n");
    });

    it("a second volume is formatted and mounted beside the first; removed again, it is unmounted before it detaches, and the first is untouched", async () => {
        const volumes = [{ name: "data", mountTo: "/volume" }];
        stack.set("storageServer.volumes", [...volumes, { name: "logs", mountTo: "/logs" }]);
        await stack.up();
        assert.equal(formatted(), 2, "only the new, blank volume");
        assert.equal((await inside(STORAGE, "findmnt -rn -o TARGET --target /logs")).trim(), "/logs");
        stack.set("storageServer.volumes", volumes);
        await stack.up();
        assert.equal((await inside(STORAGE, "mountpoint -q /logs && echo mounted || echo unmounted")).trim(), "unmounted");
        assert.doesNotMatch(await inside(STORAGE, "cat /etc/fstab"), /\/logs/);
        assert.equal(stack.state().filter((r) => r.type === "openstack:blockstorage/volume:Volume").length, 1, "the removed volume is deleted");
        assert.equal(await inside(STORAGE, "cat /volume/nfs/pv1/f1"), "file 1\n");
        assert.deepEqual(Object.keys((await stack.up()).changes), ["same"]);
    });
});
