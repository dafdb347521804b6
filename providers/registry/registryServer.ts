/**
 * RegistryServer: the registry VNF's registry (see registryServer.sh). Replaced with its VM (delete first:
 * one VM at a time has the volume): the old VM stops serving and unmounts when it still answers; the new VM
 * mounts the same filesystem, never formatting one that holds data, and serves the images already pushed at
 * the same address. Images of the package are pushed once: those the registry's storage already holds (a
 * heal, a second run) are not uploaded again.
 */
import * as pulumi from "@pulumi/pulumi";
import { Failure, onSameMachine, StepDefinition, StepProvider } from "../step";
import { StepResource } from "../stepResource";
import { SshSession, SshTarget } from "../transport/ssh";
import { NodeProxy, proxyEnvironment } from "../kubernetes/nodePrep";
import { loadNodeScript, VOLUMES_LIBRARY } from "../kubernetes/scripts";
import { readVolumeReport, StorageVolume, validVolumes, volumeArgs } from "../storage/volumes";
import { StepPlan } from "../remoteActions";

const SCRIPT = loadNodeScript("registryServer.sh", __dirname, VOLUMES_LIBRARY);

/** An image tar on the machine running Pulumi, and its content hash (a new tar is a new image). */
export interface LocalImage {
    file: string;
    sha256: string;
}

export interface PreloadImage extends LocalImage {
    format: "docker-archive" | "oci-archive";
    /** `repository:tag` in the registry. */
    image: string;
}

interface RegistryServerInputs {
    [key: string]: unknown;
    /** The VM's id: a new VM is a new registry (on the same volume). */
    vmId: string;
    volumes: StorageVolume[];
    /** The registry's config.yml (registryPlan.ts). */
    config: string;
    port: number;
    scheme: "http" | "https";
    /** PEM certificate for HTTPS. */
    certificate?: string;
    /** Its key (secret). */
    privateKey?: string;
    /** `user:password` lines for htpasswd (secret). */
    logins?: string;
    /** The registry image run on containerd; absent: the distribution's package. */
    registryImage?: LocalImage;
    preloadImages: PreloadImage[];
    /** apt's proxy (secret: may hold a password). */
    proxy?: NodeProxy;
}

interface RegistryServerState {
    [key: string]: unknown;
    /** What serves: `package`, `image` (containerd) or `none`. */
    running?: string;
    /** The preloaded images found in the registry's storage, sorted. */
    preloaded?: string[];
    /** SHA-256 of the registry image tar imported into containerd on this VM ("" when none). */
    imageLoaded?: string;
}

const PATH_RE = /^\/[A-Za-z0-9._/+@-]*$/;
const SHA_RE = /^[0-9a-f]{64}$/;
const IMAGE_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

function loginsEnv(i: RegistryServerInputs): Record<string, string> {
    return { REGISTRY_LOGINS: i.logins ? Buffer.from(i.logins).toString("base64") : "" };
}

/** Each password and key line, redacted from logs and errors besides the encoded values that carry them. */
function redacted(i: RegistryServerInputs): string[] {
    const passwords = (i.logins ?? "").split("\n").map((l) => l.slice(l.indexOf(":") + 1));
    const keyLines = (i.privateKey ?? "").split("\n").filter((l) => l.length >= 16 && !l.startsWith("-----"));
    return [...passwords, ...keyLines].filter(Boolean);
}

/** The images of `wanted` the registry's storage does not hold yet. */
async function missingImages(s: SshSession, wanted: PreloadImage[]): Promise<PreloadImage[]> {
    if (!wanted.length) return [];
    const out = (await s.runScript(SCRIPT, ["missing", ...wanted.flatMap((p) => [p.sha256, p.image])], { sudo: true, quiet: true })).stdout;
    const missing = new Set(out.split("\n").filter((l) => l.startsWith("missing=")).map((l) => l.slice("missing=".length)));
    return wanted.filter((p) => missing.has(p.sha256));
}

async function apply(s: SshSession, i: RegistryServerInputs, imageLoaded: string | undefined): Promise<RegistryServerState> {
    const env = { TLS_CERTIFICATE: i.certificate ?? "", TLS_PRIVATE_KEY: i.privateKey ?? "", ...loginsEnv(i), ...(i.proxy ? proxyEnvironment(i.proxy) : {}) };
    // A registry image this VM has imported already is not uploaded again.
    const image = i.registryImage;
    const runtime = image ? ["image", imageLoaded === image.sha256 ? "" : await s.uploadFile(image.file), image.sha256] : ["package"];
    await s.runScript(SCRIPT, ["apply", i.config, i.port, i.scheme, ...runtime, ...volumeArgs(i.volumes)], { sudo: true, env, redact: redacted(i) });
    for (const p of await missingImages(s, i.preloadImages)) {
        const remote = await s.uploadFile(p.file);
        await s.runScript(SCRIPT, ["preload", i.port, i.scheme, p.format, remote, p.image, p.sha256], { sudo: true, env: loginsEnv(i), redact: redacted(i) });
    }
    return { running: image ? "image" : "package", preloaded: i.preloadImages.map((p) => p.image).sort(), imageLoaded: image?.sha256 ?? imageLoaded ?? "" };
}

