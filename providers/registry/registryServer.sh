#!/usr/bin/env bash
# The private registry VNF (sent after lib.sh and volumes.sh): the CNCF distribution registry, its storage on
# its own Cinder volume (mounted before the registry is installed, so nothing lands beside it), its config,
# certificate, key and htpasswd logins written whole, restarted only when one of them changed, then checked
# on /v2/. No Docker: Debian's and Ubuntu's docker-registry package, or a registry image run on containerd.
# Safe to run again.
#
#   registryServer.sh apply CONFIG_YML PORT SCHEME RUNTIME VOLUME_COUNT [SERIAL MOUNT]...
#       RUNTIME: "package", or "image FILE SHA256" (a registry image tar already uploaded to FILE);
#       TLS_CERTIFICATE, TLS_PRIVATE_KEY (PEM; empty: plain HTTP), REGISTRY_LOGINS (base64 of `user:password`
#       lines; empty: no logins) and http_proxy/https_proxy exported ahead of the script
#   registryServer.sh missing [SHA256 IMAGE]...        the preload images not yet in the registry's storage
#   registryServer.sh preload PORT SCHEME FORMAT FILE IMAGE SHA256
#       pushes an uploaded image tar with skopeo (with REGISTRY_LOGINS' first login), then deletes the tar
#   registryServer.sh report PORT SCHEME VOLUME_COUNT [SERIAL MOUNT]...   what a refresh compares
#   registryServer.sh stop VOLUME_COUNT [SERIAL MOUNT]...                stop serving, unmount the volume
action="$1"
shift

CONFIG_DIR=/etc/docker/registry
ROOT=/var/lib/docker-registry
# The preloaded images, kept on the volume beside the registry's own tree: a heal finds them there.
PRELOADED="$ROOT/k8s-vnf-preloaded"
PACKAGE_SERVICE=docker-registry
CONTAINER_SERVICE=k8s-vnf-registry
CONTAINER_UNIT="/etc/systemd/system/$CONTAINER_SERVICE.service"
CONTAINER_NAMESPACE=k8s-vnf-registry
IMAGE_RECORD="$CONFIG_DIR/k8s-vnf-image"
# Settings written but not yet served: a run that stopped before the restart leaves it for the next one.
RESTART_PENDING="$CONFIG_DIR/k8s-vnf-restart-pending"
PACKAGE_DROP_IN="/etc/systemd/system/$PACKAGE_SERVICE.service.d/k8s-vnf.conf"
HEALTH_WAIT_SECONDS=60

CHANGED=no
note_change() { if [[ "$1" == *changed* ]]; then CHANGED=yes; fi; }

# The runtime not in use is stopped and, under systemd, disabled: after a reboot or a package upgrade it must
# not start and take the port.
turn_off() {
    if svc status "$1" >/dev/null 2>&1; then svc stop "$1"; fi
    if [[ -d /run/systemd/system ]]; then systemctl disable "$1" >/dev/null 2>&1 || true; fi
}

# Under systemd, the registry starts only once the volume is mounted (fstab says nofail, so nothing else orders
# it): never on the empty directory beneath (systemd.unit(5) RequiresMountsFor; our own unit says it itself,
# the package's gets a drop-in).
order_after_volume() {
    if [[ "$1" == "$PACKAGE_SERVICE" ]]; then
        printf '[Unit]\nRequiresMountsFor=%s\n' "$ROOT" | install_file "$PACKAGE_DROP_IN" 0644 >/dev/null
    fi
    if [[ -d /run/systemd/system ]]; then
        systemctl daemon-reload
        systemctl enable "$1" >/dev/null 2>&1
    fi
}

install_package_runtime() {
    if ! command -v docker-registry >/dev/null || ! command -v htpasswd >/dev/null || ! command -v curl >/dev/null; then
        apt-get update -q
        apt_install docker-registry apache2-utils curl
    fi
    turn_off "$CONTAINER_SERVICE"
    order_after_volume "$PACKAGE_SERVICE"
}

