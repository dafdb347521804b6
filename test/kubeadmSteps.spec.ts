import { strict as assert } from "node:assert";
import { controlPlaneMemberStep } from "../providers/kubernetes/controlPlaneMember";
import { ControlPlaneRef } from "../providers/kubernetes/kubeadm";
import { kubeadmInitStep } from "../providers/kubernetes/kubeadmInit";
import { podNetworkStep } from "../providers/kubernetes/podNetwork";
import { workerMemberStep } from "../providers/kubernetes/workerMember";
import { Hosts, StepEnvelope } from "../providers/step";
import { ConnectError, ExecResult, HostKeyMismatchError, RemoteCommandError, SshSession, SshTarget } from "../providers/transport/ssh";
import { ShellText } from "../providers/transport/shell";
import { INIT_SETTINGS } from "./fixtures/kubeadmInit";

/**
 * The kubeadm steps' create/update/delete/read logic against a scripted cluster: machines (an address, a
 * host key, the files kubeadm leaves) and the cluster's Node objects and etcd members. kubeadm and kubectl
 * answer as the lab stand-ins do, refusing a join over a previous membership's files (kubeadm's preflight).
 */
const HASH = `sha256:${"c".repeat(64)}`;
const KUBELET_CONF = "/etc/kubernetes/kubelet.conf";
const ADMIN_CONF = "/etc/kubernetes/admin.conf";
const MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml";

interface Machine {
    name: string;
    key: string;
    files: Set<string>;
    up: boolean;
}

