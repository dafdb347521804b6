#!/usr/bin/env bash
# Keeps exactly one copy of a line in a file: whole-line, exact matches only (never a prefix or a pattern).
# Safe to run twice; the file is rewritten atomically with its mode and owner kept, under a lock so that
# steps editing the same file (e.g. /etc/hosts) take turns.
#
#   managedLine.sh ensure FILE LINE [OLD_LINE] [MODE]   add LINE once (dropping OLD_LINE); MODE for a new file
#   managedLine.sh remove FILE LINE                     drop every copy of LINE
#   managedLine.sh count  FILE LINE                     print how many copies there are
set -euo pipefail

action="$1"
file="$2"
export LINE="$3"
export OLD="${4:-}"
mode="${5:-0644}"

count() {
    if [[ -f "$file" ]]; then awk '$0 == ENVIRON["LINE"] { n++ } END { print n + 0 }' "$file"; else echo 0; fi
}

# Writes stdin to FILE through a temporary file in the same directory, keeping the old file's mode/owner.
replace_file() {
    local tmp
    tmp="$(mktemp "$(dirname "$file")/.k8s-vnf.XXXXXX")"
    cat >"$tmp"
    if [[ -f "$file" ]]; then
        chmod --reference="$file" "$tmp"
        chown --reference="$file" "$tmp"
        if cmp -s "$tmp" "$file"; then
            rm -f "$tmp"
            echo unchanged
            return
        fi
    else
        chmod "$mode" "$tmp"
    fi
    mv -f "$tmp" "$file"
    echo changed
}

ensure() {
    mkdir -p "$(dirname "$file")"
    if [[ -f "$file" ]]; then
        awk '
            ENVIRON["OLD"] != "" && $0 == ENVIRON["OLD"] && ENVIRON["OLD"] != ENVIRON["LINE"] { next }
            $0 == ENVIRON["LINE"] { if (seen++) next }
            { print }
            END { if (!seen) print ENVIRON["LINE"] }
        ' "$file" | replace_file
    else
        printf '%s\n' "$LINE" | replace_file
    fi
}

remove() {
    [[ -f "$file" ]] || { echo unchanged; return; }
    awk '$0 != ENVIRON["LINE"]' "$file" | replace_file
}

lockdir=/run/lock
mkdir -p "$lockdir"
exec 9>"$lockdir/k8s-vnf-$(printf '%s' "$file" | sha256sum | cut -c1-16).lock"
flock 9

case "$action" in
ensure) ensure ;;
remove) remove ;;
count) count ;;
*) echo "managedLine.sh: unknown action $action" >&2; exit 2 ;;
esac
