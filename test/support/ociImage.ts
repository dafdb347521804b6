/**
 * Small, valid container image archives for tests, written with Node alone (a ustar writer below, node:zlib,
 * node:crypto): one layer holding the given files, a config for linux/amd64, a manifest.
 *
 *   ociArchive(file, { files })              an OCI image layout in a tar (skopeo's and containerd's
 *                                            `oci-archive:`): oci-layout, index.json, blobs/sha256/...
 *   dockerArchive(file, { repoTag, files })  `docker save`'s format (`docker-archive:`, `docker load`,
 *                                            `ctr image import`): manifest.json, the config, LAYER/layer.tar
 *
 * Formats: the OCI Image Layout, Manifest and Config specifications (opencontainers/image-spec v1.0.2:
 * image-layout.md, manifest.md, config.md, media-types.md); docker save's manifest.json as read by
 * containers/image's docker/internal/tarfile (ManifestItem: Config, RepoTags, Layers) and written by moby's
 * image/tarexport/save.go. The tar entries are POSIX ustar (pax's "ustar Interchange Format", POSIX.1-2001).
 *
 * A file is 0644 unless given as { content, mode } (an executable: 0o755).
 *
 * The archives are reproducible: the same files and options give the same bytes, so the same digests.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import { gzipSync } from "node:zlib";

/** A file of the image with a mode of its own (permission bits, e.g. 0o755 for an executable). */
export interface ImageFile {
    content: string | Buffer;
    /** Permission bits; 0o644 by default. */
    mode?: number;
}

/** The image's files: path inside the image (relative, or absolute from /) -> content (mode 0644), or an ImageFile. */
export type ImageFiles = Record<string, string | Buffer | ImageFile>;

export interface ImageOptions {
    files: ImageFiles;
    /** The image config's `config.Entrypoint` (none by default). */
    entrypoint?: string[];
    /** The image config's `config.Cmd` (none by default). */
    cmd?: string[];
    /** Empty directories of the image (a file's folders are there anyway), e.g. a program's log folder. */
    directories?: string[];
    /** The image's `created` and every file's mtime; 1970-01-01T00:00:00Z by default. */
    created?: Date;
}

export interface OciArchiveOptions extends ImageOptions {
    /** gzip the layer (application/vnd.oci.image.layer.v1.tar+gzip, the default) or not (…tar). */
    gzip?: boolean;
    /** The manifest's `org.opencontainers.image.ref.name` in index.json (`oci-archive:FILE:REF`); none by default. */
    refName?: string;
}

export interface DockerArchiveOptions extends ImageOptions {
    /** The image's name and tag, e.g. `demo:1` or `registry.example:5000/team/demo:1`. */
    repoTag: string;
}

/** Digests of what was written ("sha256:HEX"). */
export interface ImageArchive {
    file: string;
    /** The config blob's digest: the image ID, kept by every copy that does not rewrite the config. */
    configDigest: string;
    /** The layer's uncompressed digest (the config's rootfs.diff_ids[0]). */
    diffId: string;
    /** The layer blob as stored (gzip or plain). */
    layerDigest: string;
    /** The manifest's digest (OCI archives only: docker save's format has no manifest blob). */
    manifestDigest?: string;
}

const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
const OCI_CONFIG = "application/vnd.oci.image.config.v1+json";
const OCI_LAYER = "application/vnd.oci.image.layer.v1.tar";

