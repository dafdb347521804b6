/**
 * Which kind of image tarball a package file is, told from its tar headers alone (an archive runs to
 * gigabytes; only a 512-byte header per entry is read, the contents are skipped): a `docker save` archive
 * has `manifest.json` at its top, an OCI image layout has `oci-layout` and `index.json` (image-spec
 * image-layout.md). skopeo reads the first as `docker-archive:`, the second as `oci-archive:`; containerd's
 * `ctr images import` reads both.
 */
import * as fs from "node:fs";

export type ImageArchiveFormat = "docker-archive" | "oci-archive";

const BLOCK = 512;
/** More entries than any image archive has (one per layer, config and manifest, and their folders). */
const MAX_ENTRIES = 100_000;

/** The format, or why the file is neither. */
export function imageArchiveFormat(file: string): { format: ImageArchiveFormat } | { problem: string } {
    const names = new Set<string>();
    const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    try {
        const size = fs.fstatSync(fd).size;
        const header = Buffer.alloc(BLOCK);
        let offset = 0;
        let longName: string | undefined;
        for (let entries = 0; offset + BLOCK <= size && entries < MAX_ENTRIES; entries++) {
            if (fs.readSync(fd, header, 0, BLOCK, offset) < BLOCK || header.every((b) => b === 0)) break;
            if (header.toString("latin1", 257, 262) !== "ustar") return { problem: `is not a tar archive (no tar header at byte ${offset})` };
            const length = parseOctal(header.subarray(124, 136));
            if (length === undefined) return { problem: `has a damaged tar header at byte ${offset}` };
            const type = String.fromCharCode(header[156]);
            if (type === "L") {
                // GNU long name: the name is the entry's content, and applies to the next header.
                const data = Buffer.alloc(Math.min(length, 4096));
                fs.readSync(fd, data, 0, data.length, offset + BLOCK);
                longName = data.toString("utf8").replace(/\0.*$/s, "");
            } else if (type !== "x" && type !== "g") {
                const prefix = header.toString("utf8", 345, 500).replace(/\0.*$/s, "");
                const name = longName ?? (prefix ? `${prefix}/` : "") + header.toString("utf8", 0, 100).replace(/\0.*$/s, "");
                names.add(name.replace(/^\.\//, ""));
                longName = undefined;
            }
            offset += BLOCK + Math.ceil(length / BLOCK) * BLOCK;
        }
    } finally {
        fs.closeSync(fd);
    }
    if (names.has("oci-layout") && names.has("index.json")) return { format: "oci-archive" };
    if (names.has("manifest.json")) return { format: "docker-archive" };
    return { problem: "is neither a `docker save` archive (manifest.json) nor an OCI image layout (oci-layout and index.json)" };
}

function parseOctal(field: Buffer): number | undefined {
    const text = field.toString("latin1").replace(/[\0 ]+$/, "").trim();
    return /^[0-7]+$/.test(text) ? parseInt(text, 8) : text === "" ? 0 : undefined;
}
