/**
 * What the registry VNF and the registry connections on the nodes write, as pure functions of the config:
 * the registry's config.yml, each node's containerd hosts.toml, the kubelet's credentials, /etc/hosts lines.
 */
import { PrivateRegistryConnectionSpec } from "../config/spec";

/** Where the registry keeps its images: Debian's and Ubuntu's docker-registry package default, on the volume. */
export const REGISTRY_ROOT = "/var/lib/docker-registry";
/** The registry's config, certificate, key and htpasswd (the package's config directory). */
export const REGISTRY_CONFIG_DIR = "/etc/docker/registry";
/** containerd's hosts directory, set as the CRI registry `config_path` by node preparation (nodePrep.sh). */
export const CONTAINERD_HOSTS_DIR = "/etc/containerd/certs.d";
/** The kubelet's root directory, where it looks for registry credentials first (see kubeletCredentials). */
export const KUBELET_CREDENTIALS_FILE = "/var/lib/kubelet/config.json";
/** First line of every hosts.toml k8s-vnf writes: a directory without it is someone else's and never touched. */
export const HOSTS_TOML_MARK = "# Written by k8s-vnf (privateRegistries); rewritten on every update.";

/**
 * The CNCF distribution registry's configuration (docs/content/about/configuration.md of distribution v2.8,
 * which Debian 12 packages; v3 reads the same keys). Logins are htpasswd (bcrypt only), loaded at start.
 */
export function registryConfig(options: { port: number; tls: boolean; logins: boolean }): string {
    const lines = [
        "# Written by k8s-vnf; rewritten on every update.",
        "version: 0.1",
        "log:",
        "  fields:",
        "    service: registry",
        "storage:",
        "  filesystem:",
        `    rootdirectory: ${REGISTRY_ROOT}`,
        "  delete:",
        "    enabled: true",
        "http:",
        `  addr: :${options.port}`,
        "  headers:",
        "    X-Content-Type-Options: [nosniff]",
        ...(options.tls ? ["  tls:", `    certificate: ${REGISTRY_CONFIG_DIR}/tls.crt`, `    key: ${REGISTRY_CONFIG_DIR}/tls.key`] : []),
        ...(options.logins ? ["auth:", "  htpasswd:", "    realm: k8s-vnf-registry", `    path: ${REGISTRY_CONFIG_DIR}/htpasswd`] : []),
        "health:",
        "  storagedriver:",
        "    enabled: true",
        "    interval: 10s",
        "    threshold: 3",
    ];
    return `${lines.join("\n")}\n`;
}

/** `http://host:port` or `https://host[:port]`: the URL a node pulls from. */
export function registryUrl(r: Pick<PrivateRegistryConnectionSpec, "protocol" | "server">): string {
    return `${r.protocol}://${r.server}`;
}

type RegistryAddress = Pick<PrivateRegistryConnectionSpec, "protocol" | "server" | "caCertificate">;

/**
 * The containerd hosts.toml (containerd docs/hosts.md) of a registry's directory, and of each name it mirrors
 * (the directory is the registry's `host[:port]`, or the mirrored name, as containerd looks it up): the
 * registry and nothing else, pull and resolve only; plain HTTP by its `http://` URL; for HTTPS, the CA written
 * in the registry's directory. It is both the `[host]` entry and the `server`, each with the CA: containerd
 * tries the `[host]` entries, then always the `server` (the name's default, `registry-1.docker.io` for
 * docker.io, when none is given), so a `[host]` entry alone would let a mirrored name's pulls reach the
 * original, and a `server` without the CA would be tried without it; a file without a `[host]` entry is one
 * containerd 1.6 cannot read, and it then uses the directory's certificates and the default host instead
 * (core/remotes/docker/config/hosts.go: parseHostsFile, getSortedHosts, loadHostDir, ConfigureHosts). Pulls
 * from a mirror present its login too: the CRI plugin looks logins up by the host it contacts.
 */
export function hostsToml(r: RegistryAddress): string {
    const url = JSON.stringify(registryUrl(r));
    const settings = ['capabilities = ["pull", "resolve"]', ...(r.caCertificate !== undefined ? [`ca = ${JSON.stringify(`${CONTAINERD_HOSTS_DIR}/${r.server}/ca.crt`)}`] : [])];
    return `${[HOSTS_TOML_MARK, `server = ${url}`, ...settings, "", `[host.${url}]`, ...settings.map((l) => `  ${l}`)].join("\n")}\n`;
}

/** Every directory the nodes' containerd gets: one per registry, and one per name a registry mirrors. */
export function registryDirectories(registries: PrivateRegistryConnectionSpec[]): { server: string; hostsToml: string; caCertificate: string }[] {
    return registries.flatMap((r) => [
        { server: r.server, hostsToml: hostsToml(r), caCertificate: r.caCertificate ?? "" },
        ...r.mirrorOf.map((name) => ({ server: name, hostsToml: hostsToml(r), caCertificate: "" })),
    ]);
}

/**
 * The logins as the kubelet's credentials, a Docker config.json: the kubelet reads `<root-dir>/config.json`
 * (cmd/kubelet/app/server.go SetPreferredDockercfgPath; pkg/credentialprovider/config.go), matches an
 * image's `host:port` against its keys and sends the login with each CRI pull of that image, whatever its
 * namespace. Undefined when no registry has a login.
 */
export function kubeletCredentials(registries: Omit<PrivateRegistryConnectionSpec, "mirrorOf">[]): string | undefined {
    const auths = Object.fromEntries(
        registries.filter((r) => r.username !== undefined && r.password !== undefined).map((r) => [r.server, { auth: Buffer.from(`${r.username}:${r.password}`).toString("base64") }]),
    );
    return Object.keys(auths).length ? `${JSON.stringify({ auths }, null, 2)}\n` : undefined;
}

/** The /etc/hosts lines (`<IP> <hostname>`) of the registries that give one. */
export function registryHostsLines(registries: Omit<PrivateRegistryConnectionSpec, "mirrorOf">[]): string[] {
    return registries.flatMap((r) => (r.hostsEntry ? [`${r.hostsEntry.ip} ${r.hostsEntry.hostname}`] : []));
}
