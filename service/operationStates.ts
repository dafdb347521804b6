/** The states of a VNF LCM operation occurrence (SOL003 v2.6.1 §5.5.4.3 LcmOperationStateType). */
export type OperationState = "STARTING" | "PROCESSING" | "COMPLETED" | "FAILED_TEMP" | "FAILED" | "ROLLING_BACK" | "ROLLED_BACK";

/** The states in which an occurrence runs (its Pulumi commands may be running): a cancel is allowed in them. */
export const RUNNING: ReadonlySet<string> = new Set<OperationState>(["STARTING", "PROCESSING", "ROLLING_BACK"]);
