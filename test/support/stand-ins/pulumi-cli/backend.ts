/**
 * The diy ("file://") state backend as the Pulumi CLI opens and uses it (v3.248.0):
 * - the URL is PULUMI_BACKEND_URL, else Pulumi.yaml's `backend.url` (pkg/workspace/creds.go
 *   `GetCurrentCloudURL`); a relative `file://` path is made absolute against the CLI's working directory,
 *   `~` against the home directory (pkg/backend/diy/backend.go `massageBlobPath`);
 * - the folder must exist unless the URL has a `create_dir` parameter, any non-empty value (gocloud.dev
 *   v0.46.0 blob/fileblob `openBucket`, opened by `newDIYBackend`: "unable to open bucket …");
 * - stacks live in `.pulumi/stacks/<project>/<stack>.json` (pkg/backend/diy/store.go, project mode), update
 *   histories in `.pulumi/history/<project>/<stack>/`;
 * - an update, refresh or destroy holds a lock file `.pulumi/locks/organization/<project>/<stack>/<uuid>.json`
 *   while it runs; any other lock refuses it (lock.go `checkForLock`), a killed CLI leaves its lock behind,
 *   and `pulumi cancel` deletes every lock of the stack (backend.go `CancelCurrentUpdate`).
 */
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Project } from "./project";

interface LockContent {
    pid: number;
    username: string;
    hostname: string;
    timestamp: string;
}

export class DiyBackend {
    private constructor(
        /** The URL as the backend keeps it (`massageBlobPath`'s result). */
        readonly url: string,
        private readonly root: string,
        private readonly project: Project,
    ) {}

    static open(project: Project, env: NodeJS.ProcessEnv, cwd: string): DiyBackend {
        const original = env.PULUMI_BACKEND_URL || project.backendUrl;
        if (!original) throw new Error("the stand-in has no stored login: set PULUMI_BACKEND_URL or Pulumi.yaml's backend.url");
        if (!original.startsWith("file://")) throw new Error(`the stand-in Pulumi CLI supports file:// backends only, not ${original}`);
        const [rawPath, rawQuery = ""] = original.slice("file://".length).split("?");
        const query = new URLSearchParams(rawQuery);
        if (!query.get("no_tmp_dir")) query.set("no_tmp_dir", "true");
        const home = os.homedir();
        const expanded = rawPath === "~" ? home : rawPath.startsWith("~/") ? path.join(home, rawPath.slice(2)) : rawPath;
        const root = path.resolve(cwd, expanded);
        const url = `file://${root}?${[...query.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&")}`;
        if (!fs.existsSync(root)) {
            if (!query.get("create_dir")) throw new Error(`unable to open bucket ${url}: stat ${root}: no such file or directory`);
            fs.mkdirSync(root, { recursive: true });
        } else if (!fs.statSync(root).isDirectory()) {
            throw new Error(`unable to open bucket ${url}: ${root} is not a directory`);
        }
        const meta = path.join(root, ".pulumi", "meta.yaml");
        if (!fs.existsSync(meta)) {
            fs.mkdirSync(path.dirname(meta), { recursive: true });
            fs.writeFileSync(meta, "version: 1\n");
        }
        return new DiyBackend(url, root, project);
    }

    checkpointFile(stack: string): string {
        return path.join(this.root, ".pulumi", "stacks", this.project.name, `${stack}.json`);
    }

    /** The stand-in's record of the stack's outputs (see outputs.ts). */
    outputsFile(stack: string): string {
        return path.join(this.root, ".pulumi", "stacks", this.project.name, `${stack}.outputs.json`);
    }

    stackExists(stack: string): boolean {
        return fs.existsSync(this.checkpointFile(stack));
    }

    requireStack(stack: string): void {
        if (!this.stackExists(stack)) throw new Error(`no stack named '${stack}' found`);
    }

    createStack(stack: string): void {
        if (this.stackExists(stack)) throw new Error(`stack '${stack}' already exists`);
        fs.mkdirSync(path.dirname(this.checkpointFile(stack)), { recursive: true });
        fs.writeFileSync(this.checkpointFile(stack), JSON.stringify({ resources: [], outputs: {} }), { mode: 0o600 });
    }

    /** Takes the stack's lock (`Lock`); returns the unlock. */
    lock(stack: string): () => void {
        const mine = path.join(this.lockDir(stack), `${randomUUID()}.json`);
        this.checkForLock(stack, mine);
        const content: LockContent = { pid: process.pid, username: os.userInfo().username, hostname: os.hostname(), timestamp: new Date().toISOString() };
        fs.mkdirSync(path.dirname(mine), { recursive: true });
        fs.writeFileSync(mine, JSON.stringify(content));
        try {
            this.checkForLock(stack, mine);
        } catch (e) {
            fs.rmSync(mine, { force: true });
            throw e;
        }
        return () => fs.rmSync(mine, { force: true });
    }

    /** `CancelCurrentUpdate`: every lock file of the stack deleted. */
    cancel(stack: string): void {
        for (const file of this.locks(stack)) fs.rmSync(file, { force: true });
    }

    addHistory(stack: string, entry: Record<string, unknown>): void {
        const dir = path.join(this.root, ".pulumi", "history", this.project.name, stack);
        fs.mkdirSync(dir, { recursive: true });
        fs.writeFileSync(path.join(dir, `${stack}-${Date.now()}.history.json`), JSON.stringify(entry));
    }

    /** Update summaries, newest first. */
    history(stack: string): Record<string, unknown>[] {
        const dir = path.join(this.root, ".pulumi", "history", this.project.name, stack);
        if (!fs.existsSync(dir)) return [];
        return fs
            .readdirSync(dir)
            .filter((f) => f.endsWith(".history.json"))
            .sort()
            .reverse()
            .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as Record<string, unknown>);
    }

    private lockDir(stack: string): string {
        return path.join(this.root, ".pulumi", "locks", "organization", this.project.name, stack);
    }

    private locks(stack: string): string[] {
        const dir = this.lockDir(stack);
        return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(".json")).map((f) => path.join(dir, f)) : [];
    }

    private checkForLock(stack: string, mine: string): void {
        const others = this.locks(stack).filter((f) => f !== mine);
        if (!others.length) return;
        const lines = others.map((file) => {
            const l = JSON.parse(fs.readFileSync(file, "utf8")) as LockContent;
            const [base, query] = this.url.split("?");
            return `\n  ${base}${file.slice(this.root.length)}?${query}: created by ${l.username}@${l.hostname} (pid ${l.pid}) at ${l.timestamp}`;
        });
        throw new Error(`the stack is currently locked by ${others.length} lock(s). Either wait for the other process(es) to end or delete the lock file with \`pulumi cancel\`.${lines.join("")}`);
    }
}
