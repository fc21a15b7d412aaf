#!/bin/sh
# run.sh - `make bench`: queenfs side by side with its references in one
# run (README.md's "Performance" method): nullfs (the FUSE limit), the
# engine with no FUSE, beanstalkd, Redis streams and dirq.  Every figure runs BENCH_REPS
# times (default 3) for BENCH_SECONDS (default 1), interleaved rep by rep;
# one table of medians comes out at the end.  It never fails on a figure:
# targets are only printed.  Every mount, daemon and server started here is
# stopped by its pid on exit, also after an error or Ctrl-C.  All traffic
# goes to 127.0.0.1.
# With BENCH_PG=1 (the default when a PostgreSQL server is installed) a
# private cluster (initdb in a temp dir, unix socket only, fsync on, stopped
# by its pid) adds queenfs-on-PostgreSQL figures: one daemon (push 1p/4p,
# cycle 1+1, api/push 1000 items/request, over HTTP single-item pushes on 8
# connections and pops of 100 with their batch ack, round trips per
# operation when sys/stats shows pg_round_trips), then 1, 2 and 4 daemons on
# one database,
# each on its own mount, loaded at once over 1 and over 8 partitions (total
# push/s and cycle/s), and beside them pgbench on the same cluster running
# the equivalent statements.  BENCH_PG=0 leaves it out.  BENCH_ONLY=pg runs
# only those and the SQLite sync full figures they are compared with (the
# HTTP ones from a daemon of its own, as in the full run).  As root, the
# PostgreSQL push with 4 producers and cycle 1+1 also run with idle CPUs
# polling instead of halting (nohalt.py), beside the same as configured.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=${QUEENFS_BUILD:-$ROOT/build}
B=$BUILD/bench
DUR=${BENCH_SECONDS:-1}
REPS=${BENCH_REPS:-3}
BACKLOG=${BENCH_BACKLOG:-1000000}
PARTS=${BENCH_PARTITIONS:-10000}
export LC_ALL=C
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if test -z "$PG_BIN" && command -v pg_config >/dev/null 2>&1; then
	PG_BIN=$(pg_config --bindir)
fi
if test -z "${BENCH_PG:-}"; then
	BENCH_PG=0
	test -n "$PG_BIN" && test -x "$PG_BIN/initdb" && BENCH_PG=1
fi
PGDIR=
PGPID=
ONLY=${BENCH_ONLY:-}
case "$ONLY" in
''|pg) ;;
*) echo "bench: BENCH_ONLY: pg or nothing" >&2; exit 2 ;;
esac

TMP=$(mktemp -d /tmp/queenfs-bench.XXXXXX) || exit 1
RES=$TMP/results
ERR=$TMP/errors.log
MOUNTS=
PIDS=
: >"$RES"
: >"$ERR"

say () {
	printf '%s\n' "$*"
}

cleanup () {
	trap '' INT TERM
	for m in $MOUNTS; do
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null
	done
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	n=0
	for p in $PIDS; do
		while kill -0 "$p" 2>/dev/null && test $n -lt 50; do
			sleep 0.1
			n=$((n + 1))
		done
		kill -9 "$p" 2>/dev/null
	done
	if test -n "$PGPID"; then
		# fast shutdown; every client (the daemons) is gone by now
		kill -INT "$PGPID" 2>/dev/null
		n=0
		while kill -0 "$PGPID" 2>/dev/null && test $n -lt 100; do
			sleep 0.1
			n=$((n + 1))
		done
		kill -9 "$PGPID" 2>/dev/null
	fi
	test -n "$PGDIR" && rm -rf "$PGDIR"
	if test -s "$ERR" && test -z "${BENCH_QUIET:-}"; then
		say "--- load errors (first 20 lines of $ERR) ---"
		head -n 20 "$ERR"
	fi
	if test -n "${BENCH_KEEP:-}"; then
		say "bench: kept $TMP"
	else
		rm -rf "$TMP"
	fi
}
trap cleanup EXIT
trap 'say "bench: interrupted"; exit 130' INT TERM HUP

# --- build ------------------------------------------------------------------

CFLAGS="-std=c11 -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -pthread -O2 -g \
-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
-Wformat=2 -Wno-unused-parameter"
CORE_LIBS=$(pkg-config --libs sqlite3 libpq libxxhash jansson)
S=$HERE
mkdir -p "$B" || exit 1
cc $CFLAGS $(pkg-config --cflags fuse3) -o "$B/nullfs" "$S/nullfs.c" \
    $(pkg-config --libs fuse3) &&
cc $CFLAGS $(pkg-config --cflags jansson) -o "$B/load" "$S/load.c" \
    "$S/wake.c" "$S/loadapi.c" $(pkg-config --libs jansson) &&
cc $CFLAGS -o "$B/bsload" "$S/bsload.c" "$S/net.c" &&
cc $CFLAGS -o "$B/rsload" "$S/rsload.c" "$S/net.c" &&
cc $CFLAGS -o "$B/http-load" "$S/http-load.c" "$S/net.c" &&
cc $CFLAGS -o "$B/prefill" "$S/prefill.c" "$BUILD/libqueen.a" $CORE_LIBS &&
cc $CFLAGS -o "$B/engine" "$S/engine.c" "$BUILD/libqueen.a" $CORE_LIBS ||
	{ say "bench: build failed"; exit 1; }
L=$B/load

# --- processes ----------------------------------------------------------------

free_port () {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port () {
	python3 - "$1" <<'EOF'
import socket, sys, time
end = time.time() + 5
while time.time() < end:
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.2).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
EOF
}

# start NAME CMD...: run CMD in the background, its output in $TMP/NAME.log
start () {
	name=$1
	shift
	"$@" >"$TMP/$name.log" 2>&1 &
	LASTPID=$!
	PIDS="$PIDS $LASTPID"
}

# mount_fs NAME CMD... (the mountpoint is appended): wait for /proc/mounts
mount_fs () {
	name=$1
	shift
	mnt=$TMP/$name.mnt
	mkdir -p "$mnt"
	start "$name" "$@" "$mnt"
	MOUNTS="$MOUNTS $mnt"
	n=0
	while ! grep -q " $mnt " /proc/mounts; do
		if ! kill -0 "$LASTPID" 2>/dev/null || test $n -ge 100; then
			say "bench: $name did not mount; its log:"
			tail -n 5 "$TMP/$name.log"
			return 1
		fi
		sleep 0.05
		n=$((n + 1))
	done
	eval "PID_$name=$LASTPID"
	return 0
}

unmount_fs () {
	fusermount3 -u "$TMP/$1.mnt" 2>/dev/null
}

# --- peers --------------------------------------------------------------------

have_or_install () {
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" &&
			continue
		if test "$(id -u)" = 0; then
			say "bench: installing $p"
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$p" \
			    >"$TMP/apt.log" 2>&1 ||
				{ apt-get update -qq >/dev/null 2>&1 &&
				  DEBIAN_FRONTEND=noninteractive apt-get install \
				      -y -qq "$p" >"$TMP/apt.log" 2>&1; } ||
				return 1
		else
			return 1
		fi
	done
	return 0
}

