/** `k8s-vnf serve`: the SOL003 LCM service on an address and port, until SIGINT or SIGTERM. */
import { AddressInfo } from "node:net";
import * as path from "node:path";
import { redactText } from "../config/secrets";
import { createService, ServiceAuth } from "../service/app";
import { isLoopbackAddress } from "../service/callbackClient";
import { API_PREFIX } from "../service/links";
import { URL_CREDENTIAL_PARAMETERS } from "../service/postgresStore";
import { describeKeySource } from "../service/secretsAtRest";
import { LOG_FORMATS, LogFormat } from "../service/operationLog";
import { Args, Io, UsageError } from "./args";

export async function serve(args: Args, projectDir: string, io: Io): Promise<number> {
    const port = Number(args.options.get("--port") ?? 9890);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError("--port: a port number from 0 to 65535");
    const listen = args.options.get("--listen") ?? "127.0.0.1";
    const wholeNumber = (option: string, fallback: number) => {
        const value = Number(args.options.get(option) ?? fallback);
        if (!Number.isInteger(value) || value < 1) throw new UsageError(`${option}: a whole number ≥ 1`);
        return value;
    };
    const maxParallel = wholeNumber("--max-parallel", 4);
    const maxDryRuns = wholeNumber("--max-dry-runs", 2);
    const pageSize = wholeNumber("--page-size", 100);
    const dataDir = path.resolve(io.cwd, args.options.get("--data-dir") ?? "lcm-data");
    const auth = authenticationOf(io.env, listen, args.options.has("--no-authentication"));
    const publicUrl = args.options.get("--public-url");
    if (publicUrl !== undefined && !/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(publicUrl)) throw new UsageError("--public-url: an http or https URL such as https://lcm.example:9890");
    const packages = args.options.get("--packages");
    const logFormat = (args.options.get("--log-format") ?? "text") as LogFormat;
    if (!LOG_FORMATS.includes(logFormat)) throw new UsageError(`--log-format: ${LOG_FORMATS.join(" or ")}`);
    const nfvo = args.options.get("--tacker-nfvo");
    if (nfvo !== undefined && !/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(nfvo)) throw new UsageError("--tacker-nfvo: the Tacker NFVO API's http or https URL, such as http://tacker.example:9890");
    const secretsKeyFile = args.options.get("--secrets-key-file");
    const database = databaseOf(args, io.env, secretsKeyFile);
    const claimLease = wholeNumber("--claim-lease", 15);
    const service = await createService({
        dataDir,
        secretsKeyFile: secretsKeyFile === undefined ? undefined : path.resolve(io.cwd, secretsKeyFile),
        database,
        claimLeaseMs: claimLease * 1000,
        packagesDir: packages === undefined ? undefined : path.resolve(io.cwd, packages),
        auth,
        maxParallel,
        log: { format: logFormat, write: io.out },
        maxDryRuns,
        pageSize,
        projectDir,
        pulumiRoot: io.env.K8S_VNF_PULUMI_ROOT,
        env: io.env,
        publicUrl: publicUrl?.replace(/\/+$/, ""),
        allowLoopbackCallbacks: args.options.has("--allow-loopback-callbacks"),
        // Its token is in the environment, never on a command line.
        nfvo: nfvo === undefined ? undefined : { url: nfvo, token: io.env.K8S_VNF_TACKER_NFVO_TOKEN },
    });
    await service.app.listen({ port, host: listen });
    const bound = service.app.server.address() as AddressInfo;
    const shown = bound.family === "IPv6" ? `[${bound.address}]` : bound.address;
    const url = `http://${shown}:${bound.port}${API_PREFIX}`;
    const authentication = auth.type === "none" ? "no authentication" : `${auth.type} authentication`;
    const secretsKey = `secrets sealed with key ${service.keyring.sealingKeyId} from ${describeKeySource(service.keyring.source)}`;
    // A line of the service's own: JSON with its fields under --log-format json, else the text.
    const say = (level: "info" | "warn", fields: Record<string, unknown> & { msg: string }, text: string) =>
        io.out(logFormat === "json" ? `${JSON.stringify({ time: new Date().toISOString(), level, ...fields })}\n` : `${text}\n`);
    say(
        "info",
        { msg: "listening", url, dataDir, store: service.store.location, authentication, secretsKey },
        `k8s-vnf LCM service on ${url} (data in ${database === undefined ? dataDir : `${service.store.location}, shared by its replicas`}; ${authentication}; ${secretsKey})`,
    );
    // After the banner, so that a supervisor sees the port taken at once; GET /readyz answers ready after it.
    const warming = process.hrtime.bigint();
    const cliChecked = service.warmUp();
    const warmMs = Math.round(Number(process.hrtime.bigint() - warming) / 1e6);
    say("info", { msg: "ready", warmUpMs: warmMs }, `ready (warmed up in ${warmMs} ms)`);
    // Operations would fail on it: said now, and again by each operation until it is fixed.
    cliChecked.catch((e: Error) => {
        const said = redactText(e.message);
        say("warn", { msg: said }, `warning: ${said}`);
    });
    await new Promise<void>((resolve) => {
        for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve());
    });
    await service.close();
    return 0;
}

