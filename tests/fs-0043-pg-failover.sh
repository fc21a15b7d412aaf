#!/bin/sh
# fs-0043-pg-failover: a primary and a synchronous streaming standby, each
# a private cluster of its own (initdb, pg_basebackup, unix sockets in
# temp dirs, every postmaster stopped by its pid on any exit), and two
# mounts whose --db names both hosts with target_session_attrs=read-write.
# A producer and a consumer run on each mount; mid-load the primary is
# stopped in immediate mode and the standby promoted.  Afterwards: every
# push whose close() returned 0 is on the new primary (psql), every ack
# whose rename() returned 0 is below its committed cursor there and is
# never delivered again, and both daemons, the same pids, serve new
# pushes and pops.  A third mount lists a host that never answers
# between the two; it too serves on the new primary.  Run under
# tests/pg.sh (make check-pg); the clusters are this script's, not
# tests/pg.sh's.
QUEENFS_TEST_TIMEOUT=${QUEENFS_TEST_TIMEOUT:-240}
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
test_have_prereq PYTHON || skip_all "no python3"
. "$TEST_DIRECTORY/pgpair.sh"
pgpair_have || skip_all "no PostgreSQL server binaries (initdb, pg_basebackup)"
trap 'cleanup_ >&5; pgpair_stop' EXIT
pgpair_start || {
	test_failure_ "a primary and a synchronous standby" "$PGPAIR_WHY"
	test_done
}

SCHEMA=t0043_$$
mount_queenfs_on "postgresql:///postgres?host=$PGPAIR_P,$PGPAIR_S&user=postgres&target_session_attrs=read-write&options=-csearch_path%3D$SCHEMA"
A=$MNT
B=$TRASH/b
PIDA=$DAEMON_PID

test_expect_success 'the standby is synchronous; a second mount on both hosts' '
	test_is sync "$(pgpair_sql "$PGPAIR_P" \
	    "SELECT sync_state FROM pg_stat_replication")" "sync_state" &&
	test_is t "$(pgpair_sql "$PGPAIR_S" "SELECT pg_is_in_recovery()")" \
	    "the standby is in recovery" &&
	mount_extra b &&
	mkdir "$A/queues/fo" &&
	printf "wait = 1\nlease_time = 3\nretry_limit = 1000\n" >"$A/queues/fo/config" &&
	grep -qx "lease_time = 3" "$B/queues/fo/config" &&
	extra_pid_ b && PIDB=$ep_ && test -n "$PIDB"
'

cat >"$TRASH/blackhole.py" <<\PYEOF
# blackhole.py PATH: a unix socket that takes connections and never
# answers, as a host whose packets vanish
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(64)
held = []
while True:
    held.append(s.accept()[0])
PYEOF

# c lists a host that never answers between the primary and the standby:
# once the primary is gone, each reconnect of c must give up on it and
# go on to the standby
test_expect_success 'a third mount lists a host that never answers between the two' '
	mkdir bh &&
	{ "$PYTHON3" blackhole.py "$TRASH/bh/.s.PGSQL.5432" & } &&
	track_pid $! &&
	wait_until 5 "test -S \"$TRASH/bh/.s.PGSQL.5432\"" &&
	mount_extra c --db "postgresql:///postgres?host=$PGPAIR_P,$TRASH/bh,$PGPAIR_S&user=postgres&target_session_attrs=read-write&options=-csearch_path%3D$SCHEMA" &&
	grep -qx "lease_time = 3" "$TRASH/c/queues/fo/config"
'

# the calls' sessions of the daemons on the primary (psql's own left out)
client_pids () {
	pgpair_sql "$PGPAIR_P" "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()" | sort
}

# A message over 8 MiB pushed through A and read through B (once A has
# published it: another mount sees a push after its release, not at its
# close) has both replace their calls' connection (its buffers grew):
# the new ones must still follow the URI's hosts at the failover below
test_expect_success 'a 9 MiB message through A and back through B: both reconnect' '
	client_pids >before &&
	mkdir "$A/queues/big" &&
	head -c $((9 << 20)) /dev/urandom >big &&
	cp big "$A/queues/big/m" &&
	wait_until 10 "test \$(stat_of \"$A/sys/stats\" staged) = 0" &&
	cmp big "$B/queues/big/partitions/default/m" &&
	wait_until 10 "client_pids >after && test \$(comm -23 before after | wc -l) -ge 2"
'

# the producer and the consumer of each mount: tests/qload.py
QLOAD="$TEST_DIRECTORY/qload.py"

# count PATTERN: the lines of the files matching PATTERN (0 if none)
count () {
	cat $1 2>/dev/null | wc -l
}

