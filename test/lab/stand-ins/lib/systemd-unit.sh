# shellcheck shell=bash
# Lab stand-in for systemd's running of a service unit of ours: a unit file the project writes to
# /etc/systemd/system/NAME.service for a service that has no init script (k8s-vnf-registry: the registry image
# on containerd, providers/registry/registryServer.sh container_unit). Lab hosts run no systemd; the project's
# scripts come through `service NAME ACTION`, which Debian's /usr/sbin/service turns into /etc/init.d/NAME
# ACTION, where a small init script of the lab's (stand-ins/init.d/NAME) sources this file and calls
#
#   unit_service NAME start|stop|restart|try-restart|force-reload|status
#
# as `systemctl ACTION NAME.service` does, after a `systemctl daemon-reload`: start reads the unit file as it
# is then; stop uses the unit as it was started (a copy in /run/k8s-standin/units/NAME.service, as systemd
# keeps the loaded unit), whatever the file says since. Semantics from systemd.service(5), systemd.unit(5),
# systemd.syntax(7) and systemd.kill(5) (systemd 252, Debian bookworm):
#
#   ExecStartPre=  each run in order, to its end, before ExecStart; a command line prefixed with "-" may fail
#                  (its exit code is logged and ignored), any other failing (or timing out) fails the start
#                  and ExecStart does not run ("If any of those commands (not prefixed with '-') fail, the
#                  rest are not executed and the unit is considered failed")
#   ExecStart=     Type=simple (the default): the main process, started in the background; start returns at
#                  once ("the service manager will consider the unit started immediately after the main
#                  service process has been forked off"). Its own session, cwd /, stdin /dev/null, stdout and
#                  stderr to /var/log/NAME.log (the journal's part); a clean environment: PATH only (systemd's
#                  without /usr/local/sbin, which in a lab host holds only the lab's recording guards, as
#                  stand-ins/init.d/containerd does). Its PID and start time go to /run/k8s-standin/units/NAME.pid:
#                  stop and status act on exactly that process.
#   ExecStop=      on stop, each run in order with MAINPID set (${MAINPID}, and $MAINPID as a word of its own,
#                  the only variables expanded); "-" as above; a failure is logged and the stop goes on, as
#                  systemd's does. Then (systemd.kill(5)) the main process, if it still runs, gets SIGTERM,
#                  and SIGKILL when it has not exited within TimeoutStopSec (default 90 s); stop returns once
#                  it is gone. systemd signals every process
#                  of the unit's cgroup (KillMode=control-group, the default): here the main process only,
#                  the same for a main process that forks nothing (`ctr run`: the container runs under
#                  containerd's shim, not below ctr); a unit setting KillMode= is refused.
#   Requires=, Wants=  other .service units started first (`service UNIT start` unless `status` says it
#                  runs); a Requires= one that fails fails the start. Not done: a stop or restart of that
#                  unit does not propagate here (systemd stops/restarts the units that Require= it).
#   RequiresMountsFor=  absolute paths: before anything else, every /etc/fstab mount point on the way to each
#                  (the path itself or a directory above it, not /) is mounted unless it is (`mount POINT`, as
#                  its .mount unit, which this pulls in by Requires= and After=, would); one that fails fails
#                  the start. Paths on no fstab mount need nothing.
#   TimeoutStartSec=, TimeoutStopSec=, TimeoutSec=   seconds ("30", "30s", "2min", "infinity"); the start
#                  timeout (default 90 s) bounds each ExecStartPre, the stop timeout each ExecStop and the
#                  wait after SIGTERM.
#   Description=   shown by status.  Documentation=, After=, Before=, [Install] (WantedBy=, RequiredBy=,
#                  Alias=, Also=: `systemctl enable`, which the project runs only where systemd runs): no
#                  effect on a start or stop, accepted.
#   Restart=, RestartSec=   accepted and not done: a main process that exits stays exited (status says 3),
#                  the lab's supervision ends with the test, and a test sees a crash instead of a restart.
#   status         0 while the main process runs; 3 when it does not (inactive, or exited by itself: systemctl
#                  says 3 for both); 4 when there is no unit file and nothing runs (systemctl: no such unit).
#
# Refused (the action fails saying so, before anything runs): any other section or directive (Environment=,
# User=, KillMode=, Type= other than simple, drop-in directories NAME.service.d, ...), Requires=/Wants= of units
# other than .service, command-line prefixes other than "-" ("@", ":", "+", "!", "!!"), an executable that is
# not an absolute path, specifiers other than %% (%n, %i, ...), $VARIABLES other than $$ and MAINPID (in
# ExecStop), backslash escapes other than \\ \" \' and "\ ", a lone ";" (systemd's command separator). Unit
# files are read as systemd.syntax(7) says: comments (#, ;), sections, KEY=VALUE, a trailing backslash
# continues the line, an empty assignment of an Exec*= empties its list.

