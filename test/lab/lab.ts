/**
 * Lab hosts for tests: real OpenSSH servers in network namespaces (see lab.sh). A `Lab` remembers every
 * host it started and stops exactly those, also when a test fails or the process is interrupted.
 *
 * Real here: ssh, sudo, files, mounts, ext4 on a loop device, haproxy/keepalived binaries, Cinder volumes (loop
 * devices the lab owns, attached as /dev/vdX with udev's /dev/disk/by-id/virtio-SERIAL link), the real
 * exportfs and nfs.conf, NFS served over the network by nfs-ganesha (userspace) and the libnfs client tools,
 * the containerd daemon (`service containerd ACTION`: stand-ins/init.d/containerd runs it as its systemd unit
 * does; /var/lib/containerd is a directory of the host's own outside its overlay root, so the overlayfs
 * snapshotter works), containers run by runc (`ctr run`, also --net-host: a host has cgroups of its own in a
 * cgroup namespace of its own, mounted at /sys/fs/cgroup, see host-init.sh; /sys holds nothing else), units of
 * ours without an init script (`service k8s-vnf-registry ACTION`: stand-ins/lib/systemd-unit.sh runs
 * /etc/systemd/system/k8s-vnf-registry.service as systemd would, and refuses what it does not implement),
 * Debian's docker-registry with its own init script, skopeo, htpasswd and openssl. Commands run by `inside`
 * stay in the test machine's cgroups and cgroup namespace (SSH sessions are in the host's); containers they
 * start still land in the host's cgroups.
 * Not here: kubeadm, kubelet and kubectl (recording stand-ins in stand-ins/, sharing one cluster state), the
 * kubelet service, the kernel's nfsd (init.d/nfs-kernel-server runs nfs-ganesha on exportfs's table instead), a
 * kernel NFS client (no `mount -t nfs`), udevd (a udevadm stand-in makes the by-uuid links), and machine-wide
 * kernel settings (swapoff, modprobe, sysctl are recorded by guards).
 *
 * A host's start, and its power-on (`startSshd`), does what a Debian boot does for these: the disks' device
 * nodes and udev links, the fstab mounts, rpcbind, and nfs-kernel-server (enabled once installed: it serves
 * /etc/exports again, or does nothing without exports). Other services stay off until started, also the
 * containerd and docker-registry a Debian VM's systemd would start at boot (the lab's cloud starts what it needs).
 */
import { execFile, execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { SshTarget } from "../../providers/transport/ssh";

const run = promisify(execFile);
const SCRIPT = path.join(__dirname, "lab.sh");

export interface LabHost {
    name: string;
    index: number;
    address: string;
    dir: string;
    /** Loop device standing in for the host's Cinder volume, shown inside as /dev/vdb. */
    volume?: string;
}

/** Where a lab volume is attached: the host and the device it shows there (/dev/vdX). */
export interface VolumeAttachment {
    host: string;
    device: string;
}

/** Volume ids become file names and device links: a UUID, or any name of letters, digits, `.`, `_`, `-`. */
const VOLUME_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Whether this machine can run lab hosts (root, namespaces, debootstrap). */
export function labAvailable(): { ok: boolean; why?: string } {
    if (process.getuid?.() !== 0) return { ok: false, why: "lab hosts need root" };
    for (const tool of ["ip", "debootstrap", "unshare", "losetup", "nsenter", "ssh-keygen"]) {
        try {
            execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
        } catch {
            return { ok: false, why: `${tool} is missing (.ci/run installs it)` };
        }
    }
    return { ok: true };
}

const liveLabs = new Set<Lab>();
let exitHandlerInstalled = false;

function installExitHandler(): void {
    if (exitHandlerInstalled) return;
    exitHandlerInstalled = true;
    const stopAll = () => {
        for (const lab of liveLabs) lab.stopSync();
    };
    process.once("exit", stopAll);
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
        process.once(signal, () => {
            stopAll();
            process.exit(130);
        });
    }
}