test_expect_success 'producers and consumers on both mounts; the primary stops, the standby is promoted' '
	rm -f stop &&
	for w in a b; do
		: >pushed.$w && : >refused.$w && : >deliv.$w && : >acked.$w &&
		: >errs.$w || return 1
	done &&
	{ "$PYTHON3" "$QLOAD" produce "$A" fo a & } && pa=$! && track_pid $pa &&
	{ "$PYTHON3" "$QLOAD" produce "$B" fo b & } && pb=$! && track_pid $pb &&
	{ "$PYTHON3" "$QLOAD" consume "$A" fo a & } && ca=$! && track_pid $ca &&
	{ "$PYTHON3" "$QLOAD" consume "$B" fo b & } && cb=$! && track_pid $cb &&
	wait_until 30 "test \$(count pushed.a) -ge 40 && test \$(count pushed.b) -ge 40 && test \$(count \"acked.*\") -ge 30" &&
	echo "before: pushed $(count "pushed.*"), acked $(count "acked.*")" &&
	pgpair_crash_primary &&
	echo "primary stopped (immediate): pushed $(count "pushed.*"), acked $(count "acked.*")" &&
	# no read-write host for 0.2 to 2 s
	ms=$(( $(random_below 1800) + 200 )) &&
	echo "promoting the standby after $ms ms" &&
	sleep_ms $ms &&
	pgpair_promote &&
	echo "standby promoted: pushed $(count "pushed.*"), acked $(count "acked.*")" &&
	pa0=$(count pushed.a) && pb0=$(count pushed.b) && k0=$(count "acked.*") &&
	wait_until 60 "test \$(count pushed.a) -ge $((pa0 + 40)) && test \$(count pushed.b) -ge $((pb0 + 40)) && test \$(count \"acked.*\") -ge $((k0 + 40))" &&
	echo "on the new primary: pushed $(count "pushed.*"), acked $(count "acked.*")" &&
	touch stop &&
	wait_until 60 "! kill -0 $pa 2>/dev/null && ! kill -0 $pb 2>/dev/null && ! kill -0 $ca 2>/dev/null && ! kill -0 $cb 2>/dev/null" &&
	echo "refused pushes: $(cut -d" " -f2 refused.* | sort | uniq -c | tr "\n" " ")" &&
	echo "failed consumer calls: $(sort errs.* | uniq -c | tr "\n" " ")"
'

test_expect_success 'the same daemons serve on, on the new primary' '
	test_is "$PIDA" "$DAEMON_PID" "pid of A" &&
	extra_pid_ b && test_is "$PIDB" "$ep_" "pid of b" &&
	kill -0 "$PIDA" && kill -0 "$PIDB" &&
	test "$(cat "$A/sys/health")" = ok &&
	test "$(cat "$B/sys/health")" = ok &&
	mkdir "$A/queues/after" &&
	printf "wait = 5\n" >"$A/queues/after/config" &&
	printf one >"$A/queues/after/x1" &&
	printf two >"$B/queues/after/partitions/p2/x2" &&
	L1=$(pop "$B/queues/after") && L2=$(pop "$A/queues/after") &&
	printf "%s\n%s\n" "${L1##*/}" "${L2##*/}" | sort >got &&
	printf "x1\nx2\n" >expect &&
	test_cmp expect got &&
	mv "$B/queues/after/$L1" "$B/queues/after/ack/" &&
	mv "$A/queues/after/$L2" "$A/queues/after/ack/" &&
	test_is 0 "$(stat_of "$B/queues/after/stats" depth)" "depth after the acks" &&
	timeout -s KILL 40 sh -c "printf three >\"$TRASH/c/queues/after/partitions/p3/x3\"" &&
	L3=$(pop "$A/queues/after") &&
	test_is x3 "${L3##*/}" "pushed through c, popped through A" &&
	mv "$A/queues/after/$L3" "$A/queues/after/ack/"
'

# B listens again on the new primary: a reader blocked there (wait = 60)
# is handed a push through A, not ENODATA at its deadline
test_expect_success 'a reader blocked on B is woken by a push through A' '
	mkdir "$A/queues/w" &&
	echo "wait = 60" >"$A/queues/w/config" &&
	{ timeout 90 cat "$B/queues/w/next" >woken & } &&
	reader=$! && track_pid $reader &&
	wait_until 10 "test \"\$(stat_of \"$B/sys/stats\" waiting_readers)\" = 1" &&
	printf wake >"$A/queues/w/w1" &&
	{ wait_until 30 "! kill -0 $reader 2>/dev/null" || {
		stop_pid $reader; false; }; } &&
	wait $reader &&
	grep -q "^leased/[^/]*/w1$" woken &&
	mv "$B/queues/w/$(cat woken)" "$B/queues/w/ack/"
'

