/**
 * Client authentication, when `serve` has a token (K8S_VNF_LCM_TOKEN) or a basic-auth login
 * (K8S_VNF_LCM_BASIC_AUTH): every route but the readiness probe wants it, compared in constant time.
 */
import { timingSafeEqual } from "node:crypto";
import { FastifyReply, FastifyRequest } from "fastify";
import { ProblemError, sendProblem } from "./problem";
import { READINESS_ROUTE } from "./readiness";

export type ServiceAuth = { type: "none" } | { type: "bearer"; token: string } | { type: "basic"; username: string; password: string };

export function authenticate(auth: Exclude<ServiceAuth, { type: "none" }>) {
    const expected = auth.type === "bearer" ? `Bearer ${auth.token}` : `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString("base64")}`;
    return async (request: FastifyRequest, reply: FastifyReply) => {
        if (request.routeOptions.url === READINESS_ROUTE) return;
        const given = Buffer.from(String(request.headers.authorization ?? ""));
        const want = Buffer.from(expected);
        if (given.length !== want.length || !timingSafeEqual(given, want)) {
            reply.header("www-authenticate", auth.type === "bearer" ? "Bearer" : 'Basic realm="k8s-vnf"');
            return sendProblem(reply, new ProblemError(401, `this service needs ${auth.type} authentication (Authorization header)`), request.url);
        }
    };
}
