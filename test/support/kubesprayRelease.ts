/**
 * The lab's kubespray stand-in (test/lab/stand-ins/kubespray) packed as the release archive GitHub serves
 * (`kubespray-<version>.tar.gz`, one top directory `kubespray-<version>/`), which a VNF package for an
 * air-gapped site carries as `Files/kubespray/kubespray-<version>.tar.gz`.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

export const KUBESPRAY_STAND_IN = path.join(__dirname, "../lab/stand-ins/kubespray");

/** The release the stand-in stands in for, `v2.23.3`. */
export const KUBESPRAY_STAND_IN_VERSION = fs.readFileSync(path.join(KUBESPRAY_STAND_IN, "VERSION"), "utf8").trim();

/** Writes the stand-in's release archive into `packageDir`; returns its path relative to the package. */
export function packKubesprayRelease(packageDir: string): string {
    const relative = `Files/kubespray/kubespray-${KUBESPRAY_STAND_IN_VERSION.slice(1)}.tar.gz`;
    fs.mkdirSync(path.join(packageDir, "Files/kubespray"), { recursive: true });
    const top = `kubespray-${KUBESPRAY_STAND_IN_VERSION.slice(1)}`;
    const r = spawnSync("tar", ["-czf", path.join(packageDir, relative), "--exclude=./.standin", "--transform", `s,^\\.,${top},`, "-C", KUBESPRAY_STAND_IN, "."], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`tar: ${r.stderr}`);
    return relative;
}

/** One ansible-playbook run as the stand-in records it in `<kubespray root>/.standin/runs.log`. */
export interface PlaybookRun {
    playbook: string;
    limit: string | null;
    vars: Record<string, unknown>;
    groups: Record<string, string[]>;
}

/** The runs a log's text lists, in order. */
export function parsePlaybookRuns(text: string): PlaybookRun[] {
    return text
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
}