test_expect_success 'every confirmed push is on the new primary, byte for byte' '
	cat pushed.* | sort >confirmed &&
	# a close() confirmed while the database was away is published by
	# the daemon from its staging file once it reconnects
	wait_until 30 "pgpair_sql \"\$PGPAIR_S\" \"SELECT convert_from(txid, '"'"'UTF8'"'"') FROM $SCHEMA.messages\" | grep \"^[ab]-\" | sort >stored && test -z \"\$(comm -23 confirmed stored)\"" || {
		echo "confirmed but not on the new primary:"; comm -23 confirmed stored | head; false
	} &&
	echo "confirmed $(wc -l <confirmed), on the new primary $(wc -l <stored)" &&
	test_is 0 "$(pgpair_sql "$PGPAIR_S" "SELECT count(*) FROM $SCHEMA.messages WHERE convert_from(txid, '"'UTF8'"') ~ '"'^[ab]-'"' AND payload <> convert_to('"'payload of '"' || convert_from(txid, '"'UTF8'"'), '"'UTF8'"')")" "payloads that differ"
'

# the committed offset of each partition of fo for the queue-mode group
cat >"$TRASH/committed.sql" <<EOF
SELECT p.name, c.committed FROM $SCHEMA.cursors c
JOIN $SCHEMA.partitions p ON p.id = c.partition_id
JOIN $SCHEMA.groups g ON g.id = c.group_id
JOIN $SCHEMA.queues q ON q.id = p.queue_id
WHERE q.name = 'fo' AND g.name = '__QUEUE_MODE__' ORDER BY p.name
EOF

test_expect_success 'every confirmed ack is at or below its committed cursor on the new primary' '
	pgpair_sql "$PGPAIR_S" "$(cat committed.sql)" >committed &&
	echo "committed: $(tr "\n" " " <committed)" &&
	"$PYTHON3" - <<-\EOF
	import glob, sys
	committed = dict(l.split("|") for l in open("committed").read().split())
	bad, n = [], 0
	for f in glob.glob("acked.*"):
	    for l in open(f):
	        t0, t, txid, off = l.split()
	        if int(off) < 0:
	            continue
	        n += 1
	        p = "p%d" % (int(txid.rsplit("-", 1)[1]) % 4)
	        if int(off) > int(committed.get(p, -1)):
	            bad.append("%s at %s in %s, committed %s"
	                       % (txid, off, p, committed.get(p)))
	print("acks with an offset checked: %d" % n)
	for b in bad[:20]:
	    print("acked but not committed on the new primary:", b)
	sys.exit(1 if bad else 0)
	EOF
'

test_expect_success 'no confirmed ack is delivered again, also once the leases ran out' '
	sleep 3.5 &&
	: >deliv.z && : >acked.z && : >errs.z &&
	timeout 60 "$PYTHON3" "$QLOAD" consume "$B" fo z &&
	echo "delivered at the end: $(wc -l <deliv.z)" &&
	"$PYTHON3" - <<-\EOF
	import glob, sys
	bad = []
	acked = {}
	for f in glob.glob("acked.*"):
	    for l in open(f):
	        t0, t, n, off = l.split()
	        if n in acked:
	            bad.append("acked twice: " + n)
	        acked[n] = int(t)
	deliv = set()
	for f in glob.glob("deliv.*"):
	    for l in open(f):
	        t, n, off = l.split()
	        deliv.add(n)
	        if n in acked and int(t) > acked[n]:
	            bad.append("delivered again after its ack returned 0: " + n)
	print("delivered %d, acks confirmed %d" % (len(deliv), len(acked)))
	for b in bad[:20]:
	    print(b)
	sys.exit(1 if bad else 0)
	EOF
'

# Once seen failing in about a dozen runs on a loaded machine: a confirmed
# push, in the log on the new primary, was not delivered (next answered
# ENODATA), its push within 30 ms of an ack of the same partition's
# previous message through the other mount, which left the cursor asleep.
# The tick now wakes such a cursor within a second (t-pgmulti checks that
# repair).
test_expect_success 'every confirmed push is delivered by the end' '
	test_is 0 "$(stat_of "$A/queues/fo/stats" depth)" depth &&
	"$PYTHON3" - <<-\EOF
	import glob, sys
	deliv = set()
	for f in glob.glob("deliv.*"):
	    for l in open(f):
	        deliv.add(l.split()[1])
	lost = [n for n in open("confirmed").read().split() if n not in deliv]
	for n in lost[:20]:
	    print("confirmed push never delivered: " + n)
	sys.exit(1 if lost else 0)
	EOF
'

# While the primary was down and the standby not yet promoted, a call
# failed on both hosts: the log says why for each, on one line.
test_expect_success 'what the daemons logged: both hosts reasons on one line, no assertion' '
	sed "s|^|a: |" "$DAEMON_LOG" && sed "s|^|b: |" "$TRASH/b.log" &&
	echo "lines logged: a $(wc -l <"$DAEMON_LOG"), b $(wc -l <"$TRASH/b.log")" &&
	grep "$PGPAIR_P/\.s\.PGSQL.*failed: .*; .*$PGPAIR_S/\.s\.PGSQL.*failed: .*read-only" \
	    "$DAEMON_LOG" "$TRASH/b.log" | head -n 1 | grep . &&
	! grep -e "Assertion" -e "ERROR: .*Sanitizer" -e "runtime error:" \
	    "$DAEMON_LOG" "$TRASH/b.log" "$TRASH/c.log"
'

test_done
