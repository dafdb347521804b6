#!/usr/bin/env bash
# The lab's NFS server (sourced after common.sh by init.d/nfs-kernel-server and sbin/exportfs): the kernel of
# the test machine has no nfsd, so nfs-ganesha, a userspace NFS server, serves what the kernel would: the
# kernel export table that the real exportfs(8) wrote to /var/lib/nfs/etab, with the NFS versions and
# settings rpc.nfsd would give the kernel from /etc/nfs.conf (and /etc/nfs.conf.d/*.conf).
#
# Nothing here decides what to export or how: every EXPORT below is one path of etab, every CLIENT block one
# etab line, and each option is the exportfs option translated to its nfs-ganesha equivalent.
#   exportfs options:   exports(5); the etab line format: putexportent() in support/nfs/exports.c,
#                       nfs-utils 2.6.2 (every option written out, per-flavor flags after "sec=").
#   ganesha options:    ganesha-export-config(8) and ganesha-core-config(8), nfs-ganesha V4.3
#                       (src/doc/man/*.rst); a SIGHUP rereads the EXPORT blocks, adds, updates and removes
#                       exports (reread_exports() in src/support/exports.c).
#   nfs.conf booleans:  conf_get_bool() in support/nfs/conffile.c; defaults and [nfsd] keys: utils/nfsd/nfsd.c
#                       (vers3 and vers4 on, every vers4.x minor on as the kernel defaults, tcp on, udp off).
#
# Files: the generated config /run/ganesha/nfs-kernel-server.conf, export ids by path /run/ganesha/export-ids,
# the PID in /run/ganesha/ganesha.pid, the log /var/log/ganesha/ganesha.log (also this file's notes).
GANESHA=/usr/bin/ganesha.nfsd
GANESHA_RUN=/run/ganesha
GANESHA_PID="$GANESHA_RUN/ganesha.pid"
GANESHA_CONF="$GANESHA_RUN/nfs-kernel-server.conf"
GANESHA_IDS="$GANESHA_RUN/export-ids"
GANESHA_LOG=/var/log/ganesha/ganesha.log
ETAB=/var/lib/nfs/etab
GANESHA_WAIT_SECONDS=30

note() {
    mkdir -p "${GANESHA_LOG%/*}"
    printf '%s : nfs-kernel-server stand-in : %s\n' "$(date '+%d/%m/%Y %H:%M:%S')" "$*" >>"$GANESHA_LOG"
}

# alive PID [COMM]: whether PID runs (a zombie, exited and not yet reaped, does not), named COMM when given.
# /proc/PID/stat is "PID (COMM) STATE ...", the state after the last ')' (proc(5)); read in one go.
alive() {
    local stat state
    stat="$(cat "/proc/$1/stat" 2>/dev/null || true)"
    [[ -n "$stat" ]] || return 1
    state="${stat##*) }"
    [[ "${state:0:1}" != [ZX] ]] || return 1
    [[ -z "${2:-}" || "$stat" == "$1 ($2) "* ]]
}

# The running server's PID, or nothing. ganesha's main() creates its PID file (open with O_CREAT), locks it
# and only then writes "PID\n" into it (nfs_main.c, nfs-ganesha V4.3): an empty or partial file is a server
# still starting, which `read` tells by the missing newline.
ganesha_pid() {
    local pid=""
    { IFS= read -r pid; } 2>/dev/null <"$GANESHA_PID" || pid=""
    if [[ "$pid" =~ ^[0-9]+$ ]] && alive "$pid" ganesha.nfsd; then echo "$pid"; fi
}

# nfs_bool SECTION TAG DEFAULT(0|1): conf_get_bool() of nfs-utils, through the real nfsconf.
nfs_bool() {
    local value
    value="$(nfsconf --get "$1" "$2" 2>/dev/null || true)"
    case "${value,,}" in
    1 | t | true | y | yes | on) echo 1 ;;
    0 | f | false | n | no | off) echo 0 ;;
    *) echo "$3" ;;
    esac
}

truth() { if (($1)); then echo true; else echo false; fi; }

nfs_value() { nfsconf --get "$1" "$2" 2>/dev/null || true; }

