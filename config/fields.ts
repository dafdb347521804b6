/**
 * Field formats shared by the stack-config model and the Tacker request converter.
 *
 * Every string that may later reach a shell on a VM (usernames, hostnames, paths, CIDR lists, proxy URLs)
 * is held to a strict character set here, so bad input is refused before anything is created. Remote steps
 * still quote every value (defence in depth); these formats are what makes the values meaningful.
 */
import { z } from "zod";
import { isIP } from "node:net";
import { parseCidr } from "./net";

const HOSTNAME_LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const HOSTNAME_RE = new RegExp(`^${HOSTNAME_LABEL}(?:\\.${HOSTNAME_LABEL})*$`);

export function isHostname(value: string): boolean {
    return value.length <= 253 && HOSTNAME_RE.test(value);
}

export const username = z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9._-]{0,31}$/, "must be a login name (letters, digits, '.', '_', '-'; at most 32 characters)");

/**
 * A password, key or token: any text but control characters other than newlines (keys span lines). At least
 * 4 characters, so it can be told apart from ordinary text when logs and errors are redacted.
 */
export const secretText = z
    .string()
    .min(4, "must be at least 4 characters")
    .refine((v) => !/[\u0000-\u0008\u000b-\u001f\u007f]/.test(v), "must not contain control characters");

export const hostname = z.string().refine(isHostname, "must be a hostname (letters, digits, '-' and '.')");

export const ipAddress = z.string().refine((v) => isIP(v) !== 0, "must be an IPv4 or IPv6 address");

export const hostOrIp = z.string().refine((v) => isIP(v) !== 0 || isHostname(v), "must be a hostname or an IP address");

/** A CIDR; host bits are allowed here and normalized (with a warning) by the semantic checks. */
export const cidr = z.string().refine((v) => parseCidr(v) !== undefined, "must be a CIDR such as 10.10.0.0/24");

export const port = z.number().int("must be a whole number").min(1, "must be a port from 1 to 65535").max(65535, "must be a port from 1 to 65535");

const VERSION_RE = /^(\d+)\.(\d+)\.\d+$/;

/** A Kubernetes release, `1.31.4`; which ones a cluster takes depends on its installer (see below, and kubespray's releases). */
export const kubernetesVersion = z.string().regex(VERSION_RE, "must be a version such as 1.31.4");

/**
 * Why kubeadm cannot install `version`, if it cannot. The init and join steps write kubeadm's `v1beta4`
 * configuration, which kubeadm reads from v1.31 on: v1.28–v1.30 refuse it as experimental, older releases do
 * not know it (`validateSupportedVersion`, cmd/kubeadm/app/util/config/common.go in kubernetes/kubernetes;
 * https://kubernetes.io/docs/reference/config-api/kubeadm-config.v1beta4/).
 */
export function kubeadmVersionProblem(version: string): string | undefined {
    const m = VERSION_RE.exec(version);
    return !m || Number(m[1]) > 1 || Number(m[2]) >= 31 ? undefined : "must be 1.31.0 or later: kubeadm reads the v1beta4 configuration k8s-vnf writes from v1.31 on";
}

/** `host`, `host:port`, `ip:port` or `[v6]:port`: how registries are named. */
export const endpoint = z.string().refine((v) => parseEndpoint(v) !== undefined, "must be host, host:port or [IPv6]:port with a port from 1 to 65535");

export function parseEndpoint(value: string): { host: string; port?: number } | undefined {
    const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(value);
    const plain = /^([^:[\]]+)(?::(\d{1,5}))?$/.exec(value);
    const match = bracketed ?? plain;
    if (!match) return isIP(value) === 6 ? { host: value } : undefined;
    const host = match[1];
    if (bracketed ? isIP(host) !== 6 : !(isIP(host) === 4 || isHostname(host))) return undefined;
    if (match[2] === undefined) return { host };
    const p = Number(match[2]);
    return p >= 1 && p <= 65535 ? { host, port: p } : undefined;
}

const PATH_CHARS = /^[A-Za-z0-9._/+@-]+$/;

/** An absolute directory or file path on a VM. */
export const remotePath = z
    .string()
    .refine((v) => v.startsWith("/"), "must be an absolute path")
    .refine((v) => PATH_CHARS.test(v), "may only contain letters, digits and . _ / + @ -")
    .refine((v) => !v.split("/").includes(".."), "must not contain '..'");

