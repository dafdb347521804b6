import { API_UNAVAILABLE, ControlPlaneRef } from "../../providers/kubernetes/kubeadm";
import { Hosts, StepEnvelope } from "../../providers/step";
import { ConnectError, ExecResult, HostKeyMismatchError, RemoteCommandError, SshSession, SshTarget } from "../../providers/transport/ssh";
import { ShellText } from "../../providers/transport/shell";

/**
 * The kubeadm steps' create/update/delete/read logic against a scripted cluster: machines (an address, a
 * host key, the files kubeadm leaves) and the cluster's Node objects and etcd members. kubeadm and kubectl
 * answer as the lab stand-ins do, refusing a join over a previous membership's files (kubeadm's preflight).
 */
export const HASH = `sha256:${"c".repeat(64)}`;
const KUBELET_CONF = "/etc/kubernetes/kubelet.conf";
const ADMIN_CONF = "/etc/kubernetes/admin.conf";
const MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml";

export interface Machine {
    name: string;
    key: string;
    files: Set<string>;
    up: boolean;
}

export class World {
    readonly machines = new Map<string, Machine>();
    readonly nodes = new Set<string>();
    readonly etcd = new Map<string, string>();
    /** "address command" for every command run, in order. */
    readonly calls: string[] = [];
    /** The targets sessions were opened with. */
    readonly logins: SshTarget[] = [];
    /** The environment each script was given (exported inside its standard input). */
    readonly scriptEnvs: Record<string, string>[] = [];
    private uploaded = "";
    /**
     * A `kubeadm reset` under way on a master: its API server stopped (kubectl refused) for this many kubectl
     * calls while its admin kubeconfig is still there, which the reset then removes; -1: no reset.
     */
    resetRefusals = -1;
    /** How a drain ends: kubectl's messages (drain.go) for its global timeout and for a pod no controller manages. */
    drainEnds: "drained" | "timeout" | "unmanaged" | "resetMeanwhile" | "vmReplacedMeanwhile" = "drained";
    /**
     * The next `kubectl exec` matching each entry loses its stream (the VIP moved to another master under it:
     * keepalived), after the command ran in the pod when `applied`; each entry is used once.
     */
    lostExecStreams: { match: RegExp; applied: boolean }[] = [];
    /** This many `etcdctl member remove` calls are refused by etcd (the member stays). */
    refusedEtcdRemovals = 0;
    /** The next login to each of these addresses is followed at once by its VM's replacement (another machine there), before any command. */
    replacedAfterLogin = new Set<string>();

    machine(address: string, name: string, state: "fresh" | "worker" | "master", key = `SHA256:${name}`): SshTarget {
        const files = state === "fresh" ? [] : state === "worker" ? [KUBELET_CONF] : [KUBELET_CONF, ADMIN_CONF, MANIFEST];
        this.machines.set(address, { name, key, files: new Set(files), up: true });
        if (state !== "fresh") this.nodes.add(name);
        if (state === "master") this.etcd.set(name, String(this.etcd.size + 1));
        return { host: address, username: "ubuntu", password: "pw", hostKeyFingerprint: key };
    }

    ref(address: string): ControlPlaneRef {
        const m = this.machines.get(address)!;
        return { name: m.name, connection: { host: address, username: "ubuntu", password: "pw", hostKeyFingerprint: m.key } };
    }

    session(address: string): SshSession {
        const m = this.machines.get(address)!;
        const key = m.key;
        const exec = async (command: ShellText, options: { allowFailure?: boolean } = {}): Promise<ExecResult> => {
            // ssh2's error for a channel on a connection that went (the VM replaced under the session).
            if (m.key !== key) throw new Error("Not connected");
            const text = unlocked(command.text);
            this.calls.push(`${address} ${text}`);
            const result = this.run(m, text);
            if (result.code !== 0 && !options.allowFailure) throw new RemoteCommandError(`${address}: command exited ${result.code}: ${result.stderr}`, result.code);
            return result;
        };
        const fake = {
            hostKeyFingerprint: m.key,
            exec,
            runScript: async (_script: string, args: ReadonlyArray<string | number>, options: { env?: Record<string, string> } = {}) => {
                this.calls.push(`${address} script ${args.join(" ")}`);
                this.scriptEnvs.push(options.env ?? {});
                return { code: 0, stdout: "", stderr: "" };
            },
            upload: async (content: string) => {
                this.uploaded = content;
            },
            close: () => undefined,
        };
        return fake as unknown as SshSession;
    }