# Octal escapes of etab paths (\040 for a space) back to characters.
unescape() { printf '%b' "${1//\\/\\0}"; }

# export_id PATH: a stable Export_Id for PATH while this server runs (ganesha matches exports by id on reload).
export_id() {
    local path="$1" id
    touch "$GANESHA_IDS"
    id="$(awk -F'\t' -v p="$path" '$2 == p { print $1; exit }' "$GANESHA_IDS")"
    if [[ -z "$id" ]]; then
        id="$(awk -F'\t' 'BEGIN { m = 0 } $1 > m { m = $1 } END { print m + 1 }' "$GANESHA_IDS")"
        printf '%s\t%s\n' "$id" "$path" >>"$GANESHA_IDS"
    fi
    echo "$id"
}

# client_rank CLIENT: where mountd looks for CLIENT among a path's lines. It takes the first line that matches,
# trying host names and addresses, then networks, wildcards, netgroups, "*", gss/ (client_gettype() in
# support/export/client.c and lookup_export() in support/export/cache.c, nfs-utils 2.6.2); ganesha takes the
# first CLIENT block that matches, so the blocks go in that order.
client_rank() {
    case "$1" in
    "" | "*") echo 4 ;;
    gss/*) echo 5 ;;
    @*) echo 3 ;;
    *[*?[]*) echo 2 ;;
    */*) echo 1 ;;
    *) echo 0 ;;
    esac
}

# The CLIENT block of one etab line (CLIENT and its option list).
client_block() {
    local client="$1" opts="$2" access=RW squash=root privileged=true anonuid="" anongid="" sec="" opt
    local -a list
    IFS=, read -r -a list <<<"$opts"
    for opt in "${list[@]}"; do
        case "$opt" in
        rw) access=RW ;;
        ro) access=RO ;;
        root_squash) [[ "$squash" == all ]] || squash=root ;;
        no_root_squash) [[ "$squash" == all ]] || squash=none ;;
        all_squash) squash=all ;;
        secure) privileged=true ;;
        insecure) privileged=false ;;
        anonuid=*) anonuid="${opt#anonuid=}" ;;
        anongid=*) anongid="${opt#anongid=}" ;;
        sec=*) sec+="${sec:+:}${opt#sec=}" ;;
        esac
    done
    # exports(5): "all_squash" maps every uid and gid, "root_squash" uid/gid 0, "no_root_squash" none.
    case "$squash" in
    all) squash=All_Squash ;;
    root) squash=Root_Squash ;;
    none) squash=No_Root_Squash ;;
    esac
    echo "    CLIENT {"
    echo "        Clients = $client;"
    echo "        Access_Type = $access;"
    echo "        Squash = $squash;"
    echo "        PrivilegedPort = $privileged;"
    if [[ -n "$anonuid" ]]; then echo "        Anonymous_Uid = $anonuid;"; fi
    if [[ -n "$anongid" ]]; then echo "        Anonymous_Gid = $anongid;"; fi
    if [[ -n "$sec" ]]; then echo "        SecType = $(tr ':' ',' <<<"$sec" | sed 's/,/, /g');"; fi
    echo "    }"
}

