/**
 * AnsibleServer: the kubespray release and a fitting ansible-playbook on the Ansible server
 * (ansibleServer.sh). The release comes from the VNF package (uploaded) or from GitHub; a different release
 * or archive updates the step, which installs it in place of the old one.
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { loadNodeScript, parseReport } from "../kubernetes/scripts";
import { StepPlan } from "../remoteActions";

const SCRIPT = loadNodeScript("ansibleServer.sh", __dirname);

/** A release archive on the machine running Pulumi. */
export interface ReleaseArchive {
    file: string;
    sha256: string;
}

interface AnsibleServerInputs {
    [key: string]: unknown;
    /** The server's VM, when the stack made it: a new VM gets everything again. */
    vmId?: string;
    /** Directory the release is unpacked in. */
    kubesprayRoot: string;
    /** Release tag, `v2.31.0`. */
    version: string;
    /** The ansible-core versions the release accepts: min ≤ core < maxExclusive. */
    ansibleCore: { min: string; maxExclusive: string };
    /** The release archive from the package; absent: downloaded from GitHub. */
    releaseArchive?: ReleaseArchive;
    /** Proxy for the download and pip (secret: may carry credentials). */
    proxy?: { httpProxy?: string; httpsProxy?: string; noProxy?: string };
}

interface AnsibleServerState {
    [key: string]: unknown;
    /** The ansible-playbook the playbook steps run. */
    ansiblePlaybook?: string;
    /** Its ansible-core version. */
    ansibleCoreVersion?: string;
    /** The release found in kubesprayRoot. */
    installedVersion?: string;
}

const VERSION_RE = /^v\d+\.\d+\.\d+$/;
const CORE_RE = /^\d+\.\d+(\.\d+)?$/;
const PATH_RE = /^\/[A-Za-z0-9._/+@-]+$/;

function proxyEnv(proxy: AnsibleServerInputs["proxy"]): Record<string, string> {
    const env: Record<string, string> = {};
    if (proxy?.httpProxy) env.http_proxy = env.HTTP_PROXY = proxy.httpProxy;
    if (proxy?.httpsProxy) env.https_proxy = env.HTTPS_PROXY = proxy.httpsProxy;
    if (proxy?.noProxy) env.no_proxy = env.NO_PROXY = proxy.noProxy;
    return env;
}

async function install(s: SshSession, i: AnsibleServerInputs, installedSha?: string): Promise<AnsibleServerState> {
    const archive = i.releaseArchive;
    // The archive travels only when the server lacks it (the script keeps the SHA-256 of what it unpacked).
    const upload = archive && archive.sha256 !== installedSha ? await s.uploadFile(archive.file) : "";
    const found = parseReport(
        (
            await s.runScript(SCRIPT, ["install", i.kubesprayRoot, i.version, i.ansibleCore.min, i.ansibleCore.maxExclusive, upload, archive?.sha256 ?? "", s.target.username], {
                sudo: true,
                env: proxyEnv(i.proxy),
            })
        ).stdout,
    );
    return { ansiblePlaybook: found.playbook, ansibleCoreVersion: found.core, installedVersion: found.release };
}

export const ansibleServerStep: StepDefinition<AnsibleServerInputs, AnsibleServerState> = {
    kind: "AnsibleServer",
    version: "1",
    outputs: ["ansiblePlaybook", "ansibleCoreVersion", "installedVersion"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: false,
    deleteSucceedsWhenUnreachable: true,
    policy: { commandTimeoutMs: 30 * 60_000 },
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (typeof i.kubesprayRoot !== "string" || !PATH_RE.test(i.kubesprayRoot) || i.kubesprayRoot.split("/").includes("..")) failures.push({ property: "kubesprayRoot", reason: "must be an absolute path" });
        if (typeof i.version !== "string" || !VERSION_RE.test(i.version)) failures.push({ property: "version", reason: "must be a release tag such as v2.31.0" });
        if (!CORE_RE.test(i.ansibleCore?.min ?? "") || !CORE_RE.test(i.ansibleCore?.maxExclusive ?? "")) failures.push({ property: "ansibleCore", reason: "must be {min, maxExclusive} ansible-core versions" });
        if (i.releaseArchive !== undefined && (typeof i.releaseArchive?.file !== "string" || !/^[0-9a-f]{64}$/.test(i.releaseArchive.sha256 ?? ""))) {
            failures.push({ property: "releaseArchive", reason: "must be {file, sha256} of the release archive on this machine" });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:${i.kubesprayRoot}`,
    create: (s, i) => install(s, i),
    update: (s, olds, news) => install(s, news, olds.kubesprayRoot === news.kubesprayRoot ? olds.releaseArchive?.sha256 : undefined),
    async delete() {
        // The release stays on the server: it may be somebody's own, and a VM the stack made goes with it.
    },
    async read(s, outs) {
        const found = parseReport((await s.runScript(SCRIPT, ["report", outs.kubesprayRoot], { sudo: true, quiet: true })).stdout);
        return { installedVersion: found.release ?? "", ansiblePlaybook: found.playbook ?? "", ansibleCoreVersion: found.core ?? "" };
    },
    drifted: (outs) => outs.installedVersion !== outs.version,
};

export const ansibleServerProvider = new StepProvider(ansibleServerStep);

export interface AnsibleServerArgs {
    /** How to log into the Ansible server. */
    connection: pulumi.Input<SshTarget>;
    /** The server's VM when the stack creates it. */
    vmId?: pulumi.Input<string>;
    /** Directory the release goes to. */
    kubesprayRoot: pulumi.Input<string>;
    /** Release tag. */
    version: pulumi.Input<string>;
    /** ansible-core versions the release accepts. */
    ansibleCore: pulumi.Input<{ min: string; maxExclusive: string }>;
    /** The release archive from the package. */
    releaseArchive?: pulumi.Input<ReleaseArchive>;
    /** Proxy for downloads (secret). */
    proxy?: pulumi.Input<{ httpProxy?: string; httpsProxy?: string; noProxy?: string }>;
}

// The proxy (its URLs may hold a password) stays out of the digest: its change shows as the proxy input's.
const ansibleServerPlan: StepPlan<AnsibleServerArgs> = (a, subject) => [
    {
        when: ["create", "update"],
        action: `install the kubespray release on the Ansible server (${subject}): uploaded from the package when new, else from GitHub; an ansible-core it accepts, or its requirements in a venv`,
        script: SCRIPT,
        rendered: { kubesprayRoot: a.kubesprayRoot, version: a.version, ansibleCore: a.ansibleCore, releaseArchive: a.releaseArchive },
    },
];

export class AnsibleServer extends StepResource {
    declare readonly ansiblePlaybook: pulumi.Output<string>;
    declare readonly kubesprayRoot: pulumi.Output<string>;
    declare readonly installedVersion: pulumi.Output<string>;

    constructor(name: string, args: AnsibleServerArgs, opts?: pulumi.CustomResourceOptions) {
        super(ansibleServerProvider, ansibleServerStep, ansibleServerPlan, name, args, opts, { inputs: ["proxy"] });
    }
}
