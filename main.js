// The program's entry point for `pulumi up` (Pulumi.yaml `main`; `runtime.options.typescript: false`, so the
// language host starts it as JavaScript): it loads index.ts and what it imports from the TypeScript sources with
// sucrase (loader/typescript.js), instead of the language host compiling and type-checking them with ts-node at
// every run. The test engine starts the program through this file too (test/support/engine/programHost.ts).
"use strict";
require("./loader/typescript");

// Stack traces. The runner (@pulumi/pulumi cmd/run/index.js) requires source-map-support/register before it loads
// this file: its Error.prepareStackTrace looks every frame of every stack formatted up in the source maps, and the
// SDK formats many: one for each promise it tracks (runtime/debuggable.js debuggablePromise: `new Error().stack`;
// four per output property of each resource, from runtime/rpc.js transferProperties) and one without depth limit for
// each resource's source position (resource.js Resource.callsites). That mapping was most of the program's time.
// It maps nothing useful here: these sources have no maps (sucrase keeps their lines) and the libraries' maps point
// at TypeScript files they do not ship (@pulumi/pulumi's resource.js.map names "../resource.ts"). So stacks are
// formatted as V8 and Node format them by default ("Name: message" then "    at f (file:line:column)" per frame,
// which Resource.callsites parses): errors still name the line of the program, or of the library's JavaScript,
// they came from. A debuggable promise's stack is only read with PULUMI_DEBUG_PROMISE_LEAKS set (debuggable.js
// leakedPromises → promiseDebugString); without it, it is left empty instead of formatted for nothing.
const debuggableJs = require("node:path").join(require.resolve("@pulumi/pulumi/package.json", { paths: [__dirname] }), "..", "runtime", "debuggable.js");
const debugPromiseLeaks = !!process.env.PULUMI_DEBUG_PROMISE_LEAKS;
Error.prepareStackTrace = (error, frames) => {
    if (!debugPromiseLeaks && frames.length > 0 && frames[0].getFunctionName() === "debuggablePromise" && frames[0].getFileName() === debuggableJs) return "";
    // As Node's default (lib/internal/errors.js defaultPrepareStackTrace): "Name [CODE]: message" for Node's own errors.
    const head = isNodeError(error) ? `${error.name} [${error.code}]: ${error.message}` : Error.prototype.toString.call(error);
    return frames.length === 0 ? head : `${head}\n    at ${frames.join("\n    at ")}`;
};

function isNodeError(error) {
    for (let p = error; p !== null && typeof p === "object"; p = Object.getPrototypeOf(p)) if (Object.getOwnPropertySymbols(p).some((s) => s.description === "kIsNodeError")) return true;
    return false;
}

module.exports = require("./index.ts");
