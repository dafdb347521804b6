import { strict as assert } from "node:assert";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import * as path from "node:path";
import { promisify } from "node:util";
import { attemptInside, failure, sudoOverSsh, useLab } from "./support/labSuite";

const run = promisify(execFile);

/**
 * The lab's ground for the NFS storage server: Cinder volumes that outlive hosts and show up as virtio disks
 * with udev's by-id link, a udevadm stand-in for the by-uuid links `mount UUID=` needs, and the Debian
 * nfs-kernel-server service standing on nfs-ganesha, which serves exactly the kernel export table the real
 * exportfs writes (test/lab/stand-ins/lib/nfs-server.sh cites the sources). A worker host reads and writes
 * over NFSv4 with the userspace libnfs client (no kernel NFS client here).
 */
describe("lab: Cinder volumes and the NFS server stand-in (nfs-ganesha serving exportfs's table)", function () {
    this.timeout(120_000);
    const suite = useLab(["storage", "worker"]);
    const volume = randomUUID();
    const byId = `/dev/disk/by-id/virtio-${volume.slice(0, 20)}`;
    const exportsLine = () => `/srv/nfs/pv1 ${suite.lab.subnet}.0/24(rw,sync,no_subtree_check,root_squash,fsid=101)`;
    const url = (file: string) => `nfs://${suite.lab.host("storage").address}${file}?version=4`;
    let uuid = "";

    const inside = (host: string, command: string) => suite.lab.inside(host, command);
    const attempt = (host: string, command: string) => attemptInside(suite.lab, host, command);
    const sshSudo = (host: string, command: string) => sudoOverSsh(suite.lab, host, command);
    /** Prepares the storage host's server as the project will: the volume on /srv/nfs/pv1, NFSv4 only. */
    async function serve(host: string): Promise<void> {
        await inside(
            host,
            [
                "set -e",
                `echo "UUID=${uuid} /srv/nfs/pv1 ext4 defaults 0 2" >>/etc/fstab`,
                "mkdir -p /srv/nfs/pv1 /etc/exports.d /etc/nfs.conf.d",
                "mount /srv/nfs/pv1",
                `echo '${exportsLine()}' >/etc/exports.d/test.exports`,
                "printf '[nfsd]\\nvers3=n\\n' >/etc/nfs.conf.d/test.conf",
            ].join("\n"),
        );
        // Over SSH, so the server must outlive the session that started it.
        await sshSudo(host, "service nfs-kernel-server start");
        await sshSudo(host, "exportfs -ra");
    }

    it("a volume attaches as the next virtio disk with udev's by-id link; deleting or attaching it elsewhere is refused while attached", async () => {
        await suite.lab.createVolume(volume, 64);
        assert.equal(await suite.lab.attachVolume("storage", volume), "/dev/vdb");
        assert.deepEqual(suite.lab.volumeAttachment(volume), { host: "storage", device: "/dev/vdb" });
        assert.equal(await inside("storage", `test -b /dev/vdb && readlink ${byId}`), "../../vdb\n");
        assert.match((await failure(suite, () => suite.lab.deleteVolume(volume))).message, /^Invalid volume: Volume status must be available/);
        assert.match((await failure(suite, () => suite.lab.attachVolume("worker", volume))).message, /current status is in-use/);

        // A host with its own volume (the old volumeMb, /dev/vdb) gets the cloud volume as vdc; when the host
        // goes (a deleted VM), its own loop device goes, the cloud volume's stays and is available again.
        const other = randomUUID();
        await suite.lab.createVolume(other, 16);
        const [legacy] = await suite.lab.start(["legacy"], { volumeMb: 16 });
        assert.equal(await suite.lab.attachVolume("legacy", other), "/dev/vdc");
        assert.equal(await inside("legacy", `readlink /dev/disk/by-id/virtio-${other.slice(0, 20)}; test -b /dev/vdb && echo vdb`), "../../vdc\nvdb\n");
        const backing = async () => (await run("losetup", ["-n", "-l", "-O", "BACK-FILE"])).stdout;
        await suite.lab.stopHost("legacy");
        suite.lab.releaseIndex(legacy.index);
        assert.ok(!(await backing()).includes(legacy.dir), "the host's own loop device goes with it");
        assert.ok((await backing()).includes(path.join(suite.lab.dir, "volumes", other, "volume.img")), "the cloud volume's loop device stays");
        assert.equal(suite.lab.volumeAttachment(other), undefined);
        assert.equal(await suite.lab.attachVolume("worker", other), "/dev/vdb");
        await suite.lab.detachVolume("worker", other);
        assert.equal(await inside("worker", `ls /dev/vdb /dev/disk/by-id/virtio-${other.slice(0, 20)} 2>&1 | grep -c 'No such'`), "2\n");
        await suite.lab.deleteVolume(other);
        assert.deepEqual(suite.lab.volumeIds(), [volume]);
    });

    it("mkfs on the by-id disk, `udevadm settle` makes the by-uuid link, fstab mounts it by UUID; nfs-kernel-server starts over SSH on exportfs's table", async () => {
        uuid = (await inside("storage", `mkfs.ext4 -q ${byId} && blkid -p -o value -s UUID ${byId}`)).trim();
        assert.match(uuid, /^[0-9a-f-]{36}$/);
        // As on a VM before udev handled mkfs's change event: libblkid cannot resolve the UUID yet.
        assert.notEqual((await attempt("storage", `blkid -U ${uuid}`)).code, 0);
        assert.equal(await inside("storage", `udevadm settle && readlink /dev/disk/by-uuid/${uuid} && blkid -U ${uuid}`), "../../vdb\n/dev/vdb\n");
        await serve("storage");
        await inside("storage", "chown 65534:65534 /srv/nfs/pv1");
        assert.equal(await inside("storage", "findmnt -n -o SOURCE /srv/nfs/pv1"), "/dev/vdb\n");
        assert.match(await inside("storage", "cat /var/lib/nfs/etab"), new RegExp(`^/srv/nfs/pv1\\t${suite.lab.subnet.replace(/\./g, "\\.")}\\.0/24\\(rw,sync,.*root_squash.*fsid=101`));
        assert.equal((await attempt("storage", "service nfs-kernel-server status")).code, 0);
        const config = await inside("storage", "cat /run/ganesha/nfs-kernel-server.conf");
        assert.match(config, /Protocols = 4;/);
        assert.match(config, /Pseudo = "\/srv\/nfs\/pv1";/);
        assert.match(config, /Squash = Root_Squash;/);
        assert.match(config, /PrivilegedPort = true;/);
        assert.match(config, /Filesystem_Id = 101\.0;/);
        assert.match(config, /Anonymous_Uid = 65534;/);
    });

    it("the worker writes and reads a file over NFSv4 with libnfs; root is squashed; NFSv3 is not served", async () => {
        await inside("worker", `echo 'hello from the worker' >/tmp/hello.txt && nfs-cp /tmp/hello.txt '${url("/srv/nfs/pv1/hello.txt")}'`);
        assert.equal(await inside("worker", `nfs-cat '${url("/srv/nfs/pv1/hello.txt")}'`), "hello from the worker\n");
        assert.equal(await inside("storage", "cat /srv/nfs/pv1/hello.txt; stat -c %u:%g /srv/nfs/pv1/hello.txt"), "hello from the worker\n65534:65534\n");
        const v3 = await attempt("worker", `nfs-ls 'nfs://${suite.lab.host("storage").address}/srv/nfs/pv1?version=3'`);
        assert.notEqual(v3.code, 0, v3.out);
    });

    it("refused: an unexported path, a client address outside the export's CIDR, an unprivileged source port (secure)", async () => {
        const unexported = await attempt("worker", `nfs-cat '${url("/srv/other/x")}'`);
        assert.notEqual(unexported.code, 0);
        assert.match(unexported.out, /NFS4ERR_NOENT/);
        // The worker speaks from 192.0.2.10 (TEST-NET-1, on the lab's own bridge only): not in the /24.
        const storage = suite.lab.host("storage").address;
        await inside("worker", `ip addr add 192.0.2.10/32 dev eth0 && ip route add ${storage}/32 dev eth0 src 192.0.2.10`);
        await inside("storage", "ip route add 192.0.2.10/32 dev eth0");
        try {
            // The server answered (an NFS4 status, not a dead connection) and kept the export from it.
            const outside = await attempt("worker", `nfs-cat '${url("/srv/nfs/pv1/hello.txt")}'`);
            assert.notEqual(outside.code, 0);
            assert.match(outside.out, /NFS4ERR_/);
        } finally {
            await inside("worker", `ip route del ${storage}/32 dev eth0; ip addr del 192.0.2.10/32 dev eth0`);
            await inside("storage", "ip route del 192.0.2.10/32 dev eth0");
        }
        // A user who cannot bind a port below 1024: refused under the default `secure`.
        const user = await attempt("worker", `su ubuntu -c "nfs-cat '${url("/srv/nfs/pv1/hello.txt")}'"`);
        assert.notEqual(user.code, 0);
        assert.match(user.out, /NFS4ERR_/);
        assert.equal(await inside("worker", `nfs-cat '${url("/srv/nfs/pv1/hello.txt")}'`), "hello from the worker\n");
    });

    it("ganesha follows etab: `exportfs -ra` without the exports file stops serving, with it back serves again", async () => {
        await inside("storage", "mv /etc/exports.d/test.exports /root/");
        await sshSudo("storage", "exportfs -ra");
        assert.equal(await inside("storage", "cat /var/lib/nfs/etab"), "");
        assert.notEqual((await attempt("worker", `nfs-cat '${url("/srv/nfs/pv1/hello.txt")}'`)).code, 0);
        await inside("storage", "mv /root/test.exports /etc/exports.d/ && exportfs -ra");
        assert.equal(await inside("worker", `nfs-cat '${url("/srv/nfs/pv1/hello.txt")}'`), "hello from the worker\n");
        // stop: no server, the table emptied (Debian's `exportfs -au`); status 3 as LSB says.
        await inside("storage", "service nfs-kernel-server stop >/dev/null");
        assert.equal((await attempt("storage", "service nfs-kernel-server status")).code, 3);
        assert.equal(await inside("storage", "cat /var/lib/nfs/etab"), "");
        assert.notEqual((await attempt("worker", `nfs-cat '${url("/srv/nfs/pv1/hello.txt")}'`)).code, 0);
        await inside("storage", "service nfs-kernel-server start >/dev/null");
    });

    it("a power cycle brings the disk and its links back, and the boot mounts the fstab line and starts the enabled server", async () => {
        await suite.lab.killSshd("storage");
        await suite.lab.startSshd("storage");
        assert.equal(await inside("storage", `readlink ${byId} /dev/disk/by-uuid/${uuid}`), "../../vdb\n../../vdb\n");
        assert.equal(await inside("storage", "findmnt -n -o SOURCE /srv/nfs/pv1"), "/dev/vdb\n");
        assert.equal((await attempt("storage", "service nfs-kernel-server status")).code, 0);
        assert.match(await inside("worker", `nfs-ls '${url("/srv/nfs/pv1")}'`), / hello\.txt\n/);
        // The worker's clients of before the power cycle are on record and may reclaim their state: a restarted
        // server refuses new OPENs for its grace period (90 s), as the kernel's nfsd does with clients on record.
        const read = await attempt("worker", `nfs-cat '${url("/srv/nfs/pv1/hello.txt")}'`);
        assert.notEqual(read.code, 0);
        assert.match(read.out, /NFS4ERR_GRACE/);
    });

    it("heal: the volume outlives the storage host; a new host at the same address attaches it, mounts it without mkfs and serves the file again", async () => {
        const index = suite.lab.host("storage").index;
        await suite.lab.stopHost("storage");
        assert.equal(suite.lab.volumeAttachment(volume), undefined);
        await suite.lab.startAt("storage", index, "heal");
        assert.equal(await suite.lab.attachVolume("storage", volume), "/dev/vdb");
        // The filesystem is there (no mkfs): the add event made its by-uuid link already.
        assert.equal(await inside("storage", `blkid -p -o value -s TYPE ${byId}; blkid -p -o value -s UUID ${byId}; readlink /dev/disk/by-uuid/${uuid}`), `ext4\n${uuid}\n../../vdb\n`);
        await serve("storage");
        assert.equal(await inside("worker", `nfs-cat '${url("/srv/nfs/pv1/hello.txt")}'`), "hello from the worker\n");
    });

    it("detaching takes the disk out of the host; then the volume can be deleted", async () => {
        await inside("storage", "service nfs-kernel-server stop >/dev/null && umount /srv/nfs/pv1");
        await suite.lab.detachVolume("storage", volume);
        assert.equal(await inside("storage", `ls /dev/vdb ${byId} /dev/disk/by-uuid/${uuid} 2>&1 | grep -c 'No such'`), "3\n");
        await suite.lab.deleteVolume(volume);
        assert.deepEqual(suite.lab.volumeIds(), []);
    });
});
