#!/usr/bin/env bash
# Helpers the Kubernetes node scripts share; each script is sent to the host with this file in front of it.
set -euo pipefail

# die MESSAGE: the step fails with MESSAGE (the end of stderr is what its error shows).
die() {
    echo "$*" >&2
    exit 1
}

# svc ACTION NAME: systemd where it runs, the service's init script elsewhere.
svc() {
    if [[ -d /run/systemd/system ]]; then
        systemctl "$1" "$2"
    else
        service "$2" "$1"
    fi
}

# install_file PATH MODE: writes stdin to PATH atomically when it differs; prints "changed" or "unchanged".
install_file() {
    local target="$1" mode="$2" tmp
    mkdir -p "$(dirname "$target")"
    tmp="$(mktemp "$(dirname "$target")/.k8s-vnf.XXXXXX")"
    cat >"$tmp"
    chmod "$mode" "$tmp"
    if [[ -f "$target" ]] && cmp -s "$tmp" "$target"; then
        rm -f "$tmp"
        echo unchanged
    else
        mv -f "$tmp" "$target"
        echo changed
    fi
}

# replace_block FILE BEGIN END ENTRIES: prints FILE with one block, marked by the BEGIN and END lines, holding
# ENTRIES (rewritten whole; an identical line elsewhere is dropped, so no entry appears twice; lines compare
# whole, never as prefixes). No block when ENTRIES is empty.
replace_block() {
    ENTRIES="$4" BEGIN="$2" END="$3" awk '
        BEGIN { n = split(ENVIRON["ENTRIES"], want, "\n"); for (i = 1; i <= n; i++) if (want[i] != "") wanted[want[i]] = 1 }
        $0 == ENVIRON["BEGIN"] { skip = 1; next }
        $0 == ENVIRON["END"] { skip = 0; next }
        skip || ($0 in wanted) { next }
        { print }
        END {
            if (ENVIRON["ENTRIES"] == "") exit
            print ENVIRON["BEGIN"]
            printf "%s\n", ENVIRON["ENTRIES"]
            print ENVIRON["END"]
        }' "$1"
}

# write_block FILE BEGIN END ENTRIES: FILE rewritten (atomically, only when it differs) with its block holding
# ENTRIES (replace_block); prints "FILE changed" or "FILE unchanged".
write_block() {
    replace_block "$1" "$2" "$3" "$4" | install_file "$1" 0644 | sed "s|^|$1 |"
}

# block_lines FILE BEGIN END: the lines of FILE's block, without its markers.
block_lines() {
    awk -v b="$2" -v e="$3" '$0 == b { on = 1; next } $0 == e { on = 0 } on' "$1"
}

# remove_file PATH: prints "changed" when it existed.
remove_file() {
    if [[ -e "$1" ]]; then
        rm -f "$1"
        echo changed
    else
        echo unchanged
    fi
}

# apt_install PACKAGE...: installs with the proxy settings already in apt's configuration.
apt_install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

# interface_of ADDRESS: the network interface that carries ADDRESS.
interface_of() {
    ip -o -4 addr show | awk -v a="$1" '{ split($4, p, "/"); if (p[1] == a) { print $2; exit } }'
}
