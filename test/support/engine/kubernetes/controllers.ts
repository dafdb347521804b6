/**
 * The kube-controller-manager controllers the modelled kinds need, level-triggered: `reconcile` runs each over the
 * stored objects until nothing changes, and the stand-in calls it before each read an awaiter or a delete's wait
 * makes, so a cluster converges while it is watched, as a real one does while the provider waits.
 *
 * - namespace controller (pkg/controller/namespace/deletion/namespaced_resources_deleter.go): a Namespace being
 *   deleted loses all its content, then its `kubernetes` finalizer, then is gone;
 * - token controller (pkg/controller/serviceaccount/tokens_controller.go syncSecret, generateTokenIfNeeded): a
 *   `kubernetes.io/service-account-token` Secret of an existing ServiceAccount gets data.token, data["ca.crt"] (the
 *   cluster CA), data.namespace and the `kubernetes.io/service-account.uid` annotation; one whose ServiceAccount is
 *   missing (or has another UID) is deleted (deleteToken).
 */
import { randomBytes } from "node:crypto";
import { KindInfo, KINDS, kindNamed } from "./kinds";
import { Obj, ObjectStore } from "./store";

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const alive = (o: Obj) => !o.metadata.deletionTimestamp;

export class Controllers {
    private changed = false;

    constructor(private readonly store: ObjectStore) {}

    reconcile(): void {
        for (let pass = 0; pass < 25; pass++) {
            this.changed = false;
            this.namespaces();
            this.tokens();
            if (!this.changed) return;
        }
    }

    private write(kind: KindInfo, next: Obj, previous: Obj): void {
        const strip = (o: Obj) => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
        if (same(strip(previous), strip(next))) return;
        this.changed = true;
        this.store.put(kind, next);
    }

    private remove(kind: KindInfo, object: Obj): void {
        this.changed = true;
        this.store.remove(kind, object.metadata.namespace, object.metadata.name);
    }

    private namespaces(): void {
        for (const ns of this.store.list(kindNamed("Namespace")).filter((n) => !alive(n))) {
            for (const { resource, object } of this.store.allIn(ns.metadata.name)) {
                const kind = KINDS.find((k) => k.resource === resource && k.namespaced);
                if (kind) this.remove(kind, object);
            }
            this.remove(kindNamed("Namespace"), ns);
        }
    }

    private tokens(): void {
        const SECRET = kindNamed("Secret");
        for (const secret of this.store.list(SECRET).filter((s) => s.type === "kubernetes.io/service-account-token" && alive(s))) {
            const namespace = secret.metadata.namespace;
            const saName = secret.metadata.annotations?.["kubernetes.io/service-account.name"];
            const sa = saName ? this.store.get(kindNamed("ServiceAccount"), namespace, saName) : undefined;
            const wantedUid = secret.metadata.annotations?.["kubernetes.io/service-account.uid"];
            if (!sa || (wantedUid && wantedUid !== sa.metadata.uid)) {
                this.remove(SECRET, secret);
                continue;
            }
            const data = { ...secret.data };
            data["ca.crt"] = Buffer.from(this.store.caPem()).toString("base64");
            data.namespace ||= Buffer.from(namespace).toString("base64");
            data.token ||= Buffer.from(serviceAccountToken(namespace, secret.metadata.name, saName, sa.metadata.uid)).toString("base64");
            const annotations = { ...secret.metadata.annotations, "kubernetes.io/service-account.uid": sa.metadata.uid };
            this.write(SECRET, { ...secret, data, metadata: { ...secret.metadata, annotations } }, secret);
        }
    }
}

/** A legacy service-account token: a JWT of LegacyClaims (pkg/serviceaccount/legacy.go), signed by no real key. */
function serviceAccountToken(namespace: string, secretName: string, saName: string, saUid: string): string {
    const b64url = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const claims = {
        iss: "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": namespace,
        "kubernetes.io/serviceaccount/secret.name": secretName,
        "kubernetes.io/serviceaccount/service-account.name": saName,
        "kubernetes.io/serviceaccount/service-account.uid": saUid,
        sub: `system:serviceaccount:${namespace}:${saName}`,
    };
    return `${b64url({ alg: "RS256", kid: randomBytes(16).toString("base64url") })}.${b64url(claims)}.${randomBytes(256).toString("base64url")}`;
}
