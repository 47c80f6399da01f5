#!/usr/bin/env bash
# A throw-away PostgreSQL cluster for the collector's tests.
#
#   scripts/postgres-test-cluster.sh start DIR   # prints the URL for SAMPLER_TEST_POSTGRES_URL
#   scripts/postgres-test-cluster.sh stop DIR    # stops the cluster and removes DIR
#
# `start` creates DIR (which must be absent or empty), installs Debian's
# `postgresql` package first if no `initdb` is found (as root only), creates a
# cluster in DIR/data, starts it listening on 127.0.0.1 only (no Unix socket)
# on a free port from 55432 up, with password (SCRAM) authentication from
# loopback only, creates the role `sampler` allowed to CREATE DATABASE, and
# prints one line on stdout: postgres://sampler:PASSWORD@127.0.0.1:PORT/postgres
# Everything else goes to stderr or to logs in DIR.
#
# As root (a CI machine), the cluster belongs to the `postgres` system user
# that the package creates (initdb refuses root), or to a dedicated system
# user `sampler-pg` if there is none; DIR's parents must then be searchable
# by that user (a directory under /tmp is). Otherwise it belongs to the
# user running the script.
#
# The cluster is for tests only: fsync is off.
set -euo pipefail

me=postgres-test-cluster
marker=.postgres-test-cluster

die() {
    echo "$me: $*" >&2
    exit 1
}

usage() {
    echo "$me: usage: $0 start DIR | stop DIR" >&2
    exit 2
}

