/**
 * The example stacks built under mocks as `pulumi up` would register them, for the graph suites (graph*.spec.ts):
 * resource types, the passwords each stack needs, and lookups into the recorded graph.
 */
import { configFromPulumiMap, parseVnfConfig } from "../../config/load";
import { buildVnf } from "../../components/vnf";
import { ComputedOutputs, Graph, installMocks, PROJECT_DIR, readStackConfig, recordingTransformation, resolveOutputs, settled, withSecrets } from "./program";

export const T = {
    instance: "openstack:compute/instance:Instance",
    port: "openstack:networking/port:Port",
    fip: "openstack:networking/floatingIp:FloatingIp",
    sg: "openstack:networking/secGroup:SecGroup",
    rule: "openstack:networking/secGroupRule:SecGroupRule",
    serverGroup: "openstack:compute/serverGroup:ServerGroup",
    volume: "openstack:blockstorage/volume:Volume",
    attach: "openstack:compute/volumeAttach:VolumeAttach",
    node: "pulumi-nodejs:dynamic/k8s-vnf:KubernetesNode",
    lb: "pulumi-nodejs:dynamic/k8s-vnf:ApiLoadBalancer",
    init: "pulumi-nodejs:dynamic/k8s-vnf:KubeadmInit",
    podNetwork: "pulumi-nodejs:dynamic/k8s-vnf:PodNetwork",
    master: "pulumi-nodejs:dynamic/k8s-vnf:ControlPlaneMember",
    worker: "pulumi-nodejs:dynamic/k8s-vnf:WorkerMember",
    labels: "pulumi-nodejs:dynamic/k8s-vnf:NodeLabels",
    nfsServer: "pulumi-nodejs:dynamic/k8s-vnf:NfsServer",
    nfsClient: "pulumi-nodejs:dynamic/k8s-vnf:NfsClient",
    healCheck: "pulumi-nodejs:dynamic/k8s-vnf:StorageHealCheck",
    registryServer: "pulumi-nodejs:dynamic/k8s-vnf:RegistryServer",
    registryConnections: "pulumi-nodejs:dynamic/k8s-vnf:RegistryConnections",
    pv: "kubernetes:core/v1:PersistentVolume",
    k8sProvider: "pulumi:providers:kubernetes",
};

/** The `openstack:*` credentials a podaffinity stack needs for its compute-host labels. */
export const OPENSTACK_CONFIG = {
    "openstack:authUrl": "https://keystone.example:5000/v3",
    "openstack:userName": "admin",
    "openstack:password": "os-pw-not-in-clear",
    "openstack:tenantName": "admin",
};
export const OPENSTACK_API = { authUrl: "https://keystone.example:5000/v3", username: "admin", password: "os-pw-not-in-clear", projectName: "admin", userDomainName: "Default", projectDomainName: "Default" };

export const PASSWORDS: Record<string, Record<string, Record<string, unknown>>> = {
    simple: { masters: { password: "m-pw" }, workers: { password: "w-pw" } },
    complex: { masters: { password: "m-pw" }, workers: { password: "w-pw" } },
    podaffinity: { masters: { password: "m-pw" }, workers: { password: "w-pw" } },
    storage: { masters: { password: "m-pw" }, workers: { password: "w-pw" }, storageServer: { password: "s-pw" } },
    registry: { registry: { password: "r-pw", tls: { privateKey: "-----BEGIN PRIVATE KEY-----\nregistry-key-not-in-clear\n-----END PRIVATE KEY-----\n" }, users: [{ password: "u01-pw" }] } },
    "registry-client": { masters: { password: "m-pw" }, workers: { password: "w-pw" }, privateRegistries: [{}, { password: "reg-pw" }] as any },
    kubespray: { masters: { password: "m-pw" }, workers: { password: "w-pw" }, kubespray: { password: "a-pw" }, externalLoadBalancer: { password: "lb-pw" } },
    cnf: { cnf: { vim: { token: "vim-token-not-in-clear" } } },
};

/** Builds an example stack's components with a recording transformation, as `pulumi up` would register them. */
export async function build(stack: string, change?: (raw: Record<string, any>) => void, computed?: ComputedOutputs): Promise<{ graph: Graph; outputs: any; exported: Record<string, unknown> }> {
    const { config } = withSecrets(readStackConfig(stack), PASSWORDS[stack]);
    const { raw } = configFromPulumiMap(config);
    change?.(raw);
    const { spec } = parseVnfConfig(raw, { stackName: stack, baseDir: PROJECT_DIR });
    const graph = new Graph();
    await installMocks(graph, stack, computed);
    const exported = buildVnf(spec, { compute: OPENSTACK_API }, { transformations: [recordingTransformation(graph)] });
    const outputs = await resolveOutputs(exported);
    await settled(graph);
    return { graph, outputs, exported };
}

export const isSecret = (v: any) => v && typeof v === "object" && v["4dabf18193072939515e22adb298388d"] === "1b47061264138c4ac30d75fd1eb44270";

export function rulePorts(graph: Graph, groupResource: string): string[] {
    return graph
        .ofType(T.rule)
        .filter((r) => r.parent === groupResource)
        .map((r) => `${r.inputs.protocol}:${r.inputs.portRangeMin ?? ""}-${r.inputs.portRangeMax ?? ""}:${r.inputs.remoteIpPrefix ?? "group"}`);
}


export const dependencyNames = (r: { opts: { dependsOn?: unknown } }) => ([] as unknown[]).concat(r.opts.dependsOn ?? []).map((d) => (d as { __name: string }).__name);
