#!/usr/bin/env bash
# The cluster's external load balancer (sent after providers/kubernetes/lib.sh): HAProxy on the load-balancer
# VM, between the outside network and the cluster network. Replaces Tacker's install_external_lb.sh (HAProxy on
# :8383 round-robin to the masters' :6443, unchecked).
#
#   externalLoadBalancer.sh apply  API_PORT API_SERVER_PORT FIRST LAST MASTERS [NAME ADDRESS]...
#   externalLoadBalancer.sh report API_PORT API_SERVER_PORT FIRST LAST MASTERS [NAME ADDRESS]...
#   externalLoadBalancer.sh remove
#
# The first MASTERS name/address pairs are the control-plane nodes, the rest the workers. `apply` renders the
# configuration, has `haproxy -c` check it, and only when it differs from /etc/haproxy/haproxy.cfg replaces
# that file (atomically) and reloads HAProxy (starts it when it is not running). A configuration HAProxy
# refuses, or one it cannot serve (a port already taken: it fails at the reload), never stays: the previous
# file goes back and the running HAProxy keeps serving it; the step fails with HAProxy's message. Then it
# prints the report. `report` prints what the live file holds and whether it is exactly what apply would
# write from the same arguments:
#   config=current|edited|missing   controlPlanes=NAME TARGET|...   workers=NAME TARGET|...   haproxy=running|stopped
# `remove` stops HAProxy (and keeps it from starting at boot) and removes the file, if the file is ours.
action="$1"
shift

HAPROXY_CFG=/etc/haproxy/haproxy.cfg
PREVIOUS_CFG=/etc/haproxy/.haproxy.cfg.k8s-vnf-previous
ADMIN_SOCKET=/run/haproxy/admin.sock
MARKER="# Written by k8s-vnf (ExternalLoadBalancer); changes here are overwritten."

# target ADDRESS [PORT]: HAProxy's form of a server address (IPv6 in brackets).
target() {
    local address="$1"
    [[ "$address" == *:* ]] && address="[$address]"
    printf '%s%s' "$address" "${2:+:$2}"
}

