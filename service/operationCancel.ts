/**
 * An operation's cancel as SOL003's cancel modes have it: GRACEFUL aborts `graceful` (Pulumi's own cancel);
 * FORCEFUL aborts both, also after a GRACEFUL one (the running command is then killed).
 */
export class OperationCancel {
    readonly graceful = new AbortController();
    readonly forceful = new AbortController();

    /** The strongest cancel asked for, if any. */
    get mode(): "GRACEFUL" | "FORCEFUL" | undefined {
        return this.forceful.signal.aborted ? "FORCEFUL" : this.graceful.signal.aborted ? "GRACEFUL" : undefined;
    }

    request(mode: "GRACEFUL" | "FORCEFUL"): void {
        if (!this.graceful.signal.aborted) this.graceful.abort(mode);
        if (mode === "FORCEFUL" && !this.forceful.signal.aborted) this.forceful.abort(mode);
    }
}

/** Waits `ms`, or until `signal` aborts (then rejects). */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(new Error("aborted while waiting for the graceful termination timeout"));
        });
    });
}
