/**
 * `k8s-vnf plan --stack NAME`: what `pulumi up` would change in the stack as it is configured, and the
 * remote actions each change runs (join worker-4, drain worker-7, HAProxy re-rendered on every master),
 * from a `pulumi preview` through the Automation API. Nothing is changed. `--json` prints the plan as JSON.
 */
import * as path from "node:path";
import { planFromEvents, printablePlan } from "../service/changePlan";
import { AutomationStackRunner } from "../service/stackRunner";
import { Args, Io, UsageError } from "./args";
import { findPulumi } from "./pulumiCli";

export async function plan(args: Args, projectDir: string, io: Io): Promise<number> {
    const stack = args.options.get("--stack");
    if (!stack) throw new UsageError("plan needs --stack NAME");
    if (args.positional.length) throw new UsageError(`plan takes no argument (got ${args.positional[0]})`);
    const env = Object.fromEntries(Object.entries(io.env).filter((e): e is [string, string] => e[1] !== undefined));
    // The CLI on this command's PATH (the Automation API would look on the process's own).
    const found = findPulumi(io.env);
    const pulumiRoot = io.env.K8S_VNF_PULUMI_ROOT ?? (found && path.dirname(path.dirname(found)));
    const runner = new AutomationStackRunner({ projectDir, pulumiRoot, env });
    const events: Record<string, any>[] = [];
    try {
        await runner.preview(stack, undefined, { env: {}, onEvent: (e) => void events.push(e as Record<string, any>) });
    } catch (e) {
        io.err(`k8s-vnf plan: the preview of stack ${stack} failed: ${(e as Error).message}\n`);
        return 1;
    }
    const changes = planFromEvents(events);
    io.out(args.options.has("--json") ? `${JSON.stringify({ stack, ...changes }, null, 2)}\n` : printablePlan(changes, `Plan of stack ${stack} (a preview; nothing was changed):`));
    return 0;
}
