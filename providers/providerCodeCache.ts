/**
 * Step providers' serialized code, kept between runs of the program. Serializing the step providers takes the SDK's
 * closure serializer about a second at every evaluation (it asks the inspector about each function), more than the
 * rest of a small stack's evaluation. The code it produces depends only on the program's sources, the SDK, the
 * loader (sucrase), the installed packages (package-lock.json) and Node: together they are the cache's key, so a
 * change to any of them serializes anew. A source that cannot be read, or an entry that is not whole
 * (loader/cacheEntry.js), is serialized anew too; the cache never fails a run. Only the program's own
 * loader (loader/typescript.js) is keyed: sources compiled another way (ts-node in the tests) are always serialized.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { CACHE_ROOT, readEntry, writeEntry } from "../loader/cacheEntry";

const PROJECT_DIR = path.resolve(__dirname, "..");
/** Every file the program is made of: it loads nothing else from the project (test/packedProvider.spec.ts checks this). */
export const PROGRAM_SOURCES = ["index.ts", "main.js", "loader", "config", "components", "providers"];
const CACHE_DIR = path.join(CACHE_ROOT, "providers");

let sourcesKey: string | undefined;

/** The code of the step `kind`: from the cache when the sources are those it was serialized from, else `serialize`'s. */
export async function cachedProviderCode(kind: string, serialize: () => Promise<string>): Promise<string> {
    if (!loadedByProgramLoader()) return serialize();
    let key: string;
    try {
        key = keyOfSources();
    } catch {
        return serialize(); // a source that cannot be read now: no key to trust
    }
    const file = path.join(CACHE_DIR, `${kind}-${key}.txt`);
    const cached = readEntry(file);
    if (cached !== undefined) return cached;
    const code = await serialize();
    writeEntry(file, code, `${kind}-`);
    return code;
}

function loadedByProgramLoader(): boolean {
    return (require.extensions[".ts"] as { sucrase?: boolean } | undefined)?.sucrase === true;
}

function keyOfSources(): string {
    if (sourcesKey === undefined) {
        const hash = createHash("sha256");
        for (const pkg of ["@pulumi/pulumi", "sucrase"]) hash.update(`${pkg}@${require(`${pkg}/package.json`).version}\0`);
        hash.update(`node@${process.version}\0`);
        // The packages the code requires by name are required by their entry file's path (the SDK's closure/package.js).
        for (const file of [path.join(PROJECT_DIR, "package-lock.json"), ...PROGRAM_SOURCES.flatMap((source) => sourceFiles(path.join(PROJECT_DIR, source)))]) {
            hash.update(`${path.relative(PROJECT_DIR, file)}\0`);
            hash.update(fs.readFileSync(file));
            hash.update("\0");
        }
        sourcesKey = hash.digest("hex").slice(0, 32);
    }
    return sourcesKey;
}

/** The regular files at or under `entry`, in a stable order; symbolic links (an editor's lock file) are not sources. */
export function sourceFiles(entry: string): string[] {
    const stat = fs.lstatSync(entry);
    if (stat.isFile()) return [entry];
    if (!stat.isDirectory()) return [];
    return fs
        .readdirSync(entry)
        .sort()
        .flatMap((name) => sourceFiles(path.join(entry, name)));
}
