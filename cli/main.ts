/**
 * `k8s-vnf`: the project's own commands.
 *
 *   k8s-vnf import-request FILE [--stack NAME] [--package-dir DIR]   Tacker request → stack config
 *   k8s-vnf validate --stack NAME                                      check a stack file offline
 *   k8s-vnf config-reference                                           print the configuration reference
 *   k8s-vnf plan --stack NAME [--json]                                 what `pulumi up` would change and run
 *   k8s-vnf serve …                                                    the SOL003 LCM service
 *   k8s-vnf help [COMMAND], k8s-vnf --version
 */
import * as path from "node:path";
import { ConfigError } from "../config/spec";
import { Args, DEFAULT_IO, Io, parseArgs, UsageError } from "./args";

const USAGE = `usage:
  k8s-vnf import-request FILE [--stack NAME] [--package-dir DIR] [--project DIR]
      Convert a Tacker InstantiateVnfRequest body (JSON; Tacker's '#' comments are allowed) into stack
      config. Without --stack it prints the stack file (secrets left out, listed in its header); with
      --stack it writes stacks/Pulumi.NAME.yaml and sets the secrets with the Pulumi CLI (on stdin).
      --package-dir: the VNF package folder the request's file paths are relative to; files are checked
      (regular files only; manifests and certificates up to 1 MiB, of an image archive only its header).
      FILE: up to 4 MiB. Text from the request is shown with control characters escaped (\\x1b), cut at 200.
  k8s-vnf validate --stack NAME [--project DIR]
      Check stacks/Pulumi.NAME.yaml as the program would, without Pulumi (encrypted values stand in as set).
  k8s-vnf config-reference [--project DIR]
      Print the configuration reference (Tacker parameter → config key).
  k8s-vnf plan --stack NAME [--json] [--project DIR]
      What \`pulumi up --stack NAME\` would change, and under each change the remote actions it runs on which
      host (kubeadm join, drain, HAProxy re-rendered, ...), each with the digest of what it sends: a
      \`pulumi preview\` with the Pulumi CLI on PATH (or K8S_VNF_PULUMI_ROOT/bin/pulumi). Nothing is changed.
      --json: the plan as JSON (changes in the engine's order, each with its actions; resourceChanges).
  k8s-vnf serve [--port PORT] [--listen ADDRESS] [--data-dir DIR] [--max-parallel N] [--max-dry-runs N]
                [--page-size N] [--project DIR] [--packages DIR] [--public-url URL] [--allow-loopback-callbacks]
                [--tacker-nfvo URL] [--no-authentication] [--log-format text|json] [--secrets-key-file FILE]
                [--database postgres://USER@HOST:PORT/DB] [--claim-lease SECONDS]
      Run the SOL003 LCM service (/vnflcm/v1) on ADDRESS:PORT (default 127.0.0.1:9890), its SQLite database
      in DIR (default ./lcm-data). --public-url: the base of the URLs it hands out (Location, _links,
      notifications; default the address a request arrived at). Subscriptions never call link-local or
      metadata addresses, nor loopback unless --allow-loopback-callbacks. K8S_VNF_LCM_TOKEN set: clients must send "Authorization: Bearer <it>";
      K8S_VNF_LCM_BASIC_AUTH=user:password: HTTP basic authentication. An ADDRESS other than loopback needs
      one of them, or --no-authentication to say that anyone who reaches it may run operations. At most N
      operations (default 4) run at once, across instances, and N dry runs (default 2; more get 429). Lists
      are paged by --page-size items (default 100; Link: <...>; rel="next").
      Each operation runs the Pulumi CLI (v3.208 or newer) on PATH (or K8S_VNF_PULUMI_ROOT/bin/pulumi) in
      the project (--project, default this one) with the service's environment; its OpenStack credentials
      are its VIM's, or the service's OS_* variables for an instance without a registered VIM.
      --packages: VNF packages, one unpacked folder per vnfdId (DIR/<vnfdId>/Files/...); an instantiate
      resolves the request's package files (PV manifests, CA certificates, image archives) in its instance's.
      Each cluster it instantiates becomes a Kubernetes VIM (its tenants too), listed at /v1.0/vims (what
      \`openstack vim list\` reads); with --tacker-nfvo URL they are registered in that Tacker NFVO as well
      (POST /v1.0/vims, token in K8S_VNF_TACKER_NFVO_TOKEN). A CNF request names one of these VIMs.
      POST /k8s-vnf/v1/vnf_instances/{id}/plan with any LCM request body (or ?operation=NAME) is a dry run:
      the request checked as the operation would be, then previewed with the config it would set; nothing changes.
      It prints a line when an operation is accepted, at each state it enters (with the error's redacted detail
      when it fails) and after each update of an operation of several: text, or with --log-format json one
      JSON object per line (time, level, msg, vnfLcmOpOccId, vnfInstanceId, operation, operationState, error).
      Secrets it keeps (VIM credentials, callback credentials, a request's passwords for retry and rollback)
      are sealed in the database with AES-256-GCM: keys from --secrets-key-file FILE or K8S_VNF_LCM_SECRETS_KEY,
      one per line (openssl rand -base64 32), else a key it makes in DIR. The first key seals, every key opens:
      to rotate, put a new key first and restart; every record is sealed again, then the old key may go.
      --database: keep the state in PostgreSQL (its password in PGPASSWORD or ~/.pgpass; or the whole URL in
      K8S_VNF_LCM_DATABASE), where several replicas of the service share it, each answering any request. The
      replica that accepts an operation runs it and renews its claim on it; a claim not renewed for
      --claim-lease seconds (default 15), or held by a dead process of the same host, is taken over by another
      replica: what had not started is rolled back, what ran fails temporarily once its Pulumi command is
      stopped and the stack's lock cleared. Replicas need the same secrets key.
  k8s-vnf help [COMMAND]
      This text, or one command's part of it (also: k8s-vnf COMMAND --help).
  k8s-vnf --version
      The version of k8s-vnf and of the Pulumi packages it is built with.`;

