/**
 * Engine events in the CLI's JSON shapes (sdk/go/common/apitype/events.go; pkg/engine/events.go): every
 * step's pre and outputs events, failures, diagnostics, the prelude and the summary. Secrets are blinded.
 */
import { EngineEventJson, StackRun, StepOp } from "./api";
import { isSecretValue } from "./stepRules";
import { ResourceState } from "./state";

type Props = Record<string, unknown>;
export type EventOp = StepOp | "create-replacement" | "delete-replaced" | "remove-pending-replace";
export type Severity = "info" | "info#err" | "warning" | "error";

const blind = (props: Props) => Object.fromEntries(Object.entries(props).filter(([k]) => k !== "__provider").map(([k, v]) => [k, isSecretValue(v) ? "[secret]" : v]));

/** `StepEventStateMetadata`. */
function stateMetadata(r: ResourceState) {
    return { type: r.type, urn: r.urn, custom: r.custom, id: r.id, parent: r.parent, inputs: blind(r.inputs), outputs: blind(r.outputs), provider: "" };
}

export class EngineEvents {
    private sequence = 0;
    private readonly started = Date.now();

    constructor(private readonly run: StackRun) {}

    prelude(): void {
        const config = Object.fromEntries(Object.entries(this.run.config).map(([k, v]) => [k, this.run.secretKeys.includes(k) ? "[secret]" : v]));
        this.emit({ preludeEvent: { config } });
    }

    /** A step starting; `old` is the state it replaces or removes, `next` the state it aims at. */
    pre(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined): void {
        this.emit({ resourcePreEvent: { metadata: this.metadata(op, old, next) } });
    }

    outputs(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined): void {
        this.emit({ resOutputsEvent: { metadata: this.metadata(op, old, next) } });
    }

    /** A dynamic provider's error has an unknown status (provider_plugin.go: gRPC UNKNOWN → StatusUnknown, 2). */
    failed(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined): void {
        this.emit({ resOpFailedEvent: { metadata: this.metadata(op, old, next), status: 2, steps: 0 } });
    }

    diagnostic(severity: Severity, message: string, urn?: string): void {
        this.run.onOutput?.(`${severity === "info" || severity === "info#err" ? "" : `${severity}: `}${message}`);
        this.emit({ diagnosticEvent: { ...(urn ? { urn } : {}), message: `${message}\n`, color: "never", severity } });
    }

    cancel(): void {
        this.emit({ cancelEvent: {} });
    }

    summary(changes: Partial<Record<StepOp, number>>, result: "succeeded" | "failed" | "canceled", maybeCorrupt: boolean): void {
        this.emit({ summaryEvent: { maybeCorrupt, durationSeconds: Math.ceil((Date.now() - this.started) / 1000), resourceChanges: changes, PolicyPacks: {}, isPreview: false, result } });
    }

    private metadata(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined) {
        const r = (next ?? old)!;
        return { op, urn: r.urn, type: r.type, provider: "", old: old ? stateMetadata(old) : null, new: next ? stateMetadata(next) : null, detailedDiff: null };
    }

    private emit(event: Record<string, unknown>): void {
        this.run.onEvent?.({ sequence: this.sequence++, timestamp: Math.floor(Date.now() / 1000), ...event } as EngineEventJson);
    }
}
