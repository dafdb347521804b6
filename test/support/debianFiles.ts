/**
 * Programs of the lab's Debian rootfs as files of a container image: each program with the shared libraries
 * its dynamic loader needs (what `ldd` lists inside the rootfs, the loader itself among them), every symbolic
 * link resolved inside the rootfs (a link's target is read from the rootfs, never from this machine). The
 * images of the lab that carry Debian's iptables or coreutils take them from here, as their releases take
 * Alpine's or distroless's packages.
 */
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { ImageFiles } from "./ociImage";

const run = promisify(execFile);

/**
 * `programs`: path in the image -> path in the rootfs (the program is copied under the name the image gives
 * it, so a multi-call program such as xtables-nft-multi can be given as each of its names). `directories`:
 * folders of the rootfs copied whole, each link as a copy of its target, with what their files load
 * (iptables' extensions, which it dlopens, several of them links to one file).
 */
export async function debianFiles(rootfs: string, programs: Record<string, string>, directories: string[] = []): Promise<ImageFiles> {
    const listed = directories.length ? (await inRootfs(rootfs, ["find", ...directories, "(", "-type", "f", "-o", "-type", "l", ")"])).split("\n").filter(Boolean) : [];
    const sources = [...new Set([...Object.values(programs), ...listed])];
    const libraries = new Set<string>();
    for (const line of (await inRootfs(rootfs, ["ldd", ...sources], true)).split("\n")) {
        const library = /(?:=>\s*)?(\/\S+) \(0x[0-9a-f]+\)$/.exec(line.trim())?.[1];
        if (library) libraries.add(library);
    }
    const wanted: Record<string, string> = { ...programs };
    for (const file of [...listed, ...libraries]) wanted[file] = file;
    const real = await resolved(rootfs, [...new Set(Object.values(wanted))]);
    const files: ImageFiles = {};
    for (const [inImage, inRootfsPath] of Object.entries(wanted)) {
        const source = path.join(rootfs, real[inRootfsPath]);
        files[inImage.replace(/^\//, "")] = { content: fs.readFileSync(source), mode: fs.statSync(source).mode & 0o7777 };
    }
    return files;
}

/** A command's output in the rootfs; with `anyExit`, also when it fails (ldd does for a file that is no program). */
async function inRootfs(rootfs: string, command: string[], anyExit = false): Promise<string> {
    try {
        return (await run("chroot", [rootfs, ...command], { maxBuffer: 16 << 20 })).stdout;
    } catch (e) {
        const stdout = (e as { stdout?: string }).stdout;
        if (anyExit && typeof stdout === "string") return stdout;
        throw e;
    }
}

/** Each path's target with every link followed inside the rootfs (`readlink -f` there). */
async function resolved(rootfs: string, paths: string[]): Promise<Record<string, string>> {
    const targets = (await inRootfs(rootfs, ["readlink", "-e", ...paths])).split("\n").filter(Boolean);
    if (targets.length !== paths.length) throw new Error(`the lab rootfs lacks one of: ${paths.join(", ")}`);
    return Object.fromEntries(paths.map((p, i) => [p, targets[i]]));
}
