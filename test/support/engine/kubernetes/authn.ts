/**
 * Who a kubeconfig is, as client-go and the API server's authenticators decide it.
 *
 * The client side (k8s.io/client-go/tools/clientcmd/client_config.go, validation.go; transport/cache.go):
 * the active context's cluster and user; `certificate-authority-data` together with `insecure-skip-tls-verify` is
 * refused, a client certificate needs its key; the server's certificate must chain to the CA the kubeconfig names
 * (none named and not insecure: the system roots, which do not hold a cluster's own CA), else the TLS handshake's
 * "x509: certificate signed by unknown authority".
 *
 * The server side: the x509 authenticator (k8s.io/apiserver/pkg/authentication/request/x509/x509.go
 * CommonNameUserConversion: the user is the subject's CN, its groups the subject's O values) for a certificate
 * the cluster CA signed; the legacy service-account token authenticator (pkg/serviceaccount/legacy.go: the Secret
 * holding the token must exist, and its ServiceAccount with the UID the Secret names) for a bearer token, user
 * `system:serviceaccount:<ns>:<name>` in groups system:serviceaccounts and system:serviceaccounts:<ns>
 * (k8s.io/apiserver/pkg/authentication/serviceaccount/util.go); anything else is 401 "Unauthorized". An
 * authenticated user is also in system:authenticated (request/union group adder, authenticator config).
 */
import * as YAML from "yaml";
import { StatusError, unauthorized } from "./errors";
import { kindNamed } from "./kinds";
import { ObjectStore } from "./store";

export interface UserInfo {
    name: string;
    groups: string[];
}

type Props = Record<string, any>;

export interface ActiveConfig {
    server: string;
    userName: string;
    cluster: Props;
    user: Props;
}

/** The kubeconfig's current context (getActiveClusterFromConfig and clientcmd's DirectClientConfig). */
export function activeConfig(kubeconfig: string): ActiveConfig {
    const doc = (kubeconfig ? YAML.parse(kubeconfig) : {}) as Props;
    const context = (doc.contexts ?? []).find((c: Props) => c.name === doc["current-context"])?.context ?? {};
    const clusterName = context.cluster ?? doc.clusters?.[0]?.name;
    const cluster = (doc.clusters ?? []).find((c: Props) => c.name === clusterName)?.cluster ?? {};
    const user = (doc.users ?? []).find((u: Props) => u.name === context.user)?.user ?? {};
    return { server: String(cluster.server ?? ""), userName: String(context.user ?? ""), cluster, user };
}

const decode = (b64: unknown) => Buffer.from(String(b64), "base64").toString("utf8");

/** The client's own refusals of a kubeconfig, before any request (clientcmd validation, TLS). */
export function clientRefusal(config: ActiveConfig, caPem: string, url: string): string | undefined {
    const { cluster, user } = config;
    const insecure = cluster["insecure-skip-tls-verify"] === true || cluster["insecure-skip-tls-verify"] === "true";
    if (insecure && (cluster["certificate-authority-data"] || cluster["certificate-authority"])) return "specifying a root certificates file with the insecure flag is not allowed";
    if (Boolean(user["client-certificate-data"]) !== Boolean(user["client-key-data"])) return `client-cert-data and client-key-data must both be specified for ${config.userName} to use the clientCert authentication method`;
    if (cluster["certificate-authority-data"]) {
        const pem = decode(cluster["certificate-authority-data"]);
        if (!pem.includes("-----BEGIN CERTIFICATE-----")) return "unable to load root certificates: unable to parse bytes as PEM block";
        if (pem.trim() !== caPem.trim()) return `Get "${url}": tls: failed to verify certificate: x509: certificate signed by unknown authority`;
    } else if (!insecure) {
        return `Get "${url}": tls: failed to verify certificate: x509: certificate signed by unknown authority`;
    }
    return undefined;
}

/** The stand-in client certificate: what bin/kubeadm writes (`Subject: O=..., CN=...`, `Issuer: <the CA's text>`). */
export function certificateSubject(pem: string): { cn: string; orgs: string[]; issuer: string } | undefined {
    const subject = /^Subject: (.*)$/m.exec(pem)?.[1];
    const issuer = /^Issuer: (.*)$/m.exec(pem)?.[1] ?? "";
    if (subject === undefined) return undefined;
    const parts = subject.split(/,\s*/).map((p) => p.split("=") as [string, string]);
    return { cn: parts.find(([k]) => k === "CN")?.[1] ?? "", orgs: parts.filter(([k]) => k === "O").map(([, v]) => v), issuer };
}

export function authenticate(config: ActiveConfig, store: ObjectStore): UserInfo {
    const { user } = config;
    if (user["client-certificate-data"]) {
        const subject = certificateSubject(decode(user["client-certificate-data"]));
        const caText = /^stand-in CA .*$/m.exec(store.caPem())?.[0];
        if (!subject || subject.issuer !== caText || !subject.cn) throw unauthorized();
        return { name: subject.cn, groups: [...subject.orgs, "system:authenticated"] };
    }
    if (user.token) return serviceAccountOfToken(String(user.token), store);
    throw unauthorized();
}

function serviceAccountOfToken(token: string, store: ObjectStore): UserInfo {
    const encoded = Buffer.from(token).toString("base64");
    const secret = store
        .list(kindNamed("Secret"))
        .find((s) => s.type === "kubernetes.io/service-account-token" && s.data?.token === encoded && !s.metadata.deletionTimestamp);
    if (!secret) throw unauthorized();
    const namespace = secret.metadata.namespace;
    const saName = secret.metadata.annotations?.["kubernetes.io/service-account.name"];
    const sa = store.get(kindNamed("ServiceAccount"), namespace, saName);
    if (!sa || sa.metadata.uid !== secret.metadata.annotations?.["kubernetes.io/service-account.uid"]) throw unauthorized();
    return { name: `system:serviceaccount:${namespace}:${saName}`, groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, "system:authenticated"] };
}

export const isUnauthorized = (e: unknown) => e instanceof StatusError && e.reason === "Unauthorized";
