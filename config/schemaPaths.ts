/**
 * Which key paths the stack config has, read from its schema (config/schema.ts), so that what the docs name
 * can be checked against what the program takes.
 */
import { z } from "zod";
import { StackConfigSchema } from "./schema";

type Def = { type: string; innerType?: z.ZodType; element?: z.ZodType; shape?: Record<string, z.ZodType>; in?: z.ZodType; options?: z.ZodType[]; valueType?: z.ZodType; getter?: () => z.ZodType };
const defOf = (schema: z.ZodType) => (schema as unknown as { def: Def }).def;

/** The schema under optional, default, nullable, readonly, catch, a pipe's input and lazy. */
function unwrapped(schema: z.ZodType): z.ZodType {
    const def = defOf(schema);
    if (def.innerType) return unwrapped(def.innerType);
    if (def.type === "pipe" && def.in) return unwrapped(def.in);
    if (def.type === "lazy" && def.getter) return unwrapped(def.getter());
    return schema;
}

function hasKeys(schema: z.ZodType, keys: string[]): boolean {
    const s = unwrapped(schema);
    const def = defOf(s);
    if (def.type === "array" && def.element) return hasKeys(def.element, keys);
    if (!keys.length) return true;
    if (def.type === "object") {
        const next = (s as unknown as { shape: Record<string, z.ZodType> }).shape[keys[0]];
        return next !== undefined && hasKeys(next, keys.slice(1));
    }
    if (def.type === "union" && def.options) return def.options.some((option) => hasKeys(option, keys));
    if (def.type === "record" && def.valueType) return hasKeys(def.valueType, keys.slice(1));
    return false;
}

/** Whether the stack config has the key path `dotted` (`externalLoadBalancer.networkId`; `[]` or `[N]` for a list's elements). */
export function configHasPath(dotted: string): boolean {
    return hasKeys(StackConfigSchema, dotted.replace(/\[\d*\]/g, "").split("."));
}
