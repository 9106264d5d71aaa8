# shellcheck shell=bash
# Helpers shared by scripts/run and scripts/test: install what is missing, and run a private
# PostgreSQL cluster on a Unix socket. Sourced, never executed.

roost_say() { printf 'roost: %s\n' "$*" >&2; }
roost_die() { printf 'roost: error: %s\n' "$*" >&2; exit 1; }

# Installs PostgreSQL, libpq's headers (which bring libcrypto's) and curl when absent; does nothing
# when they are present. apt-get update runs at most once.
roost_ensure_packages() {
    local missing=()
    roost_pg_bindir >/dev/null 2>&1 || missing+=(postgresql)
    [ -f /usr/include/postgresql/libpq-fe.h ] || missing+=(libpq-dev)
    [ -f /usr/include/openssl/evp.h ] || missing+=(libssl-dev)
    command -v runuser >/dev/null 2>&1 || missing+=(util-linux)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    # Extra tools a script needs, as COMMAND:PACKAGE (scripts/test: exiftool for the media tests).
    local wanted
    for wanted in "$@"; do command -v "${wanted%%:*}" >/dev/null 2>&1 || missing+=("${wanted#*:}"); done
    if [ ${#missing[@]} -gt 0 ]; then
        command -v apt-get >/dev/null 2>&1 ||
            roost_die "missing ${missing[*]} and no apt-get to install them; install PostgreSQL 15+ and libpq-dev by hand"
        [ "$(id -u)" -eq 0 ] || roost_die "missing ${missing[*]}; run as root or install them: apt-get install -y ${missing[*]}"
        roost_say "installing ${missing[*]} (apt-get)"
        if [ -z "${ROOST_APT_UPDATED:-}" ]; then
            apt-get update -qq >/dev/null || roost_die "apt-get update failed; check the package mirror and try again"
            export ROOST_APT_UPDATED=1
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
            roost_die "apt-get install ${missing[*]} failed; install them by hand and try again"
        roost_pg_bindir >/dev/null 2>&1 || roost_die "PostgreSQL was installed but initdb was not found under /usr/lib/postgresql"
    fi
    command -v swift >/dev/null 2>&1 || roost_die "swift is not on PATH; install the Swift 6 toolchain (swift.org) and try again"
}

# The newest PostgreSQL server binaries on this machine (initdb, pg_ctl, postgres, psql).
roost_pg_bindir() {
    local dir
    dir=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
    [ -n "$dir" ] && [ -x "$dir/initdb" ] || return 1
    printf '%s\n' "$dir"
}

# Runs a command as the cluster's owner: `postgres` when we are root (initdb refuses root).
roost_as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

# A TCP port nobody listens on; it also names the cluster's Unix socket file.
roost_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# roost_cluster_init DIR: a new cluster in DIR/data with its socket in DIR/run.
roost_cluster_init() {
    local dir=$1 bindir
    bindir=$(roost_pg_bindir)
    mkdir -p "$dir/data" "$dir/run"
    [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
    roost_as_owner test -w "$dir/data" ||
        roost_die "the postgres user cannot write $dir (a parent folder is private); move the checkout or set DATABASE_URL"
    roost_as_owner "$bindir/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=reject \
        --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
        roost_die "initdb failed; see $dir/initdb.log"
}

# roost_cluster_start DIR PORT: serves on the Unix socket DIR/run/.s.PGSQL.PORT, and on TCP only
# at the addresses in ROOST_PG_LISTEN (none by default). ROOST_PG_OPTIONS adds server options
# (`-c name=value ...`), e.g. `-c commit_delay=1000` to make every WAL flush take a millisecond
# more, as on a disk slower than this machine's. ROOST_PG_MAX_CONNECTIONS (default 300) bounds
# the connections.
roost_cluster_start() {
    local dir port=$2 bindir
    dir=$(cd "$1" && pwd)
    bindir=$(roost_pg_bindir)
    roost_as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
        -o "-c listen_addresses='${ROOST_PG_LISTEN:-}' -c unix_socket_directories='$dir/run' -p $port -c max_connections=${ROOST_PG_MAX_CONNECTIONS:-300} -c fsync=${ROOST_PG_FSYNC:-on} ${ROOST_PG_OPTIONS:-}" \
        start >/dev/null || roost_die "PostgreSQL did not start; see $dir/postgres.log"
}

# roost_cluster_trust_tcp DIR PORT ROLE DB: lets ROLE reach DB over TCP on 127.0.0.1 without a
# password (a throwaway benchmark cluster started with ROOST_PG_LISTEN=127.0.0.1, for servers
# whose drivers cannot use a Unix socket).
roost_cluster_trust_tcp() {
    local dir=$1 port=$2 role=$3 db=$4
    roost_as_owner sed -i "1i host $db $role 127.0.0.1/32 trust" "$dir/data/pg_hba.conf"
    roost_psql "$dir" "$port" -tA -c "SELECT pg_reload_conf()" >/dev/null
}

# roost_cluster_stop DIR [MODE]: stops the cluster if it runs (fast by default).
roost_cluster_stop() {
    local dir=$1 mode=${2:-fast} bindir
    bindir=$(roost_pg_bindir) || return 0
    [ -f "$dir/data/postmaster.pid" ] || return 0
    roost_as_owner "$bindir/pg_ctl" -D "$dir/data" -m "$mode" -w -t 30 stop >/dev/null 2>&1 || true
}

# roost_psql DIR PORT ARGS...: psql as the cluster's superuser on database postgres over the socket;
# a -U or -d in ARGS takes the place of either (psql keeps the last).
roost_psql() {
    local dir=$1 port=$2
    shift 2
    roost_as_owner "$(roost_pg_bindir)/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/run" -p "$port" -U postgres -d postgres "$@"
}

# roost_cluster_provision DIR PORT ROLE DB [EXTRA ROLE OPTIONS]: a non-superuser role owning DB.
# Roost must not run as a superuser: superusers bypass row-level security.
roost_cluster_provision() {
    local dir=$1 port=$2 role=$3 db=$4 extra=${5:-}
    roost_psql "$dir" "$port" -tA -c "SELECT 1 FROM pg_roles WHERE rolname = '$role'" | grep -q 1 ||
        roost_psql "$dir" "$port" -c "CREATE ROLE \"$role\" LOGIN NOSUPERUSER NOBYPASSRLS $extra"
    roost_psql "$dir" "$port" -tA -c "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1 ||
        roost_psql "$dir" "$port" -c "CREATE DATABASE \"$db\" OWNER \"$role\""
}

# roost_cluster_provision_app DIR PORT ROLE: the role `roost serve` connects as. It owns
# nothing: the tables' owner grants it row access when it migrates (docs/SECURITY.md), so not
# even an injected statement could switch row-level security off.
roost_cluster_provision_app() {
    local dir=$1 port=$2 role=$3
    roost_psql "$dir" "$port" -tA -c "SELECT 1 FROM pg_roles WHERE rolname = '$role'" | grep -q 1 ||
        roost_psql "$dir" "$port" -c "CREATE ROLE \"$role\" LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE"
}

# The libpq URI of DB as ROLE over the cluster's socket.
roost_cluster_url() {
    local dir=$1 port=$2 role=$3 db=$4
    printf 'postgresql:///%s?host=%s&port=%s&user=%s\n' "$db" "$dir/run" "$port" "$role"
}
