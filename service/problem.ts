/**
 * SOL013 ProblemDetails: every error the service returns, as `application/problem+json` with `status` and
 * `detail` always set (Tacker's client prints `detail`).
 */
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