UNIT_DIR=/etc/systemd/system
UNIT_RUN_DIR=/run/k8s-standin/units
# systemd's PATH for services (merged /usr) without /usr/local/sbin: see ExecStart above.
UNIT_PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
UNIT_DEFAULT_TIMEOUT=90

# What unit_load read: the unit's settings.
UNIT_NAME=""
UNIT_FILE=""
UNIT_DESCRIPTION=""
UNIT_EXEC_START_PRE=()
UNIT_EXEC_START=()
UNIT_EXEC_STOP=()
UNIT_REQUIRES=()
UNIT_WANTS=()
UNIT_MOUNTS_FOR=()
UNIT_TIMEOUT_START=$UNIT_DEFAULT_TIMEOUT
UNIT_TIMEOUT_STOP=$UNIT_DEFAULT_TIMEOUT
UNIT_WORDS=()

unit_fail() {
    echo "systemd stand-in: $*" >&2
    exit 1
}

# unit_seconds VALUE DIRECTIVE: a systemd time span in whole seconds (0: no limit, as "infinity").
unit_seconds() {
    local value="$1" directive="$2"
    case "$value" in
    infinity) echo 0 ;;
    *[!0-9]*)
        if [[ "$value" =~ ^([0-9]+)[[:space:]]*(s|sec|second|seconds)$ ]]; then
            echo "${BASH_REMATCH[1]}"
        elif [[ "$value" =~ ^([0-9]+)[[:space:]]*(m|min|minute|minutes)$ ]]; then
            echo "$((BASH_REMATCH[1] * 60))"
        else
            unit_fail "$UNIT_FILE: $directive=$value: only seconds, minutes or infinity are implemented in the lab"
        fi
        ;;
    "") unit_fail "$UNIT_FILE: $directive= is empty" ;;
    *) echo "$value" ;;
    esac
}

