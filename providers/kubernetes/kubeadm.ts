/**
 * What the kubeadm steps share: kubectl on a control-plane node, fresh join credentials, the join itself
 * (configuration file, never secrets on a command line), node status, etcd membership and HAProxy's
 * runtime state. Serialized with the providers: node built-ins and the transport only.
 */
import { randomUUID } from "node:crypto";
import { Hosts, onSameMachine } from "../step";
import { ConnectError, ExecResult, HostScript, SshSession, SshTarget } from "../transport/ssh";
import { sh, ShellText } from "../transport/shell";

/** A control-plane node other steps can run kubectl/kubeadm on. */
export interface ControlPlaneRef {
    /** Kubernetes node name (the etcd pod is `etcd-<name>`). */
    name: string;
    connection: SshTarget;
}

export interface JoinCredentials {
    token: string;
    caCertHash: string;
    /** For a control-plane join: the key of the certificates just uploaded (valid for two hours). */
    certificateKey?: string;
}

export type NodeStatus = "Ready" | "NotReady";

const CA_CERT_HASH_RE = /^sha256:[0-9a-f]{64}$/;

/** A cluster's CA hash as kubeadm pins it: `sha256:` and 64 hex digits. */
export function isCaCertHash(value: unknown): value is string {
    return typeof value === "string" && CA_CERT_HASH_RE.test(value);
}

/**
 * Whether `value` is an image repository as kubeadm takes it: a registry's host[:port] (a dot or a port, or
 * localhost: anything else would be a Docker Hub path) and an optional path.
 */
