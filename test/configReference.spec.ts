/**
 * The configuration reference (docs/configuration.md) is made from the schema: every key at every depth, each
 * with a description, a type, and its default and allowed values where it has them. (cli.spec.ts checks the
 * file is current.)
 */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { schemaReference, stackConfigKeys } from "../cli/schemaReference";
import { CONFIG_KEYS } from "../config/schema";
import { PROJECT_DIR } from "./support/program";

describe("configuration reference from the schema", () => {
    const keys = stackConfigKeys(PROJECT_DIR);

    it("lists every key at every depth, each with its type and a description", () => {
        assert.deepEqual(keys.filter((k) => !k.path.includes(".") && !k.path.includes("[")).map((k) => k.path), [...CONFIG_KEYS]);
        assert.ok(keys.length > 150, `keys at every depth: ${keys.length}`);
        assert.deepEqual(keys.filter((k) => !k.description).map((k) => k.path), [], "every key described");
        assert.deepEqual(keys.filter((k) => !k.type || k.type === "any").map((k) => k.path), [], "every key typed");
    });

    it("gives defaults, allowed values and nested keys as the schema has them", () => {
        const at = (p: string) => keys.find((k) => k.path === p);
        assert.deepEqual([at("masters.username")?.default, at("flavour")?.allowed], ["ubuntu", "`simple`, `complex`, `podaffinity`"]);
        assert.equal(at("storageServer.volumes[].sizeGb")?.default, 5);
        assert.equal(at("registry.users[].password")?.type, "string");
        const doc = fs.readFileSync(path.join(PROJECT_DIR, "docs/configuration.md"), "utf8");
        assert.ok(doc.includes(schemaReference(PROJECT_DIR)), "docs/configuration.md holds the reference (`npm run docs`)");
        assert.match(doc, /\| `workers\.portMove\.from\.networkId` \| string \|/);
    });
});
