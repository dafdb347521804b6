import type * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { TenantSpec } from "../config/spec";
import { ClusterTies, clusterObjectOptions } from "./clusterObjects";
import { kubernetesSdk } from "./kubeadmCluster";

export interface KubernetesVimArgs extends ClusterTies {
    /** `host:port` of the API server, as registered (in the certificate's SANs). */
    apiEndpoint: pulumi.Input<string>;
    /** The cluster CA (PEM). */
    caCertificate: pulumi.Input<string>;
    /** The users of the cluster, each a VIM of its own. */
    tenants: TenantSpec[];
}

/** What a Kubernetes VIM is registered with: endpoint and CA (plain), a ServiceAccount's token (secret). */
export interface VimAccess {
    endpoint: pulumi.Output<string>;
    caCertificate: pulumi.Output<string>;
    token: pulumi.Output<string>;
}

const NAMESPACE = "kube-system";
/** What a user tenant may do in each of its namespaces: everything there, nothing elsewhere. */
const NAMESPACE_OWNER_RULES = [{ apiGroups: ["*"], resources: ["*"], verbs: ["*"] }];

/**
 * The cluster as a Kubernetes VIM: a ServiceAccount bound to cluster-admin whose token the LCM service
 * registers, and one ServiceAccount per tenant (cluster-admin, or a Role in each of its namespaces). Each token
 * comes from an explicit `kubernetes.io/service-account-token` Secret: Kubernetes ≥ 1.24 no longer makes one
 * for a ServiceAccount (KEP-2799), which is where Tacker's own sample looks.
 */
export class KubernetesVim extends pulumi.ComponentResource {
    readonly access: VimAccess;
    readonly tenants: Record<string, VimAccess & { role: TenantSpec["role"]; namespaces: string[] }>;

    constructor(name: string, args: KubernetesVimArgs, opts?: pulumi.ComponentResourceOptions) {
        super("k8s-vnf:kubernetes:KubernetesVim", name, {}, opts);
        const sdk = kubernetesSdk();
        const objectOpts = (dependsOn: pulumi.Resource[] = []) => clusterObjectOptions(args, this, dependsOn);
        const endpoint = pulumi.output(args.apiEndpoint).apply((e) => `https://${e}`);
        const caCertificate = pulumi.output(args.caCertificate);

        const account = (prefix: string, accountName: string, dependsOn: pulumi.Resource[]) => {
            const serviceAccount = new sdk.core.v1.ServiceAccount(`${prefix}-account`, { metadata: { name: accountName, namespace: NAMESPACE } }, objectOpts(dependsOn));
            const secret = new sdk.core.v1.Secret(
                `${prefix}-token`,
                {
                    metadata: { name: `${accountName}-token`, namespace: NAMESPACE, annotations: { "kubernetes.io/service-account.name": accountName } },
                    type: "kubernetes.io/service-account-token",
                },
                objectOpts([serviceAccount]),
            );
            const token = pulumi.secret(secret.data.apply((data) => Buffer.from(data?.token ?? "", "base64").toString("utf8")));
            return { subject: { kind: "ServiceAccount", name: accountName, namespace: NAMESPACE }, serviceAccount, token };
        };
        const clusterAdmin = (prefix: string, accountName: string, subject: k8s.types.input.rbac.v1.Subject, serviceAccount: pulumi.Resource) =>
            new sdk.rbac.v1.ClusterRoleBinding(
                `${prefix}-cluster-admin`,
                { metadata: { name: accountName }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: "cluster-admin" }, subjects: [subject] },
                objectOpts([serviceAccount]),
            );

        const vim = account(name, "k8s-vnf-vim", []);
        clusterAdmin(name, "k8s-vnf-vim", vim.subject, vim.serviceAccount);
        this.access = { endpoint, caCertificate, token: vim.token };

        const namespaces = new Map<string, k8s.core.v1.Namespace>();
        for (const ns of [...new Set(args.tenants.flatMap((t) => t.namespaces))]) {
            namespaces.set(ns, new sdk.core.v1.Namespace(`${name}-namespace-${ns}`, { metadata: { name: ns } }, objectOpts()));
        }
        this.tenants = {};
        for (const tenant of args.tenants) {
            const prefix = `${name}-tenant-${tenant.name}`;
            const accountName = `k8s-vnf-tenant-${tenant.name}`;
            const { subject, serviceAccount, token } = account(prefix, accountName, []);
            if (tenant.role === "admin") clusterAdmin(prefix, accountName, subject, serviceAccount);
            for (const ns of tenant.namespaces) {
                const inNamespace = [serviceAccount, namespaces.get(ns)!];
                const role = new sdk.rbac.v1.Role(`${prefix}-role-${ns}`, { metadata: { name: accountName, namespace: ns }, rules: NAMESPACE_OWNER_RULES }, objectOpts(inNamespace));
                new sdk.rbac.v1.RoleBinding(
                    `${prefix}-binding-${ns}`,
                    { metadata: { name: accountName, namespace: ns }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: accountName }, subjects: [subject] },
                    objectOpts([...inNamespace, role]),
                );
            }
            this.tenants[tenant.name] = { endpoint, caCertificate, token, role: tenant.role, namespaces: tenant.namespaces };
        }
        this.registerOutputs({ endpoint, caCertificate });
    }
}