# The registry image imported into a containerd namespace of its own, run by a unit of ours with the host's
# network, the volume and the config directory mounted at the paths the config names. An image whose tar
# changed replaces the one imported before.
install_container_runtime() {
    local file="$1" sha="$2" image
    if ! command -v ctr >/dev/null || ! command -v htpasswd >/dev/null || ! command -v curl >/dev/null; then
        apt-get update -q
        apt_install containerd apache2-utils curl
    fi
    if ! svc status containerd >/dev/null 2>&1; then svc start containerd; fi
    if command -v docker-registry >/dev/null; then turn_off "$PACKAGE_SERVICE"; fi
    if ! image_imported "$sha"; then
        [[ -n "$file" ]] || { echo "the registry image $sha is not imported on this VM and was not uploaded: run pulumi refresh, then pulumi up" >&2; exit 1; }
        ctr -n "$CONTAINER_NAMESPACE" images ls -q | xargs -r ctr -n "$CONTAINER_NAMESPACE" images rm >/dev/null
        ctr -n "$CONTAINER_NAMESPACE" images import --digests "$file" >/dev/null
        image="$(ctr -n "$CONTAINER_NAMESPACE" images ls -q | grep -v '@sha256:' | head -n 1 || true)"
        [[ -n "$image" ]] || image="$(ctr -n "$CONTAINER_NAMESPACE" images ls -q | head -n 1)"
        [[ -n "$image" ]] || { echo "the registry image tar holds no image containerd can import" >&2; exit 1; }
        echo "$sha $image" | install_file "$IMAGE_RECORD" 0644 >/dev/null
        echo "registry image $image imported into containerd"
        CHANGED=yes
    fi
    image="$(cut -d' ' -f2 "$IMAGE_RECORD")"
    note_change "$(container_unit "$image" | install_file "$CONTAINER_UNIT" 0644)"
    order_after_volume "$CONTAINER_SERVICE"
}

# The record names the tar's SHA-256 and the image it became; both must hold: the image may have gone since.
image_imported() {
    local sha image
    read -r sha image <"$IMAGE_RECORD" 2>/dev/null || return 1
    [[ "$sha" == "$1" ]] && ctr -n "$CONTAINER_NAMESPACE" images ls -q | grep -qxF "$image"
}

# The registry images' own binary and arguments (distribution's Dockerfile: /bin/registry serve CONFIG). A
# container left by a crash goes first: `tasks delete --force` kills its task and waits for it to exit
# (containerd.WithProcessKill, cmd/ctr/commands/tasks/delete.go), then the container is deleted.
container_unit() {
    cat <<EOF
[Unit]
Description=Private registry (CNCF distribution) on containerd, written by k8s-vnf
After=containerd.service network-online.target
Requires=containerd.service
RequiresMountsFor=$ROOT

[Service]
ExecStartPre=-/usr/bin/ctr -n $CONTAINER_NAMESPACE tasks delete --force registry
ExecStartPre=-/usr/bin/ctr -n $CONTAINER_NAMESPACE containers delete registry
ExecStart=/usr/bin/ctr -n $CONTAINER_NAMESPACE run --rm --net-host --mount type=bind,src=$ROOT,dst=$ROOT,options=rbind:rw --mount type=bind,src=$CONFIG_DIR,dst=$CONFIG_DIR,options=rbind:ro $1 registry /bin/registry serve $CONFIG_DIR/config.yml
ExecStop=-/usr/bin/ctr -n $CONTAINER_NAMESPACE tasks kill -s SIGTERM registry
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
EOF
}

write_tls() {
    if [[ -n "${TLS_CERTIFICATE:-}" ]]; then
        note_change "$(printf '%s\n' "$TLS_CERTIFICATE" | install_file "$CONFIG_DIR/tls.crt" 0644)"
        note_change "$(printf '%s\n' "$TLS_PRIVATE_KEY" | install_file "$CONFIG_DIR/tls.key" 0640)"
        chgrp "$(registry_group)" "$CONFIG_DIR/tls.key"
    else
        note_change "$(remove_file "$CONFIG_DIR/tls.crt")$(remove_file "$CONFIG_DIR/tls.key")"
    fi
}

