/**
 * Drives a dynamic provider exactly as the Pulumi engine does: the provider is serialized by the SDK (as
 * `dynamic.Resource` does), loaded by the real `@pulumi/pulumi/cmd/dynamic-provider` host process, and
 * called over gRPC (Configure, Check, Diff, Create, Update, Read, Delete).
 */
import { ChildProcess, execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { PROJECT_DIR } from "./program";

/* eslint-disable @typescript-eslint/no-require-imports */
const provrpc = require("@pulumi/pulumi/proto/provider_grpc_pb");
const provproto = require("@pulumi/pulumi/proto/provider_pb");
const structproto = require("google-protobuf/google/protobuf/struct_pb");

type Props = Record<string, unknown>;

/** Struct cannot carry `undefined`; the engine never sends it either. */
const URN = "urn:pulumi:test::k8s-vnf::step::test";

const toStruct = (o: Props) => structproto.Struct.fromJavaScript(JSON.parse(JSON.stringify(o)));

export class ProviderCallError extends Error {
    constructor(
        readonly method: string,
        readonly code: number,
        readonly details: string,
    ) {
        super(`${method}: ${details}`);
    }
}

export interface DiffResult {
    changes: "some" | "none" | "unknown";
    replaces: string[];
    deleteBeforeReplace: boolean;
}

export class ProviderHost {
    /** Everything the host process printed (the provider's console output goes to the CLI this way). */
    output = "";
    /** Called with each piece of output as it comes. */
    onOutput?: (text: string) => void;
    private constructor(
        private readonly child: ChildProcess,
        private readonly client: any,
        /** The provider every request carries; unset when the requests bring their own `__provider`. */
        readonly providerText?: string,
    ) {}

    /**
     * Serializes the provider exported as `exportName` by `modulePath` as the SDK does when a program
     * registers a dynamic resource, in a clean Node process (no test-runner globals to hide free variables
     * from the serializer), and starts a host process for it.
     */
    static async start(modulePath: string, exportName: string, config: Record<string, string> = {}): Promise<ProviderHost> {
        return ProviderHost.launch(await serializeInCleanProcess(modulePath, exportName), config);
    }

    /**
     * A host for whatever providers the requests carry in `__provider`, as the engine runs the one
     * `pulumi-resource-pulumi-nodejs` plugin for every dynamic resource of a stack (configured once with the
     * stack's config). It runs in the project folder, so the providers' `require`s resolve there.
     */
    static async forEngine(config: Record<string, string>, env: NodeJS.ProcessEnv): Promise<ProviderHost> {
        return ProviderHost.launch(undefined, config, env);
    }

    private static async launch(text: string | undefined, config: Record<string, string>, env: NodeJS.ProcessEnv = process.env): Promise<ProviderHost> {
        const hostScript = require.resolve("@pulumi/pulumi/cmd/dynamic-provider");
        const child = spawn(process.execPath, [hostScript, "127.0.0.1:1"], { stdio: ["ignore", "pipe", "pipe"], cwd: PROJECT_DIR, env });
        const port = await new Promise<string>((resolve, reject) => {
            child.once("error", reject);
            child.stdout!.once("data", (d) => resolve(String(d).trim()));
        });
        const client = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
        const host = new ProviderHost(child, client, text);
        child.stdout!.on("data", (d) => host.record(String(d)));
        child.stderr!.on("data", (d) => host.record(String(d)));
        const req = new provproto.ConfigureRequest();
        req.setArgs(toStruct(config));
        await host.call("configure", req);
        return host;
    }

    async check(olds: Props, news: Props): Promise<{ inputs: Props; failures: { property: string; reason: string }[] }> {
        const req = new provproto.CheckRequest();
        this.setChange(req, olds, news);
        const resp = await this.call("check", req);
        return {
            inputs: resp.getInputs()?.toJavaScript() ?? {},
            failures: resp.getFailuresList().map((f: any) => ({ property: f.getProperty(), reason: f.getReason() })),
        };
    }

    async diff(id: string, olds: Props, news: Props): Promise<DiffResult> {
        const req = new provproto.DiffRequest();
        req.setId(id);
        this.setChange(req, olds, news);
        const resp = await this.call("diff", req);
        const changes = resp.getChanges();
        return {
            changes: changes === provproto.DiffResponse.DiffChanges.DIFF_SOME ? "some" : changes === provproto.DiffResponse.DiffChanges.DIFF_NONE ? "none" : "unknown",
            replaces: resp.getReplacesList(),
            deleteBeforeReplace: resp.getDeletebeforereplace(),
        };
    }

    async create(news: Props): Promise<{ id: string; outs: Props }> {
        const req = new provproto.CreateRequest();
        req.setUrn(URN);
        req.setProperties(toStruct(this.withProvider(news)));
        const resp = await this.call("create", req);
        return { id: resp.getId(), outs: resp.getProperties().toJavaScript() };
    }

    async update(id: string, olds: Props, news: Props): Promise<Props> {
        const req = new provproto.UpdateRequest();
        req.setId(id);
        this.setChange(req, olds, news);
        const resp = await this.call("update", req);
        return resp.getProperties().toJavaScript();
    }

    async read(id: string, props: Props): Promise<{ id: string; props: Props }> {
        const req = new provproto.ReadRequest();
        req.setId(id);
        req.setUrn(URN);
        req.setProperties(toStruct(props));
        const resp = await this.call("read", req);
        return { id: resp.getId(), props: resp.getProperties()?.toJavaScript() ?? {} };
    }

    async delete(id: string, props: Props): Promise<void> {
        const req = new provproto.DeleteRequest();
        req.setId(id);
        req.setUrn(URN);
        req.setProperties(toStruct(props));
        await this.call("delete", req);
    }

    stop(): void {
        this.client.close();
        this.child.kill();
    }

    /** Check, Diff and Update carry the old state and the new inputs. */
    private setChange(req: any, olds: Props, news: Props): void {
        req.setUrn(URN);
        req.setOlds(toStruct(olds));
        req.setNews(toStruct(this.withProvider(news)));
    }

    /** The engine always sends the serialized provider along with the inputs. */
    private withProvider(props: Props): Props {
        return this.providerText === undefined ? props : { ...props, __provider: this.providerText };
    }

    private record(text: string): void {
        this.output += text;
        this.onOutput?.(text);
    }

    /** Whether the host process is still running (it stops with `stop`). */
    get running(): boolean {
        return this.child.exitCode === null && this.child.signalCode === null;
    }

    private call(method: string, req: unknown): Promise<any> {
        return new Promise((resolve, reject) =>
            this.client[method](req, (err: grpc.ServiceError | null, resp: unknown) => (err ? reject(new ProviderCallError(method, err.code, err.details)) : resolve(resp))),
        );
    }
}

async function serializeInCleanProcess(modulePath: string, exportName: string): Promise<string> {
    const script = `
        require(${JSON.stringify(require.resolve("ts-node"))}).register({ transpileOnly: true, project: ${JSON.stringify(path.join(PROJECT_DIR, "tsconfig.json"))} });
        const pulumi = require(${JSON.stringify(require.resolve("@pulumi/pulumi"))});
        const provider = require(${JSON.stringify(path.resolve(PROJECT_DIR, modulePath))})[${JSON.stringify(exportName)}];
        if (!provider) throw new Error("no export ${exportName}");
        pulumi.runtime.serializeFunction(() => provider, { allowSecrets: true }).then((sf) => process.stdout.write(sf.text));`;
    // A script file, not `node -e`: under -e Node makes built-in modules globals, which the serializer skips.
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-serialize-")), "serialize.js");
    fs.writeFileSync(file, script);
    let stdout: string;
    try {
        stdout = (await promisify(execFile)(process.execPath, [file], { cwd: PROJECT_DIR, maxBuffer: 64 << 20 })).stdout;
    } finally {
        fs.rmSync(path.dirname(file), { recursive: true, force: true });
    }
    // Uses of exported consts compile to `exports.X`, which is not serialized: undefined in the provider.
    // (A path such as /etc/exports.d in a script's text is not such a use.)
    const dangling = stdout.split("\n").filter((line) => /(?<![\w/.-])exports\.(?!handler = )/.test(line));
    if (dangling.length) throw new Error(`${modulePath}: serialized provider refers to module exports:\n${dangling.join("\n")}`);
    return stdout;
}
