/**
 * Lab hosts for tests: real OpenSSH servers in network namespaces (see lab.sh). A `Lab` remembers every
 * host it started and stops exactly those, also when a test fails or the process is interrupted.
 *
 * Real here: ssh, sudo, files, mounts, ext4 on a loop device, haproxy/keepalived binaries.
 * Not here: kubeadm, kubelet and kubectl (recording stand-ins in stand-ins/, sharing one cluster state), the
 * kubelet service, and machine-wide kernel settings (swapoff, modprobe, sysctl are recorded by guards).
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

export class Lab {
    readonly run = randomBytes(3).toString("hex");
    /** A /24 of the lab's own, on its own bridge; test traffic goes nowhere else. */
    readonly subnet = `10.231.${1 + (parseInt(this.run, 16) % 250)}`;
    readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), `k8s-vnf-lab-${this.run}-`));
    readonly password = `lab-${randomBytes(9).toString("base64url")}`;
    readonly privateKey: string;
    /** The same key as a file, for the OpenSSH client. */
    readonly privateKeyFile: string;
    readonly publicKeyFile: string;
    /** The kubeadm/kubectl stand-ins' cluster state, shared by every host (see stand-ins/common.sh). */
    readonly clusterState = path.join(this.dir, "cluster-state");
    private readonly hosts = new Map<string, LabHost>();
    private bridge = false;

    constructor() {
        this.privateKeyFile = path.join(this.dir, "id_ed25519");
        execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "lab", "-f", this.privateKeyFile]);
        this.privateKey = fs.readFileSync(this.privateKeyFile, "utf8");
        this.publicKeyFile = `${this.privateKeyFile}.pub`;
        fs.mkdirSync(this.clusterState);
        liveLabs.add(this);
        if (!exitHandlerInstalled) {
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
    }

    /** Builds (once, cached) the Debian rootfs; about a minute the first time. */
    static async rootfs(): Promise<string> {
        return (await run(SCRIPT, ["rootfs"], { maxBuffer: 1 << 20 })).stdout.trim();
    }

    async start(names: string[], options: { volumeMb?: number } = {}): Promise<LabHost[]> {
        await Lab.rootfs();
        if (!this.bridge) {
            await run(SCRIPT, ["bridge-up", this.run, this.subnet]);
            this.bridge = true;
        }
        return Promise.all(names.map((name) => this.startHost(name, options.volumeMb ?? 0)));
    }

    /**
     * A new machine in place of a host: same name, index and address, fresh filesystem and host keys (what
     * replacing a VM whose port survives looks like).
     */
    async replace(name: string): Promise<LabHost> {
        const old = this.host(name);
        await run(SCRIPT, ["host-down", this.run, old.name, old.dir]);
        return this.startHost(name, 0, old.index);
    }

    /** How many SSH logins the host accepted since it started (its sshd's log). */
    logins(name: string): number {
        const log = fs.readFileSync(path.join(this.host(name).dir, "sshd.log"), "utf8");
        return log.split("\n").filter((line) => line.startsWith("Accepted ")).length;
    }

    private async startHost(name: string, volumeMb: number, index = this.hosts.size): Promise<LabHost> {
        const host: LabHost = { name, index, address: `${this.subnet}.${10 + index}`, dir: path.join(this.dir, name) };
        this.hosts.set(name, host);
        await run(SCRIPT, ["host-up", this.run, name, String(index), this.subnet, host.dir, this.publicKeyFile, this.password, String(volumeMb), this.clusterState]);
        if (volumeMb > 0) host.volume = fs.readFileSync(path.join(host.dir, "loop"), "utf8").trim();
        return host;
    }

    host(name: string): LabHost {
        const h = this.hosts.get(name);
        if (!h) throw new Error(`no lab host ${name}`);
        return h;
    }

    /** How a step logs into a host; `auth` picks key or password login. */
    target(name: string, auth: "key" | "password" = "key"): SshTarget {
        const h = this.host(name);
        return auth === "key"
            ? { host: h.address, username: "ubuntu", privateKey: this.privateKey, password: this.password }
            : { host: h.address, username: "ubuntu", password: this.password };
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

    /** A command inside the host (as root, in its namespaces), for test setup and inspection. */
    async inside(name: string, command: string): Promise<string> {
        const pid = fs.readFileSync(path.join(this.host(name).dir, "sshd.pid"), "utf8").trim();
        const root = path.join(this.host(name).dir, "merged");
        const { stdout } = await run("nsenter", ["-t", pid, "-m", "-u", "-n", `--pid=/proc/${pid}/ns/pid_for_children`, "--", "chroot", root, "bash", "-c", command], { maxBuffer: 16 << 20 });
        return stdout;
    }

    async stop(): Promise<void> {
        this.stopSync();
    }

    /** Stops exactly what this lab started: its hosts (by recorded names and PIDs) and its bridge. */
    stopSync(): void {
        for (const h of this.hosts.values()) {
            try {
                execFileSync(SCRIPT, ["host-down", this.run, h.name, h.dir], { stdio: "ignore" });
            } catch {
                // keep going: the other hosts and the bridge must still go
            }
        }
        this.hosts.clear();
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
