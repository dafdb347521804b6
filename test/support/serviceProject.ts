/**
 * A project folder for an LCM service under test: this project's program (linked; index.ts copied), its own Pulumi.yaml
 * copy, an empty `stacks/` and no state yet, as a fresh clone has them. The service's stacks, their config
 * files and the Pulumi state stay in it, and go with it.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { PROJECT_DIR } from "./program";

const PROGRAM = ["package.json", "tsconfig.json", "node_modules", "config", "components", "providers", "loader"];

export interface ServiceProject {
    dir: string;
    /** A stack's config file, as text (undefined while there is none). */
    stackFileText(stack: string): string | undefined;
    /** A stack's config, each encrypted value shown as "[secure]" (ciphertexts change with each set); {} while there is none. */
    stackConfig(stack: string): Record<string, unknown>;
    remove(): void;
}

export function serviceProject(): ServiceProject {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "k8s-vnf-project-"));
    fs.copyFileSync(path.join(PROJECT_DIR, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
    fs.mkdirSync(path.join(dir, "stacks"));
    for (const entry of PROGRAM) fs.symlinkSync(path.join(PROJECT_DIR, entry), path.join(dir, entry));
    // A copy, not a link: Node resolves a linked module to its real path, and the program reads files (a
    // stack's packageDir) relative to its own directory, which must be this project's.
    // The entry (Pulumi.yaml main) too: it loads the index.ts beside it.
    for (const file of ["index.ts", "main.js"]) fs.copyFileSync(path.join(PROJECT_DIR, file), path.join(dir, file));
    return {
        dir,
        stackFileText: (stack) => {
            const file = path.join(dir, "stacks", `Pulumi.${stack}.yaml`);
            return fs.existsSync(file) ? fs.readFileSync(file, "utf8") : undefined;
        },
        stackConfig(stack) {
            const text = this.stackFileText(stack);
            const config = (text ? YAML.parse(text).config : undefined) ?? {};
            return JSON.parse(JSON.stringify(config, (_k, v) => (v && typeof v === "object" && typeof v.secure === "string" ? "[secure]" : v)));
        },
        remove: () => fs.rmSync(dir, { recursive: true, force: true }),
    };
}
