// Loads the project's TypeScript sources without compiling them first: sucrase strips the types and turns imports
// into CommonJS as each .ts file is required, with no type check (`npm test` runs `npm run typecheck`). Class fields
// become constructor assignments, as tsconfig's useDefineForClassFields false has them. Sucrase keeps every line
// where it was, so stack traces point at the sources without source maps. Used by main.js (the program's entry for
// `pulumi up`), bin/k8s-vnf and, with `node -r`, the test engine's program host (test/support/engine/programHost.ts).
"use strict";
const { createHash } = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { CACHE_ROOT, readEntry, writeEntry } = require("./cacheEntry");

// What each source compiles to is kept under node_modules/.cache (sucrase takes a fifth of the program's start):
// keyed by the source's path, and its text, the options and sucrase's version; one entry per source (cacheEntry.js).
const CACHE_DIR = path.join(CACHE_ROOT, "sucrase");
const OPTIONS = { transforms: ["typescript", "imports"] };
const KEY_PREFIX = `sucrase@${require("sucrase/package.json").version} ${JSON.stringify(OPTIONS)}\0`;

const digest = (text) => createHash("sha256").update(text).digest("hex").slice(0, 32);

function compiled(filename) {
    const source = fs.readFileSync(filename, "utf8");
    const entryPrefix = `${digest(filename)}-`;
    const file = path.join(CACHE_DIR, `${entryPrefix}${digest(`${KEY_PREFIX}${source}`)}.js`);
    const cached = readEntry(file);
    if (cached !== undefined) return cached;
    const code = require("sucrase").transform(source, { ...OPTIONS, filePath: filename }).code;
    writeEntry(file, code, entryPrefix);
    return code;
}

const current = require.extensions[".ts"];
if (!(current && current.sucrase)) {
    const compile = (module, filename) => module._compile(compiled(filename), filename);
    compile.sucrase = true;
    require.extensions[".ts"] = compile;
}