# The whole ganesha configuration: the server's settings from nfs.conf, one EXPORT per exported path.
ganesha_config() {
    local v3 v4 udp tcp minor port grace lease hosts manage_gids protocols="" minors="" transports=""
    v3="$(nfs_bool nfsd vers3 1)"
    v4="$(nfs_bool nfsd vers4 1)"
    for minor in 0 1 2; do
        if (($(nfs_bool nfsd "vers4.$minor" 1))); then minors+="${minors:+, }$minor"; fi
    done
    [[ -n "$minors" ]] || v4=0
    if ((v3)); then protocols+="3"; fi
    if ((v4)); then protocols+="${protocols:+, }4"; fi
    [[ -n "$protocols" ]] || { echo "nfs-kernel-server stand-in: nfs.conf enables no NFS version" >&2; return 1; }
    udp="$(nfs_bool nfsd udp 0)"
    tcp="$(nfs_bool nfsd tcp 1)"
    if ((tcp)); then transports+="TCP"; fi
    if ((udp)); then transports+="${transports:+, }UDP"; fi
    port="$(nfs_value nfsd port)"
    grace="$(nfs_value nfsd grace-time)"
    lease="$(nfs_value nfsd lease-time)"
    hosts="$(nfs_value nfsd host)"
    manage_gids="$(nfs_bool mountd manage-gids 0)"
    if [[ " ${RPCMOUNTDOPTS:-} " == *" --manage-gids "* || " ${RPCMOUNTDOPTS:-} " == *" -g "* ]]; then manage_gids=1; fi

    echo "# Generated by the lab's nfs-kernel-server stand-in from /etc/nfs.conf and $ETAB; rewritten on every change."
    echo "NFS_CORE_PARAM {"
    echo "    NFS_Port = ${port:-2049};"
    if [[ -n "$hosts" ]]; then echo "    Bind_addr = ${hosts%%[, ]*};"; fi
    echo "    Protocols = $protocols;"
    # lockd serves NFSv2/v3 only; rpc.rquotad is not part of nfs-kernel-server.
    echo "    Enable_NLM = $(truth "$v3");"
    echo "    Enable_RQUOTA = false;"
    # rpc.mountd listens on UDP whatever nfsd does.
    if ((udp)); then echo "    Enable_UDP = true;"; elif ((v3)); then echo "    Enable_UDP = Mount;"; else echo "    Enable_UDP = false;"; fi
    echo "}"
    echo "NFSV4 {"
    echo "    Minor_Versions = ${minors:-0};"
    # The kernel's defaults are 90 s for both (nfsd grace-time and lease-time), ganesha's lease 60 s.
    echo "    Grace_Period = ${grace:-90};"
    echo "    Lease_Lifetime = ${lease:-90};"
    echo "}"
    echo "NFS_KRB5 { Active_krb5 = $([[ "${NEED_SVCGSSD:-}" == yes ]] && echo true || echo false); }"
    # The kernel serves the live filesystem; ganesha caches attributes for 60 s unless told not to
    # (Attr_Expiration_Time), and would miss what the server's own users change meanwhile (a chown).
    echo "EXPORT_DEFAULTS {"
    echo "    Manage_Gids = $(truth "$manage_gids");"
    echo "    Attr_Expiration_Time = 0;"
    echo "}"

    [[ -f "$ETAB" ]] || return 0
    # etab: "PATH<TAB>CLIENT(OPTIONS)", one line per path and client.
    local line path rest client opts root="" fsid
    local -a paths=()
    local -A seen=() clients=() fsids=() mountpoints=()
    while IFS= read -r line; do
        [[ -n "$line" ]] || continue
        path="$(unescape "${line%%$'\t'*}")"
        rest="${line#*$'\t'}"
        client="${rest%%(*}"
        opts="${rest#*(}"
        opts="${opts%)}"
        if [[ -z "${seen[$path]+set}" ]]; then
            paths+=("$path")
            seen[$path]=1
        fi
        clients["$path"$'\t'"$(client_rank "$client")"]+="$(client_block "$client" "$opts")"$'\n'
        fsid="$(tr ',' '\n' <<<"$opts" | sed -n 's/^fsid=//p' | head -1)"
        if [[ -n "$fsid" && -z "${fsids[$path]+set}" ]]; then fsids[$path]="$fsid"; fi
        # exports(5) mp / mountpoint[=PATH]: export only while that is a mount point (mountd checks it).
        if [[ ",$opts," == *",mountpoint,"* ]]; then mountpoints[$path]="$path"; fi
        if [[ ",$opts," == *",mountpoint="* ]]; then
            mountpoints[$path]="$(tr ',' '\n' <<<"$opts" | sed -n 's/^mountpoint=//p' | head -1)"
        fi
        # exports(5): fsid=0 (or fsid=root) is the root of the NFSv4 pseudo filesystem.
        if [[ "$fsid" == 0 || "$fsid" == root ]]; then root="$path"; fi
    done <"$ETAB"

    local pseudo export_protocols rank
    for path in "${paths[@]}"; do
        if [[ "$path" == *'"'* ]]; then note "cannot serve $path: a double quote in the path"; continue; fi
        if [[ -n "${mountpoints[$path]:-}" ]] && ! mountpoint -q "${mountpoints[$path]}"; then
            note "Cannot export $path: ${mountpoints[$path]} is not a mountpoint (exports option mp)"
            continue
        fi
        pseudo="$path"
        export_protocols="$protocols"
        if [[ -n "$root" ]]; then
            # With an fsid=0 export, NFSv4 clients see paths from that export down only.
            if [[ "$path" == "$root" ]]; then
                pseudo=/
            elif [[ "$path" == "$root"/* ]]; then
                pseudo="${path#"$root"}"
            else
                pseudo=""
                if ((v3)); then export_protocols=3; else note "$path is outside the NFSv4 root $root: not served"; continue; fi
            fi
        fi
        echo "EXPORT {"
        echo "    Export_Id = $(export_id "$path");"
        echo "    Path = \"$path\";"
        if [[ -n "$pseudo" ]]; then echo "    Pseudo = \"$pseudo\";"; fi
        echo "    Protocols = $export_protocols;"
        echo "    Transports = $transports;"
        echo "    Access_Type = None;"
        fsid="${fsids[$path]:-}"
        # fsid=N: the kernel reports N as the major number of the filesystem id (minor 0).
        if [[ "$fsid" =~ ^[0-9]+$ ]]; then echo "    Filesystem_Id = $fsid.0;"; fi
        echo "    FSAL { Name = VFS; }"
        for rank in 0 1 2 3 4 5; do printf '%s' "${clients["$path"$'\t'$rank]:-}"; done
        echo "}"
    done
}

ganesha_write_config() {
    mkdir -p "$GANESHA_RUN" "${GANESHA_LOG%/*}" /var/lib/nfs/ganesha
    ganesha_config >"$GANESHA_CONF.new" || return 1
    mv -f "$GANESHA_CONF.new" "$GANESHA_CONF"
}

log_size() { stat -c %s "$GANESHA_LOG" 2>/dev/null || echo 0; }

# log_since OFFSET: what ganesha logged after OFFSET bytes.
log_since() { tail -c +"$(($1 + 1))" "$GANESHA_LOG" 2>/dev/null || true; }

# After a start or reload (the log from OFFSET): the configuration errors ganesha found (a translation the
# stand-in got wrong: fails, so that it is noticed) and the exports it could not set up (a path it cannot
# serve, as the kernel could not either: told on stderr).
check_log() {
    local since failed errors
    since="$(log_since "$1")"
    failed="$(sed -n 's/.*Could not create export for (\([^)]*\)).*/\1/p' <<<"$since" | sort -u)"
    if [[ -n "$failed" ]]; then
        echo "nfs-kernel-server stand-in: nfs-ganesha could not serve: $(tr '\n' ' ' <<<"$failed")(see $GANESHA_LOG)" >&2
    fi
    errors="$(grep -E 'config_errs_to_log :CONFIG :CRIT :' <<<"$since" | sed 's/.*:CRIT ://' || true)"
    if [[ -n "$errors" ]]; then
        echo "nfs-kernel-server stand-in: nfs-ganesha refused the configuration made from $ETAB ($GANESHA_CONF):" >&2
        echo "$errors" >&2
        return 1
    fi
}

# Starts ganesha in the background, serving etab; returns once it serves, or fails saying why.
# ganesha runs with -F (no daemon(3) fork): the process started here is the server itself, so its PID is known
# before the PID file holds it, and an exit while it starts is seen at once, with its status (LogFatal ends
# in _exit(2): Fatal() in src/log/log_functions.c, V4.3). What daemon(0, 0) would do is done here: its own
# session (setsid, so it outlives the caller's SSH session; -w: should setsid have to fork, it stands for
# ganesha and exits as it does), cwd /, stdio on /dev/null. ganesha writes its PID file either way.
ganesha_start() {
    local offset i child pid="" status why logged
    ganesha_write_config || return 1
    offset="$(log_size)"
    rm -f "$GANESHA_PID"
    (cd / && exec setsid -w "$GANESHA" -F -f "$GANESHA_CONF" -L "$GANESHA_LOG" -p "$GANESHA_PID" -N NIV_EVENT) \
        </dev/null >/dev/null 2>&1 7>&- &
    child=$!
    for ((i = 0; i < GANESHA_WAIT_SECONDS * 10; i++)); do
        pid="$(ganesha_pid)"
        if [[ -n "$pid" ]] && log_since "$offset" | grep -q 'NFS SERVER INITIALIZED'; then
            check_log "$offset"
            return
        fi
        alive "$child" || break
        sleep 0.1
    done
    if alive "$child"; then
        # Still starting after GANESHA_WAIT_SECONDS: stopped, so that a failed start leaves no server behind.
        why="it did not log 'NFS SERVER INITIALIZED' within ${GANESHA_WAIT_SECONDS}s (PID ${pid:-$child}, stopped now)"
        kill -TERM "$child" ${pid:+"$pid"} 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do alive "$child" || break; sleep 0.1; done
        kill -KILL "$child" ${pid:+"$pid"} 2>/dev/null || true
        wait "$child" 2>/dev/null || true
        rm -f "$GANESHA_PID"
    else
        status=0
        wait "$child" 2>/dev/null || status=$?
        if ((status > 128)); then
            why="it was killed by SIG$(kill -l "$((status - 128))" 2>/dev/null || echo "$((status - 128))")"
        else
            why="it exited with status $status"
        fi
        why+=" before it served"
        # A LogFatal exit leaves the PID file: gone with the server, as a failed start leaves no nfsd (status 3).
        rm -f "$GANESHA_PID"
    fi
    echo "nfs-kernel-server stand-in: nfs-ganesha did not start: $why; the last lines it logged ($GANESHA_LOG):" >&2
    logged="$(log_since "$offset" | tail -n 12)"
    echo "${logged:-(none)}" >&2
    note "nfs-ganesha did not start: $why"
    return 1
}

# Makes the running ganesha serve the current etab (SIGHUP: reread_config() in src/MainNFSD/nfs_init.c rereads
# the EXPORT blocks, then logs the configuration errors it met), and waits until it has.
ganesha_reload() {
    local pid offset i size
    pid="$(ganesha_pid)"
    [[ -n "$pid" ]] || return 0
    ganesha_write_config || return 1
    offset="$(log_size)"
    kill -HUP "$pid"
    for ((i = 0; i < GANESHA_WAIT_SECONDS * 10; i++)); do
        if log_since "$offset" | grep -q -e 'Reread exports complete' -e 'Error while parsing'; then
            # The errors come after that line, from the same thread without a pause: wait for a quiet log.
            size=""
            while [[ "$size" != "$(log_size)" ]]; do
                size="$(log_size)"
                sleep 0.1
            done
            check_log "$offset"
            return
        fi
        sleep 0.1
    done
    echo "nfs-kernel-server stand-in: nfs-ganesha did not reread its exports within ${GANESHA_WAIT_SECONDS}s" >&2
    return 1
}

# Stops ganesha (SIGTERM: a clean shutdown) and waits until the process is gone: it unlinks its PID file in
# do_shutdown() (src/MainNFSD/nfs_admin_thread.c, V4.3) before it exits, so the file going is not enough.
ganesha_stop() {
    local pid i
    pid="$(ganesha_pid)"
    if [[ -n "$pid" ]]; then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < GANESHA_WAIT_SECONDS * 10; i++)); do
            alive "$pid" ganesha.nfsd || break
            sleep 0.1
        done
        if alive "$pid" ganesha.nfsd; then
            note "nfs-ganesha $pid did not stop on SIGTERM within ${GANESHA_WAIT_SECONDS}s: killed"
            kill -KILL "$pid" 2>/dev/null || true
            for ((i = 0; i < 50; i++)); do alive "$pid" ganesha.nfsd || break; sleep 0.1; done
        fi
    fi
    rm -f "$GANESHA_PID" "$GANESHA_IDS"
}

# Serialises start, stop and reloads for the rest of the calling process (fd 7, which ganesha must not inherit).
lock_server() {
    mkdir -p "$GANESHA_RUN"
    exec 7>>"$GANESHA_RUN/.lock"
    flock 7
}
