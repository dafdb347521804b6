/**
 * The service's log of its operations: a line when an occurrence is accepted, at each state it enters, after
 * each update of an operation of several, and for what a restart found. Text (one line each, for a person) or
 * JSON lines (for a log collector: `serve --log-format json`). What it shows is what a GET of the occurrence
 * shows, ids, states and the error's detail, already redacted when it was stored (lifecycle.ts).
 */
import { EventEmitter } from "node:events";

export type LogFormat = "text" | "json";
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json"];

/** The event lifecycle.ts emits for the log, beside its per-occurrence progress events. */
export const OPERATION_LOG_EVENT = "operation-log";

export interface OperationLogEvent {
    /** The occurrence; none: a line about the service itself (its claims), a warning. */
    op?: Record<string, any>;
    /** After an update of an operation of several: which, of how many in this run. */
    stage?: { done: number; of: number };
    /** What happened to it, when it is no new state (a restart's finding). */
    note?: string;
}

const ERROR_STATES = new Set(["FAILED_TEMP", "FAILED"]);

/** One log line (no line break) of `event` at `time`. */
export function logLine(format: LogFormat, event: OperationLogEvent, time = new Date()): string {
    const { op, stage, note } = event;
    if (!op) return serviceLine(format, String(note), time);
    const level = ERROR_STATES.has(op.operationState) && !stage ? "error" : "info";
    const detail: string | undefined = level === "error" ? op.error?.detail : undefined;
    const message = stage ? `update ${stage.done} of ${stage.of} done` : (note ?? `operation ${op.operationState}`);
    if (format === "json") {
        return JSON.stringify({ time: time.toISOString(), level, msg: message, vnfLcmOpOccId: op.id, vnfInstanceId: op.vnfInstanceId, operation: op.operation, operationState: op.operationState, ...(detail ? { error: detail } : {}) });
    }
    const tail = detail ? `: ${detail}` : "";
    return oneLine(`${time.toISOString()} ${level.toUpperCase()} ${op.operation} ${op.id} (instance ${op.vnfInstanceId}) ${message}${tail}`);
}

/** One line, and no terminal control from a tool's error output (its colours, a cursor move). */
function oneLine(text: string): string {
    return text.replace(/[\r\n]+/g, " ⏎ ").replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

function serviceLine(format: LogFormat, note: string, time: Date): string {
    if (format === "json") return JSON.stringify({ time: time.toISOString(), level: "warn", msg: note });
    return oneLine(`${time.toISOString()} WARN ${note}`);
}

/** Writes a line for every event `events` emits for the log; a write that fails loses its line, never an operation's step. */
export function logOperations(events: EventEmitter, format: LogFormat, write: (line: string) => void): void {
    events.on(OPERATION_LOG_EVENT, (event: OperationLogEvent) => {
        try {
            write(`${logLine(format, event)}\n`);
        } catch {
            // the log's own problem (a closed stdout): the state machine goes on
        }
    });
}
