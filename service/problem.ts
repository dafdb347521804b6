/**
 * SOL013 ProblemDetails: every error the service returns, as `application/problem+json` with `status` and
 * `detail` always set (Tacker's client prints `detail`).
 */
import { FastifyError, FastifyReply } from "fastify";
import { redactText } from "../config/secrets";

export class ProblemError extends Error {
    constructor(
        readonly status: number,
        readonly detail: string,
        readonly title = TITLES[status] ?? "Error",
    ) {
        super(detail);
        this.name = "ProblemError";
    }
}

const TITLES: Record<number, string> = {
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    412: "Precondition Failed",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
};

export function problemBody(status: number, detail: string, instance?: string) {
    return { type: "about:blank", title: TITLES[status] ?? "Error", status, detail, ...(instance ? { instance } : {}) };
}

export const notFound = (what: string, id: string) => new ProblemError(404, `${what} ${id} not found`);
export const conflict = (detail: string) => new ProblemError(409, detail);

/** A 429 (RFC 6585 §4): the client may try again after `retryAfterSeconds` (sent as Retry-After). */
export class TooManyRequests extends ProblemError {
    constructor(
        detail: string,
        readonly retryAfterSeconds: number,
    ) {
        super(429, detail);
        this.name = "TooManyRequests";
    }
}

export function sendProblem(reply: FastifyReply, problem: ProblemError, instance: string) {
    if (problem instanceof TooManyRequests) reply.header("retry-after", String(problem.retryAfterSeconds));
    // A client refused for who it is or how often it asks keeps no connection open.
    if (problem.status === 401 || problem.status === 429) reply.header("connection", "close");
    return reply.code(problem.status).type("application/problem+json").send(problemBody(problem.status, problem.detail, instance));
}

/** A schema failure names the fields (`body.numberOfSteps: must be integer`); other errors keep their status. */
export function problemOf(error: FastifyError): ProblemError {
    if (error instanceof ProblemError) return error;
    if (error.validation) {
        const details = error.validation.map((v) => {
            const missing = (v.params as { missingProperty?: string }).missingProperty;
            const extra = (v.params as { additionalProperty?: string }).additionalProperty;
            const field = `body${v.instancePath.replace(/\//g, ".")}${missing ? `.${missing}` : ""}${extra ? `.${extra}` : ""}`;
            return `${field}: ${missing ? "is required" : extra ? "is not a known field" : v.message}`;
        });
        return new ProblemError(400, details.join("; "));
    }
    const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 600 ? error.statusCode : 500;
    return new ProblemError(status, redactText(status === 500 ? `internal error: ${error.message}` : error.message));
}