class World {
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
    /** How a drain ends: kubectl's messages (drain.go) for its global timeout and for a pod no controller manages. */
    drainEnds: "drained" | "timeout" | "unmanaged" | "resetMeanwhile" = "drained";

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
        const exec = async (command: ShellText, options: { allowFailure?: boolean } = {}): Promise<ExecResult> => {
            this.calls.push(`${address} ${command.text}`);
            const result = this.run(m, command.text);
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
            return this.session(target.host);
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
        if ((match = /^kubectl --kubeconfig \S+ get node (\S+) -o /.exec(text))) return this.nodes.has(match[1]) ? ok("True") : fail(`Error from server (NotFound): nodes "${match[1]}" not found`);
        if ((match = /^kubectl --kubeconfig \S+ delete node (\S+) /.exec(text))) return this.nodes.delete(match[1]), ok();
        if ((match = /^kubectl --kubeconfig \S+ drain (\S+) .*--timeout=(\d+)s$/.exec(text))) {
            const [, name, seconds] = match;
            if (this.drainEnds === "timeout") return fail(`error: unable to drain node "${name}" due to error: [error when evicting pods/"web-0" -n "default": global timeout reached: ${seconds}s], continuing command...`);
            if (this.drainEnds === "resetMeanwhile") {
                // kubeadm reset on the master (an entire heal) while kubectl waits: its admin.conf is gone.
                m.files.clear();
                return fail("error: unable to drain node: the server has asked for the client to provide credentials");
            }
            if (this.drainEnds === "unmanaged") return fail(`error: unable to drain node "${name}" due to error: cannot delete Pods that declare no controller (use --force to override): default/lonely, continuing command...`);
            return ok(`node/${name} cordoned\nnode/${name} drained`);
        }
        if ((match = /^kubectl --kubeconfig \S+ uncordon (\S+)$/.exec(text))) return ok(`node/${match[1]} uncordoned`);
        if ((match = / exec etcd-(\S+) -- etcdctl /.exec(text)) && !this.etcd.has(match[1])) return fail(`Error from server (NotFound): pods "etcd-${match[1]}" not found`);
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

/** The session a step without a host of its own gets (as step.ts gives it): any use fails the test. */
const NO_SESSION = new Proxy({} as SshSession, {
    get: (_t, property) => {
        throw new Error(`the step used its own session (${String(property)})`);
    },
});

const envelope = (connection: SshTarget): StepEnvelope => ({ connection, providerVersion: "2" });
/** The kubeadm resets and joins run on a machine, in order. */
const joins = (w: World, address: string) => w.calls.filter((c) => c.startsWith(`${address} kubeadm `)).map((c) => c.split(" ")[2]).filter((sub) => sub === "reset" || sub === "join");

describe("kubeadm steps against a scripted cluster", () => {
    describe("a member whose Node was deleted joins again (README: refresh drops it, the next up joins it)", () => {
        /** A master and worker w-0 (as `state`, whose Node `inCluster` says whether the cluster has); runs create on w-0. */
        async function createWorker(state: "fresh" | "worker", inCluster: boolean): Promise<World> {
            const w = new World();
            const master = w.machine("10.0.0.5", "m-0", "master");
            const worker = w.machine("10.0.0.7", "w-0", state);
            if (inCluster) w.nodes.add("w-0");
            else w.nodes.delete("w-0");
            const inputs = { ...envelope(worker), vmId: "vm", nodeName: "w-0", endpoint: "10.0.0.5:6443", caCertHash: HASH, controlPlanes: [w.ref(master.host)], drainTimeoutSeconds: 60 };
            await workerMemberStep.create(w.session(worker.host), inputs, w.hosts());
            assert.ok(w.nodes.has("w-0"));
            return w;
        }

        it("worker: it still has kubelet.conf, so it is reset first, then joins", async () => {
            assert.deepEqual(joins(await createWorker("worker", false), "10.0.0.7"), ["reset", "join"]);
        });

        it("worker: joined and in the cluster, create changes nothing", async () => {
            assert.deepEqual(joins(await createWorker("worker", true), "10.0.0.7"), []);
        });

        it("worker: a new VM under a name the cluster still has: the old Node goes, the new VM joins without a reset", async () => {
            assert.deepEqual(joins(await createWorker("fresh", true), "10.0.0.7"), ["join"]);
        });

        const masterInputs = (w: World, self: SshTarget, name: string, peers: string[]) => ({
            ...envelope(self),
            vmId: "vm",
            nodeName: name,
            address: self.host,
            apiServerPort: 6443,
            endpoint: "10.0.0.100:16443",
            caCertHash: HASH,
            peers: peers.map((p) => w.ref(p)),
            loadBalanced: true,
        });

        it("master (HA): its manifests and etcd data would fail the join's preflight, so it is reset first (its etcd member goes), then joins the control plane through a peer and is back in every peer's HAProxy", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const m1 = w.machine("10.0.0.6", "m-1", "master");
            w.nodes.delete("m-1");
            await controlPlaneMemberStep.create(w.session(m1.host), masterInputs(w, m1, "m-1", [m0.host]), w.hosts());
            assert.deepEqual(joins(w, m1.host), ["reset", "join"]);
            assert.ok(w.nodes.has("m-1"));
            assert.deepEqual([...w.etcd.keys()].sort(), ["m-0", "m-1"]);
            assert.ok(w.calls.includes(`${m0.host} script server-state m-1 ready`));
        });

        it("master: the only one, joined but without its Node, is refused with advice; nothing is reset", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            w.nodes.delete("m-0");
            await assert.rejects(controlPlaneMemberStep.create(w.session(m0.host), masterInputs(w, m0, "m-0", []), w.hosts()), /m-0 joined once, but the cluster has no Node of it.*restart its kubelet.*heal the entire cluster \(heal\.generation\)/);
            assert.deepEqual(joins(w, m0.host), []);
        });

        it("master delete: a peer that left etcd a moment ago (masters leaving at once, an entire-cluster heal) gives way to the next", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const m1 = w.machine("10.0.0.6", "m-1", "master");
            w.machine("10.0.0.7", "m-2", "master");
            w.etcd.delete("m-0");
            await controlPlaneMemberStep.deleteAcross!(w.hosts(), { ...masterInputs(w, m1, "m-1", [m0.host, "10.0.0.7"]), hostKeyFingerprint: m1.hostKeyFingerprint, nodeStatus: "Ready" });
            assert.deepEqual([...w.etcd.keys()], ["m-2"]);
            assert.ok(!w.nodes.has("m-1"));
            assert.deepEqual(joins(w, m1.host), ["reset"]);
        });

        it("master delete: when no peer can take it out (the others left etcd too), the delete still resets it and succeeds", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const m1 = w.machine("10.0.0.6", "m-1", "master");
            w.etcd.delete("m-0");
            await controlPlaneMemberStep.deleteAcross!(w.hosts(), { ...masterInputs(w, m1, "m-1", [m0.host]), hostKeyFingerprint: m1.hostKeyFingerprint, nodeStatus: "Ready" });
            assert.deepEqual(joins(w, m1.host), ["reset"]);
        });

        it("worker delete while an entire-cluster heal resets the master under it: the drain fails as the cluster goes, which is no failure; the worker is reset", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const worker = w.machine("10.0.0.7", "w-0", "worker");
            w.drainEnds = "resetMeanwhile";
            const outs = { ...envelope(worker), vmId: "vm", nodeName: "w-0", endpoint: "10.0.0.5:6443", caCertHash: HASH, controlPlanes: [w.ref(m0.host)], drainTimeoutSeconds: 60, nodeStatus: "Ready" as const };
            await workerMemberStep.deleteAcross!(w.hosts(), outs);
            assert.deepEqual(joins(w, worker.host), ["reset"]);
            w.machine("10.0.0.5", "m-0", "master");
            w.drainEnds = "timeout";
            await assert.rejects(workerMemberStep.deleteAcross!(w.hosts(), outs), /drain of w-0 failed, so the node and its VM stay/, "a drain failing on a live control plane still fails");
        });