/** Writes an OCI image layout archive to `file`. */
export function ociArchive(file: string, options: OciArchiveOptions): ImageArchive {
    const layer = layerTar(options);
    const stored = options.gzip === false ? layer : gzipSync(layer, { level: 9 });
    const diffId = sha256(layer);
    const layerDigest = sha256(stored);
    const config = Buffer.from(JSON.stringify(imageConfig(options, diffId)));
    const configDigest = sha256(config);
    const manifest = Buffer.from(
        JSON.stringify({
            schemaVersion: 2,
            mediaType: OCI_MANIFEST,
            config: { mediaType: OCI_CONFIG, digest: configDigest, size: config.length },
            layers: [{ mediaType: options.gzip === false ? OCI_LAYER : `${OCI_LAYER}+gzip`, digest: layerDigest, size: stored.length }],
        }),
    );
    const manifestDigest = sha256(manifest);
    const index = {
        schemaVersion: 2,
        mediaType: OCI_INDEX,
        manifests: [
            {
                mediaType: OCI_MANIFEST,
                digest: manifestDigest,
                size: manifest.length,
                ...(options.refName ? { annotations: { "org.opencontainers.image.ref.name": options.refName } } : {}),
            },
        ],
    };
    const mtime = seconds(options.created);
    const blob = (digest: string) => `blobs/sha256/${digest.slice("sha256:".length)}`;
    const tar = new TarWriter(mtime);
    tar.file("oci-layout", JSON.stringify({ imageLayoutVersion: "1.0.0" }));
    tar.file("index.json", JSON.stringify(index));
    tar.dir("blobs/");
    tar.dir("blobs/sha256/");
    tar.file(blob(configDigest), config);
    tar.file(blob(layerDigest), stored);
    tar.file(blob(manifestDigest), manifest);
    fs.writeFileSync(file, tar.end());
    return { file, configDigest, diffId, layerDigest, manifestDigest };
}

/** Writes a `docker save` archive to `file` (uncompressed layer, as docker save writes it). */
export function dockerArchive(file: string, options: DockerArchiveOptions): ImageArchive {
    // NAME:TAG, the tag after the last "/" (a registry's port is not a tag); docker's reference grammar.
    const tag = options.repoTag.slice(options.repoTag.lastIndexOf("/") + 1);
    if (/\s|@/.test(options.repoTag) || !/^[^:]+:[\w][\w.-]{0,127}$/.test(tag)) {
        throw new Error(`repoTag must be NAME:TAG, got ${JSON.stringify(options.repoTag)}`);
    }
    const layer = layerTar(options);
    const diffId = sha256(layer);
    const config = Buffer.from(JSON.stringify(imageConfig(options, diffId)));
    const configDigest = sha256(config);
    const hex = (digest: string) => digest.slice("sha256:".length);
    // moby's save.go names the config ID.json and each layer V1ID/layer.tar; any unique names do, as the
    // reader follows manifest.json.
    const configName = `${hex(configDigest)}.json`;
    const layerName = `${hex(diffId)}/layer.tar`;
    const tar = new TarWriter(seconds(options.created));
    tar.dir(`${hex(diffId)}/`);
    tar.file(layerName, layer);
    tar.file(configName, config);
    tar.file("manifest.json", JSON.stringify([{ Config: configName, RepoTags: [options.repoTag], Layers: [layerName] }]));
    fs.writeFileSync(file, tar.end());
    return { file, configDigest, diffId, layerDigest: diffId };
}

function imageConfig(options: ImageOptions, diffId: string): object {
    const created = (options.created ?? new Date(0)).toISOString().replace(/\.000Z$/, "Z");
    return {
        created,
        architecture: "amd64",
        os: "linux",
        config: {
            Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
            ...(options.entrypoint ? { Entrypoint: options.entrypoint } : {}),
            ...(options.cmd ? { Cmd: options.cmd } : {}),
        },
        rootfs: { type: "layers", diff_ids: [diffId] },
        history: [{ created, created_by: "k8s-vnf test/support/ociImage.ts" }],
    };
}

