/**
 * Converts a Tacker InstantiateVnfRequest for a Kubernetes VIM (a CNF: `lcm-kubernetes-def-files` and an
 * optional `namespace` in additionalParams, as seed 003 sends it) into stack config. The VIM's credentials are
 * not in the request: the caller (the LCM service) resolves `vimConnectionInfo` to them.
 */
import { isDnsLabel } from "./fields";
import { findSecrets, parseConvertedConfig } from "./load";
import { ConfigError, ConfigProblem } from "./spec";
import type { ConversionResult, ConvertOptions } from "./tacker";

/** vimType values of a Kubernetes VIM: Tacker v1's, SOL003's (v2 rewrites `kubernetes` to it), Helm's. */
export const KUBERNETES_VIM_TYPES: ReadonlySet<string> = new Set(["kubernetes", "ETSINFV.KUBERNETES.V_1", "ETSINFV.HELM.V_3"]);

export const DEF_FILES = "lcm-kubernetes-def-files";

export interface CnfConvertOptions extends ConvertOptions {
    /** The Kubernetes VIM the CNF goes on. */
    vim: { endpoint: string; caCertificate?: string; token: string };
    /** The VNF instance id: every object's `tacker_vnf_instance_id` label. */
    instanceId: string;
    /** Replicas per workload name at instantiation (the VNFD's initial deltas). */
    replicas?: Record<string, number>;
}

/** Whether a request is for a CNF on a Kubernetes VIM (not a cluster's or registry's, which name no manifests). */
export function isCnfInstantiateRequest(req: { additionalParams?: Record<string, unknown>; vimConnectionInfo?: { vimType: string }[] }): boolean {
    const params = req.additionalParams ?? {};
    if (params.k8s_cluster_installation_param || params.private_registry_installation_param) return false;
    return DEF_FILES in params || (req.vimConnectionInfo ?? []).some((v) => KUBERNETES_VIM_TYPES.has(v.vimType));
}

export function convertCnfInstantiateRequest(req: { flavourId: string; additionalParams: Record<string, unknown> }, options: CnfConvertOptions): ConversionResult {
    const source = "InstantiateVnfRequest";
    const problems: ConfigProblem[] = [];
    const warnings: ConfigProblem[] = [];
    const ignored: ConfigProblem[] = [];
    const params = req.additionalParams;
    const files = params[DEF_FILES];
    if (!Array.isArray(files) || files.length === 0 || files.some((f) => typeof f !== "string")) {
        problems.push({ path: `additionalParams.${DEF_FILES}`, message: "list the Kubernetes manifests of the VNF package (e.g. [\"Files/kubernetes/deployment.yaml\"])" });
    }
    let namespace: string | undefined;
    if (params.namespace !== undefined) {
        const given = String(params.namespace);
        // Kubernetes namespace names are lower case; seed 003's own example is "namespaceA".
        namespace = isDnsLabel(given) ? given : given.toLowerCase();
        if (!isDnsLabel(namespace)) problems.push({ path: "additionalParams.namespace", message: `${JSON.stringify(given)} is not a Kubernetes namespace name (a lowercase RFC 1123 label: letters, digits and '-', at most 63)` });
        else if (namespace !== given) warnings.push({ path: "additionalParams.namespace", message: `Kubernetes namespace names are lower case: ${given} is namespace ${namespace}` });
    }
    for (const key of Object.keys(params)) if (key !== DEF_FILES && key !== "namespace") ignored.push({ path: `additionalParams.${key}`, message: "not a parameter of a CNF" });
    if (problems.length) throw new ConfigError(problems, source);

    const config: Record<string, unknown> = {
        vnfKind: "cnf",
        ...(options.packageDir !== undefined ? { packageDir: options.packageDir } : {}),
        cnf: {
            manifests: (files as string[]).map((f) => f.replace(/^(\.\/)+/, "")),
            ...(namespace !== undefined ? { namespace } : {}),
            instanceId: options.instanceId,
            replicas: options.replicas ?? {},
            vim: options.vim,
        },
    };
    const loaded = parseConvertedConfig(config, { stackName: options.stackName, baseDir: options.baseDir, requirePackageFiles: options.packageDir !== undefined }, source, toRequestPath);
    warnings.push(...loaded.warnings.map(toRequestPath));
    return { config, secrets: findSecrets(config), ignored, defaulted: [], warnings, loaded };
}

/** A problem named by the request field it came from. */
function toRequestPath(p: ConfigProblem): ConfigProblem {
    const manifest = /^cnf\.manifests(\[\d+\])?/.exec(p.path);
    if (manifest) return { path: `additionalParams.${DEF_FILES}${manifest[1] ?? ""}`, message: p.message };
    if (p.path === "cnf.namespace") return { path: "additionalParams.namespace", message: p.message };
    const vimField = { "cnf.vim.endpoint": "interfaceInfo.endpoint", "cnf.vim.caCertificate": "interfaceInfo.ssl_ca_cert", "cnf.vim.token": "accessInfo.bearer_token" }[p.path];
    if (vimField) return { path: `vimConnectionInfo[].${vimField} (or the registered VIM's)`, message: p.message };
    return { path: `${p.path} (stack config)`, message: p.message };
}
