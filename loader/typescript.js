// Loads the project's TypeScript sources without compiling them first: sucrase strips the types and turns imports
// into CommonJS as each .ts file is required, with no type check (`npm test` runs `npm run typecheck`). Class fields
// become constructor assignments, as tsconfig's useDefineForClassFields false has them. Sucrase keeps every line
// where it was, so stack traces point at the sources without source maps. Used by main.js (the program's entry for
// `pulumi up`) and, with `node -r`, by the test engine's program host (test/support/engine/programHost.ts).
"use strict";
const { transform } = require("sucrase");
const fs = require("node:fs");

const current = require.extensions[".ts"];
if (!(current && current.sucrase)) {
    const compile = (module, filename) =>
        module._compile(transform(fs.readFileSync(filename, "utf8"), { transforms: ["typescript", "imports"], filePath: filename }).code, filename);
    compile.sucrase = true;
    require.extensions[".ts"] = compile;
}
