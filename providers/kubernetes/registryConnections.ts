/**
 * RegistryConnections: a Kubernetes node's connections to private registries (see registryConnections.sh):
 * containerd hosts.toml and CA per registry, /etc/hosts lines, logins as the kubelet's and containerd's
 * credentials. In each node's chain before its membership, so instantiate, scale-out and heal all join with
 * them; a config change reaches existing nodes as an update. Replaced with its VM; its delete (the last
 * registry gone from config) takes the connections out of a node that stays.
 */
import * as pulumi from "@pulumi/pulumi";
import { onSameMachine, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { StepPlan } from "../remoteActions";
import { CONTAINERD_LOGINS_LIBRARY, loadNodeScript, parseReport } from "./scripts";

const SCRIPT = loadNodeScript("registryConnections.sh", __dirname, CONTAINERD_LOGINS_LIBRARY);

/** One registry's files on a node. */
export interface RegistryConnection {
    /** Its `host[:port]`: the directory under containerd's hosts directory. */
    server: string;
    /** The hosts.toml (registryPlan.ts). */
    hostsToml: string;
    /** The CA certificate (PEM) an HTTPS registry is checked against; empty: the system's CAs. */
    caCertificate: string;
}

interface RegistryConnectionsInputs {
    [key: string]: unknown;
    /** The VM's id: a new VM gets its connections anew. */
    vmId: string;
    nodeName: string;
    registries: RegistryConnection[];
    /** `<IP> <hostname>` lines for /etc/hosts. */
    hostsLines: string[];
    /** The kubelet's credentials file (a Docker config.json; secret), when a registry has a login. */
    credentials?: string;
}

interface RegistryConnectionsState {
    [key: string]: unknown;
    /** The registry directories found written, sorted. */
    connected?: string[];
}

const SERVER_RE = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;
const HOSTS_LINE_RE = /^[0-9A-Fa-f:.]+ [A-Za-z0-9.-]+$/;

/** Each registry's `auth` (base64 of user:password) in the kubelet's credentials file, by `host[:port]`. */
function authsOf(credentials: string | undefined): [string, string][] {
    if (!credentials) return [];
    const auths = (JSON.parse(credentials) as { auths?: Record<string, { auth?: string }> }).auths ?? {};
    return Object.entries(auths).flatMap(([server, a]) => (a.auth ? [[server, a.auth] as [string, string]] : []));
}

/** Each login's `auth` value and password, for redaction besides the encoded file that carries them. */
function loginsOf(credentials: string | undefined): string[] {
    return authsOf(credentials).flatMap(([, auth]) => [auth, Buffer.from(auth, "base64").toString("utf8").replace(/^[^:]*:/, "")]);
}

/** containerd's own logins, `host[:port] auth` lines, from the kubelet's credentials (containerdLogins.sh says why both). */
function containerdLogins(credentials: string | undefined): string {
    return authsOf(credentials)
        .map(([server, auth]) => `${server} ${auth}`)
        .join("\n");
}

async function apply(s: SshSession, i: RegistryConnectionsInputs): Promise<RegistryConnectionsState> {
    const files = i.registries.flatMap((r) => [r.server, r.hostsToml, r.caCertificate]);
    const credentials = i.credentials ? Buffer.from(i.credentials).toString("base64") : "";
    await s.runScript(SCRIPT, ["apply", i.hostsLines.join("\n"), i.registries.length, ...files], {
        sudo: true,
        env: { KUBELET_CREDENTIALS: credentials, CONTAINERD_LOGINS: containerdLogins(i.credentials) },
        redact: loginsOf(i.credentials),
    });
    return { connected: i.registries.map((r) => r.server).sort() };
}

export const registryConnectionsStep: StepDefinition<RegistryConnectionsInputs, RegistryConnectionsState> = {
    kind: "RegistryConnections",
    // 2: containerd's own registry logins, which a delete takes out too.
    version: "2",
    outputs: ["connected"],
    replaceOn: ["vmId"],
    // A replacement on the same VM (a new login) must not have the old copy's delete remove the new copy's files.
    deleteBeforeReplace: true,
    deleteSucceedsWhenUnreachable: true,
    validate(i) {
        const failures = [];
        if (typeof i.nodeName !== "string" || i.nodeName === "") failures.push({ property: "nodeName", reason: "must name the node" });
        const servers = (i.registries ?? []).map((r) => r?.server);
        if (!Array.isArray(i.registries) || servers.some((s) => typeof s !== "string" || !SERVER_RE.test(s) || /^\.+(:|$)/.test(s)) || new Set(servers).size !== servers.length) {
            failures.push({ property: "registries", reason: "must list each registry once by host[:port], with its hosts.toml and CA text" });
        }
        if (!Array.isArray(i.hostsLines) || i.hostsLines.some((l) => typeof l !== "string" || !HOSTS_LINE_RE.test(l))) {
            failures.push({ property: "hostsLines", reason: "must be '<IP> <hostname>' lines" });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:${i.nodeName}:registry-connections`,
    create: (s, i) => apply(s, i),
    update: (s, _olds, news) => apply(s, news),
    async delete() {
        // deleteAcross does the work.
    },
    // A VM that is gone, or a new VM at its address, has no connections of this step's left to take out.
    deleteAcross: (hosts, outs) =>
        onSameMachine(hosts, outs, { label: `RegistryConnections ${outs.nodeName}`, what: "node", skipped: "nothing to remove" }, (s) =>
            s.runScript(SCRIPT, ["remove"], { sudo: true }),
        ),
    async read(s, outs) {
        const found = parseReport((await s.runScript(SCRIPT, ["report"], { sudo: true, quiet: true })).stdout);
        const connected = (found.registries ?? "").split("|").filter(Boolean).sort();
        return {
            connected,
            hostsLines: (found.hosts ?? "").split("|").filter(Boolean),
            // The file's content is not read back (it holds the logins): only whether it is there.
            credentials: found.credentials === "present" ? outs.credentials : undefined,
        };
    },
    drifted: (outs) => JSON.stringify(outs.connected ?? []) !== JSON.stringify(outs.registries.map((r) => r.server).sort()),
};

export const registryConnectionsProvider = new StepProvider(registryConnectionsStep);

export interface RegistryConnectionsArgs {
    /** How to log into the node. */
    connection: pulumi.Input<SshTarget>;
    /** The node's VM id, through the step before it in the node's chain. */
    vmId: pulumi.Input<string>;
    /** Kubernetes node name. */
    nodeName: pulumi.Input<string>;
    /** Each registry's files. */
    registries: pulumi.Input<RegistryConnection[]>;
    /** /etc/hosts lines of the registries that give one. */
    hostsLines: pulumi.Input<string[]>;
    /** The kubelet's credentials (registryPlan.ts kubeletCredentials), when any registry has a login. */
    credentials?: pulumi.Input<string>;
}

// The logins stay out of the digest: their change shows as the credentials input's.
const registryConnectionsPlan: StepPlan<RegistryConnectionsArgs> = (a, node) => [
    { when: ["create", "update"], action: `write each private registry's containerd hosts.toml and CA, its /etc/hosts line and the kubelet's logins on ${node}`, script: SCRIPT, rendered: { registries: a.registries, hostsLines: a.hostsLines } },
    { when: ["delete"], action: `remove the registry connections from ${node}, when it is still the same machine`, script: SCRIPT, rendered: ["remove"] },
];

export class RegistryConnections extends StepResource {
    declare readonly vmId: pulumi.Output<string>;
    declare readonly connected: pulumi.Output<string[]>;

    constructor(name: string, args: RegistryConnectionsArgs, opts?: pulumi.CustomResourceOptions) {
        super(registryConnectionsProvider, registryConnectionsStep, registryConnectionsPlan, name, args, opts, { inputs: ["credentials"] });
    }
}