# unit_command_words COMMANDLINE [MAINPID]: the words of an Exec*= value without its "-" prefix, into the array
# UNIT_WORDS, as systemd unquotes them (systemd.syntax(7) "Quoting"; systemd.service(5) "Command lines"): double or
# single quotes group, a backslash escapes the next character; %% is %, $$ is $, ${MAINPID} (and $MAINPID as a word
# of its own) is MAINPID when given. Fails on anything else it would have to interpret.
unit_command_words() {
    local text="$1" mainpid="${2:-}" word="" quote="" have=0 c next i
    UNIT_WORDS=()
    for ((i = 0; i < ${#text}; i++)); do
        c="${text:i:1}"
        next="${text:i+1:1}"
        if [[ "$c" == % ]]; then
            [[ "$next" == % ]] || unit_fail "$UNIT_FILE: specifier %$next in \"$text\" is not implemented in the lab"
            word+=%
            have=1
            ((i += 1))
        elif [[ "$c" == '$' ]]; then
            if [[ "$next" == '$' ]]; then
                word+='$'
                ((i += 1))
            elif [[ -n "$mainpid" && "${text:i}" == "\${MAINPID}"* ]]; then
                # ${FOO}: within a word, or a word of its own.
                word+="$mainpid"
                ((i += 9))
            elif [[ -n "$mainpid" && -z "$quote" && "$have" == 0 && "${text:i}" =~ ^\$MAINPID([[:space:]]|$) ]]; then
                # $FOO: only as a word of its own (systemd.service(5), "Command lines").
                word+="$mainpid"
                ((i += 7))
            else
                unit_fail "$UNIT_FILE: variable ${text:i} in \"$text\" is not implemented in the lab (only \$\$, and \${MAINPID} or a word \$MAINPID in ExecStop=)"
            fi
            have=1
        elif [[ "$c" == "\\" ]]; then
            [[ "$next" == [\\\"\'\ ] ]] || unit_fail "$UNIT_FILE: escape \\$next in \"$text\" is not implemented in the lab"
            word+="$next"
            have=1
            ((i += 1))
        elif [[ -n "$quote" ]]; then
            if [[ "$c" == "$quote" ]]; then quote=""; else word+="$c"; fi
        elif [[ "$c" == '"' || "$c" == "'" ]]; then
            quote="$c"
            have=1
        elif [[ "$c" == [[:space:]] ]]; then
            if ((have)); then UNIT_WORDS+=("$word"); fi
            word=""
            have=0
        else
            word+="$c"
            have=1
        fi
    done
    [[ -z "$quote" ]] || unit_fail "$UNIT_FILE: unbalanced quotes in \"$text\""
    if ((have)); then UNIT_WORDS+=("$word"); fi
    for word in "${UNIT_WORDS[@]}"; do
        [[ "$word" != ";" ]] || unit_fail "$UNIT_FILE: \";\" (several commands on one line) in \"$text\" is not implemented in the lab"
    done
}

# unit_check_command DIRECTIVE VALUE: fails unless the lab can run VALUE as systemd would.
unit_check_command() {
    local directive="$1" value="$2" mainpid=""
    # $MAINPID: only ExecStop= runs with a main process.
    [[ "$directive" != ExecStop ]] || mainpid=1
    unit_command "$directive" "$value" "$mainpid"
    ((${#UNIT_WORDS[@]})) || unit_fail "$UNIT_FILE: $directive= has no command"
    [[ "${UNIT_WORDS[0]}" == /* ]] || unit_fail "$UNIT_FILE: $directive=$value: only an absolute path to the executable is implemented in the lab"
}

# unit_command DIRECTIVE VALUE [MAINPID]: the words of VALUE without its "-" prefix into UNIT_WORDS; fails on
# the prefixes not implemented.
unit_command() {
    local directive="$1" value="$2"
    value="${value#-}"
    case "$value" in
    [@:+!-]*) unit_fail "$UNIT_FILE: $directive=$2: the prefix ${value:0:1} is not implemented in the lab (only -)" ;;
    esac
    unit_command_words "$value" "${3:-}"
}

# unit_load NAME [FILE]: reads the unit file (default /etc/systemd/system/NAME.service, which must exist) into
# UNIT_*, failing on what the lab does not implement.
unit_load() {
    local name="$1" file="${2:-$UNIT_DIR/$1.service}" raw line section="" key value dep
    local -a deps
    UNIT_NAME="$name"
    UNIT_FILE="$UNIT_DIR/$name.service"
    [[ -f "$file" ]] || unit_fail "$file: no such unit file"
    if compgen -G "$UNIT_DIR/$name.service.d/*.conf" >/dev/null; then
        unit_fail "$UNIT_DIR/$name.service.d: drop-ins are not implemented in the lab"
    fi
    UNIT_DESCRIPTION="" UNIT_EXEC_START_PRE=() UNIT_EXEC_START=() UNIT_EXEC_STOP=() UNIT_REQUIRES=() UNIT_WANTS=() UNIT_MOUNTS_FOR=()
    UNIT_TIMEOUT_START=$UNIT_DEFAULT_TIMEOUT UNIT_TIMEOUT_STOP=$UNIT_DEFAULT_TIMEOUT
    line=""
    while IFS= read -r raw || [[ -n "$raw" ]]; do
        # A trailing backslash joins the next line, the backslash becoming a space (systemd.syntax(7)).
        if [[ "$raw" == *\\ ]]; then
            line+="${raw%\\} "
            continue
        fi
        line+="$raw"
        line="${line#"${line%%[![:space:]]*}"}"
        line="${line%"${line##*[![:space:]]}"}"
        if [[ -z "$line" || "$line" == [#\;]* ]]; then
            line=""
            continue
        fi
        if [[ "$line" == \[*\] ]]; then
            section="$line"
            line=""
            case "$section" in
            "[Unit]" | "[Service]" | "[Install]" | "[X-"*) ;;
            *) unit_fail "$UNIT_FILE: section $section is not implemented in the lab" ;;
            esac
            continue
        fi
        [[ "$line" == *=* ]] || unit_fail "$UNIT_FILE: not a KEY=VALUE line: $line"
        key="${line%%=*}"
        key="${key%"${key##*[![:space:]]}"}"
        value="${line#*=}"
        value="${value#"${value%%[![:space:]]*}"}"
        line=""
        case "$section/$key" in
        "[X-"*) ;;
        "[Unit]/Description") UNIT_DESCRIPTION="$value" ;;
        "[Unit]/Documentation" | "[Unit]/After" | "[Unit]/Before") ;;
        "[Unit]/Requires" | "[Unit]/Wants")
            read -r -a deps <<<"$value"
            for dep in "${deps[@]}"; do
                [[ "$dep" =~ ^[A-Za-z0-9:_.-]+\.service$ ]] ||
                    unit_fail "$UNIT_FILE: $key=$dep: only dependencies on .service units are implemented in the lab"
                if [[ "$key" == Requires ]]; then UNIT_REQUIRES+=("${dep%.service}"); else UNIT_WANTS+=("${dep%.service}"); fi
            done
            ;;
        "[Unit]/RequiresMountsFor")
            read -r -a deps <<<"$value"
            for dep in "${deps[@]}"; do
                [[ "$dep" == /* ]] || unit_fail "$UNIT_FILE: RequiresMountsFor=$dep is not an absolute path"
                UNIT_MOUNTS_FOR+=("$dep")
            done
            ;;
        "[Service]/Type")
            [[ "$value" == simple ]] || unit_fail "$UNIT_FILE: Type=$value is not implemented in the lab (only simple)"
            ;;
        "[Service]/ExecStartPre" | "[Service]/ExecStart" | "[Service]/ExecStop")
            if [[ -z "$value" ]]; then
                case "$key" in
                ExecStartPre) UNIT_EXEC_START_PRE=() ;;
                ExecStart) UNIT_EXEC_START=() ;;
                ExecStop) UNIT_EXEC_STOP=() ;;
                esac
                continue
            fi
            unit_check_command "$key" "$value"
            case "$key" in
            ExecStartPre) UNIT_EXEC_START_PRE+=("$value") ;;
            ExecStart) UNIT_EXEC_START+=("$value") ;;
            ExecStop) UNIT_EXEC_STOP+=("$value") ;;
            esac
            ;;
        "[Service]/Restart")
            [[ "$value" =~ ^(no|on-success|on-failure|on-abnormal|on-watchdog|on-abort|always)$ ]] ||
                unit_fail "$UNIT_FILE: Restart=$value is not a restart setting"
            ;;
        "[Service]/RestartSec") unit_seconds "$value" RestartSec >/dev/null ;;
        "[Service]/TimeoutStartSec") UNIT_TIMEOUT_START="$(unit_seconds "$value" "$key")" || exit 1 ;;
        "[Service]/TimeoutStopSec") UNIT_TIMEOUT_STOP="$(unit_seconds "$value" "$key")" || exit 1 ;;
        "[Service]/TimeoutSec")
            UNIT_TIMEOUT_START="$(unit_seconds "$value" "$key")" || exit 1
            UNIT_TIMEOUT_STOP="$UNIT_TIMEOUT_START"
            ;;
        "[Install]/WantedBy" | "[Install]/RequiredBy" | "[Install]/Alias" | "[Install]/Also") ;;
        "/"*) unit_fail "$UNIT_FILE: $key= outside a section" ;;
        *) unit_fail "$UNIT_FILE: $section $key= is not implemented in the lab" ;;
        esac
    done <"$file"
    [[ -z "$line" ]] || unit_fail "$UNIT_FILE: the last line ends in a backslash"
    # Type=simple: exactly one ExecStart= (systemd.service(5): "Unless Type= is oneshot, exactly one command
    # must be given").
    ((${#UNIT_EXEC_START[@]} == 1)) ||
        unit_fail "$UNIT_FILE: Type=simple needs exactly one ExecStart=, found ${#UNIT_EXEC_START[@]}"
}

unit_log() { echo "/var/log/$UNIT_NAME.log"; }
unit_pidfile() { echo "$UNIT_RUN_DIR/$UNIT_NAME.pid"; }
unit_loaded() { echo "$UNIT_RUN_DIR/$UNIT_NAME.service"; }

# unit_starttime PID: the process's start time (proc(5) /proc/PID/stat field 22), nothing when it is gone or a
# zombie (exited, not yet reaped). The state and the fields after it follow the last ')' of the command name.
unit_starttime() {
    local stat rest
    stat="$(cat "/proc/$1/stat" 2>/dev/null || true)"
    [[ -n "$stat" ]] || return 0
    rest="${stat##*) }"
    [[ "${rest:0:1}" != [ZX] ]] || return 0
    # shellcheck disable=SC2086 # the fields, one per word: field 3 (state) is the first here, 22 the 20th
    set -- $rest
    echo "${20}"
}

# The recorded main PID while exactly that process runs (same PID, same start time), else nothing.
unit_main_pid() {
    local pid="" start="" file
    file="$(unit_pidfile)"
    { read -r pid start; } 2>/dev/null <"$file" || true
    [[ "$pid" =~ ^[0-9]+$ && -n "$start" ]] || return 0
    if [[ "$(unit_starttime "$pid")" == "$start" ]]; then echo "$pid"; fi
}

# unit_run DIRECTIVE VALUE TIMEOUT [MAINPID]: a control command (ExecStartPre, ExecStop) run to its end with
# the unit's environment, its output to the log; 0, or its failure status unless "-" says to ignore it.
unit_run() {
    local directive="$1" value="$2" timeout="$3" mainpid="${4:-}" status=0
    local -a argv environment=("PATH=$UNIT_PATH")
    unit_command "$directive" "$value" "$mainpid"
    argv=("${UNIT_WORDS[@]}")
    [[ -z "$mainpid" ]] || environment+=("MAINPID=$mainpid")
    echo "systemd stand-in: $UNIT_NAME.service: $directive=$value" >>"$(unit_log)"
    (
        cd / || exit 1
        if ((timeout > 0)); then
            exec env -i "${environment[@]}" timeout -k 5 "$timeout" "${argv[@]}"
        fi
        exec env -i "${environment[@]}" "${argv[@]}"
    ) </dev/null >>"$(unit_log)" 2>&1 9>&- || status=$?
    ((status == 0)) && return 0
    if [[ "$value" == -* ]]; then
        echo "systemd stand-in: $UNIT_NAME.service: $directive exited with status $status (ignored: the command line starts with \"-\")" >>"$(unit_log)"
        return 0
    fi
    echo "systemd stand-in: $UNIT_NAME.service: $directive exited with status $status" >>"$(unit_log)"
    return "$status"
}

# The unit's RequiresMountsFor= mounts (fstab's, mounted unless they are), then its Requires= and Wants= units,
# started unless they run (a Requires= one, or a mount, that fails fails the start).
unit_dependencies() {
    local dep path point
    for path in "${UNIT_MOUNTS_FOR[@]}"; do
        # fstab(5): the mount point is the second field of a line that is no comment.
        while read -r point; do
            [[ "$point" != / && ( "$path" == "$point" || "$path" == "${point%/}/"* ) ]] || continue
            if mountpoint -q "$point"; then continue; fi
            if ! mount "$point" 9>&- >>"$(unit_log)" 2>&1; then
                echo "A dependency job for $UNIT_NAME.service failed (RequiresMountsFor=$path: mount $point). See $(unit_log) for details." >&2
                exit 1
            fi
            echo "systemd stand-in: $UNIT_NAME.service: RequiresMountsFor=$path: mounted $point" >>"$(unit_log)"
        done < <(awk '$1 !~ /^#/ && NF >= 2 { print $2 }' /etc/fstab 2>/dev/null | sort)
    done
    for dep in "${UNIT_REQUIRES[@]}" "${UNIT_WANTS[@]}"; do
        if /usr/sbin/service "$dep" status >/dev/null 2>&1 9>&-; then continue; fi
        if ! /usr/sbin/service "$dep" start 9>&-; then
            if [[ " ${UNIT_REQUIRES[*]} " == *" $dep "* ]]; then
                echo "A dependency job for $UNIT_NAME.service failed (Requires=$dep.service). See $(unit_log) for details." >&2
                exit 1
            fi
            echo "systemd stand-in: $UNIT_NAME.service: Wants=$dep.service did not start (ignored)" >>"$(unit_log)"
        fi
    done
}

# Starts the unit (not running, loaded): dependencies, ExecStartPre, then ExecStart in the background.
unit_start() {
    local value child start
    local -a argv
    mkdir -p "$UNIT_RUN_DIR"
    unit_dependencies
    echo "systemd stand-in: $UNIT_NAME.service: starting ($(date -u +%FT%TZ))" >>"$(unit_log)"
    for value in "${UNIT_EXEC_START_PRE[@]}"; do
        if ! unit_run ExecStartPre "$value" "$UNIT_TIMEOUT_START"; then
            echo "Job for $UNIT_NAME.service failed because the control process exited with error code." >&2
            echo "See $(unit_log) for details:" >&2
            tail -n 5 "$(unit_log)" >&2
            exit 1
        fi
    done
    unit_command ExecStart "${UNIT_EXEC_START[0]}"
    argv=("${UNIT_WORDS[@]}")
    echo "systemd stand-in: $UNIT_NAME.service: ExecStart=${UNIT_EXEC_START[0]}" >>"$(unit_log)"
    # Its own session, so it outlives the caller's SSH session; exec all the way down (a background subshell
    # is no process group leader, so setsid does not fork): $! is the main process.
    (
        cd / || exit 1
        exec setsid env -i "PATH=$UNIT_PATH" "${argv[@]}"
    ) </dev/null >>"$(unit_log)" 2>&1 9>&- &
    child=$!
    start="$(unit_starttime "$child")"
    if [[ -z "$start" ]]; then
        # Gone already (a main process that fails at once): systemd too reports a started unit that then
        # failed; status says so.
        echo "systemd stand-in: $UNIT_NAME.service: main process $child exited at once" >>"$(unit_log)"
        return 0
    fi
    echo "$child $start" >"$(unit_pidfile)"
    echo "systemd stand-in: $UNIT_NAME.service: main process $child" >>"$(unit_log)"
}

# Stops the unit as it was started: ExecStop (with $MAINPID), then SIGTERM to the main process, SIGKILL after
# TimeoutStopSec; returns once it is gone.
unit_stop() {
    local pid value i limit
    pid="$(unit_main_pid)"
    if [[ -n "$pid" ]]; then
        if [[ -f "$(unit_loaded)" ]]; then unit_load "$UNIT_NAME" "$(unit_loaded)"; fi
        echo "systemd stand-in: $UNIT_NAME.service: stopping main process $pid ($(date -u +%FT%TZ))" >>"$(unit_log)"
        for value in "${UNIT_EXEC_STOP[@]}"; do
            unit_run ExecStop "$value" "$UNIT_TIMEOUT_STOP" "$pid" || true
        done
        if [[ -n "$(unit_main_pid)" ]]; then kill -TERM "$pid" 2>/dev/null || true; fi
        limit=$((UNIT_TIMEOUT_STOP * 20))
        for ((i = 0; limit == 0 || i < limit; i++)); do
            [[ -n "$(unit_main_pid)" ]] || break
            sleep 0.05
        done
        if [[ -n "$(unit_main_pid)" ]]; then
            echo "systemd stand-in: $UNIT_NAME.service: main process $pid did not exit within ${UNIT_TIMEOUT_STOP}s of SIGTERM: SIGKILL" >>"$(unit_log)"
            kill -KILL "$pid" 2>/dev/null || true
            for ((i = 0; i < 200; i++)); do
                [[ -n "$(unit_main_pid)" ]] || break
                sleep 0.05
            done
        fi
        echo "systemd stand-in: $UNIT_NAME.service: stopped" >>"$(unit_log)"
    fi
    rm -f "$(unit_pidfile)" "$(unit_loaded)"
}

unit_status() {
    local pid description
    pid="$(unit_main_pid)"
    description="${UNIT_DESCRIPTION:+ - $UNIT_DESCRIPTION}"
    if [[ -n "$pid" ]]; then
        echo "● $UNIT_NAME.service$description"
        echo "     Active: active (running); Main PID: $pid ($(cat "/proc/$pid/comm" 2>/dev/null))"
        return 0
    fi
    echo "○ $UNIT_NAME.service$description"
    if [[ -f "$(unit_pidfile)" ]]; then
        echo "     Active: inactive (dead): the main process $(cut -d' ' -f1 "$(unit_pidfile)") exited; see $(unit_log)"
    else
        echo "     Active: inactive (dead)"
    fi
    return 3
}

# Serialises start, stop and restart of the unit (fd 9, which no command of the unit inherits).
unit_lock() {
    mkdir -p "$UNIT_RUN_DIR"
    exec 9>>"$UNIT_RUN_DIR/$UNIT_NAME.lock"
    flock 9
}

# unit_load_for_start: the unit file as start reads it (fails when there is none), and its copy as loaded.
unit_load_for_start() {
    if [[ ! -f "$UNIT_FILE" ]]; then
        echo "Failed to start $UNIT_NAME.service: Unit $UNIT_NAME.service not found." >&2
        exit 5
    fi
    unit_load "$UNIT_NAME"
    mkdir -p "$UNIT_RUN_DIR"
    cp "$UNIT_FILE" "$(unit_loaded).new"
    mv -f "$(unit_loaded).new" "$(unit_loaded)"
}

unit_service() {
    local name="$1" action="${2:-}"
    [[ "$name" =~ ^[A-Za-z0-9:_.-]+$ ]] || unit_fail "invalid unit name: $name"
    UNIT_NAME="$name"
    UNIT_FILE="$UNIT_DIR/$name.service"
    case "$action" in
    start)
        unit_lock
        [[ -z "$(unit_main_pid)" ]] || return 0
        unit_load_for_start
        unit_start
        ;;
    stop)
        unit_lock
        if [[ -z "$(unit_main_pid)" && ! -f "$UNIT_FILE" ]]; then
            echo "Failed to stop $name.service: Unit $name.service not loaded." >&2
            exit 5
        fi
        unit_stop
        ;;
    restart | force-reload | try-restart)
        unit_lock
        if [[ "$action" == try-restart && -z "$(unit_main_pid)" ]]; then return 0; fi
        # The new unit is read (and refused) before the running one stops.
        if [[ ! -f "$UNIT_FILE" ]]; then
            echo "Failed to restart $name.service: Unit $name.service not found." >&2
            exit 5
        fi
        unit_load "$name"
        unit_stop
        unit_load_for_start
        unit_start
        ;;
    status)
        if [[ -f "$(unit_loaded)" ]]; then
            unit_load "$name" "$(unit_loaded)"
        elif [[ -f "$UNIT_FILE" ]]; then
            unit_load "$name"
        elif [[ -z "$(unit_main_pid)" ]]; then
            echo "Unit $name.service could not be found." >&2
            return 4
        fi
        unit_status
        ;;
    *)
        echo "Usage: $name {start|stop|restart|try-restart|force-reload|status}" >&2
        exit 1
        ;;
    esac
}