/** A path inside the VNF package directory (relative, cannot climb out). */
export const packagePath = z
    .string()
    .min(1, "must not be empty")
    .refine((v) => !v.startsWith("/"), "must be relative to the package directory")
    .refine((v) => PATH_CHARS.test(v), "may only contain letters, digits and . _ / + @ -")
    .refine((v) => !v.split("/").includes(".."), "must not leave the package directory ('..')");

/** An entry of a no_proxy list: an IP, a CIDR, a hostname or a domain suffix such as `.example.com`. */
export function isNoProxyEntry(value: string): boolean {
    return isIP(value) !== 0 || parseCidr(value) !== undefined || isHostname(value.replace(/^\./, ""));
}

/**
 * A proxy URL. Kept as given (the seeds use placeholders like `http://user1:password1@host1:port1`), but only
 * URL characters are accepted, so nothing that means something to a shell can hide in it.
 */
export const proxyUrl = z
    .string()
    .regex(/^https?:\/\/[A-Za-z0-9._~%!*+,=:@[\]/-]+$/, "must be an http:// or https:// URL without spaces or shell characters");

/** A name or ID that only goes to the OpenStack API (image, flavor, network, pool, zone). */
export const openstackRef = z
    .string()
    .min(1, "must not be empty")
    .max(255, "must be at most 255 characters")
    .refine((v) => !/[\u0000-\u001f\u007f]/.test(v), "must not contain control characters");

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Names used inside Kubernetes and OpenStack resource names (aspect ids, connection points, VDU ids). */
export const identifier = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, "must be letters, digits, '_', '.' or '-' (at most 63)");

/** Renders a zod/semantic path the way users write it: `workers.count`, `privateRegistries[1].server`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
    let out = "";
    for (const part of path) {
        if (typeof part === "number") out += `[${part}]`;
        else out += out ? `.${String(part)}` : String(part);
    }
    return out;
}

// distribution's reference grammar (distribution/reference/regexp.go): path components of lower-case
// alphanumerics joined by '.', '_', '__' or dashes, then a tag of at most 128 word characters, '.' and '-'.
const PATH_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const IMAGE_REFERENCE_RE = new RegExp(`^${PATH_COMPONENT}(?:/${PATH_COMPONENT})*:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`);

const PATH_COMPONENT_RE = new RegExp(`^${PATH_COMPONENT}$`);

/**
 * Where kubeadm's images are pulled from, as kubeadm's `imageRepository` takes it: a registry's `host[:port]`
 * and an optional path (`registry.example:5000/k8s`), no scheme, no tag. The first part names a registry only
 * with a dot or a port, or as `localhost` (distribution's reference grammar, `splitDockerDomain`): `k8s/x`
 * would be Docker Hub's `docker.io/k8s/x`. IPv6 literals are left out.
 */
export const imageRepository = z
    .string()
    .max(255)
    .refine((v) => {
        const [registry, ...path] = v.split("/");
        const namesRegistry = /[.:]/.test(registry) || registry === "localhost";
        return namesRegistry && parseEndpoint(registry) !== undefined && !/\[|:.*:/.test(registry) && path.every((c) => PATH_COMPONENT_RE.test(c));
    }, "must be a registry host[:port] with an optional path, e.g. registry.example:5000/k8s (no scheme, no tag; the host with a dot or a port, or localhost)");

/** `repository:tag` inside a registry (no registry host: the image goes to this VNF's registry). */
export const imageReference = z
    .string()
    .max(255)
    .refine((v) => IMAGE_REFERENCE_RE.test(v), "must be repository:tag, e.g. library/nginx:1.27 (lower-case path, a tag of letters, digits, '_', '.', '-')");

const DNS_LABEL_RE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Whether a Kubernetes namespace (or ServiceAccount) name is valid: an RFC 1123 label (apimachinery IsDNS1123Label). */
export function isDnsLabel(value: string): boolean {
    return DNS_LABEL_RE.test(value);
}

/** Whether a Kubernetes object name is valid for most kinds: an RFC 1123 subdomain (IsDNS1123Subdomain). */
export function isDnsSubdomain(value: string): boolean {
    return value.length <= 253 && DNS_SUBDOMAIN_RE.test(value);
}

/** A Kubernetes namespace or ServiceAccount name. */
export const kubernetesLabelName = z.string().refine(isDnsLabel, "must be a lowercase RFC 1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63");

/** A Kubernetes API server URL: https, a host and an optional port; nothing else (it goes into a kubeconfig). */
export const kubernetesApiUrl = z.string().refine((v) => {
    const m = /^https:\/\/([^/?#]+)\/?$/.exec(v);
    return !!m && parseEndpoint(m[1]) !== undefined;
}, "must be the API server's https:// URL, such as https://10.10.0.35:6443");