/**
 * The PostgreSQL database replicas share, from --database (no password: a command line is anyone's to read; it
 * comes from PGPASSWORD or ~/.pgpass) or K8S_VNF_LCM_DATABASE (the whole URL). Every replica must seal secrets
 * with the same key, so one must be given.
 */
function databaseOf(args: Args, env: NodeJS.ProcessEnv, secretsKeyFile: string | undefined): string | undefined {
    const given = args.options.get("--database");
    const url = given ?? env.K8S_VNF_LCM_DATABASE;
    if (url === undefined || url === "") return undefined;
    const where = given === undefined ? "K8S_VNF_LCM_DATABASE" : "--database";
    let parsed: URL;
    try {
        parsed = new URL(url);
    } catch {
        throw new UsageError(`${where}: a PostgreSQL URL such as postgres://k8s_vnf@db.example:5432/k8s_vnf`);
    }
    if (!["postgres:", "postgresql:"].includes(parsed.protocol)) throw new UsageError(`${where}: a PostgreSQL URL such as postgres://k8s_vnf@db.example:5432/k8s_vnf`);
    if (given !== undefined && (parsed.password !== "" || URL_CREDENTIAL_PARAMETERS.some((p) => parsed.searchParams.has(p)))) throw new UsageError("--database: no password on the command line, where any user of the host can read it: give it in PGPASSWORD or ~/.pgpass, or the whole URL in K8S_VNF_LCM_DATABASE");
    if (secretsKeyFile === undefined && !env.K8S_VNF_LCM_SECRETS_KEY) throw new UsageError(`${where}: replicas share the database, so they must seal its secrets with the same key: give it with --secrets-key-file FILE or K8S_VNF_LCM_SECRETS_KEY`);
    return url;
}

/**
 * The clients' authentication, from K8S_VNF_LCM_TOKEN or K8S_VNF_LCM_BASIC_AUTH. It fails closed: a
 * credential set but empty is refused, and so is an address other than loopback without one, unless
 * `--no-authentication` says that is meant.
 */
function authenticationOf(env: NodeJS.ProcessEnv, listen: string, noAuthentication: boolean): ServiceAuth {
    const token = env.K8S_VNF_LCM_TOKEN;
    const basic = env.K8S_VNF_LCM_BASIC_AUTH;
    if (token !== undefined && basic !== undefined) throw new UsageError("set K8S_VNF_LCM_TOKEN or K8S_VNF_LCM_BASIC_AUTH, not both");
    if (token !== undefined && token.trim() === "") throw new UsageError("K8S_VNF_LCM_TOKEN: is set but empty; give the token clients must send, or unset it");
    if (basic !== undefined && !/^[^:]+:.+$/.test(basic)) throw new UsageError("K8S_VNF_LCM_BASIC_AUTH: user:password");
    const auth: ServiceAuth = token
        ? { type: "bearer", token }
        : basic
          ? { type: "basic", username: basic.slice(0, basic.indexOf(":")), password: basic.slice(basic.indexOf(":") + 1) }
          : { type: "none" };
    if (auth.type !== "none" && noAuthentication) throw new UsageError("--no-authentication: K8S_VNF_LCM_TOKEN or K8S_VNF_LCM_BASIC_AUTH is set too; choose one");
    if (auth.type === "none" && !noAuthentication && listen !== "localhost" && !isLoopbackAddress(listen)) {
        throw new UsageError(`--listen ${listen}: reachable from other hosts, and no client authentication is set; set K8S_VNF_LCM_TOKEN or K8S_VNF_LCM_BASIC_AUTH, or pass --no-authentication if anyone who reaches it may run operations`);
    }
    return auth;
}
