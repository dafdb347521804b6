/**
 * NfsServer: the storage server's volumes mounted and exported over NFSv4 (see nfsServer.sh). Replaced with
 * its VM (delete first: one VM at a time has the volumes): the old VM stops serving and unmounts (when it
 * still answers), the new VM mounts the same filesystems, never formatting one that holds data, and serves
 * the same exports with the same fsids at the same address. Whether a heal may go on while PersistentVolumes
 * are in use is decided before, by StorageHealCheck.
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, onSameMachine, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { NodeProxy, proxyEnvironment } from "../kubernetes/nodePrep";
import { loadNodeScript, VOLUMES_LIBRARY } from "../kubernetes/scripts";
import { readVolumeReport, StorageVolume, validVolumes, volumeArgs } from "./volumes";
import { StepPlan } from "../remoteActions";

const SCRIPT = loadNodeScript("nfsServer.sh", __dirname, VOLUMES_LIBRARY);

interface NfsServerInputs {
    [key: string]: unknown;
    /** The VM's id: a new VM is a new server. */
    vmId: string;
    volumes: StorageVolume[];
    /** The whole /etc/exports.d file. */
    exportsFile: string;
    /** The directories it exports (created when missing). */
    exportDirs: string[];
    /** apt's proxy, for installing the server (secret: may hold a password). */
    proxy?: NodeProxy;
}

interface NfsServerState {
    [key: string]: unknown;
    /** Directories the server exports, as exportfs lists them. */
    served?: string[];
    serverRunning?: boolean;
}

const PATH_RE = /^\/[A-Za-z0-9._/+@-]*$/;

async function apply(s: SshSession, i: NfsServerInputs): Promise<NfsServerState> {
    await s.runScript(SCRIPT, ["apply", i.exportsFile, ...volumeArgs(i.volumes), ...i.exportDirs], { sudo: true, env: i.proxy ? proxyEnvironment(i.proxy) : {} });
    return { served: [...i.exportDirs].sort(), serverRunning: true };
}

export const nfsServerStep: StepDefinition<NfsServerInputs, NfsServerState> = {
    kind: "NfsServer",
    version: "1",
    outputs: ["served", "serverRunning"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: true,
    deleteSucceedsWhenUnreachable: true,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (!validVolumes(i.volumes) || i.volumes.length === 0) {
            failures.push({ property: "volumes", reason: "must list at least one {serial, mountTo}: a virtio serial (20 characters at most) and an absolute path other than /" });
        }
        if (typeof i.exportsFile !== "string" || i.exportsFile.includes("\0")) failures.push({ property: "exportsFile", reason: "must be the text of an exports file" });
        if (!Array.isArray(i.exportDirs) || i.exportDirs.length === 0 || i.exportDirs.some((d) => typeof d !== "string" || !PATH_RE.test(d) || d.split("/").includes(".."))) {
            failures.push({ property: "exportDirs", reason: "must list the exported directories as absolute paths" });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:nfs-server`,
    create: (s, i) => apply(s, i),
    update: (s, _olds, news) => apply(s, news),
    async delete() {
        // deleteAcross does the work.
    },
    // A VM that no longer answers, or another machine at its address, has nothing of this server to stop.
    deleteAcross: (hosts, outs) =>
        onSameMachine(hosts, outs, { label: `NfsServer ${outs.connection.host}`, what: "storage server", skipped: "nothing to stop" }, (s) =>
            s.runScript(SCRIPT, ["stop", ...volumeArgs(outs.volumes)], { sudo: true }),
        ),
    async read(s, outs) {
        const { mounted, report: found } = readVolumeReport((await s.runScript(SCRIPT, ["report", ...volumeArgs(outs.volumes)], { sudo: true })).stdout, outs.volumes);
        return {
            volumes: mounted,
            exportsFile: Buffer.from(found.exportsFile ?? "", "base64").toString("utf8"),
            served: (found.served ?? "").split("|").filter(Boolean).sort(),
            serverRunning: found.server === "running",
        };
    },
    drifted: (outs) => !outs.serverRunning || JSON.stringify(outs.served ?? []) !== JSON.stringify([...outs.exportDirs].sort()),
};

export const nfsServerProvider = new StepProvider(nfsServerStep);

export interface NfsServerArgs {
    /** How to log into the storage server. */
    connection: pulumi.Input<SshTarget>;
    /** The VM's id, through its volume attachments: a new VM is a new server. */
    vmId: pulumi.Input<string>;
    /** Each attached volume's virtio serial and mount point. */
    volumes: pulumi.Input<pulumi.Input<StorageVolume>[]>;
    /** The exports file (storagePlan.ts). */
    exportsFile: pulumi.Input<string>;
    /** The exported directories. */
    exportDirs: pulumi.Input<string>[];
    /** Proxy for apt. */
    proxy?: pulumi.Input<NodeProxy>;
}

// The proxy (its URLs may hold a password) stays out of the digest: its change shows as the proxy input's.
const nfsServerPlan: StepPlan<NfsServerArgs> = (a, subject) => [
    {
        when: ["create", "update"],
        action: `mount the storage server's volumes (each formatted only when empty) and export them over NFSv4 on ${subject}`,
        script: SCRIPT,
        rendered: { volumes: a.volumes, exportsFile: a.exportsFile, exportDirs: a.exportDirs },
    },
    { when: ["delete"], action: `stop serving NFS and unmount the volumes on ${subject}, when it is still the same machine`, script: SCRIPT, rendered: { volumes: a.volumes } },
];

export class NfsServer extends StepResource {
    declare readonly vmId: pulumi.Output<string>;
    declare readonly served: pulumi.Output<string[]>;

    constructor(name: string, args: NfsServerArgs, opts?: pulumi.CustomResourceOptions) {
        super(nfsServerProvider, nfsServerStep, nfsServerPlan, name, args, opts, { inputs: ["proxy"] });
    }
}
