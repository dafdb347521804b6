/**
 * Which changed fields replace an object: pulumi-kubernetes v4.32.0 provider/pkg/provider/diff.go forceNew table,
 * for the modelled kinds (always .metadata.name and .metadata.namespace; Secret: .type, .stringData, .data unless
 * enableSecretMutable, off by default; PV volume sources; RoleBinding/ClusterRoleBinding .roleRef).
 */
import { PV_SOURCES } from "./validation";
import { KindInfo } from "./kinds";
import { Obj } from "./store";

const FORCE_NEW: Record<string, string[]> = {
    "/PersistentVolume": PV_SOURCES.map((s) => `spec.${s}`),
    "/Secret": ["type", "stringData", "data"],
    "rbac.authorization.k8s.io/RoleBinding": ["roleRef"],
    "rbac.authorization.k8s.io/ClusterRoleBinding": ["roleRef"],
};

/** The value at a dotted path. */
const valueAt = (object: unknown, path: string): unknown => path.split(".").reduce<unknown>((v, key) => (v && typeof v === "object" ? (v as Obj)[key] : undefined), object);

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The forceNew paths whose values differ between old and new inputs. */
export function replacingChanges(kind: KindInfo, olds: Obj, news: Obj): string[] {
    const paths = ["metadata.name", "metadata.namespace", ...(FORCE_NEW[`${kind.group}/${kind.kind}`] ?? [])];
    return paths.filter((p) => !same(valueAt(olds, p), valueAt(news, p)));
}