/** The layer: every file with its parent directories (root-owned, 0755, files 0644 or their own mode), sorted by path. */
function layerTar(options: ImageOptions): Buffer {
    const entries = Object.entries(options.files).map(([name, content]) => [layerPath(name), content] as const);
    if (entries.length === 0) throw new Error("an image needs at least one file");
    const dirs = new Set<string>();
    for (const name of [...entries.map(([name]) => name), ...(options.directories ?? []).map((d) => `${layerPath(d)}/`)]) {
        const parts = name.split("/");
        for (let i = 1; i < parts.length; i++) dirs.add(`${parts.slice(0, i).join("/")}/`);
    }
    for (const [name] of entries) if (dirs.has(`${name}/`)) throw new Error(`${name} is both a file and a directory of the image`);
    const tar = new TarWriter(seconds(options.created));
    const all = [...[...dirs].map((d) => [d, undefined] as const), ...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (const [name, content] of all) {
        if (content === undefined) tar.dir(name);
        else if (typeof content === "string" || Buffer.isBuffer(content)) tar.file(name, content);
        else tar.file(name, content.content, content.mode);
    }
    return tar.end();
}

function layerPath(name: string): string {
    const relative = name.replace(/^\/+/, "");
    const parts = relative.split("/");
    if (!relative || parts.some((p) => p === "" || p === "." || p === "..")) throw new Error(`invalid path in image: ${JSON.stringify(name)}`);
    return relative;
}

function sha256(data: Buffer): string {
    return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

function seconds(date: Date | undefined): number {
    return Math.floor((date ?? new Date(0)).getTime() / 1000);
}

/**
 * A minimal POSIX ustar writer: regular files and directories, owner root, fixed mtime. Names longer than the
 * 100-byte field are split into the 155-byte prefix and the name at a "/", as ustar allows; longer ones are
 * refused (no pax headers).
 */
class TarWriter {
    private readonly chunks: Buffer[] = [];
    constructor(private readonly mtime: number) {}

    dir(name: string): void {
        this.entry(name.endsWith("/") ? name : `${name}/`, 0o755, "5", Buffer.alloc(0));
    }

    file(name: string, content: string | Buffer, mode = 0o644): void {
        if (!Number.isInteger(mode) || mode < 0 || mode > 0o7777) throw new Error(`invalid mode for ${name}: ${mode}`);
        this.entry(name, mode, "0", Buffer.isBuffer(content) ? content : Buffer.from(content));
    }

    /** The archive: the entries, then two zero blocks (the end-of-archive marker). */
    end(): Buffer {
        return Buffer.concat([...this.chunks, Buffer.alloc(1024)]);
    }

    private entry(name: string, mode: number, type: "0" | "5", data: Buffer): void {
        const header = Buffer.alloc(512);
        const [prefix, base] = splitName(name);
        header.write(base, 0, 100, "utf8");
        octal(header, 100, 8, mode);
        octal(header, 108, 8, 0);
        octal(header, 116, 8, 0);
        octal(header, 124, 12, data.length);
        octal(header, 136, 12, this.mtime);
        header.fill(" ", 148, 156);
        header.write(type, 156, 1, "ascii");
        header.write("ustar\0", 257, 6, "ascii");
        header.write("00", 263, 2, "ascii");
        header.write("root", 265, 32, "ascii");
        header.write("root", 297, 32, "ascii");
        header.write(prefix, 345, 155, "utf8");
        let sum = 0;
        for (const byte of header) sum += byte;
        // The checksum: six octal digits, NUL, space (the field counted as spaces while summing).
        header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "ascii");
        this.chunks.push(header, data);
        const pad = (512 - (data.length % 512)) % 512;
        if (pad) this.chunks.push(Buffer.alloc(pad));
    }
}

function splitName(name: string): [string, string] {
    if (Buffer.byteLength(name) <= 100) return ["", name];
    // The split must fall on a "/" with at most 155 bytes before it and at most 100 after.
    for (let i = name.length - 1; i > 0; i--) {
        if (name[i] !== "/" || i === name.length - 1) continue;
        const prefix = name.slice(0, i);
        const base = name.slice(i + 1);
        if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(base) <= 100) return [prefix, base];
    }
    throw new Error(`path too long for a ustar header: ${name}`);
}

/** A numeric field: zero-padded octal digits and a terminating NUL. */
function octal(header: Buffer, offset: number, length: number, value: number): void {
    const digits = value.toString(8);
    if (digits.length > length - 1) throw new Error(`value ${value} does not fit a ${length}-byte tar field`);
    header.write(`${digits.padStart(length - 1, "0")}\0`, offset, length, "ascii");
}
