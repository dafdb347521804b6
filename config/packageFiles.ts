/**
 * Files of a VNF package named by the configuration: found under `packageDir` (never outside it), read as
 * untrusted (regular files only, each kind up to its limit: untrustedFile.ts), and checked for what they must be
 * (a PersistentVolume manifest, a PEM certificate or key, a gzip release, an image tar).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { MIB, ReadLimit, readRegularFile } from "./untrustedFile";

/** Where a problem of a file is reported, by its field path. */
interface ProblemSink {
    fail(path: string, message: string): void;
}

/**
 * Largest manifest or certificate read from a VNF package. A PersistentVolume manifest or a CA bundle is a
 * few KiB; 1 MiB is also the most a Kubernetes ConfigMap or Secret holds, and below the ~1.5 MiB etcd takes
 * for any one object. Anything larger is not such a file, and is refused without being read.
 */
export const PACKAGE_TEXT_FILE_LIMIT = MIB;

/** A kind of package file: how much of it is read, and the check of what was read. */
export interface PackageFileKind {
    read: ReadLimit;
    check: (text: string) => string | undefined;
}

export const PV_MANIFEST: PackageFileKind = { read: { whole: PACKAGE_TEXT_FILE_LIMIT }, check: checkPersistentVolumeManifest };
/** A CNF's manifest: its documents are checked when the objects are planned (cnfManifests.ts). */
export const KUBERNETES_MANIFEST: PackageFileKind = { read: { whole: PACKAGE_TEXT_FILE_LIMIT }, check: () => undefined };
export const CA_CERTIFICATE: PackageFileKind = { read: { whole: PACKAGE_TEXT_FILE_LIMIT }, check: checkPemCertificate };
export const PRIVATE_KEY: PackageFileKind = { read: { whole: PACKAGE_TEXT_FILE_LIMIT }, check: checkPemPrivateKey };
/** A kubespray release archive: a gzip stream (RFC 1952's magic bytes); only its head is read. */
export const KUBESPRAY_RELEASE: PackageFileKind = { read: { head: 2 }, check: (head) => (head === "\x1f\x8b" ? undefined : "is not a gzip archive (kubespray-<version>.tar.gz)") };
/** An image archive runs to gigabytes: only its first tar header (512 bytes) is read here. */
export const IMAGE_ARCHIVE: PackageFileKind = { read: { head: 512 }, check: checkImageTar };

/** Resolves files of the VNF package and checks them when the package directory is known. */
export class PackageFiles {
    private readonly root?: string;
    constructor(packageDir: string | undefined, baseDir: string, private readonly c: ProblemSink, private readonly required: boolean) {
        this.root = packageDir === undefined ? undefined : path.resolve(baseDir, packageDir);
        if (this.root !== undefined && !isDirectory(this.root)) {
            c.fail("packageDir", `${packageDir} is not a directory`);
            this.root = undefined;
        }
    }

    /** Returns the absolute path; reports a missing package dir, a missing file, one that is no fit to read, or bad content. */
    check(field: string, relative: string, kind: PackageFileKind): string {
        return this.read(field, relative, kind).path;
    }

    /** As {@link check}, with the text read when the file passed (a whole-file kind only). */
    read(field: string, relative: string, kind: PackageFileKind): { path: string; text?: string } {
        if (this.root === undefined) {
            if (this.required) this.c.fail(field, "refers to a package file: set `packageDir`");
            return { path: relative };
        }
        const full = path.join(this.root, relative);
        let real: string;
        try {
            real = fs.realpathSync(full);
        } catch {
            this.c.fail(field, `${relative} does not exist in the package directory`);
            return { path: full };
        }
        if (!real.startsWith(fs.realpathSync(this.root) + path.sep)) {
            this.c.fail(field, `${relative} leads outside the package directory`);
            return { path: full };
        }
        const read = readRegularFile(real, kind.read);
        if ("problem" in read) {
            this.c.fail(field, `${relative} ${read.problem}`);
            return { path: real };
        }
        const problem = kind.check(read.bytes.toString("latin1"));
        if (problem) {
            this.c.fail(field, `${relative}: ${problem}`);
            return { path: real };
        }
        return { path: real, text: "whole" in kind.read ? read.bytes.toString("utf8") : undefined };
    }
}

function isDirectory(p: string): boolean {
    try {
        return fs.statSync(p).isDirectory();
    } catch {
        return false;
    }
}

export function checkPersistentVolumeManifest(text: string): string | undefined {
    let doc: unknown;
    try {
        doc = YAML.parse(text);
    } catch (e) {
        return `not valid YAML (${(e as Error).message.split("\n")[0]})`;
    }
    const d = doc as { kind?: unknown; metadata?: { name?: unknown }; spec?: { nfs?: { server?: unknown; path?: unknown } } } | null;
    if (!d || d.kind !== "PersistentVolume") return "not a PersistentVolume manifest (kind must be PersistentVolume)";
    if (typeof d.metadata?.name !== "string") return "has no metadata.name";
    if (typeof d.spec?.nfs?.path !== "string") return "has no spec.nfs.path (only NFS PersistentVolumes are served by the storage server)";
    return undefined;
}

const PEM_BEGIN = "-----BEGIN CERTIFICATE-----";
const PEM_END = "-----END CERTIFICATE-----";

export function checkPemCertificate(text: string): string | undefined {
    // Not /BEGIN[\s\S]+END/: on a 1 MiB file of BEGIN lines that regular expression runs for most of a minute.
    const begin = text.indexOf(PEM_BEGIN);
    const found = begin >= 0 && text.indexOf(PEM_END, begin + PEM_BEGIN.length + 1) >= 0;
    return found ? undefined : "not a PEM certificate";
}

function checkPemPrivateKey(text: string): string | undefined {
    const begin = /-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/.exec(text.slice(0, 4096));
    if (!begin) return "not a PEM private key";
    if (begin[0].includes("ENCRYPTED")) return "is an encrypted private key: the registry reads the key without a passphrase";
    return text.includes("PRIVATE KEY-----", begin.index + begin[0].length) ? undefined : "not a PEM private key (no END line)";
}

function checkImageTar(text: string): string | undefined {
    // A `docker save` archive is a tar: "ustar" at offset 257 of the first header.
    return text.slice(257, 262) === "ustar" ? undefined : "not a tar archive (expected a `docker save` or OCI image tar)";
}

