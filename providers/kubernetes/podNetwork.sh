#!/usr/bin/env bash
# The cluster's pod network on a control-plane node (sent after lib.sh): the CNI manifest applied with the
# admin kubeconfig. Right after init the API server may not answer yet, so kubectl is retried within a
# bound; `kubectl apply` leaves what is already there as it is, so this is safe to run twice. A proxy for
# fetching the manifest comes exported ahead of the script (never on a command line: it may hold a password).
#
#   podNetwork.sh apply MANIFEST ATTEMPTS INTERVAL_SECONDS
action="$1"
shift

case "$action" in
apply)
    manifest="$1" attempts="$2" interval="$3"
    for attempt in $(seq "$attempts"); do
        if kubectl --kubeconfig /etc/kubernetes/admin.conf apply -f "$manifest"; then
            exit 0
        fi
        echo "attempt $attempt: the API server is not answering yet" >&2
        sleep "$interval"
    done
    exit 1
    ;;
*)
    echo "podNetwork.sh: unknown action $action" >&2
    exit 2
    ;;
esac
