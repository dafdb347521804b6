/**
 * Step providers' serialized code, kept between runs of the program. Serializing the step providers takes the SDK's
 * closure serializer about a second at every evaluation (it asks the inspector about each function), more than the
 * rest of a small stack's evaluation. The code it produces depends only on the program's sources, the SDK, the
 * loader (sucrase) and Node: together they are the cache's key, so a change to any of them serializes anew. An
 * entry that cannot be read or written is serialized anew too; the cache never fails a run. Only the program's own
 * loader (loader/typescript.js) is keyed: sources compiled another way (ts-node in the tests) are always serialized.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

const PROJECT_DIR = path.resolve(__dirname, "..");
/** Every file the program is made of: it loads nothing else from the project (test/entry.spec.ts checks this). */
export const PROGRAM_SOURCES = ["index.ts", "main.js", "loader", "config", "components", "providers"];
export const CACHE_DIR = path.join(PROJECT_DIR, "node_modules", ".cache", "k8s-vnf", "providers");

let sourcesKey: string | undefined;

/** The code of the step `kind`: from the cache when the sources are those it was serialized from, else `serialize`'s. */
export async function cachedProviderCode(kind: string, serialize: () => Promise<string>): Promise<string> {
    if (!loadedByProgramLoader()) return serialize();
    const file = path.join(CACHE_DIR, `${kind}-${keyOfSources()}.txt`);
    try {
        return fs.readFileSync(file, "utf8");
    } catch {
        // Not serialized from these sources yet.
    }
    const code = await serialize();
    try {
        fs.mkdirSync(CACHE_DIR, { recursive: true });
        const temporary = `${file}.${process.pid}.tmp`;
        fs.writeFileSync(temporary, code);
        fs.renameSync(temporary, file);
        for (const old of fs.readdirSync(CACHE_DIR)) if (old.startsWith(`${kind}-`) && path.join(CACHE_DIR, old) !== file) fs.rmSync(path.join(CACHE_DIR, old), { force: true });
    } catch {
        // A read-only project: serialized at every run, as without the cache.
    }
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
        for (const file of PROGRAM_SOURCES.flatMap((source) => filesUnder(path.join(PROJECT_DIR, source)))) {
            hash.update(`${path.relative(PROJECT_DIR, file)}\0`);
            hash.update(fs.readFileSync(file));
            hash.update("\0");
        }
        sourcesKey = hash.digest("hex").slice(0, 32);
    }
    return sourcesKey;
}

function filesUnder(entry: string): string[] {
    if (!fs.statSync(entry).isDirectory()) return [entry];
    return fs
        .readdirSync(entry)
        .sort()
        .flatMap((name) => filesUnder(path.join(entry, name)));
}
