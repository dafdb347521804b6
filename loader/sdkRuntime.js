// Two things the Pulumi SDK does for every resource and that cost most of its time, and which nobody reads unless
// they debug the SDK: stack traces, and debug messages sent to the engine one at a time. Required by main.js before
// the program, and by bench/sdkFloor.js so that the SDK's own figures are measured the same way.
"use strict";
const path = require("node:path");

const sdkDir = path.dirname(require.resolve("@pulumi/pulumi/package.json", { paths: [path.dirname(__dirname)] }));

// The runner (@pulumi/pulumi cmd/run/index.js) requires source-map-support/register before it loads main.js. Its
// Error.prepareStackTrace looks every frame of every stack formatted up in the source maps, and the SDK formats one
// without depth limit for each resource's source position (resource.js Resource.callsites). That mapping was most
// of the program's time, and it maps nothing useful here: these sources have no maps (sucrase keeps their lines)
// and the libraries' maps point at TypeScript files they do not ship (@pulumi/pulumi's resource.js.map names
// "../resource.ts"). Without a prepareStackTrace of its own, Node formats stacks as it does by default ("Name
// [CODE]: message", then "    at f (file:line:column)" per frame, which Resource.callsites parses).
Error.prepareStackTrace = undefined;

// The SDK keeps a stack with every promise it tracks (runtime/debuggable.js debuggablePromise: `new Error().stack`,
// four per output property of each resource, from runtime/rpc.js transferProperties) and reads it only to report
// leaked promises with PULUMI_DEBUG_PROMISE_LEAKS set (leakedPromises → promiseDebugString). Without that variable
// those errors capture no frames: the walk of ten frames per promise was a fifth of the SDK's own time. The SDK
// calls it through the module's exports (`debuggable_1.debuggablePromise(...)`), so replacing the export reaches
// every call; the error text of a failed registration comes from its own preallocated Error, not from these.
const debuggable = require(path.join(sdkDir, "runtime", "debuggable.js"));
if (!debuggable.debugPromiseLeaks) {
    const track = debuggable.debuggablePromise;
    debuggable.debuggablePromise = function debuggablePromise(promise, context) {
        const limit = Error.stackTraceLimit;
        Error.stackTraceLimit = 0;
        try {
            return track(promise, context);
        } finally {
            Error.stackTraceLimit = limit;
        }
    };
}

// Debug messages. The SDK logs three to five for each resource ("Registering resource", "RegisterResource RPC
// prepared", "RegisterResource RPC finished" with the whole response, which for a step holds its code; the same for
// a component's outputs) and sends each to the engine as its own Log call, the next only once the engine has
// answered the last (log/index.js: `lastLog` chains them), so the program cannot end before the last has gone.
// That chain was 40% of the SDK's time for bare resources, and more for the program (bench/evaluation.ts). The
// engine shows debug messages only under `pulumi up --debug` (pkg/backend/display/progress.go: `payload.Severity
// == diag.Debug && !display.opts.Debug`), and the language host does not tell the program whether it was given.
// Pulumi trimmed them for the same reason (pulumi/pulumi#7144, #7295). So they are not sent unless
// K8S_VNF_SDK_DEBUG_LOGS=1 asks for them. (This program logs nothing at debug level itself.)
if (process.env.K8S_VNF_SDK_DEBUG_LOGS !== "1") {
    const log = require(path.join(sdkDir, "log", "index.js"));
    log.debug = function debug() {
        return Promise.resolve();
    };
}