[[ $# -eq 2 ]] || usage
command=$1
[[ -n $2 ]] || die "DIR is empty"
dir=$(realpath -m -- "$2")
data=$dir/data

# The directory holding initdb, pg_ctl and psql: Debian's layout first
# (newest version), then PATH.
find_bindir() {
    local candidate
    candidate=$(find /usr/lib/postgresql -mindepth 3 -maxdepth 3 -path '*/bin/initdb' -type f 2>/dev/null |
        sort -V | tail -n 1)
    if [[ -z $candidate ]]; then
        candidate=$(command -v initdb || true)
        [[ -n $candidate ]] && candidate=$(realpath -- "$candidate")
    fi
    [[ -n $candidate ]] && dirname -- "$candidate"
    return 0
}

# Runs a command as the cluster's owner, from a directory it can enter.
as_owner() {
    if [[ $EUID -eq 0 ]]; then
        (cd / && runuser -u "$owner" -- "$@")
    else
        (cd / && "$@")
    fi
}

random_hex() {
    od -An -N16 -tx1 /dev/urandom | tr -d ' \n'
}

# True if something accepts TCP connections on 127.0.0.1:$1.
port_in_use() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

show_log() {
    local log=$1
    if [[ -s $log ]]; then
        echo "$me: last lines of $log:" >&2
        tail -n 20 -- "$log" | sed 's/^/    /' >&2
    fi
}

start() {
    if [[ -e $dir ]]; then
        [[ -d $dir ]] || die "$dir exists and is not a directory"
        [[ -z $(ls -A -- "$dir") ]] || die "$dir is not empty (a cluster already there? stop it with: $0 stop $dir)"
    fi

    bindir=$(find_bindir)
    if [[ -z $bindir ]]; then
        [[ $EUID -eq 0 ]] ||
            die "initdb not found (looked in /usr/lib/postgresql/*/bin and PATH); install PostgreSQL (Debian: sudo apt-get install postgresql) or run as root"
        command -v apt-get >/dev/null || die "initdb not found and apt-get is not available to install PostgreSQL"
        echo "$me: initdb not found; installing Debian's postgresql package" >&2
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >&2 ||
            die "installing the postgresql package failed"
        bindir=$(find_bindir)
        [[ -n $bindir ]] || die "initdb still not found after installing the postgresql package"
    fi
    for tool in initdb pg_ctl psql; do
        [[ -x $bindir/$tool ]] || die "$bindir/$tool not found (is the PostgreSQL client installed?)"
    done

    if [[ $EUID -eq 0 ]]; then
        command -v runuser >/dev/null || die "runuser not found (util-linux); needed to run initdb as an unprivileged user"
        if getent passwd postgres >/dev/null; then
            owner=postgres
        else
            owner=sampler-pg
            if ! getent passwd "$owner" >/dev/null; then
                useradd --system --no-create-home --home-dir / --shell /usr/sbin/nologin "$owner" ||
                    die "cannot create the system user $owner"
            fi
        fi
    else
        owner=$(id -un)
    fi

    local created=
    [[ -d $dir ]] || created=1
    mkdir -p -- "$dir" || die "cannot create $dir"
    touch -- "$dir/$marker"
    chmod 700 -- "$dir"
    if [[ $EUID -eq 0 ]]; then
        chown -R -- "$owner:" "$dir"
        if ! as_owner test -w "$dir" -a -x "$dir"; then
            if [[ -n $created ]]; then rm -rf -- "$dir"; else rm -f -- "$dir/$marker"; fi
            die "user $owner cannot enter $dir: its parent directories must be searchable by $owner (e.g. DIR=\$(mktemp -d))"
        fi
    fi

    # Passwords: the superuser's (kept in DIR, readable by the owner only)
    # and the test role's (in the URL; hex, so it needs no escaping).
    local superuser_password role_password
    superuser_password=$(random_hex)
    role_password=$(random_hex)
    (umask 077 && printf '%s\n' "$superuser_password" >"$dir/superuser-password")
    [[ $EUID -eq 0 ]] && chown -- "$owner:" "$dir/superuser-password"

    as_owner "$bindir/initdb" --pgdata="$data" --username=postgres \
        --pwfile="$dir/superuser-password" --auth=scram-sha-256 \
        --encoding=UTF8 --no-locale --no-instructions >"$dir/initdb.log" 2>&1 ||
        { show_log "$dir/initdb.log"; die "initdb failed (see $dir/initdb.log)"; }

    # TCP on 127.0.0.1 only, no Unix socket; password logins from loopback only.
    as_owner tee -a "$data/postgresql.conf" >/dev/null <<'EOF'

# scripts/postgres-test-cluster.sh: a throw-away cluster for tests.
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
    as_owner tee "$data/pg_hba.conf" >/dev/null <<'EOF'
# scripts/postgres-test-cluster.sh: password logins from 127.0.0.1 only.
# TYPE  DATABASE  USER  ADDRESS       METHOD
host    all       all   127.0.0.1/32  scram-sha-256
EOF

    # A free port from 55432 up; tried again on the next one if another
    # process takes it between the check and the start.
    local port started=
    for port in $(seq 55432 55531); do
        port_in_use "$port" && continue
        rm -f -- "$dir/server.log"
        if as_owner "$bindir/pg_ctl" start --pgdata="$data" --log="$dir/server.log" \
            --options="-p $port" --wait --timeout=60 --silent >/dev/null 2>>"$dir/pg_ctl.log"; then
            started=1
            break
        fi
        if grep -q 'could not bind\|Address already in use' -- "$dir/server.log" 2>/dev/null; then
            echo "$me: port $port was taken; trying the next one" >&2
            continue
        fi
        show_log "$dir/server.log"
        die "the server did not start (see $dir/server.log)"
    done
    [[ -n $started ]] || die "no free port between 55432 and 55531 on 127.0.0.1"

    # It accepts connections (pg_ctl --wait); the role the tests use.
    if ! PGPASSWORD=$superuser_password "$bindir/psql" --no-psqlrc --quiet --set=ON_ERROR_STOP=1 \
        --command="CREATE ROLE sampler LOGIN CREATEDB PASSWORD '$role_password'" \
        "host=127.0.0.1 port=$port user=postgres dbname=postgres connect_timeout=10" \
        >/dev/null 2>"$dir/psql.log"; then
        show_log "$dir/psql.log"
        die "creating the role sampler failed (the server is running; stop it with: $0 stop $dir)"
    fi

    local url="postgres://sampler:$role_password@127.0.0.1:$port/postgres"
    (umask 077 && printf '%s\n' "$url" >"$dir/url")
    printf '%s\n' "$url"
}

stop() {
    [[ -d $dir ]] || die "$dir does not exist"
    [[ -e $dir/$marker ]] || die "$dir was not made by $0 start; not touching it"
    if [[ -f $data/postmaster.pid ]]; then
        bindir=$(find_bindir)
        [[ -n $bindir ]] || die "pg_ctl not found; cannot stop the server in $data"
        owner=$(stat -c %U -- "$data")
        as_owner "$bindir/pg_ctl" stop --pgdata="$data" --mode=fast --wait --timeout=60 --silent >&2 ||
            die "pg_ctl stop failed for $data; $dir left in place"
    fi
    rm -rf -- "$dir"
}

case $command in
start) start ;;
stop) stop ;;
*) usage ;;
esac
