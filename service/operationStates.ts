/** The states of a VNF LCM operation occurrence (SOL003 v2.6.1 §5.5.4.3 LcmOperationStateType). */
export type OperationState = "STARTING" | "PROCESSING" | "COMPLETED" | "FAILED_TEMP" | "FAILED" | "ROLLING_BACK" | "ROLLED_BACK";

/**
 * The states in which an occurrence runs (its Pulumi commands may be running): a cancel is allowed in them, and
 * a replica holds its claim.
 */
export const RUNNING_STATES: readonly OperationState[] = ["STARTING", "PROCESSING", "ROLLING_BACK"];
export const RUNNING: ReadonlySet<string> = new Set<OperationState>(RUNNING_STATES);

/** The states in which an occurrence holds its instance (running, or waiting for a person): no other may start. */
export const HOLDING_STATES: readonly OperationState[] = [...RUNNING_STATES, "FAILED_TEMP"];