registry_group() { if getent group docker-registry >/dev/null; then echo docker-registry; else echo root; fi; }

# htpasswd (apache2-utils) hashes with bcrypt (-B; its default cost, 5, raised to 10), the only hash
# distribution takes; each password goes on its standard input (-i), never on a command line. A login whose
# password still verifies is left as it is.
BCRYPT_COST=10
write_logins() {
    local file="$CONFIG_DIR/htpasswd" wanted="" line user password
    if [[ -z "${REGISTRY_LOGINS:-}" ]]; then
        note_change "$(remove_file "$file")"
        return
    fi
    [[ -f "$file" ]] || install -m 0640 /dev/null "$file"
    # The last line has no newline: `read` returns it with a non-zero status.
    while IFS= read -r line || [[ -n "$line" ]]; do
        [[ -n "$line" ]] || continue
        user="${line%%:*}" password="${line#*:}"
        wanted+="$user"$'\n'
        if ! printf '%s\n' "$password" | htpasswd -v -i "$file" "$user" >/dev/null 2>&1; then
            printf '%s\n' "$password" | htpasswd -B -C "$BCRYPT_COST" -i "$file" "$user" 2>/dev/null
            echo "registry login $user set"
            CHANGED=yes
        fi
    done < <(printf '%s' "$REGISTRY_LOGINS" | base64 -d)
    while IFS= read -r user; do
        [[ -n "$user" ]] || continue
        grep -qxF "$user" <<<"$wanted" && continue
        htpasswd -D "$file" "$user" 2>/dev/null
        echo "registry login $user removed"
        CHANGED=yes
    done < <(cut -d: -f1 "$file")
    chmod 0640 "$file"
    chgrp "$(registry_group)" "$file"
}

service_name() { if [[ "$1" == package ]]; then echo "$PACKAGE_SERVICE"; else echo "$CONTAINER_SERVICE"; fi; }

# The HTTP status of /v2/ on the loopback address (the certificate names the VM's address: not verified
# here). 200, or 401 when logins are on, means the registry serves.
status_code() {
    local port="$1" scheme="$2" insecure=()
    [[ "$scheme" == https ]] && insecure=(--insecure)
    curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${insecure[@]}" "$scheme://127.0.0.1:$port/v2/" || true
}

wait_healthy() {
    local port="$1" scheme="$2" code="" i
    for ((i = 0; i < HEALTH_WAIT_SECONDS; i++)); do
        code="$(status_code "$port" "$scheme")"
        [[ "$code" == 200 || "$code" == 401 ]] && return 0
        sleep 1
    done
    echo "the registry does not answer on $scheme://127.0.0.1:$port/v2/ (last status: ${code:-none}) after ${HEALTH_WAIT_SECONDS}s" >&2
    exit 1
}

start_registry() {
    local service="$1"
    if [[ "$CHANGED" == yes ]]; then touch "$RESTART_PENDING"; fi
    if ! svc status "$service" >/dev/null 2>&1; then
        svc start "$service"
        echo "registry started ($service)"
    elif [[ -e "$RESTART_PENDING" ]]; then
        svc restart "$service"
        echo "registry restarted with its new settings ($service)"
    fi
}

# repository:tag is in the registry's storage (distribution's filesystem layout: repositories/<name>/_manifests/tags/<tag>).
has_tag() {
    local image="$1"
    [[ -e "$ROOT/docker/registry/v2/repositories/${image%:*}/_manifests/tags/${image##*:}/current/link" ]]
}

