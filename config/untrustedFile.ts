/**
 * Reading files that a request or a stack names, without trusting what they are: a path meant for a
 * manifest may name a directory, a FIFO (opening it waits for a writer that never comes) or a 600 MB archive
 * (read whole, it would not even fit in a string).
 */
import * as fs from "node:fs";

export const MIB = 1024 * 1024;

/** How much of a file is read. */
export type ReadLimit =
    /** A text file read whole: a larger one is refused, unread. */
    | { whole: number }
    /** Only the first bytes (an archive's header), whatever the file's size. */
    | { head: number };

/** `600 MiB`, `12 KiB`, `512 bytes`. */
export function sizeText(bytes: number): string {
    const [unit, size] = bytes >= MIB ? ["MiB", bytes / MIB] : bytes >= 1024 ? ["KiB", bytes / 1024] : ["bytes", bytes];
    return `${Number(size.toFixed(1))} ${unit}`;
}

/** Reads from an open file until its end or `limit` bytes, whichever comes first. */
export function readAtMost(fd: number, limit: number): Buffer {
    const buffer = Buffer.alloc(limit);
    let length = 0;
    while (length < limit) {
        const n = fs.readSync(fd, buffer, length, limit - length, null);
        if (n === 0) break;
        length += n;
    }
    return buffer.subarray(0, length);
}

/**
 * Reads a regular file within `limit`, or says why not, as the rest of a sentence naming the file
 * ("is a directory, not a file"). What it is and how large is decided from `stat`, before the file is
 * opened; it is opened non-blocking, so a FIFO swapped in after that check does not block either, and
 * checked again on the open file.
 */
export function readRegularFile(file: string, limit: ReadLimit): { bytes: Buffer } | { problem: string } {
    let stat: fs.Stats;
    try {
        stat = fs.statSync(file);
    } catch (e) {
        return { problem: `cannot be read (${(e as NodeJS.ErrnoException).code})` };
    }
    const unfit = unfitFile(stat, limit);
    if (unfit) return { problem: unfit };
    let fd: number;
    try {
        fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    } catch (e) {
        return { problem: `cannot be read (${(e as NodeJS.ErrnoException).code})` };
    }
    try {
        const opened = fs.fstatSync(fd);
        if (opened.ino !== stat.ino || opened.dev !== stat.dev) return { problem: "was replaced while it was opened" };
        const unfitNow = unfitFile(opened, limit);
        if (unfitNow) return { problem: unfitNow };
        // One byte past a whole file's limit tells a file that grew since its stat.
        const bytes = readAtMost(fd, "whole" in limit ? limit.whole + 1 : limit.head);
        if ("whole" in limit && bytes.length > limit.whole) return { problem: `is larger than ${sizeText(limit.whole)}` };
        return { bytes };
    } catch (e) {
        return { problem: `cannot be read (${(e as NodeJS.ErrnoException).code})` };
    } finally {
        fs.closeSync(fd);
    }
}

function unfitFile(stat: fs.Stats, limit: ReadLimit): string | undefined {
    if (stat.isDirectory()) return "is a directory, not a file";
    if (stat.isFIFO()) return "is a FIFO (named pipe), not a file";
    if (stat.isSocket()) return "is a socket, not a file";
    if (stat.isCharacterDevice() || stat.isBlockDevice()) return "is a device, not a file";
    if (!stat.isFile()) return "is not a regular file";
    if ("whole" in limit && stat.size > limit.whole) return `is ${sizeText(stat.size)}, more than the ${sizeText(limit.whole)} such a file may have`;
    return undefined;
}
