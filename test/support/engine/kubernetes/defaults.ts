/**
 * What the API server fills in on create and keeps on update, for the modelled kinds whose live objects show it
 * (pkg/apis/core/v1/defaults.go, pkg/registry/core/namespace/strategy.go): a Secret is Opaque unless typed, its
 * stringData folded into data (pkg/apis/core/v1/conversion.go Convert_v1_Secret_To_core_Secret); a Namespace gets
 * the `kubernetes` finalizer and phase Active.
 */
import { Obj } from "./store";

export function withDefaults(kind: string, object: Obj): Obj {
    switch (kind) {
        case "Secret": {
            const data = { ...object.data };
            for (const [k, v] of Object.entries((object.stringData ?? {}) as Record<string, string>)) data[k] = Buffer.from(v).toString("base64");
            const { stringData: _folded, ...rest } = object;
            return { ...rest, type: object.type ?? "Opaque", ...(Object.keys(data).length ? { data } : {}) };
        }
        case "Namespace":
            return { ...object, spec: { finalizers: ["kubernetes"] }, status: { phase: "Active" } };
        default:
            return object;
    }
}
