/**
 * Engine events in the CLI's JSON shapes (sdk/go/common/apitype/events.go; pkg/engine/events.go): every
 * step's pre and outputs events, failures, diagnostics, the prelude and the summary. Secrets are blinded.
 */
import { EngineEventJson, StackRun, StepOp } from "./api";
import { isSecretValue, PropertyDiff } from "./stepRules";
import { ResourceState } from "./state";

type Props = Record<string, unknown>;
export type EventOp = StepOp | "create-replacement" | "delete-replaced" | "remove-pending-replace";
export type Severity = "info" | "info#err" | "warning" | "error";

/**
 * What a step knows of its diff (`Keys()`, `Diffs()`, `DetailedDiff()` of the step, pkg/resource/deploy/step.go,
 * read by `makeStepEventMetadata` in pkg/engine/events.go): the keys that replace, the changed keys, the
 * provider's detailed diff (null when it gave none, as a dynamic provider does; steps without a diff carry null).
 */
export interface StepDiff {
    keys?: string[];
    diffs?: string[];
    detailedDiff?: Record<string, PropertyDiff> | null;
}

/** `Step.Logical()` (step.go): false for the halves of a replacement and for dropping a pending replacement. */
const LOGICAL = new Set<EventOp>(["same", "create", "update", "replace", "delete", "refresh", "read"]);

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
    pre(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined, diff: StepDiff = {}): void {
        this.emit({ resourcePreEvent: { metadata: this.metadata(op, old, next, diff) } });
    }

    outputs(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined, diff: StepDiff = {}): void {
        this.emit({ resOutputsEvent: { metadata: this.metadata(op, old, next, diff) } });
    }

    /** A dynamic provider's error has an unknown status (provider_plugin.go: gRPC UNKNOWN → StatusUnknown, 2). */
    failed(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined): void {
        this.emit({ resOpFailedEvent: { metadata: this.metadata(op, old, next, {}), status: 2, steps: 0 } });
    }

    diagnostic(severity: Severity, message: string, urn?: string): void {
        this.run.onOutput?.(`${severity === "info" || severity === "info#err" ? "" : `${severity}: `}${message}`);
        this.emit({ diagnosticEvent: { ...(urn ? { urn } : {}), message: `${message}\n`, color: "never", severity } });
    }

    summary(changes: Partial<Record<StepOp, number>>, result: "succeeded" | "failed", maybeCorrupt: boolean): void {
        this.emit({ summaryEvent: { maybeCorrupt, durationSeconds: Math.ceil((Date.now() - this.started) / 1000), resourceChanges: changes, PolicyPacks: {}, isPreview: false, result } });
    }

    /** `StepEventMetadata`: `keys`, `diffs` and `logical` omitted when empty (omitempty); `detailedDiff` always present. */
    private metadata(op: EventOp, old: ResourceState | undefined, next: ResourceState | undefined, diff: StepDiff) {
        const r = (next ?? old)!;
        return {
            op,
            urn: r.urn,
            type: r.type,
            provider: "",
            old: old ? stateMetadata(old) : null,
            new: next ? stateMetadata(next) : null,
            ...(diff.keys?.length ? { keys: diff.keys } : {}),
            ...(diff.diffs?.length ? { diffs: diff.diffs } : {}),
            detailedDiff: diff.detailedDiff ?? null,
            ...(LOGICAL.has(op) ? { logical: true } : {}),
        };
    }

    private emit(event: Record<string, unknown>): void {
        this.run.onEvent?.({ sequence: this.sequence++, timestamp: Math.floor(Date.now() / 1000), ...event } as EngineEventJson);
    }
}