missing() {
    while (($# >= 2)); do
        if ! grep -qxF "$1 $2" "$PRELOADED" 2>/dev/null || ! has_tag "$2"; then echo "missing=$1"; fi
        shift 2
    done
}

# skopeo reads the login from an auth file (containers-auth.json(5)), never from its command line.
preload() {
    local port="$1" scheme="$2" format="$3" file="$4" image="$5" sha="$6" login
    PRELOAD_DIR="$(mktemp -d)" PRELOAD_FILE="$file"
    trap 'rm -rf -- "$PRELOAD_DIR" "$PRELOAD_FILE"' EXIT
    local dir="$PRELOAD_DIR"
    login="$(printf '%s' "${REGISTRY_LOGINS:-}" | base64 -d | head -n 1)"
    if [[ -n "$login" ]]; then
        printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}\n' "$port" "$(printf '%s' "$login" | base64 -w0)" | install -m 0600 /dev/stdin "$dir/auth.json"
    else
        echo '{}' >"$dir/auth.json"
    fi
    if ! command -v skopeo >/dev/null; then
        apt-get update -q
        apt_install skopeo
    fi
    # Over loopback, TLS is not verified: the certificate names the VM's address.
    skopeo copy --quiet --dest-tls-verify=false --dest-authfile "$dir/auth.json" "$format:$file" "docker://127.0.0.1:$port/$image" >/dev/null
    has_tag "$image" || { echo "skopeo pushed $image but the registry's storage has no such tag" >&2; exit 1; }
    { awk -v image="$image" '$2 != image' "$PRELOADED" 2>/dev/null || true; echo "$sha $image"; } | install_file "$PRELOADED" 0644 >/dev/null
    echo "image $image preloaded ($scheme registry)"
}

report() {
    local port="$1" scheme="$2" service=none
    shift 2
    read_volumes "$@"
    report_volumes
    if svc status "$PACKAGE_SERVICE" >/dev/null 2>&1; then service=package; elif svc status "$CONTAINER_SERVICE" >/dev/null 2>&1; then service=image; fi
    echo "running=$service"
    echo "status=$(status_code "$port" "$scheme")"
    printf 'image='
    if [[ -f "$IMAGE_RECORD" ]] && image_imported "$(cut -d' ' -f1 "$IMAGE_RECORD")"; then cut -d' ' -f1 "$IMAGE_RECORD"; else echo; fi
    printf 'preloaded='
    if [[ -f "$PRELOADED" ]]; then cut -d' ' -f2 "$PRELOADED" | sort | paste -sd'|' -; else echo; fi
}

case "$action" in
apply)
    config="$1" port="$2" scheme="$3" runtime="$4"
    shift 4
    image_file="" image_sha=""
    if [[ "$runtime" == image ]]; then image_file="$1" image_sha="$2"; shift 2; fi
    # The uploaded tar goes whatever happens.
    trap 'rm -f -- "$image_file"' EXIT
    export http_proxy="${http_proxy:-}" https_proxy="${https_proxy:-}"
    read_volumes "$@"
    mount_volumes
    if [[ "$runtime" == package ]]; then install_package_runtime; else install_container_runtime "$image_file" "$image_sha"; fi
    # The whole tree: one written by the image runtime (root) is the package's registry's after a switch.
    if getent passwd docker-registry >/dev/null; then
        find "$ROOT" -xdev \( ! -user docker-registry -o ! -group docker-registry \) -exec chown -h docker-registry:docker-registry {} +
    fi
    mkdir -p "$CONFIG_DIR"
    note_change "$(printf '%s' "$config" | install_file "$CONFIG_DIR/config.yml" 0644)"
    write_tls
    write_logins
    start_registry "$(service_name "$runtime")"
    wait_healthy "$port" "$scheme"
    rm -f "$RESTART_PENDING"
    echo "registry serving on $scheme://$(hostname -I | awk '{ print $1 }'):$port"
    ;;
missing) missing "$@" ;;
preload) preload "$@" ;;
report) report "$@" ;;
stop)
    read_volumes "$@"
    for service in "$PACKAGE_SERVICE" "$CONTAINER_SERVICE"; do
        if svc status "$service" >/dev/null 2>&1; then svc stop "$service"; fi
    done
    unmount_volumes
    echo "registry stopped and its volume unmounted"
    ;;
*) echo "registryServer.sh: unknown action $action" >&2; exit 2 ;;
esac