BS=false RS=false DQ=false
if test "$ONLY" = pg; then
	say "bench: BENCH_ONLY=pg: PostgreSQL figures and their SQLite sync full references only"
elif have_or_install beanstalkd && command -v beanstalkd >/dev/null; then
	BS=true
else
	say "bench: SKIP beanstalkd (not installed and cannot install it)"
fi
if test "$ONLY" = pg; then
	:
elif have_or_install redis-server && command -v redis-server >/dev/null; then
	RS=true
else
	say "bench: SKIP Redis (not installed and cannot install it)"
fi
if test "$ONLY" = pg; then
	:
elif have_or_install python3-dirq && /usr/bin/python3 -c 'import dirq' 2>/dev/null; then
	DQ=true
else
	say "bench: SKIP dirq (python3-dirq not installed and cannot install it)"
fi

if $BS; then
	P_BS0=$(free_port)
	mkdir -p "$TMP/bs0" "$TMP/bsb"
	start bs0 beanstalkd -l 127.0.0.1 -p "$P_BS0" -b "$TMP/bs0" -f0
	P_BSB=$(free_port)
	start bsb beanstalkd -l 127.0.0.1 -p "$P_BSB" -b "$TMP/bsb"
	wait_port "$P_BS0" && wait_port "$P_BSB" ||
		{ say "bench: SKIP beanstalkd (it did not start)"; BS=false; }
fi
if $RS; then
	P_RA=$(free_port)
	mkdir -p "$TMP/ra" "$TMP/re"
	start ra redis-server --port "$P_RA" --bind 127.0.0.1 --dir "$TMP/ra" \
	    --save '' --appendonly yes --appendfsync always
	PID_ra=$LASTPID
	P_RE=$(free_port)
	start re redis-server --port "$P_RE" --bind 127.0.0.1 --dir "$TMP/re" \
	    --save '' --appendonly yes --appendfsync everysec
	wait_port "$P_RA" && wait_port "$P_RE" ||
		{ say "bench: SKIP Redis (it did not start)"; RS=false; }
fi

# --- mounts -------------------------------------------------------------------

QFS=$BUILD/queenfs
mount_fs null "$B/nullfs" -f || exit 1
mount_fs full "$QFS" -f --db "$TMP/full.db" --sync full || exit 1
mount_fs normal "$QFS" -f --db "$TMP/normal.db" --sync normal || exit 1
# the Python consumer's own store: its 100,000 messages a run would
# otherwise grow the hash index that full's api/push figure writes into
mount_fs py "$QFS" -f --db "$TMP/py.db" --sync full || exit 1
NM=$TMP/null.mnt
FQ=$TMP/full.mnt/queues
NQ=$TMP/normal.mnt/queues
for q in push1 push4 cycle1 qc11 qc44 wake; do
	mkdir "$FQ/$q" "$NQ/$q" || exit 1
done
mkdir "$NM/c" "$NM/y1" "$NM/y4" "$NM/o" || exit 1
API=false
test -e "$TMP/full.mnt/api/push" && API=true

# --- PostgreSQL ---------------------------------------------------------------

# pg_start: a private cluster as tests/pg.sh starts it, but with fsync on
# (the figures stand beside SQLite's sync full); sets PGURI
pg_start () {
	PGDIR=$(mktemp -d /tmp/queenfs-bench-pg.XXXXXX) || return 1
	if test "$(id -u)" = 0; then
		chown postgres "$PGDIR" || return 1
		asowner="runuser -u postgres --"
	else
		asowner=
	fi
	chmod 0700 "$PGDIR"
	$asowner "$PG_BIN/initdb" -D "$PGDIR/data" -U postgres -A trust \
	    -E UTF8 --locale=C >"$TMP/pg-initdb.log" 2>&1 || return 1
	$asowner "$PG_BIN/pg_ctl" -D "$PGDIR/data" -l "$PGDIR/server.log" -w \
	    -o "-k $PGDIR -c listen_addresses= -c max_connections=100" \
	    start >/dev/null 2>&1 || { tail -n 5 "$PGDIR/server.log"; return 1; }
	PGPID=$(head -n 1 "$PGDIR/data/postmaster.pid")
	chmod 0755 "$PGDIR"
	PGURI="postgresql:///postgres?host=$PGDIR&user=postgres"
}

# pg_db SCHEMA: the URI of SCHEMA in the cluster
pg_db () {
	echo "$PGURI&options=-csearch_path%3D$1"
}

PG=false
PGQ=
if test "$BENCH_PG" = 1; then
	if pg_start; then
		PG=true
	else
		say "bench: SKIP PostgreSQL (the private cluster did not start)"
	fi
else
	say "bench: SKIP PostgreSQL (BENCH_PG=0, or no server: apt-get install postgresql)"
