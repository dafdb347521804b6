/**
 * StorageHealCheck: the gate the storage server's VM passes before it is replaced. The VM depends on this
 * step, so the engine updates it first. Given a new heal generation, or a change of what replaces the VM
 * (`serverIdentity`: image, zone, port, login), its update asks a control-plane node for the phases of the
 * PersistentVolumes registered on the storage server and refuses while one is Bound (Tacker's heal_start
 * check), unless `healWhileInUse`. A refusal fails the update before anything else changes. An update sees
 * the new inputs, so `healWhileInUse` set in the same update as the heal counts (a delete would see only the
 * old ones).
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, Hosts, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { StepPlan } from "../remoteActions";
import { ConnectError, SshTarget } from "../transport/ssh";
import { ControlPlaneRef, listsControlPlanes, onControlPlaneIfAny, persistentVolumePhases } from "../kubernetes/kubeadm";

interface StorageHealCheckInputs {
    [key: string]: unknown;
    /** The storage heal generation asked for. */
    healGeneration: number;
    /** A digest of the VM inputs whose change replaces the VM (secret: the login is part of it). */
    serverIdentity: string;
    /** Names of the PersistentVolumes registered on the storage server. */
    persistentVolumes: string[];
    /** Heal even while one of them is Bound. */
    healWhileInUse: boolean;
    /** Where to ask for their phases (secret: the masters' logins). */
    controlPlanes: ControlPlaneRef[];
}


const PV_NAME_RE = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** Why the heal stops here, or undefined when it may go on. */
async function inUseRefusal(hosts: Hosts, i: StorageHealCheckInputs): Promise<string | undefined> {
    if (i.healWhileInUse || i.persistentVolumes.length === 0) return undefined;
    let phases: Record<string, string> | undefined;
    try {
        phases = await onControlPlaneIfAny(hosts, i.controlPlanes, persistentVolumePhases);
    } catch (e) {
        if (!(e instanceof ConnectError)) throw e;
        return `no control-plane node could tell whether its PersistentVolumes are in use (${e.message})`;
    }
    // No control-plane node left: the cluster and its claims are gone.
    if (phases === undefined) return undefined;
    const bound = i.persistentVolumes.filter((name) => phases![name] === "Bound");
    return bound.length ? `PersistentVolume${bound.length > 1 ? "s" : ""} ${bound.join(", ")} ${bound.length > 1 ? "are" : "is"} Bound` : undefined;
}

export const storageHealCheckStep: StepDefinition<StorageHealCheckInputs> = {
    kind: "StorageHealCheck",
    version: "1",
    outputs: [],
    replaceOn: [],
    deleteBeforeReplace: false,
    deleteSucceedsWhenUnreachable: true,
    // kubectl runs on whichever master answers first; the connection (the first master's) only names the step.
    ownHost: false,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (!Number.isInteger(i.healGeneration) || (i.healGeneration as number) < 0) failures.push({ property: "healGeneration", reason: "must be a whole number ≥ 0" });
        if (typeof i.serverIdentity !== "string" || !/^[0-9a-f]{64}$/.test(i.serverIdentity)) failures.push({ property: "serverIdentity", reason: "must be a sha256 digest" });
        if (!Array.isArray(i.persistentVolumes) || i.persistentVolumes.some((n) => typeof n !== "string" || !PV_NAME_RE.test(n))) failures.push({ property: "persistentVolumes", reason: "must list PersistentVolume names" });
        if (typeof i.healWhileInUse !== "boolean") failures.push({ property: "healWhileInUse", reason: "must be true or false" });
        if (!listsControlPlanes(i.controlPlanes) || i.controlPlanes.length === 0) failures.push({ property: "controlPlanes", reason: "must list the masters as {name, connection}" });
        return failures;
    },
    id: (i) => `${i.connection.host}:storage-heal-check`,
    // A new storage server holds nothing yet: nothing to check.
    create: async () => ({}),
    async update(_s, olds, news, hosts) {
        if (news.healGeneration !== olds.healGeneration || news.serverIdentity !== olds.serverIdentity) {
            const refusal = await inUseRefusal(hosts, news);
            if (refusal) {
                throw new Error(
                    `the storage server is not replaced: ${refusal}, and its clients would lose their mounts while the new VM starts. ` +
                        "Nothing was changed. Release the claims first, or set storageServer.healWhileInUse: true to replace it anyway (the clients' I/O pauses and resumes, as across a server reboot).",
                );
            }
            console.log(`[StorageHealCheck] the storage server's VM may be replaced: ${news.healWhileInUse ? "healWhileInUse" : "no registered PersistentVolume is Bound"}`);
        }
        return {};
    },
    async delete() {
        // Nothing on any host.
    },
    read: async () => ({}),
};

export const storageHealCheckProvider = new StepProvider(storageHealCheckStep);

export interface StorageHealCheckArgs {
    /** The first master's login: names the step (it works through `controlPlanes`). */
    connection: pulumi.Input<SshTarget>;
    /** The storage heal generation (`heal.nodes.storage`). */
    healGeneration: number;
    /** Digest of the VM inputs whose change replaces it (storagePlan.ts serverIdentity). */
    serverIdentity: pulumi.Input<string>;
    /** PersistentVolumes registered on the storage server. */
    persistentVolumes: string[];
    /** Heal even while one of them is Bound. */
    healWhileInUse: boolean;
    /** The masters, to ask for the phases. */
    controlPlanes: pulumi.Input<pulumi.Input<ControlPlaneRef>[]>;
}

const storageHealCheckPlan: StepPlan<StorageHealCheckArgs> = (a) => [
    {
        when: ["update"],
        action: "check on a control-plane node that none of the storage server's PersistentVolumes is Bound before its VM is replaced (unless healWhileInUse)",
        // It also runs when what replaces the VM changes (`serverIdentity`, a secret digest left out here).
        rendered: { healGeneration: a.healGeneration },
        onChange: true,
    },
];

export class StorageHealCheck extends StepResource {
    constructor(name: string, args: StorageHealCheckArgs, opts?: pulumi.CustomResourceOptions) {
        super(storageHealCheckProvider, storageHealCheckStep, storageHealCheckPlan, name, args, opts, { inputs: ["controlPlanes", "serverIdentity"] });
    }
}
