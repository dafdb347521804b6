/**
 * What a step resource registers as its provider: the step provider's serialized code, compressed, behind six
 * methods that unpack it in the provider host and hand each call on to it.
 *
 * Every dynamic resource carries its provider's code as the `__provider` input, and the SDK sends it with each
 * registration, gets it back in the outputs and logs that response too. A step's code is 50–75 KB, twice per worker;
 * moving it was most of what the program's evaluation cost per worker (bench/evaluation.ts). Compressed it is a
 * fifth of that. What runs is unchanged: the same text the SDK would register for the step's provider
 * (`serializeFunction(() => provider, {allowSecrets: true})`, dynamic/index.js serializeProvider), loaded as the
 * host loads `__provider`. It is still stored with each resource, so a delete runs the code its resource was
 * created or last updated with. The compressed code is kept between runs (providerCodeCache.ts).
 */
import * as pulumi from "@pulumi/pulumi";
import { createRequire } from "node:module";
import * as path from "node:path";
import * as zlib from "node:zlib";
import { cachedProviderCode } from "./providerCodeCache";

type Provider = pulumi.dynamic.ResourceProvider;
/** The methods a step provider implements, all of which the packed one hands on. */
export type CompleteProvider = Required<Pick<Provider, "check" | "diff" | "create" | "update" | "delete" | "read">>;

/** A step provider's code as the packed provider carries it, and that provider once unpacked in the host. */
interface PackedCode {
    /** The serialized provider, Brotli-compressed, base64 (the closure serializer stores the promise's value). */
    compressed: Promise<string>;
    unpacked?: Promise<CompleteProvider>;
}

const BROTLI_QUALITY = 6;

const packedProviders = new WeakMap<CompleteProvider, CompleteProvider>();

/** The packed form of the provider of step `kind` (one per provider, so the SDK serializes each once). */
export function packedProvider(kind: string, provider: CompleteProvider): CompleteProvider {
    let packed = packedProviders.get(provider);
    if (!packed) {
        packed = unpackingProvider({ compressed: cachedProviderCode(kind, () => pack(provider)) });
        packedProviders.set(provider, packed);
    }
    return packed;
}

async function pack(provider: CompleteProvider): Promise<string> {
    const serialized = await pulumi.runtime.serializeFunction(() => provider, { allowSecrets: true });
    // The SDK would register such code as a secret; a step's code never captures one (credentials are inputs).
    if (serialized.containsSecrets) throw new Error("a step provider's code captures a secret");
    const text = Buffer.from(serialized.text, "utf8");
    return zlib
        .brotliCompressSync(text, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: text.length } })
        .toString("base64");
}

function unpackingProvider(code: PackedCode): CompleteProvider {
    const provider = (): Promise<CompleteProvider> => {
        // Kept once loaded; a failure is tried again at the next call, as the host's own getProvider does.
        if (!code.unpacked)
            code.unpacked = unpack(code.compressed).catch((error) => {
                code.unpacked = undefined;
                throw error;
            });
        return code.unpacked;
    };
    return {
        check: async (olds, news) => (await provider()).check(olds, news),
        diff: async (id, olds, news) => (await provider()).diff(id, olds, news),
        create: async (inputs) => (await provider()).create(inputs),
        update: async (id, olds, news) => (await provider()).update(id, olds, news),
        delete: async (id, props) => (await provider()).delete(id, props),
        read: async (id, props) => (await provider()).read(id, props),
    };
}

/**
 * Loads the code as the provider host loads `__provider` (cmd/dynamic-provider/index.js getProvider:
 * `requireFromString(text).handler()`): a module whose requires resolve from the host's working directory, the
 * project's, whose node_modules hold the packages the code requires by name.
 */
async function unpack(compressed: Promise<string>): Promise<CompleteProvider> {
    const text = zlib.brotliDecompressSync(Buffer.from(await compressed, "base64")).toString("utf8");
    const module = { exports: {} as { handler?: () => CompleteProvider } };
    new Function("exports", "require", "module", text)(module.exports, createRequire(path.join(process.cwd(), "step-provider.js")), module);
    return module.exports.handler!();
}
