/**
 * The stack's OpenStack credentials as the program sees them: the `openstack:*` configuration the
 * provider uses, or the OS_* variables it falls back to. Needed where the program itself asks OpenStack
 * something the provider's resources do not expose (a server's compute host, for pod-affinity labels).
 */
import { ComputeApi } from "../providers/kubernetes/computeHost";
import { ConfigProblem } from "./spec";

const SOURCES: { key: keyof ComputeApi; config: string; env: string[]; fallback?: string }[] = [
    { key: "authUrl", config: "authUrl", env: ["OS_AUTH_URL"] },
    { key: "username", config: "userName", env: ["OS_USERNAME"] },
    { key: "password", config: "password", env: ["OS_PASSWORD"] },
    { key: "projectName", config: "tenantName", env: ["OS_PROJECT_NAME", "OS_TENANT_NAME"] },
    { key: "userDomainName", config: "userDomainName", env: ["OS_USER_DOMAIN_NAME"], fallback: "Default" },
    { key: "projectDomainName", config: "projectDomainName", env: ["OS_PROJECT_DOMAIN_NAME"], fallback: "Default" },
    { key: "region", config: "region", env: ["OS_REGION_NAME"] },
];

/** Reads the credentials; `problems` names what is missing, by config key and variable. */
export function computeApiFrom(config: Record<string, string>, env: NodeJS.ProcessEnv): { api?: ComputeApi; problems: ConfigProblem[] } {
    const api: Partial<ComputeApi> = {};
    const problems: ConfigProblem[] = [];
    for (const source of SOURCES) {
        const value = config[`openstack:${source.config}`] || source.env.map((name) => env[name]).find(Boolean) || source.fallback;
        if (value) api[source.key] = value;
        else if (source.key !== "region") problems.push({ path: `openstack:${source.config}`, message: `not set (nor ${source.env.join(" or ")}): needed to read each worker's compute host` });
    }
    return problems.length ? { problems } : { api: api as ComputeApi, problems };
}
