/**
 * The Node language host's part of a `pulumi up`, in a process of its own: the program gets its config
 * from `PULUMI_CONFIG` / `PULUMI_CONFIG_SECRET_KEYS` (sdk/nodejs/runtime/config.ts) and runs inside
 * `runInPulumiStack` (sdk/nodejs/cmd/run/run.ts), so it registers the root stack resource and its outputs as
 * under the CLI. The SDK runs in mock mode (`setMockOptions`) with the resource monitor below, which hands
 * every request, with its dependencies and options, to the engine over IPC and answers with what the
 * engine decided. Started by program.ts with `fork` (loaded, as the program, by loader/typescript.js); argv: project
 * dir, stack. It always runs as an update (previews are not modelled). The program is loaded through its entry (Pulumi.yaml `main`: main.js), as the
 * language host loads it.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";

type Callback = (err: Error | null, resp?: unknown) => void;
type Reply = { error?: string; [key: string]: unknown };

const [projectDir, stack] = process.argv.slice(2);
const send = (message: Record<string, unknown>) => process.send!(message);

let nextCall = 0;
const pending = new Map<number, (reply: Reply) => void>();
process.on("message", (reply: Reply & { call: number }) => {
    pending.get(reply.call)?.(reply);
    pending.delete(reply.call);
});
function ask(kind: string, request: Record<string, unknown>): Promise<Reply> {
    const call = nextCall++;
    return new Promise((resolve) => {
        pending.set(call, resolve);
        send({ kind, call, request });
    });
}

// The SDK of the project, loaded (as ts-node was, by program.ts) with the config in the environment.
const pulumi: typeof import("@pulumi/pulumi") = require(require.resolve("@pulumi/pulumi", { paths: [projectDir] }));
const resproto = require(require.resolve("@pulumi/pulumi/proto/resource_pb", { paths: [projectDir] }));
const structproto = require(require.resolve("google-protobuf/google/protobuf/struct_pb", { paths: [projectDir] }));

/** The resource monitor: every call goes to the engine, which owns URNs, steps and state. */
const monitor = {
    async supportsFeature(req: any, callback: Callback) {
        const reply = await ask("supportsFeature", { id: req.getId() });
        callback(null, { getHassupport: () => reply.hasSupport === true });
    },
    async registerResource(req: any, callback: Callback) {
        const propertyDependencies: Record<string, string[]> = {};
        req.getPropertydependenciesMap().forEach((deps: any, key: string) => (propertyDependencies[key] = deps.getUrnsList()));
        const reply = await ask("registerResource", {
            type: req.getType(),
            name: req.getName(),
            parent: req.getParent(),
            custom: req.getCustom(),
            object: req.getObject()?.toJavaScript() ?? {},
            dependencies: req.getDependenciesList(),
            propertyDependencies,
            deleteBeforeReplace: req.getDeletebeforereplacedefined() ? req.getDeletebeforereplace() : undefined,
            replacementTrigger: req.getReplacementTrigger()?.toJavaScript() ?? null,
            additionalSecretOutputs: req.getAdditionalsecretoutputsList(),
            ignoreChanges: req.getIgnorechangesList(),
            replaceOnChanges: req.getReplaceonchangesList(),
            protect: req.getProtect() ?? false,
            retainOnDelete: req.getRetainondelete() ?? false,
            deletedWith: req.getDeletedwith(),
            provider: req.getProvider(),
        });
        // UNAVAILABLE (14) after the run stopped: the SDK then stops quietly, as when the engine shuts down.
        if (reply.error) return callback(Object.assign(new Error(reply.error), { code: reply.code }));
        const resp = new resproto.RegisterResourceResponse();
        resp.setUrn(reply.urn);
        resp.setId(reply.id ?? "");
        resp.setObject(structproto.Struct.fromJavaScript(reply.object ?? {}));
        callback(null, resp);
    },
    async registerResourceOutputs(req: any, callback: Callback) {
        const reply = await ask("registerResourceOutputs", { urn: req.getUrn(), outputs: req.getOutputs()?.toJavaScript() ?? {} });
        callback(reply.error ? new Error(reply.error) : null, {});
    },
    readResource(_req: unknown, callback: Callback) {
        callback(new Error("reading existing resources (`get`) is not supported by the test engine"));
    },
    invoke(req: any, callback: Callback) {
        callback(new Error(`the test engine answers no invokes (${req.getTok()})`));
    },
    call(_req: unknown, callback: Callback) {
        callback(new Error("the test engine answers no method calls"));
    },
    registerPackage(_req: unknown, callback: Callback) {
        const resp = new resproto.RegisterPackageResponse();
        resp.setRef("test-engine");
        callback(null, resp);
    },
    registerStackTransform(_req: unknown, callback: Callback) {
        callback(new Error("stack transforms are not supported by the test engine"));
    },
};

/**
 * The program's entry as the CLI finds it (pkg/engine/project.go getPwdMain): Pulumi.yaml `main` from the project
 * folder; without one, the folder itself, which the runner resolves with package.json's `main`.
 */
function entryPoint(): string {
    const project = YAML.parse(fs.readFileSync(path.join(projectDir, "Pulumi.yaml"), "utf8")) as { main?: string };
    return path.resolve(projectDir, project.main ?? ".");
}

async function main(): Promise<void> {
    pulumi.runtime.setMockOptions(monitor, "k8s-vnf", stack, false);
    const program = entryPoint();
    await pulumi.runtime.runInPulumiStack(async () => require(program));
    await pulumi.runtime.disconnect();
}

// What the language host reports for a failed program: the error's message (a stack only for a bug).
process.on("unhandledRejection", (e) => fail(e));
process.on("uncaughtException", (e) => fail(e));
function fail(e: unknown): void {
    const message = e instanceof Error ? (e.name === "ConfigError" || e.name === "RunError" ? e.message : e.stack ?? e.message) : String(e);
    send({ kind: "failed", call: -1, request: { message } });
    process.exitCode = 1;
    process.disconnect?.();
}

main().then(
    () => {
        send({ kind: "done", call: -1, request: {} });
        process.disconnect?.();
    },
    (e) => fail(e),
);