    /** Hosts as the step pattern gives them: pinned keys enforced, dead hosts skipped by `first`. */
    hosts(): Hosts {
        const open = (target: SshTarget) => {
            const m = this.machines.get(target.host);
            if (!m?.up) throw new ConnectError(`cannot connect to ${target.host}`);
            if (target.hostKeyFingerprint && target.hostKeyFingerprint !== m.key) throw new HostKeyMismatchError(`host key of ${target.host} changed: expected ${target.hostKeyFingerprint}, got ${m.key}`);
            this.logins.push(target);
            const session = this.session(target.host);
            if (this.replacedAfterLogin.delete(target.host)) {
                m.key = `${m.key}-replaced`;
                m.files.clear();
            }
            return session;
        };
        return {
            on: async (target, fn) => fn(open(target)),
            first: async (targets, what, fn, usable) => {
                for (const [index, target] of targets.entries()) {
                    let s: SshSession;
                    try {
                        s = open(target);
                    } catch (e) {
                        if (e instanceof ConnectError) continue;
                        throw e;
                    }
                    if (usable && !(await usable(s))) continue;
                    return fn(s, index);
                }
                throw new ConnectError(`none of the ${what} answered`);
            },
        };
    }

    private run(m: Machine, text: string): ExecResult {
        const ok = (stdout = "") => ({ code: 0, stdout, stderr: "" });
        const fail = (stderr: string) => ({ code: 1, stdout: "", stderr });
        let match: RegExpExecArray | null;
        if ((match = /^test -f (\S+)$/.exec(text))) return m.files.has(match[1]) ? ok() : fail("");
        if (/^kubectl /.test(text) && !m.files.has(ADMIN_CONF)) return fail("The connection to the server localhost:8080 was refused");
        if (/^kubectl /.test(text) && this.resetRefusals >= 0) {
            if (this.resetRefusals-- > 0) return fail(`The connection to the server ${m.name}:6443 was refused - did you specify the right host or port?`);
            m.files.clear();
            return fail("error: stat /etc/kubernetes/admin.conf: no such file or directory");
        }
        if ((match = /^kubectl --kubeconfig \S+ get node (\S+) -o /.exec(text))) return this.nodes.has(match[1]) ? ok("True") : fail(`Error from server (NotFound): nodes "${match[1]}" not found`);
        if ((match = /^kubectl --kubeconfig \S+ delete node (\S+) /.exec(text))) return this.nodes.delete(match[1]), ok();
        if ((match = /^kubectl --kubeconfig \S+ drain (\S+) .*--timeout=(\d+)s$/.exec(text))) {
            const [, name, seconds] = match;
            if (this.drainEnds === "timeout") return fail(`error: unable to drain node "${name}" due to error: [error when evicting pods/"web-0" -n "default": global timeout reached: ${seconds}s], continuing command...`);
            if (this.drainEnds === "resetMeanwhile") {
                // kubeadm reset on the master (an entire heal, or its own heal) while kubectl waits: its admin.conf is gone. Once.
                this.drainEnds = "drained";
                m.files.clear();
                return fail("error: unable to drain node: the server has asked for the client to provide credentials");
            }
            if (this.drainEnds === "vmReplacedMeanwhile") {
                // An entire heal replaces the master's VM while kubectl waits: another machine at the address.
                m.key = `${m.key}-replaced`;
                m.files.clear();
                throw new Error("Not connected");
            }
            if (this.drainEnds === "unmanaged") return fail(`error: unable to drain node "${name}" due to error: cannot delete Pods that declare no controller (use --force to override): default/lonely, continuing command...`);
            return ok(`node/${name} cordoned\nnode/${name} drained`);
        }
        if ((match = /^kubectl --kubeconfig \S+ uncordon (\S+)$/.exec(text))) return ok(`node/${match[1]} uncordoned`);
        if ((match = / exec etcd-(\S+) -- etcdctl /.exec(text)) && !this.etcd.has(match[1])) return fail(`Error from server (NotFound): pods "etcd-${match[1]}" not found`);
        const lost = / exec etcd-/.test(text) ? this.lostExecStreams.findIndex((l) => l.match.test(text)) : -1;
        if (lost >= 0) {
            if (this.lostExecStreams.splice(lost, 1)[0].applied) this.run(m, text);
            // kubectl's words (remotecommand's stream reader) for a stream through a VIP that moved.
            return fail("error: error reading from error stream: next reader: read tcp 10.0.0.100:52694->10.0.0.100:16443: i/o timeout");
        }
        if (/ etcdctl .* member remove /.test(text) && this.refusedEtcdRemovals > 0) {
            this.refusedEtcdRemovals--;
            return fail("Error: etcdserver: re-configuration failed due to not enough started members");
        }
        if (/ etcdctl .* member list -w json$/.test(text)) return ok(JSON.stringify({ members: [...this.etcd].map(([name, id]) => ({ ID: Number(id), name })) }));
        if ((match = / etcdctl .* member remove (\S+)$/.exec(text))) {
            const name = [...this.etcd].find(([, id]) => BigInt(id).toString(16) === match![1])?.[0];
            return name ? (this.etcd.delete(name), ok()) : fail("member not found");
        }
        if (/ kubectl --kubeconfig \S+ apply -f /.test(text)) return ok();
        if (/^kubeadm token create /.test(text)) return ok(`kubeadm join x --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash ${HASH}`);
        if (text === `cat ${MANIFEST}`) {
            if (!m.files.has(MANIFEST)) return fail(`cat: ${MANIFEST}: No such file or directory`);
            const address = [...this.machines].find(([, x]) => x === m)![0];
            return ok(`metadata:\n  annotations:\n    kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint: ${address}:6443\n`);
        }
        if (/^kubeadm init phase upload-certs --config \S+ --upload-certs;/.test(text)) {
            return /advertiseAddress: \S/.test(this.uploaded) ? ok("d".repeat(64)) : fail('cannot use "0.0.0.0" as the bind address for the API Server');
        }
        // kubeadmReset keeps the kubelet's credentials file aside across the reset (none on these machines).
        if (/^if \[ -f \S+ \]; then install -D -m 0600 \S+ \S+( && rm -f \S+)?; fi$/.test(text)) return ok();
        if (/^kubeadm reset -f /.test(text)) {
            if (m.files.has(ADMIN_CONF)) this.etcd.delete(m.name);
            m.files.clear();
            return ok();
        }
        if (/^kubeadm join --config /.test(text)) {
            const controlPlane = /certificateKey:/.test(this.uploaded);
            for (const file of controlPlane ? [KUBELET_CONF, MANIFEST] : [KUBELET_CONF]) {
                if (m.files.has(file)) return fail(`[ERROR FileAvailable-${file.replace(/\//g, "-")}]: ${file} already exists`);
            }
            if (this.nodes.has(m.name)) return fail(`a Node with name "${m.name}" already exists in the cluster`);
            this.nodes.add(m.name);
            m.files.add(KUBELET_CONF);
            if (controlPlane) {
                [ADMIN_CONF, MANIFEST].forEach((f) => m.files.add(f));
                this.etcd.set(m.name, String(100 + this.etcd.size));
            }
            return ok();
        }
        throw new Error(`the scripted cluster has no answer for: ${text}`);
    }
}

