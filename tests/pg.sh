#!/bin/sh
# pg.sh - run a command against a private PostgreSQL cluster: initdb in a
# temp dir, a postmaster listening only on a unix socket in that dir,
# QUEEN_TEST_PG exported for the command, and on any exit the postmaster
# stopped by its pid and the dir removed.  Usage: tests/pg.sh CMD [ARGS...]
set -eu

[ $# -gt 0 ] || { echo "usage: $0 command [args...]" >&2; exit 2; }

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$bindir" ] && command -v pg_config >/dev/null 2>&1; then
	bindir=$(pg_config --bindir)
fi
[ -n "$bindir" ] && [ -x "$bindir/initdb" ] || {
	echo "pg.sh: no PostgreSQL server (apt-get install postgresql)" >&2
	exit 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/queen-pg-XXXXXX")
pid=""

# As root, the cluster belongs to the postgres user (initdb refuses root).
as_owner() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

cleanup() {
	rc=$?
	trap - EXIT INT TERM HUP
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -INT "$pid" 2>/dev/null || true
		i=0
		while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	# both sides of each deadlock the server broke (the daemon's log
	# has only its own): what a lock-order fix needs, kept in the output
	if grep -q "deadlock detected" "$dir/server.log" 2>/dev/null; then
		echo "pg.sh: deadlocks the server broke (server.log):" >&2
		grep -A 8 "deadlock detected" "$dir/server.log" |
		    head -n 400 | sed -e 's/^/# /' >&2
	fi
	rm -rf "$dir"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

[ "$(id -u)" = 0 ] && chown postgres "$dir"
chmod 0700 "$dir"
as_owner "$bindir/initdb" -D "$dir/data" -U postgres -A trust \
    --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 || {
	cat "$dir/initdb.log" >&2
	exit 1
}
as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-k $dir -c listen_addresses= -c fsync=off -c max_connections=200" \
    start >/dev/null || {
	cat "$dir/server.log" >&2
	exit 1
}
pid=$(head -n 1 "$dir/data/postmaster.pid")
# The socket dir must be reachable by the tests, which may not be root.
chmod 0755 "$dir"

QUEEN_TEST_PG="postgresql:///postgres?host=$dir&user=postgres"
export QUEEN_TEST_PG
"$@"
