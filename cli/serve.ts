/** `k8s-vnf serve`: the SOL003 LCM service on an address and port, until SIGINT or SIGTERM. */
import * as path from "node:path";
import { createService, ServiceAuth } from "../service/app";
import { API_PREFIX } from "../service/links";
import { Args, Io, UsageError } from "./args";

export async function serve(args: Args, projectDir: string, io: Io): Promise<number> {
    const port = Number(args.options.get("--port") ?? 9890);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError("--port: a port number from 0 to 65535");
    const listen = args.options.get("--listen") ?? "127.0.0.1";
    const maxParallel = Number(args.options.get("--max-parallel") ?? 4);
    if (!Number.isInteger(maxParallel) || maxParallel < 1) throw new UsageError("--max-parallel: a whole number ≥ 1");
    const dataDir = path.resolve(io.cwd, args.options.get("--data-dir") ?? "lcm-data");
    const token = io.env.K8S_VNF_LCM_TOKEN;
    const basic = io.env.K8S_VNF_LCM_BASIC_AUTH;
    if (token && basic) throw new UsageError("set K8S_VNF_LCM_TOKEN or K8S_VNF_LCM_BASIC_AUTH, not both");
    if (basic !== undefined && !/^[^:]+:.+$/.test(basic)) throw new UsageError("K8S_VNF_LCM_BASIC_AUTH: user:password");
    const auth: ServiceAuth = token
        ? { type: "bearer", token }
        : basic
          ? { type: "basic", username: basic.slice(0, basic.indexOf(":")), password: basic.slice(basic.indexOf(":") + 1) }
          : { type: "none" };
    const publicUrl = args.options.get("--public-url");
    if (publicUrl !== undefined && !/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(publicUrl)) throw new UsageError("--public-url: an http or https URL such as https://lcm.example:9890");
    const packages = args.options.get("--packages");
    const nfvo = args.options.get("--tacker-nfvo");
    if (nfvo !== undefined && !/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(nfvo)) throw new UsageError("--tacker-nfvo: the Tacker NFVO API's http or https URL, such as http://tacker.example:9890");
    const service = await createService({
        dataDir,
        packagesDir: packages === undefined ? undefined : path.resolve(io.cwd, packages),
        auth,
        maxParallel,
        projectDir,
        pulumiRoot: io.env.K8S_VNF_PULUMI_ROOT,
        env: io.env,
        publicUrl: publicUrl?.replace(/\/+$/, ""),
        allowLoopbackCallbacks: args.options.has("--allow-loopback-callbacks"),
        // Its token is in the environment, never on a command line.
        nfvo: nfvo === undefined ? undefined : { url: nfvo, token: io.env.K8S_VNF_TACKER_NFVO_TOKEN },
    });
    const address = await service.app.listen({ port, host: listen });
    io.out(`k8s-vnf LCM service on ${address}${API_PREFIX} (data in ${dataDir})\n`);
    await new Promise<void>((resolve) => {
        for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => resolve());
    });
    await service.close();
    return 0;
}