/** In the enclosing describe: kubectl's tries while the API server is unavailable come every 10 ms, not 3 s. */
export function quickApiRetries(): void {
    const interval = API_UNAVAILABLE.intervalMs;
    before(() => (API_UNAVAILABLE.intervalMs = 10));
    after(() => (API_UNAVAILABLE.intervalMs = interval));
}

/** The session a step without a host of its own gets (as step.ts gives it): any use fails the test. */
export const NO_SESSION = new Proxy({} as SshSession, {
    get: (_t, property) => {
        throw new Error(`the step used its own session (${String(property)})`);
    },
});

export const envelope = (connection: SshTarget): StepEnvelope => ({ connection, providerVersion: "2" });
/** The kubeadm resets and joins run on a machine, in order. */
export const joins = (w: World, address: string) => w.calls.filter((c) => c.startsWith(`${address} kubeadm `)).map((c) => c.split(" ")[2]).filter((sub) => sub === "reset" || sub === "join");

/** kubeadm runs under the host's lock (providers/kubernetes/kubeadm.ts underKubeadmLock): what counts is the command inside. */
function unlocked(text: string): string {
    const match = /^flock -o -E \d+ -w \d+ \S+ sh -c ('(?:[^']|'\\'')*'|\S+)$/.exec(text);
    if (!match) return text;
    return match[1].startsWith("'") ? match[1].slice(1, -1).replace(/'\\''/g, "'") : match[1];
}