        it("master-0 right after init is a member already, asked of itself: its peers have not joined yet", async () => {
            const w = new World();
            const m0 = w.machine("10.0.0.5", "m-0", "master");
            const m1 = w.machine("10.0.0.6", "m-1", "fresh");
            await controlPlaneMemberStep.create(w.session(m0.host), masterInputs(w, m0, "m-0", [m1.host]), w.hosts());
            assert.deepEqual(joins(w, m0.host), []);
        });
    });

    describe("the init works through the masters' current host keys, never a session of its own", () => {
        const initState = (w: World, masters: string[]) => ({
            ...envelope({ host: masters[0], username: "ubuntu", password: "pw" }),
            ...INIT_SETTINGS,
            controlPlanes: masters.map((m) => w.ref(m)),
            kubeconfig: "k",
            joinToken: "t",
            caCertHash: HASH,
        });

        it("after master-0's VM was replaced (new host keys, pinned by its node step), refresh, update and delete reach it", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master", "SHA256:healed-vm");
            w.machine("10.0.0.6", "m-1", "master");
            const state = initState(w, ["10.0.0.5", "10.0.0.6"]);
            assert.equal(kubeadmInitStep.ownHost, false);
            assert.deepEqual(await kubeadmInitStep.read(NO_SESSION, state, w.hosts()), { caCertHash: HASH });
            const healed = { ...state, controlPlanes: ["10.0.0.5", "10.0.0.6"].map((m) => w.ref(m)) };
            assert.deepEqual(await kubeadmInitStep.update(NO_SESSION, state, healed, w.hosts()), { kubeconfig: "k", joinToken: "t", caCertHash: HASH });
            await kubeadmInitStep.deleteAcross!(w.hosts(), state);
            assert.deepEqual(joins(w, "10.0.0.5"), ["reset"]);
            assert.ok(w.logins.every((t) => t.hostKeyFingerprint === w.machines.get(t.host)!.key), "every login pinned to the host's current key");
        });

        it("refresh with master-0 down asks the next master", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master");
            w.machine("10.0.0.6", "m-1", "master");
            w.machines.get("10.0.0.5")!.up = false;
            assert.deepEqual(await kubeadmInitStep.read(NO_SESSION, initState(w, ["10.0.0.5", "10.0.0.6"]), w.hosts()), { caCertHash: HASH });
        });

        it("refresh: the cluster is gone only when every master answers and none is a control-plane node; none answering fails the refresh", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "fresh");
            w.machine("10.0.0.6", "m-1", "fresh");
            const state = initState(w, ["10.0.0.5", "10.0.0.6"]);
            assert.equal(await kubeadmInitStep.read(NO_SESSION, state, w.hosts()), undefined);
            for (const m of w.machines.values()) m.up = false;
            await assert.rejects(kubeadmInitStep.read(NO_SESSION, state, w.hosts()), ConnectError);
        });

        it("delete after an entire-cluster heal: master-0 is another machine by then (another key), so nothing is reset and the delete succeeds", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "fresh", "SHA256:newer-vm");
            const state = initState(w, ["10.0.0.5"]);
            state.controlPlanes[0].connection.hostKeyFingerprint = "SHA256:first-vm";
            await kubeadmInitStep.deleteAcross!(w.hosts(), state);
            assert.deepEqual(joins(w, "10.0.0.5"), []);
        });
    });

    describe("the pod network: applied on the first master that answers, by its current host key", () => {
        const networkState = (w: World, masters: string[]) => ({
            ...envelope({ host: masters[0], username: "ubuntu", password: "pw" }),
            cniManifest: "https://example.com/calico.yaml",
            proxy: { httpProxy: "", httpsProxy: "http://user:s3cret@proxy.example:3128", noProxy: "10.0.0.0/8" },
            caCertHash: HASH,
            controlPlanes: masters.map((m) => w.ref(m)),
        });

        it("create applies the manifest on a control-plane node; the proxy goes in the script's environment, never its arguments", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master");
            await podNetworkStep.create(NO_SESSION, networkState(w, ["10.0.0.5"]), w.hosts());
            assert.deepEqual(w.calls.filter((c) => c.includes(" script ")), ["10.0.0.5 script apply https://example.com/calico.yaml 60 5"]);
            assert.equal(w.scriptEnvs.at(-1)!.https_proxy, "http://user:s3cret@proxy.example:3128");
            assert.ok(w.calls.every((c) => !c.includes("s3cret")), "no command carries the proxy's password");
        });

        it("with master-0 down it goes through the next master; an update re-applies only a new manifest or proxy", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master");
            w.machine("10.0.0.6", "m-1", "master");
            w.machines.get("10.0.0.5")!.up = false;
            const state = networkState(w, ["10.0.0.5", "10.0.0.6"]);
            await podNetworkStep.update(NO_SESSION, state, { ...state, controlPlanes: [...state.controlPlanes].reverse() }, w.hosts());
            assert.equal(w.calls.filter((c) => c.includes(" script ")).length, 0, "new host keys change nothing in the cluster");
            await podNetworkStep.update(NO_SESSION, state, { ...state, cniManifest: "https://example.com/calico-2.yaml" }, w.hosts());
            assert.deepEqual(w.calls.filter((c) => c.includes(" script ")), ["10.0.0.6 script apply https://example.com/calico-2.yaml 60 5"]);
        });

        it("refresh: the network is there while its cluster is (the same CA); another cluster or none means it is gone", async () => {
            const w = new World();
            w.machine("10.0.0.5", "m-0", "master");
            const state = networkState(w, ["10.0.0.5"]);
            assert.deepEqual(await podNetworkStep.read(NO_SESSION, state, w.hosts()), {});
            assert.equal(await podNetworkStep.read(NO_SESSION, { ...state, caCertHash: `sha256:${"e".repeat(64)}` }, w.hosts()), undefined);
            const fresh = new World();
            fresh.machine("10.0.0.5", "m-0", "fresh");
            assert.equal(await podNetworkStep.read(NO_SESSION, networkState(fresh, ["10.0.0.5"]), fresh.hosts()), undefined);
        });
    });
});