/** What is needed to start and stop hosts in a running lab (`Lab.attach`: the test engine's cloud does). */
interface LabDescriptor {
    run: string;
    subnet: string;
    dir: string;
    password: string;
    privateKeyFile: string;
    clusterState: string;
}

export class Lab {
    readonly run: string;
    /** A /24 of the lab's own, on its own bridge; test traffic goes nowhere else. */
    readonly subnet: string;
    readonly dir: string;
    readonly password: string;
    readonly privateKey: string;
    /** The same key as a file, for the OpenSSH client. */
    readonly privateKeyFile: string;
    readonly publicKeyFile: string;
    /** The kubeadm/kubectl stand-ins' cluster state, shared by every host (see stand-ins/common.sh). */
    readonly clusterState: string;
    /** Where the lab describes itself for other processes (`Lab.attach`); readable by root only. */
    readonly descriptorFile: string;
    private readonly hosts = new Map<string, LabHost>();
    private bridge = false;
    /** Whether this lab holds the machine-wide settings kubelet hosts need (bootSystemd; kubeletHolds.sh). */
    private kubeletSettingsHeld = false;
    /** Whether this process made the lab (and so takes it down), or only starts hosts in it. */
    private readonly owner: boolean;

    constructor(attachTo?: LabDescriptor) {
        this.owner = !attachTo;
        this.run = attachTo?.run ?? randomBytes(3).toString("hex");
        this.dir = attachTo?.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), `k8s-vnf-lab-${this.run}-`));
        this.password = attachTo?.password ?? `lab-${randomBytes(9).toString("base64url")}`;
        this.privateKeyFile = attachTo?.privateKeyFile ?? path.join(this.dir, "id_ed25519");
        this.publicKeyFile = `${this.privateKeyFile}.pub`;
        this.clusterState = attachTo?.clusterState ?? path.join(this.dir, "cluster-state");
        this.descriptorFile = path.join(this.dir, "lab.json");
        if (this.owner) {
            execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "lab", "-f", this.privateKeyFile]);
            fs.mkdirSync(this.clusterState);
            fs.mkdirSync(path.join(this.dir, "addresses"));
            liveLabs.add(this);
            installExitHandler();
            // Its bridge, on a subnet no other running lab holds (lab.sh bridge-up picks it under a lock).
            this.subnet = execFileSync(SCRIPT, ["bridge-up", this.run, String(1 + (parseInt(this.run, 16) % 250))], { encoding: "utf8" }).trim();
            this.bridge = true;
            const descriptor: LabDescriptor = { run: this.run, subnet: this.subnet, dir: this.dir, password: this.password, privateKeyFile: this.privateKeyFile, clusterState: this.clusterState };
            fs.writeFileSync(this.descriptorFile, JSON.stringify(descriptor), { mode: 0o600 });
        } else {
            this.subnet = attachTo!.subnet;
        }
        this.privateKey = fs.readFileSync(this.privateKeyFile, "utf8");
    }

    /** The lab another process made, to start and stop hosts in; that process takes the lab down. */
    static attach(descriptorFile: string): Lab {
        return new Lab(JSON.parse(fs.readFileSync(descriptorFile, "utf8")) as LabDescriptor);
    }

    /**
     * Gives the hosts started from now on real tools, read-only at /opt/k8s-vnf-lab/NAME (NAME → a folder of
     * binaries): with `kube` (kubeadm and the control plane) and `etcd`, the kubeadm stand-in's first master
     * runs a real control plane (stand-ins/lib/static-pods.sh).
     */
    giveTools(tools: Record<string, string>): void {
        const lines = Object.entries(tools).map(([name, dir]) => {
            if (!/^[a-z0-9-]+$/.test(name) || !path.isAbsolute(dir) || /\s/.test(dir)) throw new Error(`lab tool ${name}: ${dir} is no absolute path without spaces`);
            return `${name} ${dir}\n`;
        });
        fs.writeFileSync(path.join(this.dir, "tools"), lines.join(""));
    }

    /**
     * Hosts started from now on boot Debian's systemd as PID 1, as a VM boots (sshd one of its units), with no
     * stand-ins of kubeadm, kubectl, the kubelet or init scripts: for the real ones (lab.sh, "systemd"). The
     * machine-wide settings such hosts need (kube-proxy's conntrack limit, root's inotify instances) are held
     * while the lab runs (kubeletHolds.sh says why).
     */
    async bootSystemd(): Promise<void> {
        await run(SCRIPT, ["systemd-layer"], { maxBuffer: 1 << 20 });
        // A hold is the lab's while its bridge (made with the lab) is up.
        await run(SCRIPT, ["kubelet-hold", this.run]);
        this.kubeletSettingsHeld = true;
        fs.writeFileSync(path.join(this.dir, "init"), "systemd\n");
    }

    /** Whether the hosts this lab starts boot systemd (bootSystemd). */
    get bootsSystemd(): boolean {
        return fs.existsSync(path.join(this.dir, "init"));
    }

    /** Builds (once, cached) the Debian rootfs, and the systemd layer over it when `systemd`; minutes the first time. */
    static async rootfs(options: { systemd?: boolean } = {}): Promise<string> {
        const rootfs = (await run(SCRIPT, ["rootfs"], { maxBuffer: 1 << 20 })).stdout.trim();
        if (options.systemd) await run(SCRIPT, ["systemd-layer"], { maxBuffer: 1 << 20 });
        return rootfs;
    }

    async start(names: string[], options: { volumeMb?: number } = {}): Promise<LabHost[]> {
        await Lab.rootfs();
        return Promise.all(names.map((name) => this.startHost(name, options.volumeMb ?? 0, this.allocateIndex(name))));
    }

    /**
     * A free host index from `first` to `last` (address `subnet.(10+index)`, a MAC of its own), taken for
     * `owner` until released; shared by every process using the lab.
     */
    allocateIndex(owner: string, first = 0, last = 239): number {
        for (let index = first; index <= last; index++) if (this.claimIndex(index, owner)) return index;
        throw new Error(`the lab has no free address left from ${this.addressOf(first)} to ${this.addressOf(last)}`);
    }

    /** Takes `index` for `owner` when it is free; false when another owner has it. */
    claimIndex(index: number, owner: string): boolean {
        try {
            fs.writeFileSync(path.join(this.dir, "addresses", String(index)), owner, { flag: "wx" });
            return true;
        } catch (e) {
            if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
            return false;
        }
    }

    releaseIndex(index: number): void {
        fs.rmSync(path.join(this.dir, "addresses", String(index)), { force: true });
    }

    addressOf(index: number): string {
        return `${this.subnet}.${10 + index}`;
    }

    /**
     * Starts a host named `name` at the address of `index` (a VM on its port). `cluster` names the
     * stand-ins' cluster state it shares with the hosts of the same cluster (a folder of `clusterState`).
     */
    startAt(name: string, index: number, cluster: string): Promise<LabHost> {
        return this.startHost(name, 0, index, path.join(this.clusterState, cluster));
    }

    /** Stops a host and removes its filesystem (a deleted VM). */
    async stopHost(name: string): Promise<void> {
        const h = this.host(name);
        await run(SCRIPT, ["host-down", this.run, h.name, h.dir]);
        this.hosts.delete(name);
    }

    /** How many SSH logins the host accepted since it started (its sshd's log). */
    logins(name: string): number {
        const log = fs.readFileSync(path.join(this.host(name).dir, "sshd.log"), "utf8");
        return log.split("\n").filter((line) => line.startsWith("Accepted ")).length;
    }

    private async startHost(name: string, volumeMb: number, index: number, shared = this.clusterState): Promise<LabHost> {
        const host: LabHost = { name, index, address: this.addressOf(index), dir: path.join(this.dir, "hosts", name) };
        // Recorded before anything starts, so whichever process takes the lab down finds it.
        fs.mkdirSync(host.dir, { recursive: true });
        fs.mkdirSync(shared, { recursive: true });
        fs.writeFileSync(path.join(host.dir, "host.json"), JSON.stringify(host));
        this.hosts.set(name, host);
        await run(SCRIPT, ["host-up", this.run, name, String(index), this.subnet, host.dir, this.publicKeyFile, String(volumeMb), shared], { env: { ...process.env, LAB_PASSWORD: this.password } });
        if (volumeMb > 0) host.volume = fs.readFileSync(path.join(host.dir, "loop"), "utf8").trim();
        return host;
    }

    /** A host this process started, or one another process started in the same lab. */
    host(name: string): LabHost {
        const known = this.hosts.get(name);
        if (known) return known;
        const file = path.join(this.dir, "hosts", name, "host.json");
        if (!fs.existsSync(file)) throw new Error(`no lab host ${name}`);
        const found = JSON.parse(fs.readFileSync(file, "utf8")) as LabHost;
        const loop = path.join(found.dir, "loop");
        if (fs.existsSync(loop)) found.volume = fs.readFileSync(loop, "utf8").trim();
        return found;
    }

    /** Every host of the lab, whichever process started it. */
    hostNames(): string[] {
        const dir = path.join(this.dir, "hosts");
        return fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => fs.existsSync(path.join(dir, n, "host.json"))) : [];
    }

    /** How a step logs into a host; `auth` picks key or password login. */
    target(name: string, auth: "key" | "password" = "key"): SshTarget {
        const h = this.host(name);
        return auth === "key"
            ? { host: h.address, username: "ubuntu", privateKey: this.privateKey, password: this.password }
            : { host: h.address, username: "ubuntu", password: this.password };
    }

    /**
     * A Cinder volume: a sparse file of `sizeMb` and a loop device, owned by the lab (not by a host), so it
     * outlives the hosts it is attached to; `stopSync` detaches exactly the loop devices the lab recorded.
     */
    async createVolume(id: string, sizeMb: number): Promise<void> {
        if (!Number.isInteger(sizeMb) || sizeMb <= 0) throw new Error(`invalid volume size: ${sizeMb} MB`);
        await this.labSh(["volume-create", this.dir, this.volumeId(id), String(sizeMb)]);
    }

    /** Detaches the volume's loop device and removes it; refused, as Cinder refuses, while it is attached. */
    async deleteVolume(id: string): Promise<void> {
        await this.labSh(["volume-delete", this.dir, this.volumeId(id)]);
    }

    /**
     * Attaches the volume to the host (one host at a time, as a volume without multiattach): it appears in the
     * host as the next free /dev/vdX (after /dev/vdb when the host has its own `volumeMb` volume) with the
     * link udev makes for a virtio disk whose serial is the volume id cut to 20 characters,
     * /dev/disk/by-id/virtio-<id[0:20]> -> ../../vdX, and the /dev/disk/by-uuid links of its filesystem (the
     * add event). Kept in the host's dir: a host whose sshd starts again (a power-on) gets them back; a host
     * that is stopped (a deleted VM) leaves the volume available. Returns the device path.
     */
    async attachVolume(host: string, id: string): Promise<string> {
        return (await this.labSh(["volume-attach", this.dir, this.volumeId(id), this.host(host).dir])).trim();
    }

    /** Takes the volume's device and links out of the host (if it runs) and forgets the attachment. */
    async detachVolume(host: string, id: string): Promise<void> {
        await this.labSh(["volume-detach", this.dir, this.volumeId(id), this.host(host).dir]);
    }

    /** The lab's volumes, whichever process made them. */
    volumeIds(): string[] {
        const dir = path.join(this.dir, "volumes");
        return fs.existsSync(dir) ? fs.readdirSync(dir).filter((n) => fs.existsSync(path.join(dir, n, "loop"))) : [];
    }

    /** Where the volume is attached, or undefined when it is available. */
    volumeAttachment(id: string): VolumeAttachment | undefined {
        let hostDir: string;
        try {
            hostDir = fs.readFileSync(path.join(this.dir, "volumes", this.volumeId(id), "attached"), "utf8").trim();
        } catch {
            return undefined;
        }
        const record = path.join(hostDir, "volumes", id);
        if (!fs.existsSync(record)) return undefined;
        return { host: path.basename(hostDir), device: `/dev/${fs.readFileSync(record, "utf8").split("\n")[0]}` };
    }

    private volumeId(id: string): string {
        if (!VOLUME_ID.test(id)) throw new Error(`invalid volume id: ${JSON.stringify(id)}`);
        return id;
    }

    /** lab.sh, failing with its own message (Cinder's words for a refused volume operation). */
    private async labSh(args: string[]): Promise<string> {
        try {
            return (await run(SCRIPT, args)).stdout;
        } catch (e) {
            const stderr = String((e as { stderr?: string }).stderr ?? "").trim();
            throw new Error(stderr.replace(/^lab: /, "") || (e as Error).message);
        }
    }

    // Faults.
    async killSshd(name: string): Promise<void> {
        await run(SCRIPT, ["sshd-kill", this.host(name).dir]);
    }
    async startSshd(name: string): Promise<void> {
        await run(SCRIPT, ["sshd-start", this.run, name, this.host(name).dir]);
    }
    async link(name: string, state: "up" | "down"): Promise<void> {
        await run(SCRIPT, ["link", this.run, String(this.host(name).index), state]);
    }
    /** New host keys: the host looks like another machine at the same address. */
    async rekey(name: string): Promise<void> {
        await this.killSshd(name);
        await run(SCRIPT, ["rekey", this.host(name).dir]);
        await this.startSshd(name);
    }

    /**
     * A command inside the host (as root, in its namespaces), for test setup and inspection. `input` is its
     * stdin (else none): how files and secrets get into a host without being part of any command line.
     */
    async inside(name: string, command: string, options: { input?: string | Buffer } = {}): Promise<string> {
        const outer = fs.readFileSync(path.join(this.host(name).dir, "sshd.pid"), "utf8").trim();
        // The host's first process (the child of lab.sh's unshare): its root is the host's own filesystem.
        const pid = fs.readFileSync(`/proc/${outer}/task/${outer}/children`, "utf8").trim().split(/\s+/)[0];
        if (!pid) throw new Error(`lab host ${name} is not running`);
        // root's PATH on Debian, whatever the caller's (which may have no sbin in it).
        const rootPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        const child = run("nsenter", ["-t", pid, "-m", "-u", "-n", "-p", "-r", "-w", "--", "/usr/bin/env", rootPath, "bash", "-c", command], { maxBuffer: 16 << 20 });
        child.child.stdin!.on("error", () => undefined);
        child.child.stdin!.end(options.input ?? "");
        return (await child).stdout;
    }

    async stop(): Promise<void> {
        this.stopSync();
    }

    /** Stops exactly what this lab started: its hosts (by recorded names and PIDs) and its bridge. */
    stopSync(): void {
        if (!this.owner) return;
        for (const h of this.hostNames().map((n) => this.host(n))) {
            try {
                execFileSync(SCRIPT, ["host-down", this.run, h.name, h.dir], { stdio: "ignore" });
            } catch {
                // keep going: the other hosts and the bridge must still go
            }
        }
        this.hosts.clear();
        try {
            execFileSync(SCRIPT, ["volumes-down", this.dir], { stdio: "ignore" });
        } catch {
            // keep going: the bridge must still go
        }
        if (this.kubeletSettingsHeld) {
            try {
                execFileSync(SCRIPT, ["kubelet-release", this.run], { stdio: "ignore" });
            } catch {
                // keep going: the bridge must still go (a hold whose bridge is gone counts no more)
            }
            this.kubeletSettingsHeld = false;
        }
        if (this.bridge) {
            try {
                execFileSync(SCRIPT, ["bridge-down", this.run], { stdio: "ignore" });
            } catch {
                // already gone
            }
            this.bridge = false;
        }
        fs.rmSync(this.dir, { recursive: true, force: true });
        liveLabs.delete(this);
    }
}