# render API_PORT API_SERVER_PORT FIRST LAST MASTERS [NAME ADDRESS]...
render() {
    local api_port="$1" api_server_port="$2" first="$3" last="$4" masters="$5" i
    shift 5
    cat <<CFG
$MARKER
global
    log /dev/log local0
    daemon
    user haproxy
    group haproxy
    # Each proxied connection takes two descriptors, and each NodePort its listener (2768 by default): 4000
    # connections fit the 1024:524288 descriptor limits systemd gives a service, which HAProxy (from 2.6,
    # strict-limits on by default) must be able to raise its own limit to, or it refuses to start.
    maxconn 4000
    stats socket $ADMIN_SOCKET mode 660 level admin
    stats timeout 30s

# TCP only: HAProxy passes the TLS of the API and whatever a NodePort speaks through untouched. A connection
# refused by one server is retried on another (redispatch on every retry).
defaults
    mode tcp
    log global
    option tcplog
    option dontlognull
    option redispatch 1
    retries 2
    timeout connect 5s
    timeout client 3h
    timeout server 3h

# The Kubernetes API. Checks as kubespray's example of an external load balancer (docs/operations/ha-mode.md):
# a TLS handshake with each API server (check-ssl, its certificate not verified), every 3 s; 3 failures in a row
# take a master out, 2 successes bring it back.
frontend kube-apiserver
    bind *:$api_port
    mode tcp
    default_backend kube-apiserver

backend kube-apiserver
    mode tcp
    balance roundrobin
    option log-health-checks
    default-server inter 3s fall 3 rise 2
CFG
    for ((i = 0; i < masters; i++)); do
        printf '    server %s %s check check-ssl verify none\n' "$1" "$(target "$2" "$api_server_port")"
        shift 2
    done
    (($# >= 2)) || return 0
    cat <<CFG

# NodePorts: every port of the range, to the same port on a worker ("server" without a port: HAProxy connects
# to the port the client connected to). No health check: whether a worker serves a NodePort depends on the
# Service (externalTrafficPolicy: Local answers only where its pods run), which no check on one fixed port can
# tell; a worker that refuses the connection is skipped by the redispatch above.
frontend nodeports
    bind *:$first-$last
    mode tcp
    default_backend nodeports

backend nodeports
    mode tcp
    balance roundrobin
CFG
    while (($# >= 2)); do
        printf '    server %s %s\n' "$1" "$(target "$2")"
        shift 2
    done
}

running() { pgrep -x haproxy >/dev/null; }

# listening PORT: whether an HAProxy process listens on PORT.
listening() { ss -Hltnp "sport = :$1" 2>/dev/null | grep -q '"haproxy"'; }

# serving API_PORT FIRST [WORKERS]: waits (up to 10 s) for HAProxy to listen on the API port and, with workers,
# on the first NodePort.
serving() {
    local tries
    for ((tries = 0; tries < 20; tries++)); do
        if running && listening "$1" && { [[ "$3" == 0 ]] || listening "$2"; }; then return 0; fi
        sleep 0.5
    done
    return 1
}

# restore: the previous file back (none: ours removed), so the running HAProxy and the file agree again.
restore() {
    if [[ -f "$PREVIOUS_CFG" ]]; then
        mv -f "$PREVIOUS_CFG" "$HAPROXY_CFG"
    else
        rm -f "$HAPROXY_CFG"
    fi
}

apply() {
    local api_port="$1" api_server_port="$2" first="$3" last="$4" masters="$5" workers tmp out
    workers=$((($# - 5) / 2 - masters))
    if ! command -v haproxy >/dev/null; then
        apt-get update -q >&2
        apt_install haproxy >&2
    fi
    tmp="$(mktemp)"
    # shellcheck disable=SC2064 # the file of this run
    trap "rm -f '$tmp'" EXIT
    render "$@" >"$tmp"
    if ! out="$(haproxy -c -f "$tmp" 2>&1)"; then
        echo "$out" >&2
        echo "haproxy refused the configuration; $HAPROXY_CFG and the running HAProxy are unchanged" >&2
        exit 1
    fi
    mkdir -p "$(dirname "$ADMIN_SOCKET")"
    if [[ -d /run/systemd/system ]] && ! systemctl is-enabled -q haproxy 2>/dev/null; then systemctl enable -q haproxy; fi

    local changed=no
    if ! [[ -f "$HAPROXY_CFG" ]] || ! cmp -s "$tmp" "$HAPROXY_CFG"; then
        changed=yes
        rm -f "$PREVIOUS_CFG"
        if [[ -f "$HAPROXY_CFG" ]]; then cp -p "$HAPROXY_CFG" "$PREVIOUS_CFG"; fi
        install_file "$HAPROXY_CFG" 0644 <"$tmp" >/dev/null
    fi

    # A reload that fails (init script) or that HAProxy refuses later (systemd only signals it) leaves it
    # serving without listening on the new ports: both fail the step.
    local verb="" ok=yes
    if ! running; then
        verb=started
        out="$(svc start haproxy 2>&1)" || ok=no
    elif [[ "$changed" == yes ]]; then
        verb=reloaded
        out="$(svc reload haproxy 2>&1)" || ok=no
    fi
    if [[ -n "$verb" ]] && { [[ "$ok" == no ]] || ! serving "$api_port" "$first" "$workers"; }; then
        echo "$out" >&2
        if [[ "$changed" == yes ]]; then
            # A failed reload leaves the running HAProxy on the previous configuration.
            restore
            echo "HAProxy does not serve the new configuration (above: what it said); the previous $HAPROXY_CFG is back" >&2
        else
            echo "HAProxy does not start with $HAPROXY_CFG (above: what it said)" >&2
        fi
        exit 1
    fi
    rm -f "$PREVIOUS_CFG"
    [[ -z "$verb" ]] || echo "haproxy $verb"
    report "$@"
}

# servers BACKEND: the "NAME TARGET" of each server line of BACKEND in the live file, joined by '|'.
servers() {
    awk -v b="$1" '
        $1 == "backend" || $1 == "frontend" || $1 == "listen" || $1 == "defaults" || $1 == "global" { on = ($1 == "backend" && $2 == b) }
        on && $1 == "server" { print $2 " " $3 }' "$HAPROXY_CFG" 2>/dev/null | paste -sd'|' -
}

report() {
    local config=missing tmp
    if [[ -f "$HAPROXY_CFG" ]] && grep -qxF "$MARKER" "$HAPROXY_CFG"; then
        tmp="$(mktemp)"
        render "$@" >"$tmp"
        if cmp -s "$tmp" "$HAPROXY_CFG"; then config=current; else config=edited; fi
        rm -f "$tmp"
    elif [[ -f "$HAPROXY_CFG" ]]; then
        config=edited
    fi
    printf 'config=%s\n' "$config"
    printf 'controlPlanes=%s\n' "$(servers kube-apiserver)"
    printf 'workers=%s\n' "$(servers nodeports)"
    printf 'haproxy=%s\n' "$(running && echo running || echo stopped)"
}

remove() {
    if ! [[ -f "$HAPROXY_CFG" ]] || ! grep -qxF "$MARKER" "$HAPROXY_CFG"; then
        echo "$HAPROXY_CFG is not ours; left as it is"
        return
    fi
    if running; then svc stop haproxy >/dev/null; fi
    if [[ -d /run/systemd/system ]]; then systemctl disable -q haproxy 2>/dev/null || true; fi
    rm -f "$HAPROXY_CFG" "$PREVIOUS_CFG"
    echo "haproxy stopped, $HAPROXY_CFG removed"
}

case "$action" in
apply) apply "$@" ;;
report) report "$@" ;;
remove) remove ;;
*) echo "externalLoadBalancer.sh: unknown action $action" >&2; exit 2 ;;
esac