describe("a graceful stop and the start after it (nodeService.ts, through the membership steps' update)", () => {
    function cluster() {
        const w = new World();
        const master = w.machine("10.0.0.5", "m-0", "master");
        const worker = w.machine("10.0.0.7", "w-0", "worker");
        const inputs = { ...envelope(worker), vmId: "vm", nodeName: "w-0", endpoint: "10.0.0.5:6443", caCertHash: HASH, controlPlanes: [w.ref(master.host)], drainTimeoutSeconds: 60 };
        const update = (olds: object, news: object) => workerMemberStep.update(w.session(worker.host), { ...inputs, ...olds }, { ...inputs, ...news }, w.hosts());
        return { w, update };
    }
    const kubectlCalls = (w: World) => w.calls.filter((c) => / kubectl /.test(c)).map((c) => c.split(" ").slice(4, 6).join(" "));

    it("draining within the stop's timeout; a drain that runs out of time lets the stop go on", async () => {
        const { w, update } = cluster();
        await update({}, { drained: true, stopDrainTimeoutSeconds: 5 });
        assert.ok(w.calls.some((c) => / drain w-0 --ignore-daemonsets --delete-emptydir-data --timeout=5s$/.test(c)));
        w.drainEnds = "timeout";
        await update({}, { drained: true, stopDrainTimeoutSeconds: 5 });
    });

    it("any other drain failure stops the stop, saying why", async () => {
        const { w, update } = cluster();
        w.drainEnds = "unmanaged";
        await assert.rejects(update({}, { drained: true, stopDrainTimeoutSeconds: 5 }), /w-0 could not be drained for the stop, so its VM keeps running[\s\S]*cannot delete Pods that declare no controller/);
    });

    it("the start uncordons a drained node once it is Ready; an undrained one is left alone", async () => {
        const { w, update } = cluster();
        await update({ drained: true, stopDrainTimeoutSeconds: 5 }, { drained: false });
        assert.deepEqual(kubectlCalls(w), ["get node", "uncordon w-0"]);
        const other = cluster();
        await other.update({ drained: false }, { drained: false });
        assert.deepEqual(kubectlCalls(other.w), []);
    });
});
