#!/usr/bin/env bash
# containerd's own copy of the private registries' logins (sent after lib.sh, before the script that uses it):
# one marked block at the end of its config.toml, written by the registry connections and kept by node
# preparation when it rewrites the file.
CONTAINERD_CONFIG=/etc/containerd/config.toml
LOGINS_BEGIN="# BEGIN k8s-vnf registry logins (privateRegistries); node preparation keeps this block"
LOGINS_END="# END k8s-vnf registry logins"

# The pulls no kubelet makes send no login: containerd's own of the sandbox image (RunPodSandbox) and kubeadm's
# preflight (CRI PullImage without an AuthConfig). The CRI plugin then takes the registry's login from
# registry.configs."HOST".auth, also under config_path (containerd 1.6 to 2.x, CRI registryHosts: "hostauth :=
# auth; if hostauth == nil" falls back to Registry.Configs[host].Auth). Deprecated without a replacement yet, and
# "will not be removed until a suitable secure alternative is available" (docs/cri/registry.md). The tables go
# in one marked block at the end of config.toml (0600: it holds the logins), checked by containerd before it
# replaces the old file; containerd reads its config at start only, so it restarts when the block changed.
# logins_block CONFIG LOGINS: the block's tables for the configuration file CONFIG.
logins_block() {
    local section host auth
    # Configuration version 3 (containerd 2.x) moved the registry settings to the CRI images plugin.
    if grep -Eq '^version[[:space:]]*=[[:space:]]*3' "$1"; then
        section="plugins.'io.containerd.cri.v1.images'.registry.configs"
    else
        section='plugins."io.containerd.grpc.v1.cri".registry.configs'
    fi
    while read -r host auth; do
        [[ -n "$host" ]] || continue
        printf '[%s."%s".auth]\n  auth = "%s"\n' "$section" "$host" "$auth"
    done <<<"$2"
}

write_containerd_logins() {
    local wanted="$1" block candidate
    if [[ ! -f "$CONTAINERD_CONFIG" ]]; then
        [[ -z "$wanted" ]] && return
        die "$CONTAINERD_CONFIG is missing: node preparation writes it before the registry connections"
    fi
    block="$(logins_block "$CONTAINERD_CONFIG" "$wanted")"
    candidate="$(mktemp /etc/containerd/.k8s-vnf-logins.XXXXXX)"
    chmod 0600 "$candidate"
    replace_block "$CONTAINERD_CONFIG" "$LOGINS_BEGIN" "$LOGINS_END" "$block" >"$candidate"
    if cmp -s "$candidate" "$CONTAINERD_CONFIG"; then
        rm -f "$candidate"
        return
    fi
    if ! containerd --config "$candidate" config dump >/dev/null; then
        rm -f "$candidate"
        die "containerd refuses its configuration with the registry logins; $CONTAINERD_CONFIG is unchanged"
    fi
    install_file "$CONTAINERD_CONFIG" 0600 <"$candidate" >/dev/null
    rm -f "$candidate"
    svc restart containerd
    if [[ -n "$wanted" ]]; then echo "containerd's registry logins written; containerd restarted"; else echo "containerd's registry logins removed; containerd restarted"; fi
}
