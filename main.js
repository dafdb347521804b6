// The program's entry point for `pulumi up` (Pulumi.yaml `main`; `runtime.options.typescript: false`, so the
// language host starts it as JavaScript): it loads index.ts and what it imports from the TypeScript sources with
// sucrase (loader/typescript.js), instead of the language host compiling and type-checking them with ts-node at
// every run. The test engine starts the program through this file too (test/support/engine/programHost.ts).
"use strict";
require("./loader/typescript");
require("./loader/sdkRuntime");

module.exports = require("./index.ts");