/** A command's part of USAGE, under the same heading; undefined for a command USAGE does not have. */
function usageOf(command: string): string | undefined {
    const part = USAGE.split(/\n(?= {2}k8s-vnf )/).find((p) => p.startsWith(`  k8s-vnf ${command} `) || p.startsWith(`  k8s-vnf ${command}\n`));
    return part && `usage:\n${part}`;
}

/** `k8s-vnf <version> (@pulumi/pulumi <pin>, …)`, from package.json. */
function versionLine(): string {
    const pkg = require("../package.json") as { version: string; dependencies: Record<string, string> };
    const pins = ["@pulumi/pulumi", "@pulumi/openstack", "@pulumi/kubernetes"].map((name) => `${name} ${pkg.dependencies[name]}`);
    return `k8s-vnf ${pkg.version} (${pins.join(", ")})`;
}

// Each command's module is loaded when it runs: `serve` starts without the configuration model and the
// request converter, which it needs only with the first operation.
/** Runs a command; resolves to the exit code (0 ok, 1 refused or failed, 2 usage). */
export async function main(argv: string[], io: Io = DEFAULT_IO): Promise<number> {
    let args: Args;
    try {
        args = parseArgs(argv);
    } catch (e) {
        io.err(`${(e as Error).message}\n${USAGE}\n`);
        return 2;
    }
    if (args.options.has("--version")) {
        io.out(`${versionLine()}\n`);
        return 0;
    }
    const helpOn = args.command === "help" ? args.positional[0] : args.options.has("--help") ? args.command : undefined;
    if (helpOn !== undefined) {
        const usage = usageOf(helpOn);
        if (!usage) {
            io.err(`unknown command ${helpOn}\n${USAGE}\n`);
            return 2;
        }
        io.out(`${usage}\n`);
        return 0;
    }
    if (args.options.has("--help") || args.command === "help" || !args.command) {
        io.out(`${USAGE}\n`);
        return args.command || args.options.has("--help") ? 0 : 2;
    }
    const projectDir = path.resolve(io.cwd, args.options.get("--project") ?? path.resolve(__dirname, ".."));
    try {
        switch (args.command) {
            case "import-request":
                return (require("./importRequest") as typeof import("./importRequest")).importRequest(args, projectDir, io);
            case "validate":
                return (require("./importRequest") as typeof import("./importRequest")).validate(args, projectDir, io);
            case "config-reference":
                io.out((require("./reference") as typeof import("./reference")).configurationReference(projectDir));
                return 0;
            case "serve":
                return await (require("./serve") as typeof import("./serve")).serve(args, projectDir, io);
            case "plan":
                return await (require("./plan") as typeof import("./plan")).plan(args, projectDir, io);
            default:
                throw new UsageError(`unknown command ${args.command}`);
        }
    } catch (e) {
        if (e instanceof UsageError) {
            io.err(`${e.message}\n${USAGE}\n`);
            return 2;
        }
        if (e instanceof ConfigError) {
            io.err(`${(require("./importRequest") as typeof import("./importRequest")).printableError(e).message}\n`);
            return 1;
        }
        if (e instanceof (require("./pulumiCli") as typeof import("./pulumiCli")).PulumiCliError || e instanceof (require("../service/secretsAtRest") as typeof import("../service/secretsAtRest")).SecretsKeyError) {
            io.err(`${e.message}\n`);
            return 1;
        }
        throw e;
    }
}
