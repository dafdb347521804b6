/**
 * The stack's OpenStack credentials as the program sees them, found as the OpenStack provider finds them
 * (terraform-provider-openstack v1.54.1, gophercloud/utils terraform/auth config.go LoadAndValidate): with a
 * cloud named (`openstack:cloud`, else OS_CLOUD), that cloud of clouds.yaml (cloudsYaml.ts), its region and CA
 * unless `openstack:region` / OS_REGION_NAME and `openstack:cacertFile` / OS_CACERT give them; else the
 * `openstack:*` keys, else the OS_* variables. A password or an application credential. Needed where the
 * program itself asks OpenStack something the provider's resources do not expose (a server's compute host,
 * for pod-affinity labels).
 */
import * as fs from "node:fs";
import { ComputeApi } from "../providers/kubernetes/computeHost";
import { CloudEntry, readCloud } from "./cloudsYaml";
import { ConfigProblem } from "./spec";

const WHY = "needed to read each worker's compute host";

const SOURCES: { key: keyof ComputeApi; config: string; env: string[]; fallback?: string }[] = [
    { key: "authUrl", config: "authUrl", env: ["OS_AUTH_URL"] },
    { key: "username", config: "userName", env: ["OS_USERNAME"] },
    { key: "password", config: "password", env: ["OS_PASSWORD"] },
    { key: "projectName", config: "tenantName", env: ["OS_PROJECT_NAME", "OS_TENANT_NAME"] },
    { key: "projectId", config: "tenantId", env: ["OS_PROJECT_ID", "OS_TENANT_ID"] },
    { key: "userDomainName", config: "userDomainName", env: ["OS_USER_DOMAIN_NAME"], fallback: "Default" },
    { key: "projectDomainName", config: "projectDomainName", env: ["OS_PROJECT_DOMAIN_NAME"], fallback: "Default" },
    { key: "applicationCredentialId", config: "applicationCredentialId", env: ["OS_APPLICATION_CREDENTIAL_ID"] },
    { key: "applicationCredentialSecret", config: "applicationCredentialSecret", env: ["OS_APPLICATION_CREDENTIAL_SECRET"] },
    { key: "region", config: "region", env: ["OS_REGION_NAME"] },
];

/**
 * What a cloud entry's `auth` gives (clientconfig AuthInfo's YAML names, `tenant_*` and `domain_*` included),
 * each field it leaves empty filled from its OS_* variable, as clientconfig requests.go v3auth fills it.
 */
function fromCloud(cloud: CloudEntry, env: NodeJS.ProcessEnv): Partial<ComputeApi> {
    const a = (cloud.auth ?? {}) as Record<string, string | undefined>;
    const pick = (keys: string[], vars: string[]) => keys.map((k) => a[k]).find(Boolean) || vars.map((v) => env[v]).find(Boolean) || undefined;
    const userDomainId = pick(["user_domain_id", "domain_id"], ["OS_USER_DOMAIN_ID", "OS_DOMAIN_ID"]);
    const projectDomainId = pick(["project_domain_id", "domain_id"], ["OS_PROJECT_DOMAIN_ID", "OS_DOMAIN_ID"]);
    return {
        authUrl: pick(["auth_url"], ["OS_AUTH_URL"]),
        username: pick(["username"], ["OS_USERNAME"]),
        password: pick(["password"], ["OS_PASSWORD"]),
        projectName: pick(["project_name", "tenant_name"], ["OS_PROJECT_NAME", "OS_TENANT_NAME"]),
        projectId: pick(["project_id", "tenant_id"], ["OS_PROJECT_ID", "OS_TENANT_ID"]),
        userDomainName: pick(["user_domain_name", "domain_name"], ["OS_USER_DOMAIN_NAME", "OS_DOMAIN_NAME"]) ?? (userDomainId ? undefined : "Default"),
        projectDomainName: pick(["project_domain_name", "domain_name"], ["OS_PROJECT_DOMAIN_NAME", "OS_DOMAIN_NAME"]) ?? (projectDomainId ? undefined : "Default"),
        userDomainId,
        projectDomainId,
        applicationCredentialId: pick(["application_credential_id"], ["OS_APPLICATION_CREDENTIAL_ID"]),
        applicationCredentialSecret: pick(["application_credential_secret"], ["OS_APPLICATION_CREDENTIAL_SECRET"]),
        region: cloud.region_name,
    };
}

/** What a lookup cannot do without: a Keystone URL, and an application credential or a user's password and project. */
function missingOf(api: Partial<ComputeApi>): (keyof ComputeApi)[] {
    if (api.applicationCredentialId || api.applicationCredentialSecret) return (["authUrl", "applicationCredentialId", "applicationCredentialSecret"] as const).filter((k) => !api[k]);
    return [...(["authUrl", "username", "password"] as const).filter((k) => !api[k]), ...(api.projectName || api.projectId ? [] : (["projectName"] as const))];
}

/** Reads the credentials; `problems` names what is missing or refused, by config key and variable. */
export function computeApiFrom(config: Record<string, string>, env: NodeJS.ProcessEnv, cwd = process.cwd()): { api?: ComputeApi; problems: ConfigProblem[] } {
    const setting = (key: string, ...vars: string[]) => config[`openstack:${key}`] || vars.map((name) => env[name]).find(Boolean) || undefined;
    const problems: ConfigProblem[] = [];
    if (/^(true|1)$/i.test(setting("insecure", "OS_INSECURE") ?? "")) {
        problems.push({ path: "openstack:insecure", message: `the compute-host lookup verifies Keystone's and Nova's certificates: give their CA (openstack:cacertFile or OS_CACERT) instead` });
    }
    const cloudName = setting("cloud", "OS_CLOUD");
    let api: Partial<ComputeApi>;
    let caFile = setting("cacertFile", "OS_CACERT");
    if (cloudName) {
        const { cloud, file, problem } = readCloud(cloudName, env, cwd);
        if (!cloud) return { problems: [...problems, { path: "openstack:cloud", message: `${problem}: ${WHY}` }] };
        api = { ...fromCloud(cloud, env), region: setting("region", "OS_REGION_NAME") ?? cloud.region_name };
        caFile ??= cloud.cacert;
        if (cloud.verify === false) problems.push({ path: "openstack:cloud", message: `cloud ${cloudName} (${file}) sets verify: false; the compute-host lookup verifies certificates: give its cacert instead` });
        for (const key of missingOf(api)) problems.push({ path: "openstack:cloud", message: `cloud ${cloudName} (${file}) has no ${key}: ${WHY}` });
    } else {
        api = {};
        for (const source of SOURCES) {
            const value = config[`openstack:${source.config}`] || source.env.map((name) => env[name]).find(Boolean) || source.fallback;
            if (value) api[source.key] = value;
        }
        for (const key of missingOf(api)) {
            const source = SOURCES.find((s) => s.key === key)!;
            problems.push({ path: `openstack:${source.config}`, message: `not set (nor ${source.env.join(" or ")}, nor openstack:cloud / OS_CLOUD): ${WHY}` });
        }
    }
    if (caFile) {
        try {
            api.caCertificate = fs.readFileSync(caFile, "utf8");
        } catch (e) {
            problems.push({ path: "openstack:cacertFile", message: `cannot read the CA file ${caFile} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` });
        }
    }
    return problems.length ? { problems } : { api: api as ComputeApi, problems };
}
