/**
 * The API server's error statuses with their messages, as k8s.io/apimachinery/pkg/api/errors/errors.go builds them
 * (NewNotFound, NewAlreadyExists, NewInvalid, NewForbidden, NewUnauthorized) and as client-go returns them: the
 * status's message is the error's text.
 */
import { KindInfo, qualifiedResource } from "./kinds";

export type Reason = "NotFound" | "AlreadyExists" | "Invalid" | "Forbidden" | "Unauthorized" | "Conflict";

export class StatusError extends Error {
    constructor(
        readonly reason: Reason,
        message: string,
        /** details.kind of the status: the resource for NotFound (what IsNamespaceNotFoundErr reads). */
        readonly detailsKind = "",
    ) {
        super(message);
    }
}

export const notFound = (resource: string, name: string) => new StatusError("NotFound", `${resource} "${name}" not found`, resource.split(".")[0]);
export const alreadyExists = (kind: KindInfo, name: string) => new StatusError("AlreadyExists", `${qualifiedResource(kind)} "${name}" already exists`, kind.resource);
export const forbidden = (resource: string, name: string, why: string) => new StatusError("Forbidden", `${resource}${name ? ` "${name}"` : ""} is forbidden: ${why}`, resource);
export const unauthorized = () => new StatusError("Unauthorized", "Unauthorized");

/** NewInvalid: `<Kind>[.<group>] "<name>" is invalid: <aggregate>`; an aggregate of several reads `[a, b]`. */
export function invalid(kind: KindInfo, name: string, problems: string[]): StatusError {
    const groupKind = kind.group ? `${kind.kind}.${kind.group}` : kind.kind;
    const aggregate = problems.length === 1 ? problems[0] : `[${problems.join(", ")}]`;
    return new StatusError("Invalid", `${groupKind} "${name}" is invalid: ${aggregate}`, kind.kind);
}

export const isNotFound = (e: unknown) => e instanceof StatusError && e.reason === "NotFound";
