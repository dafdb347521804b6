#!/usr/bin/env bash
# The control-plane endpoint on a master (sent after lib.sh): HAProxy listening on the frontend port and
# balancing over every master's API server, keepalived holding the VIP on the master with the highest
# priority whose HAProxy runs. Configurations are checked by haproxy/keepalived before they replace the
# old ones, and services reload only when something changed; safe to run twice.
#
#   apiLoadBalancer.sh apply NODE_ADDRESS VIP ROUTER_ID PRIORITY FRONTEND_PORT API_PORT [NAME ADDRESS]...
#   apiLoadBalancer.sh report                      backends in the configuration and whether HAProxy runs
#   apiLoadBalancer.sh server-state NAME ready|maint   HAProxy's runtime state of one backend server
#   apiLoadBalancer.sh stop                        stop keepalived, so that a peer takes the VIP at once
action="$1"
shift

HAPROXY_CFG=/etc/haproxy/haproxy.cfg
KEEPALIVED_CFG=/etc/keepalived/keepalived.conf
ADMIN_SOCKET=/run/haproxy/admin.sock
BACKEND=kubernetes-apiserver

haproxy_config() {
    local frontend_port="$1" api_port="$2"
    shift 2
    cat <<CFG
# Written by k8s-vnf; changes here are overwritten.
global
    log /dev/log local0
    daemon
    maxconn 4096
    stats socket $ADMIN_SOCKET mode 660 level admin

defaults
    mode tcp
    log global
    option tcplog
    timeout connect 5s
    timeout client 1h
    timeout server 1h

frontend kubernetes-apiserver
    bind *:$frontend_port
    default_backend $BACKEND

backend $BACKEND
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 3s fall 3 rise 2 check check-ssl verify none
CFG
    while (($# >= 2)); do
        printf '    server %s %s:%s\n' "$1" "$2" "$api_port"
        shift 2
    done
}

keepalived_config() {
    local address="$1" vip="$2" router_id="$3" priority="$4" interface
    shift 4
    interface="$(interface_of "$address")"
    [[ -n "$interface" ]] || { echo "no network interface carries $address" >&2; exit 1; }
    cat <<CFG
# Written by k8s-vnf; changes here are overwritten.
global_defs {
    enable_script_security
    script_user root
}

vrrp_script haproxy_running {
    script "/usr/bin/pgrep -x haproxy"
    interval 2
    fall 2
    rise 2
}

vrrp_instance kubernetes_vip {
    state BACKUP
    interface $interface
    virtual_router_id $router_id
    priority $priority
    advert_int 1
    unicast_src_ip $address
    unicast_peer {
CFG
    while (($# >= 2)); do
        [[ "$2" == "$address" ]] || printf '        %s\n' "$2"
        shift 2
    done
    cat <<CFG
    }
    virtual_ipaddress {
        $vip/32 dev $interface
    }
    track_script {
        haproxy_running
    }
}
CFG
}

# ensure_service NAME CHANGED: reload a running service after a change, start a stopped one.
ensure_service() {
    local name="$1" changed="$2"
    if ! pgrep -x "$name" >/dev/null; then
        svc start "$name"
        echo "$name started"
    elif [[ "$changed" == changed ]]; then
        svc reload "$name"
        echo "$name reloaded"
    fi
}

apply() {
    local address="$1" vip="$2" router_id="$3" priority="$4" frontend_port="$5" api_port="$6" changed
    shift 6
    if ! command -v haproxy >/dev/null || ! command -v keepalived >/dev/null || ! command -v socat >/dev/null; then
        apt-get update -q
        apt_install haproxy keepalived socat
    fi
    tmp="$(mktemp)"
    trap 'rm -f "$tmp"' EXIT

    haproxy_config "$frontend_port" "$api_port" "$@" >"$tmp"
    haproxy -c -q -f "$tmp" || { echo "haproxy refused the configuration" >&2; exit 1; }
    mkdir -p "$(dirname "$ADMIN_SOCKET")"
    changed="$(install_file "$HAPROXY_CFG" 0644 <"$tmp")"
    ensure_service haproxy "$changed"

    keepalived_config "$address" "$vip" "$router_id" "$priority" "$@" >"$tmp"
    keepalived --config-test --use-file="$tmp" || { echo "keepalived refused the configuration" >&2; exit 1; }
    changed="$(install_file "$KEEPALIVED_CFG" 0644 <"$tmp")"
    ensure_service keepalived "$changed"
}

report() {
    printf 'backends='
    awk '$1 == "server" { print $2 " " $3 }' "$HAPROXY_CFG" 2>/dev/null | paste -sd'|' -
    printf 'haproxy=%s\n' "$(pgrep -x haproxy >/dev/null && echo running || echo stopped)"
    printf 'keepalived=%s\n' "$(pgrep -x keepalived >/dev/null && echo running || echo stopped)"
}

server_state() {
    [[ -S "$ADMIN_SOCKET" ]] || { echo "HAProxy is not running (no $ADMIN_SOCKET)"; return; }
    echo "set server $BACKEND/$1 state $2" | socat stdio "unix-connect:$ADMIN_SOCKET"
    echo "show servers state $BACKEND" | socat stdio "unix-connect:$ADMIN_SOCKET" | awk -v s="$1" '$4 == s { print "server " s " admin state " $7 }'
}

case "$action" in
apply) apply "$@" ;;
report) report ;;
server-state) server_state "$@" ;;
stop) if pgrep -x keepalived >/dev/null; then svc stop keepalived; fi ;;
*) echo "apiLoadBalancer.sh: unknown action $action" >&2; exit 2 ;;
esac
