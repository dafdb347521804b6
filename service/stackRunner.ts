/**
 * How the service runs a VNF instance's stack: the Pulumi Automation API over this project (a local
 * program, so `pulumi up` here is what a user's `pulumi up` is). Config values are set as the CLI's
 * `config set-all` sets them; OpenStack credentials of the instance's VIM go to the CLI as OS_* variables.
 */
import { EngineEvent, LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation";

export interface StackConfigValue {
    value: string;
    secret: boolean;
}

export interface RunOptions {
    /** OS_* variables of the VIM. */
    env: Record<string, string>;
    /** URNs to replace (heal). */
    replace?: string[];
    onEvent?: (event: EngineEvent) => void;
    signal?: AbortSignal;
}

export interface StackRunner {
    up(stackName: string, config: Record<string, StackConfigValue>, options: RunOptions): Promise<Record<string, unknown>>;
    destroy(stackName: string, options: RunOptions): Promise<void>;
}

export class PulumiCliMissingError extends Error {
    constructor(detail: string) {
        super(`the Pulumi CLI is not installed where the service looks for it (${detail}); install it (https://www.pulumi.com/docs/install/) or set K8S_VNF_PULUMI_ROOT to the directory holding bin/pulumi`);
        this.name = "PulumiCliMissingError";
    }
}

export interface AutomationRunnerOptions {
    /** The project directory (Pulumi.yaml). */
    projectDir: string;
    /** Directory holding `bin/pulumi`; default: `pulumi` on PATH. */
    pulumiRoot?: string;
    /** Variables every Pulumi command gets (PULUMI_CONFIG_PASSPHRASE, PULUMI_BACKEND_URL, ...). */
    env: Record<string, string>;
}

export class AutomationStackRunner implements StackRunner {
    private command?: Promise<PulumiCommand>;

    constructor(private readonly options: AutomationRunnerOptions) {}

    async up(stackName: string, config: Record<string, StackConfigValue>, run: RunOptions): Promise<Record<string, unknown>> {
        const stack = await this.stack(stackName, run.env);
        await stack.setAllConfig(config);
        const result = await stack.up({ onEvent: run.onEvent, signal: run.signal, replace: run.replace });
        return Object.fromEntries(Object.entries(result.outputs).map(([k, v]) => [k, v.value]));
    }

    async destroy(stackName: string, run: RunOptions): Promise<void> {
        const stack = await this.stack(stackName, run.env);
        await stack.destroy({ onEvent: run.onEvent, signal: run.signal });
    }

    private async stack(stackName: string, env: Record<string, string>) {
        const pulumiCommand = await this.pulumi();
        return LocalWorkspace.createOrSelectStack({ stackName, workDir: this.options.projectDir }, { pulumiCommand, envVars: { ...this.options.env, ...env } });
    }

    private pulumi(): Promise<PulumiCommand> {
        this.command ??= PulumiCommand.get({ root: this.options.pulumiRoot, skipVersionCheck: true }).catch(() => {
            this.command = undefined;
            throw new PulumiCliMissingError(this.options.pulumiRoot ? `${this.options.pulumiRoot}/bin/pulumi` : "pulumi on PATH");
        });
        return this.command;
    }
}
