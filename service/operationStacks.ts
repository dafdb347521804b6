/**
 * What an operation's Pulumi commands run with, and what may show in what they print: its VIM's `OS_*`
 * credentials (or the service's own), the secrets of its configs and VIM; and the clearing of its stack's lock
 * after its command was stopped or killed.
 */
import { findSecretLeaves, redactText } from "../config/secrets";
import { Plan, stackNameOf } from "./operationPlanner";
import { PulumiProcess } from "./pulumiProcess";
import { StackRunner } from "./stackRunner";
import { Store } from "./store";
import { openStackEnvOf } from "./vimRecords";

type Body = Record<string, any>;

export class OperationStacks {
    constructor(
        private readonly store: Store,
        private readonly runner: StackRunner,
        /** OS_* variables used when an operation names no registered VIM. */
        private readonly defaultVimEnv: Record<string, string>,
    ) {}

    /** Stops what was `leftRunning` of an occurrence and clears its stack's lock (`pulumi cancel`); says how it went. */
    async clearLock(op: Body, secrets: string[], leftRunning?: PulumiProcess): Promise<string> {
        try {
            return await this.runner.recover(stackNameOf(String(op.vnfInstanceId)), leftRunning, await this.vimEnv((op.__plan as Plan).vimId));
        } catch (e) {
            return `its stack could not be cleared (${redactText((e as Error).message, secrets)}); a retry may find it locked`;
        }
    }

    async secretsOf(op: Body): Promise<string[]> {
        const plan = (op.__plan ?? {}) as Plan;
        const vim = plan.vimId ? await this.store.get("vims", plan.vimId) : undefined;
        const values = findSecretLeaves([plan.config, plan.previousConfig, this.defaultVimEnv]).map((s) => s.value);
        return vim?.__password ? [...values, String(vim.__password)] : values;
    }

    async vimEnv(vimId: string | undefined): Promise<Record<string, string>> {
        if (!vimId) return this.defaultVimEnv;
        const vim = await this.store.get("vims", vimId);
        if (!vim) throw new Error(`VIM ${vimId} is no longer registered`);
        return openStackEnvOf(vim);
    }
}
