#!/usr/bin/env bash
# The lab's real control plane (sourced by the kubeadm and kubelet stand-ins). When the lab gives its hosts
# the real Kubernetes and etcd binaries (read-only at /opt/k8s-vnf-lab/<tool>, see host-init.sh), the
# kubeadm stand-in has the real kubeadm write a control-plane node's certificates, kubeconfig files and static
# Pod manifests, and the kubelet stand-in runs each manifest's container command as a process of the host.
# That is what the kubelet does with a static Pod, minus the container: same binary, same flags (kubeadm's
# own, cmd/kubeadm/app/phases/controlplane/manifests.go and phases/etcd/local.go), same host paths (every
# volume of those Pods is a hostPath), restarted when it exits (a static Pod's restartPolicy is Always; the
# controller manager and the scheduler exit when they lose their leader lease). Nodes, labels and tokens stay
# in the stand-ins' state until the lab hosts run a real kubelet.

REAL_TOOLS=/opt/k8s-vnf-lab
STATIC_PODS_RUN=/run/k8s-vnf-lab
STATIC_PODS_LOG=/var/log/k8s-vnf-lab
MANIFESTS=/etc/kubernetes/manifests
# Written once the real kubeadm wrote this node's manifests; goes with /etc/kubernetes (reset).
REAL_MANIFESTS_MARK=/etc/kubernetes/k8s-vnf-lab-static-pods

real_control_plane() { [[ -x "$REAL_TOOLS/kube/kubeadm" && -x "$REAL_TOOLS/etcd/etcd" ]]; }

# Whether this lab cluster's API server is the real one (the real kubeadm made its CA, kept in the state).
real_api_server() { real_control_plane && [[ -f "$STATE/ca.crt" ]]; }

# Whether this node runs static Pods of the real kubeadm's.
runs_static_pods() { [[ -f "$REAL_MANIFESTS_MARK" ]]; }

real_kubeadm() { "$REAL_TOOLS/kube/kubeadm" "$@"; }

# The binary a static Pod's command names, from the lab's tools.
static_pod_binary() {
    local tool
    for tool in kube etcd; do
        if [[ -x "$REAL_TOOLS/$tool/$1" ]]; then
            echo "$REAL_TOOLS/$tool/$1"
            return 0
        fi
    done
    return 1
}

# The command of a manifest's first container, one word a line, as kubeadm writes it (sigs.k8s.io/yaml: a
# block list under `command:`; a word that YAML would misread is single-quoted, '' standing for ').
static_pod_command() {
    awk '
        /^  - command:$/ { inside = 1; next }
        inside && /^    - / {
            word = substr($0, 7)
            if (word ~ /^'\''.*'\''$/) { word = substr(word, 2, length(word) - 2); gsub(/'\'''\''/, "'\''", word) }
            else if (word ~ /^".*"$/) { word = substr(word, 2, length(word) - 2) }
            print word
            next
        }
        inside { exit }' "$1"
}

static_pod_running() {
    local pid
    pid="$(cat "$STATIC_PODS_RUN/$1.pid" 2>/dev/null)" || return 1
    [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null
}

# Starts every static Pod of the manifests that is not running, each in a session of its own: a loop that runs
# the command again a second after it exits, its PID the session's (stop_static_pods ends the session).
start_static_pods() {
    local manifest name binary
    local -a command
    mkdir -p "$STATIC_PODS_RUN" "$STATIC_PODS_LOG"
    for manifest in "$MANIFESTS"/*.yaml; do
        [[ -f "$manifest" ]] || continue
        name="$(basename "$manifest" .yaml)"
        static_pod_running "$name" && continue
        mapfile -t command < <(static_pod_command "$manifest")
        ((${#command[@]})) || fail "static Pod $manifest: no container command"
        binary="$(static_pod_binary "${command[0]}")" || fail "static Pod $manifest: the lab has no ${command[0]}"
        # Not the caller's descriptors: the state lock (8) would be held for as long as the Pod runs.
        # shellcheck disable=SC2016  # the loop's own arguments
        setsid bash -c 'while :; do "$@"; echo "exited $?; restarting in 1 s"; sleep 1; done' static-pod "$binary" "${command[@]:1}" \
            </dev/null >>"$STATIC_PODS_LOG/$name.log" 2>&1 8>&- 9>&- &
        echo "$!" >"$STATIC_PODS_RUN/$name.pid"
    done
}

# Stops the static Pods this host runs (the sessions recorded when they started), as the kubelet does when
# their manifests go.
stop_static_pods() {
    local file pid i
    for file in "$STATIC_PODS_RUN"/*.pid; do
        [[ -f "$file" ]] || continue
        pid="$(cat "$file")"
        if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
            kill -TERM -- "-$pid" 2>/dev/null || true
            for i in $(seq 1 100); do
                kill -0 -- "-$pid" 2>/dev/null || break
                sleep 0.1
                : "$i"
            done
            if kill -0 -- "-$pid" 2>/dev/null; then kill -KILL -- "-$pid" 2>/dev/null || true; fi
        fi
        rm -f "$file"
    done
}

# The secure port of this node's API server, from its manifest (kubeadm writes --secure-port).
api_server_port() {
    static_pod_command "$MANIFESTS/kube-apiserver.yaml" | sed -n 's/^--secure-port=//p'
}

# Waits until the local API server is ready (its /readyz, which kubeadm's wait-control-plane phase polls),
# up to SECONDS.
wait_api_server() {
    local port="$1" seconds="$2" i
    for i in $(seq 1 $((seconds * 2))); do
        if curl -ksf --max-time 2 "https://127.0.0.1:$port/readyz" >/dev/null 2>&1; then return 0; fi
        static_pod_running kube-apiserver || fail "kube-apiserver exited: $(tail -5 "$STATIC_PODS_LOG/kube-apiserver.log")"
        sleep 0.5
        : "$i"
    done
    fail "kube-apiserver was not ready within ${seconds}s: $(tail -5 "$STATIC_PODS_LOG/kube-apiserver.log")"
}

# The CA hash a join pins (--discovery-token-ca-cert-hash): SHA-256 of the CA certificate's
# SubjectPublicKeyInfo (cmd/kubeadm/app/util/pubkeypin), without its sha256: prefix.
ca_cert_hash() {
    openssl x509 -in "$1" -pubkey -noout | openssl pkey -pubin -outform DER | sha256sum | cut -d' ' -f1
}
