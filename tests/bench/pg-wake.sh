#!/bin/sh
# pg-wake.sh - wake-ups and hot rows of the PostgreSQL backend, across two
# daemons on one schema (run under tests/pg.sh: QUEEN_TEST_PG is set).
# Prints, one per line:
#   wake P50_US P99_US SAMPLES   a reader of next on A, pushes through B
#   notify PUSHES NOTIFIES       pushes through B into a queue with ready
#                                messages and a reader waiting on A
#   cycle OPS NOTIFIES           push, pop, ack cycles through A
#   hot TABLE UPD HOT_UPD        pg_stat_user_tables over the cycles
#   backlog OPS                  a producer and a consumer at once
#                                through A, the producer ahead (qcycle)
#   hotb TABLE UPD HOT_UPD       pg_stat_user_tables over those
#   idle STMTS LOCKING           statements a daemon sends a second when
#                                idle with 1000 partitions, and how many
#                                of them lock rows (FOR UPDATE)
# NOTIFIES counts the announcements a psql session LISTENing on the
# queue's channels received.  Usage: tests/pg.sh tests/bench/pg-wake.sh
# [BUILD_DIR] [SAMPLES]
set -u
BUILD=${1:-build}
SAMPLES=${2:-200}
HERE=$(cd "$(dirname "$0")" && pwd)
: "${QUEEN_TEST_PG:?run under tests/pg.sh}"
T=$(mktemp -d "${TMPDIR:-/tmp}/pgwake-XXXXXX")
SCHEMA=pgwake_$$
URI="$QUEEN_TEST_PG&options=-csearch_path%3D$SCHEMA"
A=$T/a
B=$T/b
PA= PB= PL=

cleanup() {
	for m in "$A" "$B"; do
		grep -q " $m fuse" /proc/mounts && fusermount3 -u "$m"
	done
	for p in $PA $PB $PL; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# a mount left by a daemon that did not let go: lazily, then
	for m in "$A" "$B"; do
		grep -q " $m fuse" /proc/mounts && fusermount3 -u -z "$m" &&
		    echo "pg-wake: $m needed a lazy unmount" >&2
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

cc -std=c11 -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -pthread -O2 \
    $(pkg-config --cflags jansson) -o "$T/load" "$HERE/load.c" \
    "$HERE/wake.c" "$HERE/loadapi.c" $(pkg-config --libs jansson) || exit 1

mount_one() {
	mkdir -p "$1"
	"$BUILD/queenfs" -f --db "$URI" "$1" >"$1.log" 2>&1 </dev/null &
	eval "$2=\$!"
	n=100
	until grep -q " $1 fuse" /proc/mounts && test -d "$1/queues"; do
		n=$((n - 1))
		test $n -gt 0 || { echo "no mount at $1" >&2; exit 1; }
		sleep 0.1
	done
}
mount_one "$A" PA
mount_one "$B" PB

mkdir "$A/queues/wake" "$A/queues/n" "$A/queues/cy"
echo "wake: $("$T/load" wake "$A/queues/wake" -s "$SAMPLES" \
    -D "$B/queues/wake")"

# every channel a daemon of this or an older version may announce on
sql() {
	psql -X -q -A -t "$QUEEN_TEST_PG" -c "$1"
}
chans=$(sql "SELECT 'queen_' || n.oid || '_' || q.id FROM pg_namespace n,
    $SCHEMA.queues q WHERE n.nspname = '$SCHEMA'")
mkfifo "$T/psql.in"
psql -X -q -A -t "$QUEEN_TEST_PG" <"$T/psql.in" >"$T/psql.out" 2>&1 &
PL=$!
exec 3>"$T/psql.in"
echo "LISTEN queen_push;" >&3
for c in $chans; do
	echo "LISTEN $c;" >&3
done
echo "SELECT 'listening';" >&3
n=50
until grep -q listening "$T/psql.out"; do
	n=$((n - 1))
	test $n -gt 0 || { echo "psql did not start" >&2; exit 1; }
	sleep 0.1
done
count() {
	echo "SELECT 'mark $1';" >&3
	until grep -q "mark $1" "$T/psql.out"; do sleep 0.1; done
	c=$(grep -c 'Asynchronous notification' "$T/psql.out")
	: >"$T/psql.out"
	echo "$c"
}

# a reader waits on A behind one ready message leased there
echo "wait = 30" >"$A/queues/n/config"
echo first >"$A/queues/n/m0"
lease=$(cat "$A/queues/n/next")
timeout 120 cat "$A/queues/n/next" >/dev/null &
reader=$!
sleep 1
count start >/dev/null
i=1
while test $i -le 200; do
	echo x >"$B/queues/n/m$i" || exit 1
	i=$((i + 1))
done
sleep 1
echo "notify 200 $(count pushes)"
mv "$A/queues/n/$lease" "$A/queues/n/ack/"
wait $reader

sql "SELECT pg_stat_reset()" >/dev/null
out=$("$T/load" cycle "$A/queues/cy" -d 10)
sleep 2
echo "cycle ${out%% *} $(count cycles)"
sql "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
    WHERE schemaname = '$SCHEMA' AND n_tup_upd > 0 ORDER BY relname" |
    tr '|' ' ' | sed 's/^/hot /'

# the same with a backlog: the consumer's acks move through messages
# pushed a moment apart, and its cursor is never caught up
sql "SELECT pg_stat_reset()" >/dev/null
mkdir "$A/queues/bl"
out=$("$T/load" qcycle "$A/queues/bl" -p 1 -c 1 -d 10)
sleep 2
echo "backlog ${out%% *}"
sql "SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
    WHERE schemaname = '$SCHEMA' AND n_tup_upd > 0 ORDER BY relname" |
    tr '|' ' ' | sed 's/^/hotb /'

# the idle tick with 1000 partitions: statements a second per daemon, and
# those that lock rows (log_statement = all on the private server, 5 s)
mkdir "$A/queues/idle"
python3 - "$A" <<-\PYEOF || exit 1
	import json, os, sys
	fd = os.open(sys.argv[1] + "/api/push", os.O_RDWR)
	items = [{"queue": "idle", "partition": "p%d" % i, "payload": "x"}
	    for i in range(1000)]
	os.write(fd, json.dumps({"items": items}).encode())
	os.read(fd, 1 << 20)
	os.close(fd)
	PYEOF
sleep 2
log=$(echo "$QUEEN_TEST_PG" | sed -n 's/.*host=\([^&]*\).*/\1/p')/server.log
sql "ALTER SYSTEM SET log_statement = 'all'" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
sleep 1
from=$(wc -c <"$log")
sleep 5
to=$(wc -c <"$log")
sql "ALTER SYSTEM RESET log_statement" >/dev/null
sql "SELECT pg_reload_conf()" >/dev/null
tail -c +$((from + 1)) "$log" | head -c $((to - from)) >"$T/idle.log"
st=$(grep -cE 'LOG:  (statement|execute)' "$T/idle.log")
lk=$(grep -E 'LOG:  (statement|execute)' "$T/idle.log" | grep -c 'FOR UPDATE')
echo "idle $((st / 10)) $((lk / 10))"
echo "\\q" >&3
exec 3>&-