export const registryServerStep: StepDefinition<RegistryServerInputs, RegistryServerState> = {
    kind: "RegistryServer",
    version: "1",
    outputs: ["running", "preloaded", "imageLoaded"],
    replaceOn: ["vmId"],
    deleteBeforeReplace: true,
    deleteSucceedsWhenUnreachable: true,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (!validVolumes(i.volumes) || i.volumes.length !== 1) {
            failures.push({ property: "volumes", reason: "must be the one registry volume: {serial, mountTo}" });
        }
        if (typeof i.config !== "string" || !i.config.includes("rootdirectory:")) failures.push({ property: "config", reason: "must be the registry's config.yml" });
        if (!Number.isInteger(i.port) || i.port! < 1 || i.port! > 65535) failures.push({ property: "port", reason: "must be a port from 1 to 65535" });
        if (i.scheme !== "http" && i.scheme !== "https") failures.push({ property: "scheme", reason: "must be http or https" });
        if ((i.scheme === "http" || i.scheme === "https") && (i.scheme === "https") !== (typeof i.certificate === "string" && typeof i.privateKey === "string")) {
            failures.push({ property: "certificate", reason: "https needs a certificate and its private key; http has neither" });
        }
        if (i.logins !== undefined && (typeof i.logins !== "string" || i.logins.split("\n").some((l) => !/^[A-Za-z_][A-Za-z0-9._-]{0,31}:[^\n]+$/.test(l)))) {
            failures.push({ property: "logins", reason: "must be user:password lines" });
        }
        if (i.registryImage !== undefined && (!PATH_RE.test(i.registryImage?.file ?? "") || !SHA_RE.test(i.registryImage?.sha256 ?? ""))) {
            failures.push({ property: "registryImage", reason: "must be {file, sha256} of an image tar on this machine" });
        }
        const images = (i.preloadImages ?? []).map((p) => p?.image);
        if (
            !Array.isArray(i.preloadImages) ||
            i.preloadImages.some((p) => !PATH_RE.test(p?.file ?? "") || !SHA_RE.test(p?.sha256 ?? "") || !IMAGE_RE.test(p?.image ?? "") || !["docker-archive", "oci-archive"].includes(p?.format)) ||
            new Set(images).size !== images.length
        ) {
            failures.push({ property: "preloadImages", reason: "must list {file, sha256, format, image} with each repository:tag once" });
        }
        return failures;
    },
    id: (i) => `${i.connection.host}:registry`,
    create: (s, i) => apply(s, i, undefined),
    update: (s, olds, news) => apply(s, news, olds.imageLoaded),
    async delete() {
        // deleteAcross does the work.
    },
    // A VM that no longer answers, or another machine at its address, has nothing of this registry to stop.
    deleteAcross: (hosts, outs) =>
        onSameMachine(hosts, outs, { label: `RegistryServer ${outs.connection.host}`, what: "registry server", skipped: "nothing to stop" }, (s) =>
            s.runScript(SCRIPT, ["stop", ...volumeArgs(outs.volumes)], { sudo: true }),
        ),
    async read(s, outs) {
        const report = (await s.runScript(SCRIPT, ["report", outs.port, outs.scheme, ...volumeArgs(outs.volumes)], { sudo: true, quiet: true })).stdout;
        const { mounted, report: found } = readVolumeReport(report, outs.volumes);
        return {
            volumes: mounted,
            running: found.status === "200" || found.status === "401" ? found.running : "none",
            imageLoaded: found.image ?? "",
            preloaded: (found.preloaded ?? "").split("|").filter(Boolean).sort(),
        };
    },
    drifted: (outs) =>
        outs.running !== (outs.registryImage ? "image" : "package") ||
        (outs.registryImage !== undefined && outs.imageLoaded !== outs.registryImage.sha256) ||
        outs.preloadImages.some((p) => !(outs.preloaded ?? []).includes(p.image)),
};

export const registryServerProvider = new StepProvider(registryServerStep);

export interface RegistryServerArgs {
    /** How to log into the registry VM. */
    connection: pulumi.Input<SshTarget>;
    /** The VM's id, through the volume attachment: a new VM is a new registry. */
    vmId: pulumi.Input<string>;
    /** The volume's virtio serial and where it is mounted (the registry's storage). */
    volumes: pulumi.Input<pulumi.Input<StorageVolume>[]>;
    /** config.yml (registryPlan.ts registryConfig). */
    config: string;
    port: number;
    scheme: "http" | "https";
    certificate?: pulumi.Input<string>;
    privateKey?: pulumi.Input<string>;
    /** `user:password` lines. */
    logins?: pulumi.Input<string>;
    registryImage?: pulumi.Input<LocalImage>;
    preloadImages: pulumi.Input<pulumi.Input<PreloadImage>[]>;
    proxy?: pulumi.Input<NodeProxy>;
}

// Keys, logins and the proxy stay out of the digests: their change shows as those inputs'.
const registryServerPlan: StepPlan<RegistryServerArgs> = (a, subject) => [
    {
        when: ["create", "update"],
        action: `mount the registry's volume (formatted only when empty), write its config and TLS files, run the registry on ${subject}`,
        script: SCRIPT,
        rendered: { volumes: a.volumes, config: a.config, port: a.port, scheme: a.scheme, registryImage: a.registryImage },
    },
    { when: ["create", "update"], action: `push the package's images the registry does not hold yet (${subject})`, script: SCRIPT, rendered: { preloadImages: a.preloadImages } },
    { when: ["delete"], action: `stop the registry and unmount its volume on ${subject}, when it is still the same machine`, script: SCRIPT, rendered: { volumes: a.volumes } },
];

export class RegistryServer extends StepResource {
    declare readonly vmId: pulumi.Output<string>;
    declare readonly running: pulumi.Output<string>;
    declare readonly preloaded: pulumi.Output<string[]>;

    constructor(name: string, args: RegistryServerArgs, opts?: pulumi.CustomResourceOptions) {
        super(registryServerProvider, registryServerStep, registryServerPlan, name, args, opts, { inputs: ["privateKey", "logins", "proxy"] });
    }
}
