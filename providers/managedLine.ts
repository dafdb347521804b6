/**
 * ManagedLine: exactly one copy of a line in a file on a host (e.g. an /etc/hosts entry). The smallest
 * real step, and the model for the others: script beside it, arguments quoted by `sh`, idempotent.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { StepPlan } from "./remoteActions";
import { Failure, StepDefinition, StepProvider } from "./step";
import { StepResource } from "./stepResource";
import { HostScript, SshTarget } from "./transport/ssh";

/** Read when the program loads; travels with the serialized provider (once: see HostScript). */
const SCRIPT: HostScript = { text: fs.readFileSync(path.join(__dirname, "managedLine.sh"), "utf8") };

interface ManagedLineInputs {
    [key: string]: unknown;
    path: string;
    line: string;
    mode: string;
    sudo: boolean;
}

export const managedLineStep: StepDefinition<ManagedLineInputs> = {
    kind: "ManagedLine",
    version: "1",
    outputs: [],
    replaceOn: ["path"],
    deleteBeforeReplace: false,
    deleteSucceedsWhenUnreachable: false,
    validate(i): Failure[] {
        const failures: Failure[] = [];
        if (typeof i.path !== "string" || !/^\/[A-Za-z0-9._/+@-]+$/.test(i.path) || i.path.split("/").includes("..")) failures.push({ property: "path", reason: "must be an absolute path" });
        if (typeof i.line !== "string" || i.line === "" || /[\n\r\0]/.test(i.line)) failures.push({ property: "line", reason: "must be one non-empty line" });
        if (i.mode !== undefined && (typeof i.mode !== "string" || !/^0?[0-7]{3}$/.test(i.mode))) failures.push({ property: "mode", reason: "must be an octal file mode such as 0644" });
        return failures;
    },
    id: (i) => `${i.connection.host}:${i.path}`,
    async create(s, i) {
        await s.runScript(SCRIPT, ["ensure", i.path, i.line, "", i.mode], { sudo: i.sudo });
        return {};
    },
    async update(s, olds, news) {
        await s.runScript(SCRIPT, ["ensure", news.path, news.line, olds.line, news.mode], { sudo: news.sudo });
        return {};
    },
    async delete(s, outs) {
        await s.runScript(SCRIPT, ["remove", outs.path, outs.line], { sudo: outs.sudo });
    },
    async read(s, outs) {
        const count = Number((await s.runScript(SCRIPT, ["count", outs.path, outs.line], { sudo: outs.sudo })).stdout.trim());
        return count === 0 ? undefined : { line: outs.line };
    },
};

/** The one provider instance of this step kind (its serialization is cached per instance). */
export const managedLineProvider = new StepProvider(managedLineStep);

export interface ManagedLineArgs {
    /** Host to edit, and how to log in. */
    connection: pulumi.Input<SshTarget>;
    /** Absolute path of the file. */
    path: pulumi.Input<string>;
    /** The line, whole (no newline). */
    line: pulumi.Input<string>;
    /** Mode of the file if it has to be created; default 0644. */
    mode?: pulumi.Input<string>;
    /** Edit as root (through sudo); default true. */
    sudo?: pulumi.Input<boolean>;
}

const managedLinePlan: StepPlan<ManagedLineArgs> = (a, subject) => [
    { when: ["create", "update"], action: `ensure the line in the file (${subject})`, script: SCRIPT, rendered: { path: a.path, line: a.line, mode: a.mode } },
    { when: ["delete"], action: `remove the line from the file (${subject})`, script: SCRIPT, rendered: { path: a.path, line: a.line } },
];

export class ManagedLine extends StepResource {
    declare readonly path: pulumi.Output<string>;
    declare readonly line: pulumi.Output<string>;

    constructor(name: string, args: ManagedLineArgs, opts?: pulumi.CustomResourceOptions) {
        super(managedLineProvider, managedLineStep, managedLinePlan, name, { ...args, mode: args.mode ?? "0644", sudo: args.sudo ?? true }, opts);
    }
}
