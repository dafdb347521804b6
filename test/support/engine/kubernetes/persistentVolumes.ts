/**
 * PersistentVolumes keep the layout the lab's kubectl stand-in lists and the storage suites read:
 * `$STATE/pvs/NAME/state` holds `phase=`, `claim=`, `uid=` lines, `$STATE/pvs/NAME/object.json` the object's
 * metadata and spec. The API server adds the `kubernetes.io/pv-protection` finalizer on create
 * (storageobjectinuseprotection admission); the PV controller makes a new PV with no claim Available
 * (pkg/controller/volume/persistentvolume/pv_controller.go syncVolume). The provider's awaiter
 * (untilCoreV1PersistentVolumeInitialized) waits, for a fixed 5 minutes, for Available or Bound.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { randomUUID } from "node:crypto";
import { alreadyExists, notFound } from "./errors";
import { kindNamed } from "./kinds";
import { kv, Obj, writeAtomically } from "./store";

export const PV_AWAIT_LIMIT_MS = 5 * 60_000;
const PV = kindNamed("PersistentVolume");

export function pvFiles(clusterDir: string, name: string) {
    const dir = path.join(clusterDir, "pvs", name);
    return { dir, state: path.join(dir, "state"), object: path.join(dir, "object.json") };
}

export function createPersistentVolume(clusterDir: string, pv: Obj): void {
    const name = String(pv.metadata.name);
    const files = pvFiles(clusterDir, name);
    if (fs.existsSync(files.state)) throw alreadyExists(PV, name);
    fs.mkdirSync(files.dir, { recursive: true });
    const metadata = { ...pv.metadata, uid: randomUUID(), creationTimestamp: new Date().toISOString(), finalizers: ["kubernetes.io/pv-protection"] };
    writeAtomically(files.object, JSON.stringify({ metadata, spec: pv.spec }));
    writeAtomically(files.state, `phase=${pv.spec?.claimRef ? "Pending" : "Available"}\nuid=${metadata.uid}\n`);
}

export function applyPersistentVolume(clusterDir: string, name: string, pv: Obj): void {
    const files = pvFiles(clusterDir, name);
    if (!fs.existsSync(files.state)) throw notFound("persistentvolumes", name);
    const object = JSON.parse(fs.readFileSync(files.object, "utf8")) as Obj;
    writeAtomically(files.object, JSON.stringify({ metadata: { ...object.metadata, labels: pv.metadata?.labels, annotations: pv.metadata?.annotations }, spec: pv.spec }));
}

export const persistentVolumePhase = (clusterDir: string, name: string) => kv(pvFiles(clusterDir, name).state).phase;

export function removePersistentVolume(clusterDir: string, name: string): void {
    fs.rmSync(pvFiles(clusterDir, name).dir, { recursive: true, force: true });
}

export function livePersistentVolume(clusterDir: string, name: string): Obj | undefined {
    const files = pvFiles(clusterDir, name);
    if (!fs.existsSync(files.state)) return undefined;
    const object = JSON.parse(fs.readFileSync(files.object, "utf8")) as Obj;
    const state = kv(files.state);
    const claimRef = state.claim ? { claimRef: { namespace: state.claim.split("/")[0], name: state.claim.split("/")[1] } } : {};
    return { apiVersion: "v1", kind: "PersistentVolume", metadata: object.metadata, spec: { ...object.spec, ...claimRef }, status: { phase: state.phase } };
}