fi
# pgbench's tables, in their own schema: a partition row per partition
# and the message table as queenfs's (id, created_at, txid, trace_id,
# payload) and its hash rows (id, hash, created_at, indexed by hash and
# id); push.sql appends one message as queenfs's push does (the
# partition row updated, one row inserted, one transaction), batch.sql
# 1000 rows by one set-based INSERT, batchd.sql the work of queenfs's
# api/push of 1000: the partition row, the dedup probes of 1000 new
# hashes (16 bytes spread as xxHash spreads them), then 1000 messages
# and their 1000 hash rows by one INSERT, cycle.sql push.sql's push, a
# lease of it and its ack (a cursor row per partition), one transaction
# each
pgb_setup () {
	"$PG_BIN/psql" -X -q -h "$PGDIR" -U postgres -d postgres \
	    -v ON_ERROR_STOP=1 >"$TMP/pgb-setup.log" 2>&1 <<-EOF || return 1
	CREATE SCHEMA pgb;
	CREATE TABLE pgb.partitions (id BIGINT PRIMARY KEY,
	    tail BIGINT NOT NULL, last_push_at BIGINT NOT NULL);
	INSERT INTO pgb.partitions SELECT g, 0, 0 FROM generate_series(1, 4) g;
	CREATE TABLE pgb.messages (id BIGINT PRIMARY KEY,
	    created_at BIGINT NOT NULL, txid BYTEA NOT NULL, trace_id BYTEA,
	    payload BYTEA NOT NULL);
	CREATE TABLE pgb.txns (id BIGINT PRIMARY KEY, hash BYTEA NOT NULL,
	    created_at BIGINT NOT NULL);
	CREATE INDEX ON pgb.txns (hash, id);
	CREATE TABLE pgb.cursors (partition_id BIGINT PRIMARY KEY,
	    committed BIGINT NOT NULL, lease_id TEXT,
	    lease_expires_at BIGINT NOT NULL);
	INSERT INTO pgb.cursors VALUES (4, 0, NULL, 0);
	EOF
	cat >"$TMP/pgb-push.sql" <<-\EOF
	BEGIN;
	UPDATE pgb.partitions SET tail = tail + 1, last_push_at = 1 WHERE id = 1 RETURNING tail \gset
	INSERT INTO pgb.messages (id, created_at, txid, payload) VALUES (:tail, 1, convert_to('m' || :client_id || '-' || :tail, 'UTF8'), convert_to(repeat('x', 200), 'UTF8'));
	END;
	EOF
	cat >"$TMP/pgb-batch.sql" <<-\EOF
	BEGIN;
	UPDATE pgb.partitions SET tail = tail + 1000, last_push_at = 1 WHERE id = 2 RETURNING tail \gset
	INSERT INTO pgb.messages (id, created_at, txid, payload) SELECT 1000000000000 + :tail - g, 1, convert_to('b' || (:tail - g), 'UTF8'), convert_to(repeat('x', 200), 'UTF8') FROM generate_series(0, 999) g;
	END;
	EOF
	cat >"$TMP/pgb-batchd.sql" <<-\EOF
	BEGIN;
	UPDATE pgb.partitions SET tail = tail + 1000, last_push_at = 1 WHERE id = 3 RETURNING tail \gset
	SELECT count(*) FROM (SELECT DISTINCT int8send(hashint8extended(:tail - g, 1)) || int8send(hashint8extended(:tail - g, 2)) AS h FROM generate_series(0, 999) g) u CROSS JOIN LATERAL (SELECT 1 FROM pgb.txns WHERE hash = u.h AND id >= 2000000000000 LIMIT 1) t;
	WITH v AS (SELECT 2000000000000 + :tail - g AS id, int8send(hashint8extended(:tail - g, 1)) || int8send(hashint8extended(:tail - g, 2)) AS hash FROM generate_series(0, 999) g), m AS (INSERT INTO pgb.messages (id, created_at, txid, payload) SELECT id, 1, convert_to('d' || id, 'UTF8'), convert_to(repeat('x', 200), 'UTF8') FROM v) INSERT INTO pgb.txns (id, hash, created_at) SELECT id, hash, 1 FROM v;
	END;
	EOF
	cat >"$TMP/pgb-cycle.sql" <<-\EOF
	BEGIN;
	UPDATE pgb.partitions SET tail = tail + 1, last_push_at = 1 WHERE id = 4 RETURNING tail \gset
	INSERT INTO pgb.messages (id, created_at, txid, payload) VALUES (3000000000000 + :tail, 1, convert_to('c' || :tail, 'UTF8'), convert_to(repeat('x', 200), 'UTF8'));
	END;
	BEGIN;
	UPDATE pgb.cursors SET lease_id = 'l' || :tail, lease_expires_at = 1 WHERE partition_id = 4 AND lease_id IS NULL RETURNING committed \gset
	SELECT payload FROM pgb.messages WHERE id = 3000000000000 + :committed + 1;
	END;
	BEGIN;
	UPDATE pgb.cursors SET committed = committed + 1, lease_id = NULL WHERE partition_id = 4;
	END;
	EOF
	# $TMP/pgb SCRIPT CLIENTS [MSGS_PER_TX]: pgbench SCRIPT for the
	# run's seconds; prints messages/s (its tps times MSGS_PER_TX) and
	# the messages, as load does
	sec=${DUR%.*}
	test "${sec:-0}" -ge 1 || sec=1
	cat >"$TMP/pgb" <<-EOF
	#!/bin/sh
	"$PG_BIN/pgbench" -n -M prepared -f "$TMP/pgb-\$1.sql" -c "\$2" -j "\$2" \\
	    -T $sec -h "$PGDIR" -U postgres postgres |
	    awk -v k="\${3:-1}" '
		/^number of transactions actually processed/ { split(\$NF, a, "/"); n = a[1] }
		/^tps = / { t = \$3 }
		END { if (t != "") printf "%.1f %d\\n", t * k, n * k }'
	EOF
	chmod +x "$TMP/pgb"
}

PGB=false
# root may hold /dev/cpu_dma_latency: a few figures also run so (nohalt.py)
NOHALT=false
test -w /dev/cpu_dma_latency && NOHALT=true
if $PG && test -x "$PG_BIN/pgbench"; then
	if pgb_setup; then
		PGB=true
	else
		say "bench: SKIP pgbench (its tables: $(tail -n 1 "$TMP/pgb-setup.log"))"
	fi
fi

# one daemon on its own schema (serving HTTP too), then four on one schema
# (pgm1..pgm4); the queues of N daemons over P partitions: mpushNxP, mcycNxP
HPG=false
if $PG; then
	P_HPG=$(free_port)
	if mount_fs pg "$QFS" -f --db "$(pg_db one)" --sync full \
	    --listen "127.0.0.1:$P_HPG" &&
	    mkdir "$TMP/pg.mnt/queues/push1" "$TMP/pg.mnt/queues/push4" \
	        "$TMP/pg.mnt/queues/qc11" "$TMP/pg.mnt/queues/cycle1" \
	        "$TMP/pg.mnt/queues/wake"; then
		PGQ=$TMP/pg.mnt/queues
		wait_port "$P_HPG" && HPG=true
		for i in 1 2 3 4; do
			mount_fs pgm$i "$QFS" -f --db "$(pg_db multi)" --sync full ||
				{ PG=false; break; }
		done
		if $PG; then
			for n in 1 2 4; do
				for p in 1 8; do
					mkdir "$TMP/pgm1.mnt/queues/mpush${n}x$p" \
					    "$TMP/pgm1.mnt/queues/mcyc${n}x$p" ||
						PG=false
				done
			done
		fi
		$PG || say "bench: SKIP PostgreSQL multi-mount (a daemon did not mount)"
	else
		say "bench: SKIP PostgreSQL (the daemon did not mount; see its log)"
		tail -n 3 "$TMP/pg.log"
		PG=false
	fi
fi
# Queen's HTTP API: a daemon with no mount, sync full, on its own store
# (with BENCH_ONLY=pg the reference of the PostgreSQL daemon's HTTP rows)
P_HF=$(free_port)
start hf "$QFS" -f --db "$TMP/hf.db" --sync full --listen "127.0.0.1:$P_HF"
PID_hf=$LASTPID
HTTP=true
wait_port "$P_HF" || { say "bench: SKIP HTTP (the daemon did not listen)"; HTTP=false; }
$API || say "bench: the mount has no api/ files: api figures are n/a, prefill goes through the engine"

# the two scale mounts: 10k partitions and a deep backlog, prefilled
# through api/push when the mount has it, else through the engine first
prefill_mount () {
	name=$1 count=$2 parts=$3
	if $API; then
		mount_fs "$name" "$QFS" -f --db "$TMP/$name.db" --sync normal ||
			return 1
		mkdir -p "$TMP/$name.mnt/queues/q"
		out=$(timeout --foreground -k 2 130 "$L" apipush \
		    "$TMP/$name.mnt" -q q -n "$count" -P "$parts" -d 120 \
		    2>>"$ERR") && {
			set -- $out
			test "$2" -lt "$count" &&
				say "bench: $name: only $2 of $count messages prefilled in 120 s"
			return 0
		}
		say "bench: prefill of $name through api/push failed; through the engine instead"
		eval "old=\$PID_$name"
		unmount_fs "$name"
		while kill -0 "$old" 2>/dev/null; do sleep 0.1; done
		name2=$name-engine
	else
		name2=$name
	fi
	"$B/prefill" "$TMP/$name2.db" q "$count" "$parts" 2>>"$ERR" ||
		return 1
	mount_fs "$name" "$QFS" -f --db "$TMP/$name2.db" --sync normal
}
if test "$ONLY" != pg; then
	t0=$(date +%s)
	say "bench: prefilling $PARTS partitions and a $BACKLOG-message backlog"
	prefill_mount part "$PARTS" "$PARTS" || exit 1
	prefill_mount deep "$BACKLOG" 0 || exit 1
	say "bench: prefill took $(($(date +%s) - t0)) s"