export function isImageRepository(value: unknown): value is string {
    return typeof value === "string" && /^([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+(:\d+)?|[A-Za-z0-9.-]+:\d+|localhost)(\/[a-z0-9._-]+)*$/.test(value);
}

/** Whether `value` lists control-plane nodes, each as {name, connection}. */
export function listsControlPlanes(value: unknown): value is ControlPlaneRef[] {
    return Array.isArray(value) && value.every((c) => typeof c?.name === "string" && !!c.connection);
}

const ADMIN_KUBECONFIG = "/etc/kubernetes/admin.conf";
const API_SERVER_MANIFEST = "/etc/kubernetes/manifests/kube-apiserver.yaml";
const JOIN_CONFIG_FILE = "/run/k8s-vnf/kubeadm-join.yaml";
const INIT_CONFIG_FILE = "/run/k8s-vnf/kubeadm-init.yaml";
const UPLOAD_CERTS_CONFIG_FILE = "/run/k8s-vnf/kubeadm-upload-certs.yaml";
/** The annotation kubeadm puts on a control-plane node's API server Pod: the address and port it advertises. */
const ADVERTISED_ENDPOINT = "kubeadm.kubernetes.io/kube-apiserver.advertise-address.endpoint";
const JOIN_TOKEN_TTL = "15m";

/**
 * What kubectl says when no API server answers for a moment: one restarting (its etcd slow, a probe failing),
 * stopped by a `kubeadm reset` that has not yet removed the admin kubeconfig (it stops the static Pods
 * first), or the VIP moving to another master under a call (keepalived: kubectl's own connection or an
 * exec's stream then times out; a timeout the API server reports, e.g. dialling a kubelet, is no such
 * moment). A call that gets this is tried again every `intervalMs` for up to `waitMs`, while the node still
 * is a control-plane node: once a reset removed its kubeconfig, the error stands (the cluster is going away).
 */
const apiUnavailable = {
    pattern: /connection refused|was refused|connection reset by peer|unexpected EOF|TLS handshake timeout|http2: client connection lost|the server is currently unable to handle the request|etcdserver: request timed out|error reading from error stream: .*i\/o timeout|Unable to connect to the server: .*i\/o timeout/,
    waitMs: 120_000,
    intervalMs: 3_000,
};
/** The same settings, for tests (the steps' code refers to the module's own binding: a serialized provider cannot refer to `exports`). */
export const API_UNAVAILABLE = apiUnavailable;

/** kubectl with the node's admin kubeconfig, tried again while the API server is unavailable (API_UNAVAILABLE). */
export async function kubectl(s: SshSession, args: string[], options: { allowFailure?: boolean; quiet?: boolean; timeoutMs?: number } = {}): Promise<ExecResult> {
    const deadline = Date.now() + apiUnavailable.waitMs;
    const worthAnotherTry = async (said: string) => apiUnavailable.pattern.test(said) && Date.now() <= deadline && (await isControlPlane(s));
    for (;;) {
        let said: string;
        try {
            const result = await s.exec(sh`kubectl --kubeconfig ${ADMIN_KUBECONFIG} ${args}`, { sudo: true, ...options });
            if (result.code === 0 || !(await worthAnotherTry(result.stderr))) return result;
            said = result.stderr;
        } catch (e) {
            // The classes are rewritten in the provider's serialized code: the name tells a command's exit.
            if ((e as Error).name !== "RemoteCommandError" || !(await worthAnotherTry((e as Error).message))) throw e;
            said = (e as Error).message;
        }
        console.log(`kubectl ${(args.includes("--") ? args.slice(0, args.indexOf("--")) : args).join(" ")}: the API server is unavailable (${said.trim().split("\n").pop()}); trying again`);
        await new Promise((resolve) => setTimeout(resolve, apiUnavailable.intervalMs));
    }
}

/**
 * Cordons and drains a node (DaemonSet pods stay, emptyDir data goes) within kubectl's own `--timeout`; the
 * command's deadline leaves kubectl 30 s more to say why it stopped.
 */
export function drainNode(cp: SshSession, name: string, timeoutSeconds: number) {
    return kubectl(cp, ["drain", name, "--ignore-daemonsets", "--delete-emptydir-data", `--timeout=${timeoutSeconds}s`], { timeoutMs: (timeoutSeconds + 30) * 1000 });
}

/** Whether this host is a working control-plane node: it has the admin kubeconfig. */
export async function isControlPlane(s: SshSession): Promise<boolean> {
    return (await s.exec(sh`test -f ${ADMIN_KUBECONFIG}`, { sudo: true, allowFailure: true })).code === 0;
}

/**
 * Whether this master has been through `kubeadm reset`: no admin kubeconfig and no API server manifest (reset
 * removes the manifests before the kubeconfigs: cmd/kubeadm/app/cmd/phases/reset cleanupnode.go
 * `resetConfigDir`). A master that lost only its kubeconfig still runs the cluster.
 */
export async function wasReset(s: SshSession): Promise<boolean> {
    return !(await isControlPlane(s)) && (await s.exec(sh`test -f ${API_SERVER_MANIFEST}`, { sudo: true, allowFailure: true })).code !== 0;
}

/**
 * Runs `fn` on the first control-plane node that answers and still is one; fails with ConnectError when
 * none is left.
 */
export function onControlPlane<T>(hosts: Hosts, candidates: ControlPlaneRef[], fn: (cp: SshSession, ref: ControlPlaneRef) => Promise<T>): Promise<T> {
    return hosts.first(
        candidates.map((c) => c.connection),
        `control-plane nodes (${candidates.map((c) => c.name).join(", ")})`,
        (s, index) => fn(s, candidates[index]),
        isControlPlane,
    );
}

/**
 * Runs `fn` on the first of `candidates` that answers and is a control-plane node. Undefined when every one
 * answered and none is one any more (the cluster is gone); a ConnectError when none could tell.
 */
export async function onControlPlaneIfAny<T>(hosts: Hosts, candidates: ControlPlaneRef[], fn: (cp: SshSession, ref: ControlPlaneRef) => Promise<T>): Promise<T | undefined> {
    const silent: string[] = [];
    for (const candidate of candidates) {
        try {
            const found = await hosts.first([candidate.connection], `control-plane node ${candidate.name}`, async (s) => ((await isControlPlane(s)) ? { value: await fn(s, candidate) } : undefined));
            if (found) return found.value;
        } catch (e) {
            if (!(e instanceof ConnectError)) throw e;
            silent.push(candidate.name);
        }
    }
    if (silent.length) throw new ConnectError(`no control-plane node could tell: ${silent.join(", ")} did not answer, and none of the others is one`);
    return undefined;
}

/**
 * The CA hash of the cluster on the first of `candidates` that is a control-plane node (a refresh's question:
 * is the cluster still there, and the same one); undefined when every one answers and none is.
 */
export function clusterCaCertHash(hosts: Hosts, candidates: ControlPlaneRef[]): Promise<string | undefined> {
    return onControlPlaneIfAny(hosts, candidates, (cp) => joinCredentials(cp, false, "1m").then((c) => c.caCertHash));
}

/** The node's Ready condition, or undefined when the cluster has no such node. */
export async function nodeStatus(cp: SshSession, name: string): Promise<NodeStatus | undefined> {
    const r = await kubectl(cp, ["get", "node", name, "-o", 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'], { allowFailure: true, quiet: true });
    if (r.code !== 0) {
        if (/NotFound/.test(r.stderr)) return undefined;
        throw new Error(`kubectl get node ${name} failed: ${r.stderr.trim()}`);
    }
    return r.stdout.trim() === "True" ? "Ready" : "NotReady";
}

/** The phase of every PersistentVolume, by name (`Available`, `Bound`, `Released`, …). */
export async function persistentVolumePhases(cp: SshSession): Promise<Record<string, string>> {
    const r = await kubectl(cp, ["get", "pv", "-o", 'jsonpath={range .items[*]}{.metadata.name}{" "}{.status.phase}{"\\n"}{end}'], { quiet: true });
    return Object.fromEntries(r.stdout.split("\n").filter(Boolean).map((l) => l.split(" ") as [string, string]));
}

/** The node's labels. */
export async function nodeLabels(cp: SshSession, name: string): Promise<Record<string, string>> {
    const r = await kubectl(cp, ["get", "node", name, "-o", "jsonpath={.metadata.labels}"], { quiet: true });
    return JSON.parse(r.stdout.trim() || "{}");
}

/**
 * kubeadm on a host, one run at a time. An update killed while its join runs leaves that join running on the
 * host (the end of its SSH session does not stop it); the retry's check of whether the host has joined, and
 * its own join, wait for it, rather than race it into kubeadm's preflight ("kubelet.conf already exists").
 */
const KUBEADM_LOCK = "/run/k8s-vnf-kubeadm.lock";
const KUBEADM_LOCK_WAIT_SECONDS = 900;

/**
 * `command` run under the host's kubeadm lock (flock(1), waiting up to KUBEADM_LOCK_WAIT_SECONDS for it). `-o`:
 * the lock is held by flock itself, not by the command's processes, so a daemon kubeadm starts (a kubelet
 * where no service manager runs it) does not hold it after the command has ended.
 */
export function underKubeadmLock(command: ShellText): ShellText {
    return sh`flock -o -E ${KUBEADM_LOCK_TIMED_OUT} -w ${KUBEADM_LOCK_WAIT_SECONDS} ${KUBEADM_LOCK} sh -c ${command.text}`;
}

/** flock's exit code when the lock did not come in time (`-E`; EX_TEMPFAIL), told apart from the command's own. */
const KUBEADM_LOCK_TIMED_OUT = 75;

/** Whether a host has joined a cluster (kubeadm wrote its kubelet kubeconfig), once no kubeadm runs there. */
export async function hasJoined(node: SshSession): Promise<boolean> {
    const { code } = await node.exec(underKubeadmLock(sh`test -f /etc/kubernetes/kubelet.conf`), { sudo: true, allowFailure: true });
    if (code === KUBEADM_LOCK_TIMED_OUT) throw new Error(`kubeadm has run on this host for more than ${KUBEADM_LOCK_WAIT_SECONDS} s (${KUBEADM_LOCK} held): whether it has joined is not known; try again once it has ended`);
    return code === 0;
}

/**
 * A bootstrap token valid for a few minutes, the CA hash it pins and, for a control-plane join, a fresh
 * certificate key: kubeadm deletes uploaded certificates after two hours, so a key is never reused.
 * Commands run quietly: their output holds the secrets.
 */
export async function joinCredentials(cp: SshSession, controlPlane: boolean, tokenTtl = JOIN_TOKEN_TTL): Promise<JoinCredentials> {
    const join = await cp.exec(sh`kubeadm token create --ttl ${tokenTtl} --print-join-command`, { sudo: true, quiet: true });
    const m = /--token (\S+) --discovery-token-ca-cert-hash (sha256:[0-9a-f]{64})/.exec(join.stdout);
    if (!m) throw new Error("kubeadm token create printed no join command");
    const credentials: JoinCredentials = { token: m[1], caCertHash: m[2] };
    if (controlPlane) {
        // Without a configuration, kubeadm defaults the node's advertise address from its default route, which a VM
        // on a network without a gateway has not ("cannot use \"0.0.0.0\" as the bind address"): this node's own.
        const upload = await kubeadmWithConfig(cp, ["init", "phase", "upload-certs"], UPLOAD_CERTS_CONFIG_FILE, uploadCertsConfiguration(await advertisedEndpoint(cp)), ["--upload-certs"]);
        const key = upload.stdout.trim().split("\n").pop() ?? "";
        if (!/^[0-9a-f]{64}$/.test(key)) throw new Error("kubeadm init phase upload-certs printed no certificate key");
        credentials.certificateKey = key;
    }
    return credentials;
}

/** The address and port a control-plane node's API server advertises, from the manifest kubeadm wrote for it. */
async function advertisedEndpoint(cp: SshSession): Promise<{ address: string; port: number }> {
    const manifest = (await cp.exec(sh`cat ${API_SERVER_MANIFEST}`, { sudo: true, quiet: true })).stdout;
    const m = new RegExp(`^\\s*${ADVERTISED_ENDPOINT.replace(/\./g, "\\.")}: "?\\[?([0-9a-fA-F.:]+?)\\]?:(\\d+)"?$`, "m").exec(manifest);
    if (!m) throw new Error(`the API server manifest of this control-plane node has no ${ADVERTISED_ENDPOINT} annotation`);
    return { address: m[1], port: Number(m[2]) };
}

/** What `kubeadm init phase upload-certs` needs of an InitConfiguration: the node's own API endpoint. */
export function uploadCertsConfiguration(endpoint: { address: string; port: number }): string {
    return ["apiVersion: kubeadm.k8s.io/v1beta4", "kind: InitConfiguration", "localAPIEndpoint:", `  advertiseAddress: ${endpoint.address}`, `  bindPort: ${endpoint.port}`, ""].join("\n");
}

/** Join credentials for this cluster only: refused when the control plane's CA is not the one expected. */
export async function clusterJoinCredentials(cp: SshSession, controlPlane: boolean, caCertHash: string): Promise<JoinCredentials> {
    const c = await joinCredentials(cp, controlPlane);
    if (c.caCertHash !== caCertHash) throw new Error(`the control plane's CA hash ${c.caCertHash} is not this cluster's ${caCertHash}`);
    return c;
}

export interface InitSettings {
    nodeName: string;
    address: string;
    apiServerPort: number;
    /** host:port every node and client uses: the VIP and HAProxy's port (HA), else the master's API port. */
    endpoint: string;
    podCidr: string;
    serviceCidr: string;
    kubernetesVersion: string;
    /** Where the control-plane, etcd, CoreDNS and pause images come from, when not registry.k8s.io. */
    imageRepository?: string;
    /** Extra names of the API server certificate (the VIP, floating IPs). */
    certSans?: string[];
}

/**
 * kubeadm's limit for an API call, which also bounds its wait for the new node's kubelet to register its Node
 * (init's and join's "uploading crisocket"): 1 minute by default (v1beta4 `timeouts.kubernetesAPICall`), which a
 * busy VM's kubelet can take to start; the kubelet's own health check is given 4.
 */
const KUBEADM_TIMEOUTS = ["timeouts:", "  kubernetesAPICall: 4m0s"];

export function initConfiguration(c: InitSettings): string {
    return [
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: InitConfiguration",
        "nodeRegistration:",
        `  name: ${c.nodeName}`,
        "localAPIEndpoint:",
        `  advertiseAddress: ${c.address}`,
        `  bindPort: ${c.apiServerPort}`,
        ...KUBEADM_TIMEOUTS,
        "---",
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: ClusterConfiguration",
        `kubernetesVersion: v${c.kubernetesVersion}`,
        ...(c.imageRepository ? [`imageRepository: ${JSON.stringify(c.imageRepository)}`] : []),
        `controlPlaneEndpoint: ${c.endpoint}`,
        "networking:",
        `  podSubnet: ${c.podCidr}`,
        `  serviceSubnet: ${c.serviceCidr}`,
        ...(c.certSans?.length ? ["apiServer:", "  certSANs:", ...c.certSans.map((n) => `  - ${n}`)] : []),
        "",
    ].join("\n");
}

export interface JoinSettings {
    nodeName: string;
    endpoint: string;
    /** Set for a control-plane join: where this node's API server listens. */
    controlPlane?: { address: string; apiServerPort: number };
}

export function joinConfiguration(j: JoinSettings, credentials: JoinCredentials): string {
    const lines = [
        "apiVersion: kubeadm.k8s.io/v1beta4",
        "kind: JoinConfiguration",
        "nodeRegistration:",
        `  name: ${j.nodeName}`,
        "discovery:",
        "  bootstrapToken:",
        `    apiServerEndpoint: ${j.endpoint}`,
        `    token: ${credentials.token}`,
        "    caCertHashes:",
        `    - ${credentials.caCertHash}`,
        ...KUBEADM_TIMEOUTS,
    ];
    if (j.controlPlane) {
        if (!credentials.certificateKey) throw new Error("a control-plane join needs a certificate key");
        lines.push("controlPlane:", "  localAPIEndpoint:", `    advertiseAddress: ${j.controlPlane.address}`, `    bindPort: ${j.controlPlane.apiServerPort}`, `  certificateKey: ${credentials.certificateKey}`);
    }
    return `${lines.join("\n")}\n`;
}

/**
 * Runs kubeadm with a configuration file readable by root only, removed afterwards whatever happens. Quiet but for
 * a join: what init and upload-certs print holds the certificate key.
 */
async function kubeadmWithConfig(node: SshSession, subcommand: string[], file: string, config: string, extraFlags: string[]) {
    // A name of its own: a run left from a killed update removes its file when it ends, not this one's.
    const own = file.replace(/\.yaml$/, `-${randomUUID().slice(0, 8)}.yaml`);
    await node.upload(config, own, { mode: "0600", owner: "root:root", sudo: true });
    return node.exec(underKubeadmLock(sh`kubeadm ${subcommand} --config ${own} ${extraFlags}; rc=$?; rm -f ${own}; exit $rc`), { sudo: true, quiet: subcommand[0] !== "join" });
}

export function kubeadmInit(node: SshSession, settings: InitSettings) {
    return kubeadmWithConfig(node, ["init"], INIT_CONFIG_FILE, initConfiguration(settings), ["--upload-certs"]);
}

export async function kubeadmJoin(node: SshSession, settings: JoinSettings, credentials: JoinCredentials): Promise<void> {
    await kubeadmWithConfig(node, ["join"], JOIN_CONFIG_FILE, joinConfiguration(settings, credentials), []);
}

/**
 * `kubeadm reset` on a node leaving the cluster or joining it again (its own etcd member goes too when it can
 * reach etcd). Reset empties /var/lib/kubelet (reset.go's cleanup of the kubelet's directory), where the node's
 * registry logins are the kubelet's credentials file: that file is the RegistryConnections step's, which does
 * not run again for a rejoin, so it is kept aside (root's, 0600) across the reset and put back.
 */
export async function kubeadmReset(node: SshSession): Promise<void> {
    const credentials = "/var/lib/kubelet/config.json";
    const kept = "/var/lib/k8s-vnf/kubelet-credentials.json";
    await node.exec(sh`if [ -f ${credentials} ]; then install -D -m 0600 ${credentials} ${kept}; fi`, { sudo: true });
    await node.exec(underKubeadmLock(sh`kubeadm reset -f && rm -rf /etc/cni/net.d`), { sudo: true });
    await node.exec(sh`if [ -f ${kept} ]; then install -D -m 0600 ${kept} ${credentials} && rm -f ${kept}; fi`, { sudo: true });
}

/**
 * The last part of a removal: reset the node if it still answers as the machine it was (its pinned or
 * recorded host key). A dead VM, or a new VM in its place, has nothing of this cluster to reset.
 */
export function resetIfReachable(hosts: Hosts, kind: string, node: { nodeName: string; connection: SshTarget; hostKeyFingerprint?: string }): Promise<void> {
    return onSameMachine(hosts, node, { label: `${kind} ${node.nodeName}`, what: `node ${node.nodeName}`, skipped: "not reset" }, kubeadmReset);
}

/**
 * Sets a master's backend server in every peer's HAProxy to `ready` or `maint` (runtime API, so the
 * rendered configuration stays as the load-balancer step wrote it). Peers that do not answer are named in
 * the result and do not stop the others.
 */
export async function setBackendOnPeers(hosts: Hosts, peers: ControlPlaneRef[], script: HostScript, name: string, state: "ready" | "maint"): Promise<string[]> {
    const unreachable: string[] = [];
    await Promise.all(
        peers.map((peer) =>
            hosts.first([peer.connection], `control-plane node ${peer.name}`, (s) => s.runScript(script, ["server-state", name, state], { sudo: true })).catch((e: Error) => {
                unreachable.push(`${peer.name} (${e.message})`);
            }),
        ),
    );
    return unreachable;
}
