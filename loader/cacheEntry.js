// One entry of the caches under node_modules/.cache/k8s-vnf (loader/typescript.js, providers/providerCodeCache.ts):
// written whole (fsynced, then renamed into place) with a digest of its text on a last line of its own, so an entry
// cut short or edited is not used; the older entries of the same thing are removed. Neither reading nor writing
// ever throws: a cache that cannot be used is only slower.
"use strict";
const { createHash, randomUUID } = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");

/** The folder of every cache of the project (each its own subfolder). */
const CACHE_ROOT = path.join(__dirname, "..", "node_modules", ".cache", "k8s-vnf");
const TRAILER = "\n//k8s-vnf-cache sha256=";
const digest = (text) => createHash("sha256").update(text).digest("hex");

/** The entry's text, or undefined when there is none or it is not whole. */
function readEntry(file) {
    let content;
    try {
        content = fs.readFileSync(file, "utf8");
    } catch {
        return undefined;
    }
    const at = content.lastIndexOf(TRAILER);
    if (at < 0) return undefined;
    const text = content.slice(0, at);
    return content.slice(at + TRAILER.length) === digest(text) ? text : undefined;
}

/** Writes the entry; then removes the other files in its folder whose names start with `samePrefix`. */
function writeEntry(file, text, samePrefix) {
    try {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        const temporary = `${file}.${randomUUID()}.tmp`;
        const fd = fs.openSync(temporary, "w");
        try {
            fs.writeSync(fd, `${text}${TRAILER}${digest(text)}`);
            fs.fsyncSync(fd);
        } finally {
            fs.closeSync(fd);
        }
        fs.renameSync(temporary, file);
        for (const other of fs.readdirSync(path.dirname(file))) {
            const otherFile = path.join(path.dirname(file), other);
            if (other.startsWith(samePrefix) && otherFile !== file && !other.endsWith(".tmp")) fs.rmSync(otherFile, { force: true });
        }
    } catch {
        // A read-only project: done anew at every run.
    }
}

module.exports = { CACHE_ROOT, readEntry, writeEntry };