fi
PQ=$TMP/part.mnt/queues/q
DQQ=$TMP/deep.mnt/queues/q

# --- figures ------------------------------------------------------------------

# fig KEY CMD...: one run; its first output field goes to $RES
# the CPU time (user + system, in clock ticks) a daemon has used so far
ticks () {
	awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null
}

# switches PID: the context switches of all of PID's threads so far (each
# is a sleep and a wake-up; on a VM a wake-up on an idle CPU waits on the
# host)
switches () {
	cat /proc/"$1"/task/*/status 2>/dev/null |
	    awk '/ctxt_switches/ { s += $2 } END { print s + 0 }'
}

# fig KEY CMD...: one run of a load; its rate to $RES.  With CPU_OF set to
# a mount's name, also KEY.cpu: that daemon's CPU microseconds per
# operation, and KEY.cs its context switches per operation (the load's
# second field is its count of operations).
fig () {
	key=$1
	shift
	cp=
	test -n "${CPU_OF:-}" && eval "cp=\${PID_$CPU_OF:-}"
	t0=$(test -n "$cp" && ticks "$cp")
	s0=$(test -n "$cp" && switches "$cp")
	out=$(timeout --foreground -k 2 $((${DUR%.*} + 30)) "$@" 2>>"$ERR") || out=
	t1=$(test -n "$cp" && ticks "$cp")
	s1=$(test -n "$cp" && switches "$cp")
	v=${out%% *}
	case "$v" in
	''|*[!0-9.]*) say "$key fail" >>"$RES"; say "  ($key failed)" ;;
	*) say "$key $v" >>"$RES"
	   set -- $out
	   test -n "$t0" && test -n "$t1" && test "${2:-0}" -gt 0 &&
		awk -v a="$t0" -v b="$t1" -v n="$2" -v hz="$HZ" -v k="$key" \
		    -v c="$s0" -v d="$s1" \
		    'BEGIN { printf "%s.cpu %.1f\n%s.cs %.1f\n", k,
		        (b - a) * 1e6 / hz / n, k, (d - c) / n }' \
		    >>"$RES" ;;
	esac
}
HZ=$(getconf CLK_TCK)

# figc MOUNT KEY CMD...: fig with MOUNT's daemon CPU per operation
figc () {
	CPU_OF=$1
	shift
	fig "$@"
	CPU_OF=
}

# pg_rt MOUNT: the daemon's pg_round_trips so far (nothing if sys/stats
# has no such line)
pg_rt () {
	sed -n 's/^pg_round_trips = \([0-9]*\)$/\1/p' "$TMP/$1.mnt/sys/stats" 2>/dev/null
}

# figrt MOUNT PER KEY CMD...: figc, and KEY.rt: the round trips to
# PostgreSQL per operation (PER: the operations per unit of the load's
# count, e.g. 0.001 for requests of 1000 items), when there is a counter
figrt () {
	rt_m=$1 rt_per=$2
	shift 2
	r0=$(pg_rt "$rt_m")
	figc "$rt_m" "$@"
	r1=$(pg_rt "$rt_m")
	set -- $out
	test -n "$r0" && test -n "$r1" && test "${2:-0}" -gt 0 &&
		awk -v a="$r0" -v b="$r1" -v n="$2" -v p="$rt_per" -v k="$key" \
		    'BEGIN { printf "%s.rt %.2f\n", k, (b - a) / (n * p) }' >>"$RES"
}

# multi KEY N MODE QUEUE ARGS...: one load per mount pgm1..pgmN, all at
# once on QUEUE of their shared database; the sum of their rates to $RES
multi () {
	key=$1 n=$2 mode=$3 q=$4
	shift 4
	mi=1 mpids=
	while test $mi -le "$n"; do
		timeout --foreground -k 2 $((${DUR%.*} + 30)) "$L" "$mode" \
		    "$TMP/pgm$mi.mnt/queues/$q" "$@" -d "$DUR" \
		    >"$TMP/multi.$mi" 2>>"$ERR" &
		mpids="$mpids $!"
		mi=$((mi + 1))
	done
	ok=true
	for p in $mpids; do
		wait "$p" || ok=false
	done
	v=$(cat "$TMP"/multi.* 2>/dev/null |
	    awk '$1 ~ /^[0-9.]+$/ { s += $1; k++ } END { if (k) print s; else print "" }')
	if $ok && test -n "$v" && test "$(cat "$TMP"/multi.* | wc -l)" -ge "$n"; then
		say "$key $v" >>"$RES"
	else
		say "$key fail" >>"$RES"
		say "  ($key failed)"
	fi
	rm -f "$TMP"/multi.*
}

rep () {
	if test "$ONLY" = pg; then
		fig f.push1 "$L" create "$FQ/push1" -t 1 -d "$DUR"
		figc full f.push4 "$L" create "$FQ/push4" -t 4 -d "$DUR"
		fig f.qc11 "$L" qcycle "$FQ/qc11" -p 1 -c 1 -d "$DUR"
		$API && figc full f.apipush "$L" apipush "$TMP/full.mnt" -q api -d "$DUR"
		if $HTTP; then
			H=$B/http-load
			figc hf h.push1c8 "$H" "$P_HF" push 8 "$DUR" 1 hp8
			"$H" "$P_HF" push 1 "$DUR" 1000 "hpa$i" >/dev/null \
			    2>>"$ERR"
			figc hf h.popack100 "$H" "$P_HF" popack 1 "$DUR" 100 \
			    "hpa$i"
		fi
		rep_pg
		return
	fi
	figc null null.create1 "$L" create "$NM/c" -t 1 -d "$DUR"
	fig f.push1 "$L" create "$FQ/push1" -t 1 -d "$DUR"
	figc normal n.push1 "$L" create "$NQ/push1" -t 1 -d "$DUR"
	fig null.create4 "$L" create "$NM/c" -t 4 -d "$DUR"
	figc full f.push4 "$L" create "$FQ/push4" -t 4 -d "$DUR"
	fig n.push4 "$L" create "$NQ/push4" -t 4 -d "$DUR"
	figc null null.cycle1 "$L" cycle "$NM/y1" -t 1 -d "$DUR"
	fig f.cycle1 "$L" cycle "$FQ/cycle1" -t 1 -d "$DUR"
	figc normal n.cycle1 "$L" cycle "$NQ/cycle1" -t 1 -d "$DUR"
	fig null.cycle4 "$L" cycle "$NM/y4" -t 4 -d "$DUR"
	fig f.qc11 "$L" qcycle "$FQ/qc11" -p 1 -c 1 -d "$DUR"
	fig n.qc11 "$L" qcycle "$NQ/qc11" -p 1 -c 1 -d "$DUR"
	fig f.qc44 "$L" qcycle "$FQ/qc44" -p 4 -c 4 -d "$DUR"
	fig n.qc44 "$L" qcycle "$NQ/qc44" -p 4 -c 4 -d "$DUR"
	fig null.read1 "$L" read "$NM/o" -t 1 -d "$DUR"
	fig null.rename1 "$L" rename "$NM/o" -t 1 -d "$DUR"
	fig f.nextpop "$L" nextpop "$FQ/push4" -d "$DUR"
	if $API; then
		figc full f.apipush "$L" apipush "$TMP/full.mnt" -q api -d "$DUR"
		# two clients: one builds its next request while the daemon
		# works on the other's, so the daemon, not the round trip, sets
		# the pace
		figc full f.apipush2 "$L" apipush "$TMP/full.mnt" -q api -t 2 \
		    -d "$DUR"
		# what limits the two above: one client that checks each
		# answer by a scan for its 1000 "queued", not with jansson
		figc full f.apipushx "$L" apipush "$TMP/full.mnt" -q api -x \
		    -d "$DUR"
		figc full f.apipop "$L" apipop "$TMP/full.mnt" -q api -d "$DUR"
		# the same consume by a Python program (json.loads), on
		# 100,000 messages pushed beforehand, outside the figure
		"$L" apipush "$TMP/py.mnt" -q apipy -n 100000 -d 60 \
		    >/dev/null 2>>"$ERR" &&
			figc py f.apipy /usr/bin/python3 "$S/apipop.py" \
			    "$TMP/py.mnt" apipy "$DUR"
	fi
	fig p.push1 "$L" create "$PQ" -t 1 -P "$PARTS" -d "$DUR"
	fig p.cycle1 "$L" cycle "$PQ" -t 1 -P "$PARTS" -d "$DUR"
	fig d.push1 "$L" create "$DQQ" -t 1 -d "$DUR"
	fig d.cycle1 "$L" cycle "$DQQ" -t 1 -d "$DUR"
	if $BS; then
		for c in 1 4; do
			for m in push cycle; do
				fig bs0.$m$c "$B/bsload" "$P_BS0" $m $c "$DUR"
				fig bsb.$m$c "$B/bsload" "$P_BSB" $m $c "$DUR"
			done
		done
	fi
	if $HTTP; then
		H=$B/http-load
		figc hf h.push1c1 "$H" "$P_HF" push 1 "$DUR" 1 hp1
		figc hf h.push1c8 "$H" "$P_HF" push 8 "$DUR" 1 hp8
		figc hf h.push100 "$H" "$P_HF" push 1 "$DUR" 100 hb100
		figc hf h.push1000 "$H" "$P_HF" push 1 "$DUR" 1000 hb1000
		# the backlog of the pop + ack figure, outside it
		"$H" "$P_HF" push 1 "$DUR" 1000 "hpa$i" >/dev/null 2>>"$ERR"
		figc hf h.popack100 "$H" "$P_HF" popack 1 "$DUR" 100 "hpa$i"
	fi
	if $RS; then
		figc ra ra.push8 "$B/rsload" "$P_RA" push 8 "$DUR"
		for c in 1 4; do
			for m in push cycle; do
				fig ra.$m$c "$B/rsload" "$P_RA" $m $c "$DUR"
				fig re.$m$c "$B/rsload" "$P_RE" $m $c "$DUR"
			done
		done
	fi
	if $DQ; then
		fig dq.add /usr/bin/python3 "$S/dirqload.py" "$TMP/dirq" add "$DUR"
		fig dq.cycle /usr/bin/python3 "$S/dirqload.py" "$TMP/dirq" cycle "$DUR"
	fi
	rep_pg
}

rep_pg () {
	if test -n "$PGQ"; then
		figrt pg 1 pg.push1 "$L" create "$PGQ/push1" -t 1 -d "$DUR"
		figrt pg 1 pg.push4 "$L" create "$PGQ/push4" -t 4 -d "$DUR"
		figrt pg 1 pg.qc11 "$L" qcycle "$PGQ/qc11" -p 1 -c 1 -d "$DUR"
		# one thread: a push, its pop, read and ack, then the next;
		# its round trips are those of a whole cycle and no more
		figrt pg 1 pg.cycle1 "$L" cycle "$PGQ/cycle1" -t 1 -d "$DUR"
		# the same two with the CPUs kept from halting when idle:
		# what this machine's wake-ups from a halt cost them
		if $NOHALT; then
			fig pg.push4.nohalt /usr/bin/python3 "$S/nohalt.py" \
			    "$L" create "$PGQ/push4" -t 4 -d "$DUR"
			fig pg.qc11.nohalt /usr/bin/python3 "$S/nohalt.py" \
			    "$L" qcycle "$PGQ/qc11" -p 1 -c 1 -d "$DUR"
		fi
		$API && figrt pg 0.001 pg.apipush "$L" apipush "$TMP/pg.mnt" \
		    -q api -d "$DUR"
		# the same with a client that checks its answers without
		# parsing them: what is left beside the server when the
		# client's JSON costs next to nothing (pgbench has none)
		$API && figrt pg 0.001 pg.apipushx "$L" apipush "$TMP/pg.mnt" \
		    -q apix -x -d "$DUR"
	fi
	if $HPG; then
		figrt pg 1 pg.hpush8 "$B/http-load" "$P_HPG" push 8 "$DUR" 1 php8
		# the backlog of the pop + ack figure, outside it
		"$B/http-load" "$P_HPG" push 1 "$DUR" 1000 "ppa$i" \
		    >/dev/null 2>>"$ERR"
		figrt pg 0.01 pg.hpopack100 "$B/http-load" "$P_HPG" popack 1 \
		    "$DUR" 100 "ppa$i"
	fi
	if $PGB; then
		fig pgb.push1 "$TMP/pgb" push 1
		fig pgb.push4 "$TMP/pgb" push 4
		fig pgb.batch1 "$TMP/pgb" batch 1 1000
		fig pgb.batchd1 "$TMP/pgb" batchd 1 1000
		fig pgb.cycle1 "$TMP/pgb" cycle 1
	fi
	if $PG; then
		for n in 1 2 4; do
			multi pgm.push${n}x1 $n create mpush${n}x1 -t 1
			multi pgm.push${n}x8 $n create mpush${n}x8 -t 1 -P 8
			multi pgm.cycle${n}x1 $n cycle mcyc${n}x1 -t 1
			multi pgm.cycle${n}x8 $n cycle mcyc${n}x8 -t 1 -P 8
		done
	fi
}

i=1
while test $i -le "$REPS"; do
	say "bench: run $i of $REPS"
	rep
	i=$((i + 1))
done

say "bench: wake-up latency (300 samples each)"
WAKE_MOUNTS="normal full"
test -n "$PGQ" && WAKE_MOUNTS="$WAKE_MOUNTS pg"
for m in $WAKE_MOUNTS; do
	eval "q=\$TMP/$m.mnt/queues/wake"
	out=$(timeout --foreground -k 2 60 "$L" wake "$q" -s 300 2>>"$ERR") || out=
	set -- $out
	say "w.$m.p50 ${1:-fail}" >>"$RES"
	say "w.$m.p99 ${2:-fail}" >>"$RES"
done

hwm () {
	eval "p=\${PID_$1:-}"
	test -n "$p" && sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$p/status"
}
for m in full normal part deep; do
	eval "p=\${PID_$m:-}"
	test -n "$p" || continue
	say "rss.$m $(hwm $m || echo fail)" >>"$RES"
done
# the HTTP daemon's resident size with 256 idle keep-alive connections,
# each of which has made one request
if $HTTP && test "$ONLY" != pg; then
	rss=$(python3 "$S/http_idle.py" "$P_HF" "$PID_hf" 256 2>>"$ERR")
	say "rss.http256 ${rss:-fail}" >>"$RES"
fi
for m in full normal part deep null py pg pgm1 pgm2 pgm3 pgm4; do
	unmount_fs $m
done

if test "$ONLY" != pg; then
	say "bench: engine, no FUSE"
	timeout --foreground -k 2 120 "$B/engine" "$DUR" >"$TMP/engine.out" 2>>"$ERR"
fi

# --- the table ----------------------------------------------------------------

# med KEY: the median of a figure's runs ("-" when it has none)
med () {
	awk -v k="$1" '$1 == k && $2 != "fail" { v[n++] = $2 + 0 }
	    END {
		if (!n) { print "-"; exit }
		for (i = 0; i < n; i++)
			for (j = i + 1; j < n; j++)
				if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		print v[int(n / 2)]
	    }' "$RES"
}

# range KEY: "[min-max]" of its runs, when there are several
range () {
	awk -v k="$1" '
	    function f(x) {
		if (x >= 1000)
			return sprintf("%.1fk", x / 1000)
		return sprintf("%.0f", x)
	    }
	    $1 == k && $2 != "fail" {
		x = $2 + 0
		if (!n || x < lo)
			lo = x
		if (!n || x > hi)
			hi = x
		n++
	    }
	    END { if (n > 1) printf "[%s-%s]", f(lo), f(hi) }' "$RES"
}

# fmt VALUE [UNIT]: 12345 -> 12.3k/s; other units print as they are
fmt () {
	awk -v x="$1" -v u="${2:-/s}" 'BEGIN {
		if (x == "-")
			print "-"
		else if (u == "MiB")
			printf "%.1f %s\n", x, u
		else if (u != "/s")
			printf "%.0f %s\n", x, u
		else if (x >= 1000)
			printf "%.1fk/s\n", x / 1000
		else
			printf "%.0f/s\n", x
	    }'
}

# row LABEL QVAL REFLABEL REFVAL TARGET [UNIT [QRANGE]]: TARGET is "r>=X"
# (on the ratio), "v>=X" or "v<=X" (on the queenfs value) or "" (none)
row () {
	awk -v l="$1" -v q="$2" -v rl="$3" -v r="$4" -v t="$5" \
	    -v qs="$(fmt "$2" "${6:-/s}")" -v rs="$(fmt "$4" "${6:-/s}")" \
	    -v qr="${7:-}" 'BEGIN {
		ratio = "-"
		if (q != "-" && r != "-" && r + 0 > 0)
			ratio = sprintf("%.2f", q / r)
		met = ""
		tt = ""
		if (t != "") {
			op = substr(t, 2, 2)
			x = substr(t, 4) + 0
			y = q
			tt = op " " substr(t, 4)
			if (substr(t, 1, 1) == "r") {
				y = ratio
				tt = "ratio " tt
			}
			if (y == "-")
				met = "n/a"
			else if (op == ">=")
				met = (y + 0 >= x) ? "yes" : "NO"
			else
				met = (y + 0 <= x) ? "yes" : "NO"
		}
		if (qr != "")
			qs = qs " " qr
		if (rl == "")
			rs = ""
		else
			rs = rl " " rs
		printf "| %s | %s | %s | %s | %s | %s |\n", l, qs, rs, ratio,
		    tt, met
	    }'
}

m () { med "$1"; }
R () { row "$1" "$(m "$2")" "$3" "$(m "$4")" "$5" "${6:-/s}" "$(range "$2")"; }

if test "$ONLY" = pg; then
	say ""
	say "queenfs on PostgreSQL only (BENCH_ONLY=pg): medians of $REPS runs x ${DUR} s [min-max], $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
else
	say ""
	say "queenfs benchmark: medians of $REPS runs x ${DUR} s [min-max], $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
	say "push = create+write(200 B)+close of a new file; cycle = push, read next, read the payload, rename into ack/"
	say "P+C = P producer and C consumer threads; wake = from the producer's close() call to the blocked read's return"
	say "dirq runs on $(df -PT /tmp | awk 'NR == 2 { print $2 }') /tmp: after mass unlinks ext4 creates slow down for minutes (README.md, "Performance")"
	say ""
	say "| figure | queenfs | reference | ratio | target | met? |"
	say "|---|---|---|---|---|---|"
	R "push, 1 producer, sync full" f.push1 "nullfs create 1t" null.create1 ""
	R "push, 4 producers, sync full" f.push4 "beanstalkd -f0, 4 conns" bs0.push4 "r>=2.5"
	R "push, 4 producers, sync full" f.push4 "redis aof always, 4 conns" ra.push4 "r>=1.5"
	R "push, 1 producer, sync normal" n.push1 "nullfs create 1t" null.create1 "r>=0.6"
	R "push, 4 producers, sync normal" n.push4 "nullfs create 4t" null.create4 ""
	R "push, 4 producers, sync normal" n.push4 "beanstalkd -b, 4 conns" bsb.push4 ""
	R "push, 4 producers, sync normal" n.push4 "redis aof everysec, 4 conns" re.push4 ""
	R "cycle, 1 thread, sync normal" n.cycle1 "nullfs cycle 1t" null.cycle1 "r>=0.55"
	R "cycle, 1 thread, sync full" f.cycle1 "nullfs cycle 1t" null.cycle1 ""
	R "cycle 1+1, sync full" f.qc11 "beanstalkd -f0 cycle, 1 conn" bs0.cycle1 "r>=2"
	R "cycle 1+1, sync full" f.qc11 "redis always cycle, 1 conn" ra.cycle1 ""
	R "cycle 4+4, sync full" f.qc44 "beanstalkd -f0 cycle, 4 conns" bs0.cycle4 ""
	R "cycle 4+4, sync full" f.qc44 "redis always cycle, 4 conns" ra.cycle4 "r>=1"
	R "cycle 1+1, sync normal" n.qc11 "beanstalkd -b cycle, 1 conn" bsb.cycle1 ""
	R "cycle 4+4, sync normal" n.qc44 "nullfs cycle 4t" null.cycle4 ""
	R "cycle 4+4, sync normal" n.qc44 "redis everysec cycle, 4 conns" re.cycle4 ""
	if $HTTP; then
		R "HTTP push, 1 item/request, 1 conn, full" h.push1c1 "redis aof always, 1 conn" ra.push1 ""
		R "HTTP push, 1 item/request, 8 conns, full" h.push1c8 "redis aof always, 8 conns" ra.push8 "r>=1"
		R "HTTP batch push 100/request, 1 conn, full" h.push100 "api/push 1000/request" f.apipush "v>=80000"
		R "HTTP batch push 1000/request, 1 conn, full" h.push1000 "api/push 1000/request" f.apipush ""
		R "HTTP pop 100 + batch ack, 1 conn, full" h.popack100 "api/pop batch=1000" f.apipop "v>=80000"
		# the engine's own work for those pushes: one commit each, a sync
		# per 3 (tests/bench/engine.c); the rest is the HTTP front end's
		e_g=$(sed -n 's/^push 1, sync per 3 (full) .* cpu \([0-9.]*\) us\/msg$/\1/p' \
		    "$TMP/engine.out" | head -n 1)
		h_c8=$(m h.push1c8.cpu)
		h_x="-"
		test -n "$e_g" && test "$h_c8" != "-" &&
			h_x=$(awk -v a="$h_c8" -v b="$e_g" 'BEGIN { printf "%.1f\n", a - b }')
		row "HTTP daemon CPU per message, 1 item/request, 8 conns" "$h_c8" "redis aof always, 8 conns" "$(m ra.push8.cpu)" "" "us"
		row "HTTP daemon CPU per message beyond the engine's (${e_g:--} us), 8 conns" "$h_x" "" "-" "v<=15" "us"
		row "HTTP daemon CPU per message, batch 100" "$(m h.push100.cpu)" "" "-" "" "us"
		row "HTTP daemon RSS, 256 idle keep-alive connections" "$(m rss.http256)" "" "-" "v<=48" "MiB"
	fi
	eng () {
		sed -n "s/^$1  *\([0-9.]*\) msg\/s.*/\1/p" "$TMP/engine.out" | head -n 1
	}
	e_bp=$(eng "push batch 1000 (full)")
	e_bc=$(eng "pop+ack batch 1000 (full)")
	if $API; then
		row "batch push, api/push 1000/request, full" "$(m f.apipush)" "engine batch push" "${e_bp:--}" "v>=150000" "/s" "$(range f.apipush)"
		row "batch push, api/push 1000/request, full, 2 clients" "$(m f.apipush2)" "engine batch push" "${e_bp:--}" "v>=150000" "/s" "$(range f.apipush2)"
		row "batch push, api/push, full, 1 client, answers scanned not parsed" "$(m f.apipushx)" "engine batch push" "${e_bp:--}" "" "/s" "$(range f.apipushx)"
		row "batch consume, api/pop batch=1000, full (C, jansson)" "$(m f.apipop)" "engine batch pop+ack" "${e_bc:--}" "v>=100000" "/s" "$(range f.apipop)"
		row "batch consume, api/pop batch=1000, full (Python, json)" "$(m f.apipy)" "engine batch pop+ack" "${e_bc:--}" "v>=100000" "/s" "$(range f.apipy)"
	else
		row "batch push, api/push 1000/request (no api/ on the mount)" "-" "engine batch push" "${e_bp:--}" "v>=150000"
		row "batch consume, api/pop batch=1000 (no api/ on the mount)" "-" "engine batch pop+ack" "${e_bc:--}" "v>=100000"
	fi
	row "batch consume, next batch=1000 + payload files, full" "$(m f.nextpop)" "engine batch pop+ack" "${e_bc:--}" "" "/s" "$(range f.nextpop)"
	row "wake-up p50, sync normal" "$(m w.normal.p50)" "" "-" "" "us"
	row "wake-up p99, sync normal" "$(m w.normal.p99)" "" "-" "v<=2000" "us"
	row "wake-up p50, sync full" "$(m w.full.p50)" "" "-" "" "us"
	row "wake-up p99, sync full" "$(m w.full.p99)" "" "-" "v<=2000" "us"
	rssmib=$(awk '$1 ~ /^rss\./ && $2 + 0 > x { x = $2 + 0 }
	    END { if (x) printf "%.1f\n", x / 1024; else print "-" }' "$RES")
	row "daemon peak RSS (VmHWM, max of 4 daemons)" "$rssmib" "" "-" "v<=32" "MiB"
	R "push 1p, $PARTS partitions, normal" p.push1 "plain push 1p normal" n.push1 "r>=0.8"
	R "cycle 1t, $PARTS partitions, normal" p.cycle1 "plain cycle 1t normal" n.cycle1 "r>=0.8"
	R "push 1p, $BACKLOG backlog, normal" d.push1 "plain push 1p normal" n.push1 "r>=0.8"
	R "cycle 1t, $BACKLOG backlog, normal" d.cycle1 "plain cycle 1t normal" n.cycle1 "r>=0.8"

	# What a 2-CPU machine can run at most: each side's CPU per operation.
	say ""
	say "daemon CPU per operation (user + system, medians): what the server itself spends; and the daemon's context switches per operation"
	say ""
	say "| operation | queenfs | reference | ratio | queenfs context switches |"
	say "|---|---|---|---|---|"
	C () {
		row "$1" "$(m "$2.cpu")" "$3" "$(m "$4.cpu")" "" "us" | cut -d'|' -f1-5 | sed "s/\$/| $(m "$2.cs") |/"
	}
	C "push 1p, sync normal" n.push1 "nullfs create 1t" null.create1
	C "push 4p, sync full" f.push4 "nullfs create 1t" null.create1
	C "cycle 1t, sync normal" n.cycle1 "nullfs cycle 1t" null.cycle1
	$API && C "batch push, per message" f.apipush "" -
	$API && C "batch push, per message, 2 clients" f.apipush2 "" -
	$API && C "batch push, per message, answers scanned" f.apipushx "" -
	$API && C "batch consume, per message (C consumer)" f.apipop "" -
	$API && C "batch consume, per message (Python consumer)" f.apipy "" -
fi

if test "$BENCH_PG" = 1; then
	say ""
	say "queenfs on PostgreSQL $("$PG_BIN/postgres" --version 2>/dev/null | awk '{ print $3 }') (private cluster on a unix socket, fsync on, --sync full = synchronous_commit on), beside pgbench on the same cluster and SQLite sync full"
	say "pgbench push: BEGIN, UPDATE of one partition row RETURNING its tail, INSERT of one 200-byte message row, COMMIT (-M prepared, one partition, as a push to one queue); batch: the same with one INSERT ... SELECT of 1000 rows; batch with hash rows: api/push's work, the partition row, 1000 dedup probes of the (hash, id) index, 1000 message rows and 1000 hash rows in one INSERT; cycle: that push, then a lease of it (the cursor row updated, the message read), then its ack (the cursor row updated), three transactions one after the other"
	say "N daemons x P partitions: N mounts on one database and schema, one loading process each (1 thread), at once; the figure is their total"
	say ""
	say "| figure | queenfs + PostgreSQL | reference | ratio | target | met? |"
	say "|---|---|---|---|---|---|"
	R "push, 1 producer, 1 daemon" pg.push1 "pgbench push, 1 client" pgb.push1 ""
	R "push, 1 producer, 1 daemon" pg.push1 "SQLite sync full" f.push1 ""
	R "push, 4 producers, 1 daemon" pg.push4 "pgbench push, 4 clients" pgb.push4 ""
	R "push, 4 producers, 1 daemon" pg.push4 "SQLite sync full" f.push4 "r>=0.4"
	R "push, 4 producers, 1 daemon" pg.push4 "" - "v>=4000"
	R "cycle 1+1, 1 daemon" pg.qc11 "pgbench cycle, 1 client" pgb.cycle1 ""
	R "cycle 1+1, 1 daemon" pg.qc11 "SQLite sync full" f.qc11 "v>=600"
	R "cycle, one thread (push, pop, read, ack in turn), 1 daemon" pg.cycle1 "pgbench cycle, 1 client" pgb.cycle1 ""
	if $NOHALT; then
		R "push, 4 producers, 1 daemon, idle CPUs poll (cpu_dma_latency 0)" pg.push4.nohalt "the same, idle CPUs halt (as configured)" pg.push4 "v>=4000"
		R "cycle 1+1, 1 daemon, idle CPUs poll (cpu_dma_latency 0)" pg.qc11.nohalt "the same, idle CPUs halt (as configured)" pg.qc11 "v>=600"
	fi
	R "api/push 1000 items/request, 1 client" pg.apipush "pgbench batch of 1000, 1 client" pgb.batch1 ""
	R "api/push 1000 items/request, 1 client" pg.apipush "pgbench batch of 1000 with hash rows, 1 client" pgb.batchd1 "r>=0.8"
	R "api/push 1000 items/request, 1 client" pg.apipush "SQLite sync full" f.apipush "v>=40000"
	R "api/push 1000 items/request, 1 client, answers scanned not parsed" pg.apipushx "pgbench batch of 1000 with hash rows, 1 client" pgb.batchd1 "r>=0.8"
	R "HTTP push 1 item, 8 conns" pg.hpush8 "SQLite sync full, HTTP" h.push1c8 ""
	R "HTTP pop 100 + batch ack, 1 conn" pg.hpopack100 "SQLite sync full, HTTP" h.popack100 ""
	for p in 1 8; do
		R "push, 1 daemon, $p partition(s)" pgm.push1x$p "" - ""
		R "push, 2 daemons, $p partition(s) (total)" pgm.push2x$p "1 daemon, $p partition(s)" pgm.push1x$p "$(test $p = 8 && echo 'r>=1.5')"
		R "push, 4 daemons, $p partition(s) (total)" pgm.push4x$p "1 daemon, $p partition(s)" pgm.push1x$p "r>=1"
		R "cycle, 1 daemon, $p partition(s)" pgm.cycle1x$p "" - ""
		R "cycle, 2 daemons, $p partition(s) (total)" pgm.cycle2x$p "1 daemon, $p partition(s)" pgm.cycle1x$p "$(test $p = 8 && echo 'r>=1.5')"
		R "cycle, 4 daemons, $p partition(s) (total)" pgm.cycle4x$p "1 daemon, $p partition(s)" pgm.cycle1x$p "r>=1"
	done
	row "wake-up p50, PostgreSQL, 1 daemon" "$(m w.pg.p50)" "SQLite full" "$(m w.full.p50)" "" "us"
	row "wake-up p99, PostgreSQL, 1 daemon" "$(m w.pg.p99)" "SQLite full" "$(m w.full.p99)" "" "us"
	say ""
	say "round trips to PostgreSQL per operation (sys/stats pg_round_trips over the figure, the daemon's tick included; n/a: this build does not count them), and the daemon's context switches per operation (its threads' sleeps and wake-ups)"
	say ""
	say "| operation | round trips | daemon context switches | target (round trips) |"
	say "|---|---|---|---|"
	rt () {
		v=$(m "$2.rt")
		test "$v" = - && v=n/a
		say "| $1 | $v | $(m "$2.cs") | $3 |"
	}
	rt "push, 1 producer" pg.push1 "<= 2"
	rt "push, 4 producers" pg.push4 "<= 2"
	rt "cycle, one thread (a push, then its pop, read and ack)" pg.cycle1 "<= 12"
	rt "cycle 1+1 (the producer's pushes ahead of the consumer included)" pg.qc11 ""
	rt "api/push, per request of 1000 items" pg.apipush ""
	rt "api/push, per request, answers scanned" pg.apipushx ""
	rt "HTTP push of 1 item" pg.hpush8 ""
	rt "HTTP pop of 100 and their batch ack" pg.hpopack100 ""
fi

if test "$ONLY" != pg; then
	say ""
	say "references (medians [min-max])"
	say ""
	say "| reference | 1 | 4 |"
	say "|---|---|---|"
	two () {
		say "| $1 | $(fmt "$(m "$2")")$(range "$2" | sed 's/^./ &/') |" \
		    "$(fmt "$(m "$3")")$(range "$3" | sed 's/^./ &/') |"
	}
	two "nullfs create (threads)" null.create1 null.create4
	two "nullfs cycle (threads)" null.cycle1 null.cycle4
	two "nullfs read / rename (1t)" null.read1 null.rename1
	two "beanstalkd -f0 push (conns)" bs0.push1 bs0.push4
	two "beanstalkd -f0 cycle (conns)" bs0.cycle1 bs0.cycle4
	two "beanstalkd -b push (conns)" bsb.push1 bsb.push4
	two "beanstalkd -b cycle (conns)" bsb.cycle1 bsb.cycle4
	two "redis aof always push (conns)" ra.push1 ra.push4
	two "redis aof always cycle (conns)" ra.cycle1 ra.cycle4
	two "redis aof everysec push (conns)" re.push1 re.push4
	two "redis aof everysec cycle (conns)" re.cycle1 re.cycle4
	two "dirq ext4 add / cycle (1 proc)" dq.add dq.cycle
	say ""
	say "engine, no FUSE (tests/bench/engine.c, one run of ${DUR} s each):"
	sed 's/^/    /' "$TMP/engine.out"
fi
say ""
say "daemon peak RSS in KiB: $(grep '^rss\.' "$RES" | tr '\n' ' ')"
for m in full normal part deep py pg pgm1 pgm2 pgm3 pgm4; do
	# the mounts this run did not make have no log
	test -f "$TMP/$m.log" || continue
	n=$(wc -l <"$TMP/$m.log")
	test "${n:-0}" -gt 0 &&
		say "daemon $m logged $n line(s), last: $(tail -n 1 "$TMP/$m.log")"
done
exit 0
