#!/bin/sh
# fs-0079-pg-deadlock: a publish PostgreSQL rolls back as a deadlock's
# victim (run under tests/pg.sh).  Another session (psql) holds the
# cursor of a caught-up group, which a publish's commit wakes, then asks
# for the partition the publish holds: the server fails the daemon's
# transaction after its deadlock_timeout (1 s; psql's own is set past
# the test's end, so the daemon is the one to find the ring).  The
# daemon runs the publish again at once, ahead of what came after it:
# a producer's pushes into the partition land in the order its close()s
# returned, a rename that publishes returns 0, and the log says why.
# What comes after it in its batch waits for it, unrun (below).
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
command -v psql >/dev/null || skip_all "no psql"
command -v curl >/dev/null 2>&1 && test_set_prereq CURL
SCHEMA=t0079_$$
mount_queenfs_on "$(pg_uri "$SCHEMA")"
Q=$MNT/queues/dl

psql_ () {
	psql -X -q -A -t -v ON_ERROR_STOP=1 "$QUEEN_TEST_PG" \
	    -c "SET search_path = $SCHEMA" -c "$1"
}

# the daemon's sessions that wait for a row another one holds
lock_waits () {
	psql -X -q -A -t "$QUEEN_TEST_PG" -c "SELECT count(*) FROM
	    pg_stat_activity WHERE wait_event_type = 'Lock' AND
	    application_name NOT LIKE 'psql%'"
}

# ring.sql: the group's cursor, then (once the daemon waits for it and
# ./go exists) the partition
cat >"$TRASH/ring.sql" <<EOF
BEGIN;
SET search_path = $SCHEMA;
SET deadlock_timeout = '60s';
SELECT 1 FROM cursors c JOIN groups g ON g.id = c.group_id
    JOIN queues q ON q.id = g.queue_id
    WHERE q.name = 'dl' AND g.name = 'g' AND c.next_at < 0 FOR UPDATE OF c;
\! touch held
\! i=0; while ! test -f go && test \$i -lt 200; do sleep 0.05; i=\$((i+1)); done
SELECT 1 FROM partitions p JOIN queues q ON q.id = p.queue_id
    WHERE q.name = 'dl' FOR UPDATE OF p;
SELECT pg_sleep(0.3);
COMMIT;
EOF

# ring STEP: run ring.sql in the background; STEP (a command) runs once
# psql holds the cursor, then the ring closes as soon as the daemon waits
ring () {
	rm -f held go &&
	{ psql -X -q -v ON_ERROR_STOP=1 -f ring.sql "$QUEEN_TEST_PG" \
		>ring.out 2>&1 & } && rp=$! && track_pid $rp &&
	wait_until 10 "test -f held" &&
	eval "$1" &&
	wait_until 10 "test \"\$(lock_waits)\" -ge 1" &&
	touch go &&
	wait "$rp" || { cat ring.out; return 1; }
}

# hold QUEUE [SELECT]: psql holds QUEUE's partition rows (or the rows
# of SELECT ... FOR UPDATE) in the background ($hp) until unhold QUEUE,
# or 30 s; returns once it does
hold () {
	cat >"hold-$1.sql" <<EOF
BEGIN;
SET search_path = $SCHEMA;
${2:-SELECT 1 FROM partitions p JOIN queues q ON q.id = p.queue_id
    WHERE q.name = '$1' FOR UPDATE OF p};
\! touch held-$1
\! i=0; while ! test -f go-$1 && test \$i -lt 600; do sleep 0.05; i=\$((i+1)); done
COMMIT;
EOF
	rm -f "held-$1" "go-$1" &&
	{ psql -X -q -v ON_ERROR_STOP=1 -f "hold-$1.sql" "$QUEEN_TEST_PG" \
		>"hold-$1.out" 2>&1 & } && hp=$! && track_pid $hp &&
	wait_until 10 "test -f held-$1"
}

# hold_cursor QUEUE: psql holds QUEUE's cursors (see hold)
hold_cursor () {
	hold "$1" "SELECT 1 FROM cursors c JOIN partitions p ON
	    p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
	    WHERE q.name = '$1' FOR UPDATE OF c"
}

# unhold QUEUE: let hold's transaction commit, and wait for it
unhold () {
	touch "go-$1" && wait "$hp"
}

# kept_log NAME [LOG]: wait until the daemon (b) logs that the publish
# of NAME (queue/file) is kept for the tick
kept_log () {
	wait_until 20 "grep -q \"staged $1: not published yet\" ${2:-b.log}"
}

# keep QUEUE FILE: hold QUEUE's partition and write FILE into it on
# mount b; returns once its publish is kept
keep () {
	hold "$1" && echo "$2" >"$TRASH/b/queues/$1/$2" && kept_log "$1/$2"
}

# hold_new_key KEY: psql inserts cfg/KEY and holds it uncommitted, so
# a put of the new key waits for it (the store does not list it yet)
hold_new_key () {
	hold cfg "INSERT INTO kv VALUES ('cfg', '$1', '\\x00'::bytea, 1, 0, 0)"
}

# free_addr: a loopback address with a free port, for --listen
free_addr () {
	python3 -c "import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(\"127.0.0.1:%d\" % s.getsockname()[1])"
}

# api_push FILE JSON: write JSON to the api/push FILE and print the answer
# read back on the same descriptor
api_push () {
	python3 -c "import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, sys.argv[2].encode())
sys.stdout.write(os.read(fd, 65536).decode())" "$1" "$2"
}

# http_post OUT ADDR PATH JSON: POST JSON to ADDR's PATH; the status in
# OUT.code, the body in OUT.body
http_post () {
	curl -s -o "$1.body" -w "%{http_code}\n" -X POST -d "$4" \
	    "http://$2$3" >"$1.code"
}

# http_push ADDR QUEUE TXID PAYLOAD OUT: POST one item to ADDR's
# /api/v1/push (as http_post OUT)
http_push () {
	http_post "$5" "$1" /api/v1/push \
	    "{\"items\":[{\"queue\":\"$2\",\"transactionId\":\"$3\",\"payload\":\"$4\"}]}"
}

# http_pop ADDR QUEUE: pop one message of QUEUE through ADDR's HTTP; its
# lease id and partition id in $lease and $pid
http_pop () {
	curl -s "http://$1/api/v1/pop/queue/$2?batch=1&wait=false" >pop.json &&
	lease=$(python3 -c "import json, sys; print(json.load(sys.stdin)[\"messages\"][0][\"leaseId\"])" <pop.json) &&
	pid=$(python3 -c "import json, sys; print(json.load(sys.stdin)[\"messages\"][0][\"partitionId\"])" <pop.json) &&
	test -n "$lease" && test -n "$pid"
}

# api_out OUT FILE JSON: api_push FILE JSON, its answer into OUT
api_out () {
	api_push "$2" "$3" >"$1"
}

# fresh_queue DIR: a new queue at DIR, with one message (c0) that made
# its partition's row, published
fresh_queue () {
	mkdir "$1" &&
	echo c0 >"$1/c0" &&
	settled "${MNT##*/}"
}

# claim_race QUEUE HOUT HPATH HJSON AOUT AFILE AJSON: with QUEUE's rows
# held, the file d written into QUEUE through the mount, then HJSON
# posted to mount h's HPATH (as http_post HOUT), then AJSON written to
# the api FILE AFILE (as api_out AOUT), each once the ones before wait
# for the row; then the rows let go, and all three waited for
claim_race () {
	hold "$1" &&
	echo d >"$MNT/queues/$1/d" &&
	wait_until 20 "test \"\$(lock_waits)\" -ge 1" &&
	{ http_post "$2" "$H" "$3" "$4" & } && cr_h_=$! && track_pid $cr_h_ &&
	wait_until 20 "test \"\$(lock_waits)\" -ge 2" &&
	{ api_out "$5" "$6" "$7" & } && cr_a_=$! && track_pid $cr_a_ &&
	wait_until 20 "test \"\$(lock_waits)\" -ge 3" &&
	unhold "$1" &&
	wait "$cr_h_" && wait "$cr_a_"
}

# redo_on_hb HOLD QUEUE CMD...: with HOLD QUEUE (hold, or hold_cursor)
# in place, run CMD in the background, wait until mount hb's log says a
# run of it failed and runs again, then let the row go and wait for CMD
redo_on_hb () {
	rh_hold_=$1 rh_q_=$2
	shift 2
	rh0_=$(grep -c "run again" "$TRASH/hb.log" 2>/dev/null || :) &&
	$rh_hold_ "$rh_q_" &&
	{ "$@" & } && rh_pid_=$! && track_pid $rh_pid_ &&
	wait_until 20 "test \$(grep -c \"run again\" \"$TRASH/hb.log\") -ge $((rh0_ + 2))" &&
	unhold "$rh_q_" &&
	wait "$rh_pid_"
}

# settled [MOUNT]: wait until MOUNT (b) has nothing staged
settled () {
	wait_until 20 "test \"\$(stat_of \"$TRASH/${1:-b}/sys/stats\" staged)\" = 0"
}

# landed_before QUEUE_DIR A B: A's offset in the default partition is
# below B's
landed_before () {
	o1=$(getfattr --only-values -n user.queen.offset "$1/partitions/default/$2") &&
	o2=$(getfattr --only-values -n user.queen.offset "$1/partitions/default/$3") &&
	test "$o1" -lt "$o2"
}

test_expect_success 'setup: a queue whose group g has read to the end' '
	mkdir "$Q" "$Q/groups/g" &&
	printf "lease_time = 300\nwait = 0\n" >"$Q/config" &&
	echo w >"$Q/w0" &&
	sysc read "$Q/groups/g/next" >out &&
	test_is ok "$(sed -n 1p out)" "the read" &&
	mv "$Q/groups/g/$(sed -n 2p out)" "$Q/groups/g/ack/" &&
	sysc read_nonblock "$Q/groups/g/next" >out &&
	test_is "read:EAGAIN" "$(sed -n 1p out)" "a read past the end" &&
	test_is 1 "$(psql_ "SELECT count(*) FROM cursors WHERE next_at < 0")" \
	    "caught-up cursors"
'

test_expect_success 'a rename that publishes and loses a deadlock returns 0' '
	echo r >"$Q/.r1" &&
	ring "{ sysc rename \"\$Q/.r1\" \"\$Q/r1\" >mv.out & }" &&
	wait_until 10 "test -s mv.out" &&
	test_is ok "$(cat mv.out)" "the rename" &&
	grep -q "run again" "$DAEMON_LOG" &&
	test_is r "$(cat "$Q/partitions/default/r1")" payload &&
	sysc read "$Q/groups/g/next" >out &&
	test_is "r1" "$(basename "$(sed -n 2p out)")" "the message read" &&
	mv "$Q/groups/g/$(sed -n 2p out)" "$Q/groups/g/ack/"
'

test_expect_success 'a publish that loses a deadlock lands before the later ones' '
	r0=$(stat_of "$MNT/sys/stats" publish_redos) &&
	ring "echo o1 >\"\$Q/o1\"; sleep 0.2;
	    for i in 2 3 4 5; do echo o\$i >\"\$Q/o\$i\" || return 1; done" &&
	wait_until 10 "test \"\$(stat_of \"$MNT/sys/stats\" staged)\" = 0" &&
	test_is 7 "$(stat_of "$Q/stats" messages)" messages &&
	for i in 1 2 3 4 5; do
		sysc read "$Q/groups/g/next" >out &&
		test_is ok "$(sed -n 1p out)" "read $i" &&
		n=$(sed -n 2p out) &&
		test_is "o$i" "$(basename "$n")" "message $i" &&
		mv "$Q/groups/g/$n" "$Q/groups/g/ack/" || return 1
	done &&
	grep -q "deadlock detected" "$DAEMON_LOG" &&
	grep -q "rolled back by a deadlock, a lock timeout or a serialization failure: run again" \
	    "$DAEMON_LOG" &&
	test "$(stat_of "$MNT/sys/stats" publish_redos)" -gt "$r0"
'

# A daemon whose statements wait at most 300 ms for a row (lock_timeout
# in its --db options, which the daemon keeps):
# its publish into a partition psql holds fails with EBUSY and runs
# again, and a read of next that the producer made after its close()
# meets it in a batch; the read must not run past it (it would answer
# EAGAIN though the push's close() had returned) but wait, unrun, until
# the publish lands.
test_expect_success 'a read after a push that runs again waits for it' '
	mkdir "$MNT/queues/ro" &&
	printf "lease_time = 300\nwait = 0\n" >"$MNT/queues/ro/config" &&
	echo w >"$MNT/queues/ro/w0" &&
	sysc read "$MNT/queues/ro/next" >out &&
	mv "$MNT/queues/ro/$(sed -n 2p out)" "$MNT/queues/ro/ack/" &&
	mount_extra b --db "$(pg_uri "$SCHEMA")%20-clock_timeout%3D300" &&
	B=$TRASH/b/queues/ro &&
	hold ro &&
	echo r1 >"$B/r1" &&
	{ sysc read_nonblock "$B/next" >rd.out & } && rdp=$! &&
	track_pid $rdp &&
	wait_until 20 "test \$(grep -c \"run again\" \"$TRASH/b.log\") -ge 2" &&
	unhold ro && wait "$rdp" &&
	test_is ok "$(sed -n 1p rd.out)" "the read" &&
	test_is r1 "$(basename "$(sed -n 2p rd.out)")" "the message read"
'

# The same daemon killed (kill -9) while its publish waits to run again:
# the close() had returned 0, so the bytes are in its journal, and the
# restart publishes them once, in the order of the closes, behind what
# the partition held.
test_expect_success 'a publish waiting to run again survives a kill -9 of its daemon' '
	K=$MNT/queues/kq &&
	mkdir "$K" &&
	printf "lease_time = 300\nwait = 0\n" >"$K/config" &&
	echo k0 >"$K/k0" &&
	hold kq &&
	r0=$(grep -c "run again" b.log) &&
	echo k1 >"$TRASH/b/queues/kq/k1" &&
	echo k2 >"$TRASH/b/queues/kq/k2" &&
	wait_until 20 "test \$(grep -c \"run again\" b.log) -gt $r0" &&
	kill9_extra b &&
	unhold kq &&
	test_is 1 "$(stat_of "$K/stats" messages)" "messages before the restart" &&
	remount_extra b &&
	settled &&
	test_is 3 "$(stat_of "$K/stats" messages)" "messages after it" &&
	for i in 0 1 2; do
		sysc read "$K/next" >out &&
		test_is ok "$(sed -n 1p out)" "read $i" &&
		n=$(sed -n 2p out) &&
		test_is "k$i" "$(basename "$n")" "message $i" &&
		test_is "k$i" "$(cat "$K/$n")" "payload $i" &&
		mv "$K/$n" "$K/ack/" || return 1
	done &&
	sysc read_nonblock "$K/next" >out &&
	test_is "read:EAGAIN" "$(sed -n 1p out)" "nothing more"
'

# An ack by rename whose read of its cursor times out (psql holds the
# row for a while; mount ka's statements wait at most 1 s for a row)
# runs again, and the rename returns 0 once the row is free (it failed
# with EIO before); the log says the failed run is to run again.  The
# next read gets a2, which it finds only once a1's lease has ended
# (wait = 0: it would answer EAGAIN).
test_expect_success 'an ack by rename whose cursor is held runs again and returns 0' '
	mount_extra ka --db "$(pg_uri "$SCHEMA")%20-clock_timeout%3D1000" &&
	A=$TRASH/ka/queues/ka &&
	mkdir "$MNT/queues/ka" &&
	printf "lease_time = 300\nwait = 0\n" >"$MNT/queues/ka/config" &&
	echo a1 >"$MNT/queues/ka/a1" &&
	echo a2 >"$MNT/queues/ka/a2" &&
	sysc read "$A/next" >out &&
	test_is ok "$(sed -n 1p out)" "the read" &&
	n=$(sed -n 2p out) &&
	test_is a1 "$(basename "$n")" "the message read" &&
	hold_cursor ka &&
	{ sysc rename "$A/$n" "$A/ack/a1" >mv.out & } && mvp=$! &&
	track_pid $mvp &&
	wait_until 20 "grep -q \"rename queues/ka/leased/.*lock timeout\" ka.log" &&
	unhold ka && wait "$mvp" &&
	test_is ok "$(cat mv.out)" "the rename" &&
	grep -q "rename queues/ka/leased/.*(to run again)" ka.log &&
	grep -q "writes rolled back by a deadlock, a lock timeout" ka.log &&
	! grep -q "(EIO)" ka.log &&
	sysc read_nonblock "$A/next" >out &&
	test_is ok "$(sed -n 1p out)" "the next read" &&
	test_is a2 "$(basename "$(sed -n 2p out)")" "the next message"
'

# The same daemon (its statements wait at most 300 ms for a row) under a
# stream of pushes into a partition psql holds, one every 0.1 s, each
# publish failing and run again: a read of another queue's next that
# meets them in a batch waits, unrun, behind them at most 4 times, then
# runs on.  Unbounded, it waited until the stream's last publish had
# run out of retries, after the stream.  Every push lands once the row
# is free.
test_expect_success 'a read behind a stream of publishes that keep failing is not starved' '
	for q in st ot; do
		mkdir "$MNT/queues/$q" &&
		printf "lease_time = 300\nwait = 0\n" >"$MNT/queues/$q/config" &&
		echo ${q}0 >"$MNT/queues/$q/${q}0" || return 1
	done &&
	hold st &&
	: >st.pushed &&
	{ i=1; while test $i -le 100 && ! test -f stop4; do
		echo st$i >"$TRASH/b/queues/st/st$i" || exit 1
		echo st$i >>st.pushed; i=$((i + 1)); sleep 0.1
	done & } && sp=$! && track_pid $sp &&
	wait_until 10 "test \$(wc -l <st.pushed) -ge 3" &&
	sysc read_nonblock "$TRASH/b/queues/ot/next" >rd.out &&
	n=$(wc -l <st.pushed) &&
	touch stop4 &&
	wait "$sp" &&
	unhold st &&
	echo "the read returned after $n of the stream'\''s pushes" &&
	test_is ok "$(sed -n 1p rd.out)" "the read" &&
	test_is ot0 "$(basename "$(sed -n 2p rd.out)")" "the message read" &&
	test "$n" -lt 100 &&
	m=$(wc -l <st.pushed) &&
	wait_until 30 "test \"\$(stat_of \"$TRASH/b/sys/stats\" staged)\" = 0" &&
	test_is $((m + 1)) "$(stat_of "$MNT/queues/st/stats" messages)" \
	    "every push landed, once"
'

# A publish that ran out of retries is kept for the tick, which tries it
# again once a second.  A later push into that partition must not land
# ahead of it when the row comes free between two ticks: it is kept
# behind it without being tried (on the code before, it landed first).
test_expect_success 'a push behind a kept publish of its partition lands after it' '
	G=$TRASH/b/queues/kg &&
	mkdir "$MNT/queues/kg" &&
	printf "lease_time = 300\nwait = 0\n" >"$MNT/queues/kg/config" &&
	echo g0 >"$MNT/queues/kg/g0" &&
	keep kg g1 &&
	unhold kg &&
	echo g2 >"$G/g2" &&
	echo g3 >"$G/g3" &&
	settled &&
	test_is 4 "$(stat_of "$G/stats" messages)" messages &&
	for i in 0 1 2 3; do
		sysc read "$G/next" >out &&
		test_is ok "$(sed -n 1p out)" "read $i" &&
		n=$(sed -n 2p out) &&
		test_is "g$i" "$(basename "$n")" "message $i" &&
		mv "$G/$n" "$G/ack/" || return 1
	done
'

# An empty file written while a publish is kept is staged too (an
# empty record), so that it waits behind the kept one and lands after
# it; on the code before it was tried at once and landed first.
test_expect_success 'an empty file into a partition with a kept publish is not lost' '
	G=$TRASH/b/queues/kg &&
	before=$(stat_of "$G/stats" messages) &&
	keep kg h1 &&
	unhold kg &&
	: >"$G/h2" &&
	settled &&
	test_is $((before + 2)) "$(stat_of "$G/stats" messages)" messages &&
	test_is 0 "$(wc -c <"$G/partitions/default/h2")" "h2 is empty" &&
	test_is h1 "$(cat "$G/partitions/default/h1")" "h1" &&
	landed_before "$G" h1 h2
'

# The same gate with a file written the way scripts write it: an exec'd
# descriptor that a subshell and a child process write through too.  It
# is published once, at its last close, behind the kept publish.
test_expect_success 'a file written through an exec descriptor and a child waits behind a kept publish' '
	G=$TRASH/b/queues/kg &&
	before=$(stat_of "$G/stats" messages) &&
	keep kg j1 &&
	unhold kg &&
	exec 7>"$G/j2" &&
	echo a >&7 &&
	(echo b >&7) &&
	sh -c "echo c >&7" &&
	exec 7>&- &&
	settled &&
	test_is $((before + 2)) "$(stat_of "$G/stats" messages)" messages &&
	test_is "a b c" "$(tr "\n" " " <"$G/partitions/default/j2" | sed "s/ $//")" \
	    "j2, written by three processes" &&
	landed_before "$G" j1 j2
'

# Kept publishes are in the daemon's journal, not only in its memory:
# killed (kill -9) while one is kept and another waits behind it, the
# daemon publishes both at its restart, once each and in the order of
# their closes.  While kept, each reads back what was written (m2, past
# the 64 KiB an attempt keeps in memory, from the journal), `ls` lists
# it, and `rm` and truncate(2) are refused (EPERM): its close() said it
# will be published as it was.
test_expect_success 'kept publishes survive a kill -9 of their daemon, in order' '
	G=$TRASH/b/queues/kg &&
	before=$(stat_of "$G/stats" messages) &&
	keep kg m1 &&
	seq 1 30000 >m2.want &&
	cp m2.want "$G/m2" &&
	test_is m1 "$(cat "$G/m1")" "m1 while kept" &&
	cmp m2.want "$G/m2" &&
	test_is "$(wc -c <m2.want)" "$(stat -c %s "$G/m2")" "the size of m2" &&
	ls "$G" >ls.out &&
	grep -qx m1 ls.out && grep -qx m2 ls.out &&
	echo unlink:EPERM >expect &&
	sysc unlink "$G/m1" >actual &&
	test_cmp expect actual &&
	touch "$G/m1" &&
	test_is m1 "$(cat "$G/m1")" "m1 after a touch" &&
	test_is 1 "$(ls "$G" | grep -cx m1)" "m1 listed once" &&
	echo truncate:EPERM >expect &&
	sysc truncate "$G/m2" 0 >actual &&
	test_cmp expect actual &&
	grep -q "truncate kg/m2: its publish is kept" b.log &&
	cmp m2.want "$G/m2" &&
	test_is 2 "$(stat_of "$TRASH/b/sys/stats" staged)" "staged before the kill" &&
	kill9_extra b &&
	unhold kg &&
	test_is $before "$(stat_of "$MNT/queues/kg/stats" messages)" \
	    "messages while the daemon is dead" &&
	remount_extra b &&
	settled &&
	test_is $((before + 2)) "$(stat_of "$G/stats" messages)" messages &&
	test_is m1 "$(cat "$G/partitions/default/m1")" "m1" &&
	cmp m2.want "$G/partitions/default/m2" &&
	landed_before "$G" m1 m2
'

# A reader that opened a kept file before the tick published it reads
# on to the end after: the tick hands the bytes to it (m3 is past 64
# KiB: into a spill file; m4 into memory) before the journal lets them go.
test_expect_success 'a kept file open for reading across its publish reads whole' '
	G=$TRASH/b/queues/kg &&
	before=$(stat_of "$G/stats" messages) &&
	hold kg &&
	seq 1 30000 >m3.want && echo m4 >m4.want &&
	cp m3.want "$G/m3" &&
	kept_log kg/m3 &&
	cp m4.want "$G/m4" &&
	exec 8<"$G/m3" 9<"$G/m4" &&
	dd bs=5 count=1 <&8 >m3.got 2>/dev/null &&
	dd bs=1 count=1 <&9 >m4.got 2>/dev/null &&
	unhold kg &&
	settled &&
	test_is $((before + 2)) "$(stat_of "$G/stats" messages)" messages &&
	cat <&8 >>m3.got && cat <&9 >>m4.got &&
	exec 8<&- 9<&- &&
	cmp m3.want m3.got &&
	cmp m4.want m4.got &&
	cmp m3.want "$G/partitions/default/m3"
'

# A file emptied after an earlier close staged its bytes: the empty
# file is what its last close() confirmed, and what lands when its
# publish is kept (the earlier record is stale).  On the code before,
# the kept publish landed "abc".
test_expect_success 'a file emptied after a close staged it lands empty when kept' '
	G=$TRASH/b/queues/kg &&
	before=$(stat_of "$G/stats" messages) &&
	hold kg &&
	python3 - "$G/e1" <<-\PYEOF &&
	import os, sys
	fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
	os.write(fd, b"abc")
	os.close(os.dup(fd))   # a close: "abc" is staged
	os.ftruncate(fd, 0)
	os.close(fd)           # the last: the file is empty
	PYEOF
	kept_log kg/e1 &&
	test_is 0 "$(stat -c %s "$G/e1")" "e1 while kept" &&
	unhold kg &&
	settled &&
	test_is $((before + 1)) "$(stat_of "$G/stats" messages)" messages &&
	test_is 0 "$(wc -c <"$G/partitions/default/e1")" "e1 as it landed"
'

# A dot-file renamed onto the name of a kept publish would land first
# and make the kept one its duplicate, though that close() returned 0
# first: the rename is refused (EPERM) and the dot-file stays; the kept
# bytes land.  Through the queue's own directory and through
# partitions/default, which name the same files.  An open of the name
# while it is kept is listed once with it, and its empty file, closed
# after, is a duplicate: the kept one was first.
test_expect_success 'a rename onto a kept name is EPERM, and the kept bytes land' '
	G=$TRASH/b/queues/kg &&
	before=$(stat_of "$G/stats" messages) &&
	keep kg r1 &&
	echo r1b >"$G/.r1" &&
	echo rename:EPERM >expect &&
	sysc rename "$G/.r1" "$G/r1" >actual &&
	test_cmp expect actual &&
	sysc rename "$G/.r1" "$G/partitions/default/r1" >actual &&
	test_is "rename:EINVAL" "$(cat actual)" "a rename across directories" &&
	echo r1c >"$G/partitions/default/.r1" &&
	echo rename:EPERM >expect &&
	sysc rename "$G/partitions/default/.r1" "$G/partitions/default/r1" >actual &&
	test_cmp expect actual &&
	grep -q "rename .*/kg/.r1 -> r1: the publish of r1 is kept" b.log &&
	test_is r1 "$(cat "$G/r1")" "r1 while kept" &&
	test_is r1b "$(cat "$G/.r1")" "the dot-file, still there" &&
	exec 6>"$G/r1" &&
	test_is 1 "$(ls "$G" | grep -cx r1)" "r1 listed once, open again" &&
	exec 6>&- &&
	unhold kg &&
	settled &&
	test_is $((before + 1)) "$(stat_of "$G/stats" messages)" messages &&
	test_is r1 "$(cat "$G/r1")" "r1 as it landed" &&
	test_is r1 "$(cat "$G/partitions/default/r1")" "r1 in its partition" &&
	rm "$G/.r1" "$G/partitions/default/.r1"
'

# partitions/<p>/ lists the partition's log, then the files written
# into it whose publish is kept: each once, while kept and after it
# landed, also when ls reads the directory in several parts and when
# Python lists it again through one descriptor (rewinddir).
test_expect_success 'a kept file written into partitions/<p>/ is listed there, once' '
	G=$TRASH/b/queues/kg &&
	P=$G/partitions/default &&
	before=$(stat_of "$G/stats" messages) &&
	hold kg &&
	echo p1 >"$P/p1" &&
	kept_log kg/p1 &&
	echo p2 >"$P/p2" &&
	ls -A "$P" >names &&
	test_is $((before + 2)) "$(wc -l <names)" "names while kept" &&
	test_is 1 "$(grep -cx p1 names)" "p1 listed" &&
	test_is 1 "$(grep -cx p2 names)" "p2 listed" &&
	test_is p2 "$(cat "$P/p2")" "p2 while kept" &&
	python3 - "$P" >py.out <<-\PYEOF &&
	import os, sys
	fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)
	with os.scandir(fd) as it:
	    a = sorted(e.name for e in it)
	with os.scandir(fd) as it:   # the same descriptor, from its start
	    b = sorted(e.name for e in it)
	print(len(a), len(set(a)), a == b, "p1" in a)
	PYEOF
	test_is "$((before + 2)) $((before + 2)) True True" "$(cat py.out)" "scandir twice" &&
	unhold kg &&
	settled &&
	ls -A "$P" >names &&
	test_is $((before + 2)) "$(wc -l <names)" "names after" &&
	test_is 1 "$(grep -cx p2 names)" "p2 listed once after" &&
	landed_before "$G" p1 p2
'

# Readers that walk a tree (grep -r, cp -r, tar) see a kept file as it
# will land, and take nothing: no pop, no publish out of its turn.
test_expect_success 'grep -r, cp -r and tar over a queue with kept files' '
	G=$TRASH/b/queues/kg &&
	before=$(stat_of "$G/stats" messages) &&
	keep kg w1 &&
	seq 1 30000 | sed "s/^/w2 /" >w2.want &&
	cp w2.want "$G/w2" &&
	test_is 2 "$(stat_of "$TRASH/b/sys/stats" staged)" "staged" &&
	grep -rl "^w1$" "$G" >grep.out &&
	test_is "$G/w1" "$(cat grep.out)" "grep -r finds w1" &&
	test_is 30000 "$(grep -rh "^w2 " "$G" | sort -u | wc -l)" "grep -r reads w2 whole" &&
	rm -rf copy && cp -r "$G" copy &&
	test_is w1 "$(cat copy/w1)" "cp -r copied w1" &&
	cmp w2.want copy/w2 &&
	tar cf kg.tar -C "$G" w1 w2 &&
	mkdir untar && tar xf kg.tar -C untar &&
	cmp w2.want untar/w2 &&
	test_is 2 "$(stat_of "$TRASH/b/sys/stats" staged)" "still staged" &&
	test_is $before "$(stat_of "$G/stats" messages)" "messages while kept" &&
	unhold kg &&
	settled &&
	test_is $((before + 2)) "$(stat_of "$G/stats" messages)" messages &&
	cmp w2.want "$G/partitions/default/w2" &&
	landed_before "$G" w1 w2
'

# A descriptor opened (exec 3>) before a publish of its partition was
# kept, written before and after, and closed after: the file lands
# behind the kept one, in the order of the close()s, with every write.
test_expect_success 'an exec descriptor held across a keep lands whole, behind it' '
	G=$TRASH/b/queues/kg &&
	before=$(stat_of "$G/stats" messages) &&
	exec 3>"$G/x3" &&
	echo a >&3 &&
	keep kg x1 &&
	(echo b >&3) &&
	test_is "a b" "$(tr "\n" " " <"$G/x3" | sed "s/ $//")" "x3 while open" &&
	unhold kg &&
	echo c >&3 &&
	exec 3>&- &&
	settled &&
	test_is $((before + 2)) "$(stat_of "$G/stats" messages)" messages &&
	test_is "a b c" "$(tr "\n" " " <"$G/partitions/default/x3" | sed "s/ $//")" "x3" &&
	landed_before "$G" x1 x3
'

# A put kept for the tick: the key reads the value whose close()
# returned 0, not the one the store still holds, and what would change
# or remove it before it lands is refused (EPERM): rm would be undone
# by the put, a ttl would not reach it.  It lands once the row is free.
test_expect_success 'a kept KV put reads back, and rm and a ttl wait for it' '
	K=$TRASH/b/kv/cfg &&
	echo v1 >"$MNT/kv/cfg/k" &&
	hold cfg "SELECT 1 FROM kv WHERE ns = '\''cfg'\'' AND key = '\''k'\'' FOR UPDATE" &&
	echo v2 >"$K/k" &&
	kept_log cfg/k &&
	test_is v2 "$(cat "$K/k")" "the key while its put is kept" &&
	touch "$K/k" &&
	test_is 1 "$(ls "$K" | grep -cx k)" "k listed once after a touch" &&
	test_is v2 "$(cat "$K/k")" "the key after a touch" &&
	echo unlink:EPERM >expect &&
	sysc unlink "$K/k" >actual &&
	test_cmp expect actual &&
	grep -q "unlink kv/cfg/k: its publish is kept" b.log &&
	echo setxattr:EPERM >expect &&
	sysc setxattr "$K/k" user.queen.ttl 60 >actual &&
	test_cmp expect actual &&
	unhold cfg &&
	settled &&
	test_is v2 "$(cat "$MNT/kv/cfg/k")" "the key after the put landed" &&
	rm "$K/k" &&
	test_path_is_missing "$MNT/kv/cfg/k"
'

# A new key whose put is kept (psql's own insert of it waits
# uncommitted): the store does not list it yet, the mount does, and
# goes on listing it, once, while the key is open again without being
# written (touch, a descriptor open to append).  It lands once the row
# is free, over psql's.
test_expect_success 'a new key kept: listed once, also while open unwritten' '
	K=$TRASH/b/kv/cfg &&
	hold_new_key nk &&
	echo nv >"$K/nk" &&
	kept_log cfg/nk &&
	test_is 1 "$(ls "$K" | grep -cx nk)" "nk listed while kept" &&
	touch "$K/nk" &&
	test_is 1 "$(ls "$K" | grep -cx nk)" "nk listed after a touch" &&
	exec 6>>"$K/nk" &&
	test_is 1 "$(ls "$K" | grep -cx nk)" "nk listed, open to append" &&
	exec 6>&- &&
	test_is nv "$(cat "$K/nk")" "nk while kept" &&
	unhold cfg &&
	settled &&
	test_is nv "$(cat "$MNT/kv/cfg/nk")" "nk after" &&
	rm "$K/nk"
'

# The same with the key opened again (to append) right after the
# close, while its put may still be tried: whether the open takes the
# name from the put or waits for it, the put, once kept, is listed
# once, and reads back.
test_expect_success 'a new key opened again while its put is tried: listed once when kept' '
	K=$TRASH/b/kv/cfg &&
	hold_new_key nk2 &&
	echo nv2 >"$K/nk2" &&
	exec 6>>"$K/nk2" &&
	kept_log cfg/nk2 &&
	test_is 1 "$(ls "$K" | grep -cx nk2)" "nk2 listed while kept" &&
	exec 6>&- &&
	test_is nv2 "$(cat "$K/nk2")" "nk2 while kept" &&
	unhold cfg &&
	settled &&
	test_is nv2 "$(cat "$MNT/kv/cfg/nk2")" "nk2 after" &&
	rm "$K/nk2"
'

# The key opened again while its put was still being tried: the newer
# open takes the name, and the put, kept, waits behind it out of the
# table.  rm is EPERM and changes nothing: on the code before, it
# answered EPERM only after it had discarded the newer open, whose
# write then went nowhere (the key ended v2).
test_expect_success 'rm of a key whose kept put a newer open hides is EPERM' '
	K=$TRASH/b/kv/cfg &&
	echo v1 >"$MNT/kv/cfg/k2" &&
	hold cfg "SELECT 1 FROM kv WHERE ns = '\''cfg'\'' AND key = '\''k2'\'' FOR UPDATE" &&
	echo v2 >"$K/k2" &&
	exec 6>"$K/k2" &&
	kept_log cfg/k2 &&
	echo unlink:EPERM >expect &&
	sysc unlink "$K/k2" >actual &&
	test_cmp expect actual &&
	grep -q "unlink kv/cfg/k2: its publish is kept" b.log &&
	echo v3 >&6 &&
	exec 6>&- &&
	unhold cfg &&
	settled &&
	test_is v3 "$(cat "$MNT/kv/cfg/k2")" "the key: the last close" &&
	rm "$K/k2" &&
	test_path_is_missing "$MNT/kv/cfg/k2"
'

# rm of a key while its put is still being tried (not kept yet): the
# rm waits behind the put, as any request after a close does, and once
# the put is kept it is refused like any rm of a kept put; the put lands.
test_expect_success 'rm of a key whose put is being retried waits, then is EPERM' '
	K=$TRASH/b/kv/cfg &&
	echo v1 >"$MNT/kv/cfg/k3" &&
	hold cfg "SELECT 1 FROM kv WHERE ns = '\''cfg'\'' AND key = '\''k3'\'' FOR UPDATE" &&
	echo v2 >"$K/k3" &&
	echo unlink:EPERM >expect &&
	sysc unlink "$K/k3" >actual &&
	test_cmp expect actual &&
	grep -q "unlink kv/cfg/k3: its publish is kept" b.log &&
	test_is 1 "$(stat_of "$TRASH/b/sys/stats" staged)" "staged: the put" &&
	test_is v2 "$(cat "$K/k3")" "the key while kept" &&
	unhold cfg &&
	settled &&
	test_is v2 "$(cat "$MNT/kv/cfg/k3")" "the key after" &&
	rm "$K/k3"
'

# A timer written again while its row is held elsewhere: the write is
# kept, reads back, and rm and touch (which would cancel or move the
# timer the kept write then puts back) are EPERM until it lands.  The
# write carries no time, so it is due timer_delay after it: an hour,
# so that it has not fired when the test reads it back.
test_expect_success 'a kept timer write reads back, and rm and touch wait for it' '
	T=$TRASH/b/queues/kg/timers &&
	printf "lease_time = 300\nwait = 0\ntimer_delay = 3600\n" \
	    >"$MNT/queues/kg/config" &&
	echo old >"$MNT/queues/kg/timers/t1" &&
	touch -d "+1 hour" "$MNT/queues/kg/timers/t1" &&
	hold t1 "SELECT 1 FROM timers WHERE key = '\''t1'\'' FOR UPDATE" &&
	echo new >"$T/t1" &&
	kept_log kg/t1 &&
	test_is new "$(cat "$T/t1")" "the timer while its write is kept" &&
	echo unlink:EPERM >expect &&
	sysc unlink "$T/t1" >actual &&
	test_cmp expect actual &&
	test_must_fail touch -d "+2 hours" "$T/t1" 2>err &&
	grep -q "Operation not permitted" err &&
	grep -q "touch timers/t1 of kg: kept for the tick" b.log &&
	test_is new "$(cat "$T/t1")" "the timer after the refused touch" &&
	echo newer >"$T/.t1" &&
	echo rename:EPERM >expect &&
	sysc rename "$T/.t1" "$T/t1" >actual &&
	test_cmp expect actual &&
	test_is newer "$(cat "$T/.t1")" "the staging file after the refused rename" &&
	rm "$T/.t1" &&
	ls "$T" >ls.out && test_is t1 "$(cat ls.out)" "the timers listed" &&
	unhold t1 &&
	settled &&
	test_is new "$(cat "$MNT/queues/kg/timers/t1")" "the timer after" &&
	rm "$T/t1" &&
	test_path_is_missing "$MNT/queues/kg/timers/t1"
'

# Two mounts push into one partition while psql holds its row: each
# publish reads the row unlocked and waits only in the round trip of
# its COMMIT, where its claim asks for the row.  Once psql lets go, one
# claim wins; the other finds the row changed, its batch fails as a
# serialization failure and runs again, and both files land once.
test_expect_success 'two mounts claim one partition: the loser runs again and lands' '
	C=$MNT/queues/cl &&
	fresh_queue "$C" &&
	mount_extra c --db "$(pg_uri "$SCHEMA")" &&
	l0=$(stat_of "$MNT/sys/stats" pg_push_claims_lost) &&
	l1=$(stat_of "$TRASH/c/sys/stats" pg_push_claims_lost) &&
	c0=$(stat_of "$MNT/sys/stats" pg_push_claims) &&
	hold cl &&
	echo a >"$C/a" &&
	echo c >"$TRASH/c/queues/cl/c" &&
	wait_until 20 "test \"\$(lock_waits)\" -ge 2" &&
	unhold cl &&
	settled "${MNT##*/}" && settled c &&
	test_is "a c c0" "$(ls "$C/partitions/default" | sort | tr "\n" " " |
	    sed "s/ $//")" "the partition" &&
	test_is 3 "$(stat_of "$C/stats" messages)" "messages" &&
	test "$(stat_of "$MNT/sys/stats" pg_push_claims)" -gt "$c0" &&
	n=$(( $(stat_of "$MNT/sys/stats" pg_push_claims_lost) - l0 +
	    $(stat_of "$TRASH/c/sys/stats" pg_push_claims_lost) - l1 )) &&
	test_is 1 "$n" "claims lost" &&
	cat "$DAEMON_LOG" "$TRASH/c.log" >both.log &&
	grep -q "changed since this push read it" both.log &&
	! grep -q "staged cl/" both.log &&
	o1=$(getfattr --only-values -n user.queen.offset "$C/partitions/default/a") &&
	o2=$(getfattr --only-values -n user.queen.offset "$C/partitions/default/c") &&
	test_is "2 3" "$(printf "%s\n%s\n" "$o1" "$o2" | sort -n | tr "\n" " " |
	    sed "s/ $//")" "the offsets"
'

# The loser of a claim is a file written the way scripts write: an exec
# descriptor, a subshell and a child sharing it.  Mount c's claim waits
# for the row first, so it wins; the file's close, which publishes, runs
# again behind it (it is not kept for the tick) and lands whole, once,
# after c.
test_expect_success 'a file written by an exec descriptor and children loses its claim and lands whole' '
	E=$MNT/queues/ce &&
	mkdir "$E" &&
	echo e0 >"$E/e0" &&
	settled "${MNT##*/}" &&
	l0=$(stat_of "$MNT/sys/stats" pg_push_claims_lost) &&
	l1=$(stat_of "$TRASH/c/sys/stats" pg_push_claims_lost) &&
	hold ce &&
	echo c >"$TRASH/c/queues/ce/c" &&
	wait_until 20 "test \"\$(lock_waits)\" -ge 1" &&
	sh -c '"'"'exec 7>"$1" && echo x1 >&7 && (echo x2 >&7) &&
	    sh -c "echo x3 >&7" && exec 7>&-'"'"' sh "$E/x" &&
	wait_until 20 "test \"\$(lock_waits)\" -ge 2" &&
	unhold ce &&
	settled "${MNT##*/}" && settled c &&
	test_is 1 $(( $(stat_of "$MNT/sys/stats" pg_push_claims_lost) - l0 )) \
	    "claims the writer'\''s mount lost" &&
	test_is 0 $(( $(stat_of "$TRASH/c/sys/stats" pg_push_claims_lost) - l1 )) \
	    "claims mount c lost" &&
	test_is 3 "$(stat_of "$E/stats" messages)" "messages" &&
	test_is "x1 x2 x3" "$(tr "\n" " " <"$E/partitions/default/x" | sed "s/ $//")" \
	    "x, written by three processes" &&
	test_is 1 "$(ls "$E/partitions/default" | grep -cx x)" "x listed once" &&
	! grep -q "staged ce/x " "$DAEMON_LOG" &&
	landed_before "$E" c x
'

# the daemon's sessions that wait for a row inside a claim
claim_waits () {
	psql -X -q -A -t "$QUEEN_TEST_PG" -c "SELECT count(*) FROM
	    pg_stat_activity WHERE wait_event_type = 'Lock' AND
	    query LIKE '%queen_part_claim%'"
}

# A daemon killed (kill -9) while its claim waits for the row: its
# session goes on with the claim, the writes and the COMMIT it had
# already sent once psql lets the row go, and the daemon, started
# again, publishes the file from its journal: the session has committed
# by then, so the journal's publish is the file's duplicate (named in
# the log), and the file is in the queue once.
test_expect_success 'a daemon killed while its claim waits: the file lands once' '
	K=$MNT/queues/ck &&
	mkdir "$K" &&
	echo k0 >"$K/k0" &&
	settled "${MNT##*/}" &&
	hold ck &&
	echo k1 >"$TRASH/c/queues/ck/k1" &&
	wait_until 20 "test \"\$(claim_waits)\" -ge 1" &&
	kill9_extra c &&
	unhold ck &&
	remount_extra c &&
	settled c &&
	wait_until 20 "test \"\$(psql_ \"SELECT count(*) FROM pg_stat_activity
	    WHERE query LIKE '"'"'%queen_part_claim%'"'"' AND
	    state = '"'"'active'"'"' AND pid <> pg_backend_pid()\")\" = 0" &&
	test_is 2 "$(stat_of "$K/stats" messages)" "messages" &&
	test_is "k0 k1" "$(ls "$K/partitions/default" | tr "\n" " " | sed "s/ $//")" \
	    "the partition" &&
	test_is k1 "$(cat "$K/partitions/default/k1")" "k1" &&
	grep -q "staged ck/k1 was a duplicate" "$TRASH/c.log"
'

# The same with an HTTP push and a write to api/push of a third mount,
# into another queue (mount c reads cl locked for a second after the
# claim it lost there):
# the file's claim waits for the row first, so it wins (the row lock's
# waiters are served in turn), and the other two claims are lost; each
# daemon runs its request again, and each client gets one answer.
test_expect_success CURL 'an HTTP push and an api/push whose claims are lost run again and answer once' '
	H=$(free_addr) &&
	C=$MNT/queues/cl2 &&
	fresh_queue "$C" &&
	mount_extra h --db "$(pg_uri "$SCHEMA")" --listen "$H" &&
	l0=$(stat_of "$MNT/sys/stats" pg_push_claims_lost) &&
	l1=$(stat_of "$TRASH/h/sys/stats" pg_push_claims_lost) &&
	l2=$(stat_of "$TRASH/c/sys/stats" pg_push_claims_lost) &&
	claim_race cl2 hp /api/v1/push \
	    "{\"items\":[{\"queue\":\"cl2\",\"transactionId\":\"hp\",\"payload\":\"h\"}]}" \
	    ap.out "$TRASH/c/api/push" \
	    "{\"items\":[{\"queue\":\"cl2\",\"transactionId\":\"ap\",\"payload\":\"a\"}]}" &&
	test_is 201 "$(cat hp.code)" "the HTTP status" &&
	test_is 1 "$(grep -o "\"queued\"" ap.out | wc -l)" "api/push answers queued" &&
	test_is 1 $(( $(stat_of "$TRASH/c/sys/stats" pg_push_claims_lost) - l2 )) \
	    "claims lost by the api/push mount" &&
	test_is "\"a\"" "$(cat "$C/partitions/default/ap")" "the api/push" &&
	test_is 1 "$(grep -o "\"queued\"" hp.body | wc -l)" "answers queued" &&
	settled "${MNT##*/}" &&
	test_is 0 $(( $(stat_of "$MNT/sys/stats" pg_push_claims_lost) - l0 )) \
	    "claims the mount lost (its claim waited first)" &&
	test_is 1 $(( $(stat_of "$TRASH/h/sys/stats" pg_push_claims_lost) - l1 )) \
	    "claims the HTTP daemon lost" &&
	grep -q "run again" "$TRASH/h.log" &&
	test_is 4 "$(stat_of "$C/stats" messages)" "messages" &&
	test_is "\"h\"" "$(cat "$C/partitions/default/hp")" \
	    "the HTTP push (its JSON payload)" &&
	test_is d "$(cat "$C/partitions/default/d")" "the file"
'

# Transactions too: an HTTP transaction (mount h) that acks a lease and
# pushes, and a write to api/transaction (mount c) that pushes, into a
# queue whose row psql holds while a file's claim waits for it first.
# Both claims are lost; each transaction runs again whole, its ack
# applied once, and each client gets one answer, committed.
test_expect_success CURL 'an HTTP transaction and an api/transaction whose claims are lost run again' '
	test -n "$H" &&
	T=$MNT/queues/ct &&
	mkdir "$T" "$MNT/queues/cts" &&
	echo c0 >"$T/c0" &&
	echo s1 >"$MNT/queues/cts/s1" &&
	settled "${MNT##*/}" &&
	http_pop "$H" cts &&
	l1=$(stat_of "$TRASH/h/sys/stats" pg_push_claims_lost) &&
	l2=$(stat_of "$TRASH/c/sys/stats" pg_push_claims_lost) &&
	claim_race ct htx /api/v1/transaction "{\"operations\":[
		{\"type\":\"ack\",\"transactionId\":\"s1\",\"partitionId\":\"$pid\",\"status\":\"completed\"},
		{\"type\":\"push\",\"items\":[{\"queue\":\"ct\",\"transactionId\":\"ht\",\"payload\":\"h\"}]}],
		\"requiredLeases\":[\"$lease\"]}" \
	    atx.out "$TRASH/c/api/transaction" \
	    "{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"ct\",\"transactionId\":\"at\",\"payload\":\"a\"}]}]}" &&
	test_is 200 "$(cat htx.code)" "the HTTP status" &&
	grep -q "\"success\":true" htx.body &&
	grep -q "\"success\":true" atx.out &&
	test_is 1 $(( $(stat_of "$TRASH/h/sys/stats" pg_push_claims_lost) - l1 )) \
	    "claims the HTTP daemon lost" &&
	test_is 1 $(( $(stat_of "$TRASH/c/sys/stats" pg_push_claims_lost) - l2 )) \
	    "claims the api/transaction mount lost" &&
	test_is 4 "$(stat_of "$T/stats" messages)" "messages" &&
	test_is "\"h\"" "$(cat "$T/partitions/default/ht")" "the HTTP push" &&
	test_is "\"a\"" "$(cat "$T/partitions/default/at")" "the api push" &&
	test_is 0 "$(stat_of "$MNT/queues/cts/stats" depth)" "s1 acked" &&
	test_is 0 "$(stat_of "$MNT/queues/cts/stats" leases)" "its lease ended"
'

# An HTTP push whose own read of the row times out (the run again reads
# it locked) runs again too, not only one whose commit failed: on a
# daemon whose lock timeout is 1 s, psql holds the row until the push
# has been run again twice, the second time after its read timed out;
# then the push lands, and the client gets 201 (it got 500 before).  The
# log says each failed run is to run again, and logs no failure of it.
test_expect_success CURL 'an HTTP push whose read times out runs again and lands' '
	H2=$(free_addr) &&
	C=$MNT/queues/cl3 &&
	fresh_queue "$C" &&
	mount_extra hb --db "$(pg_uri "$SCHEMA")%20-clock_timeout%3D1000" \
	    --listen "$H2" &&
	redo_on_hb hold cl3 http_push "$H2" cl3 ht t ht &&
	grep -q "canceling statement due to lock timeout" "$TRASH/hb.log" &&
	test_is 201 "$(cat ht.code)" "the HTTP status" &&
	grep -q "\"queued\"" ht.body &&
	test_is "\"t\"" "$(cat "$C/partitions/default/ht")" "the push" &&
	grep -q "POST /api/v1/push: 500, to run again" "$TRASH/hb.log" &&
	! grep "POST /api/v1/push: 500 " "$TRASH/hb.log"
'

# The same through the api/push file of that daemon: the write's answer
# is read once it has landed.
test_expect_success 'an api/push whose read times out runs again and lands' '
	C=$MNT/queues/cl4 &&
	fresh_queue "$C" &&
	redo_on_hb hold cl4 api_out at.out "$TRASH/hb/api/push" \
	    "{\"items\":[{\"queue\":\"cl4\",\"transactionId\":\"at\",\"payload\":\"t\"}]}" &&
	test_is 1 "$(grep -o "\"queued\"" at.out | wc -l)" "api/push answers queued" &&
	test_is "\"t\"" "$(cat "$C/partitions/default/at")" "the push" &&
	grep -q "api/push: the call failed, to run again" "$TRASH/hb.log" &&
	! grep "api/push: the call failed: " "$TRASH/hb.log"
'

# A transaction whose own read of the row times out is refused by the
# engine as "reserved" (the store was busy); the daemon runs it again
# as it does a push, and the client gets the committed answer (it got
# success false, reason reserved, before): through HTTP, then through
# api/transaction, on the daemon whose lock timeout is 1 s.
test_expect_success CURL 'an HTTP transaction whose read times out runs again and commits' '
	C=$MNT/queues/cl5 &&
	fresh_queue "$C" &&
	redo_on_hb hold cl5 http_post h5 "$H2" /api/v1/transaction \
	    "{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"cl5\",\"transactionId\":\"ht\",\"payload\":\"h\"}]}]}" &&
	test_is 200 "$(cat h5.code)" "the HTTP status" &&
	grep -q "\"success\":true" h5.body &&
	grep -q "POST /api/v1/transaction: 200, to run again: .*reserved" \
	    "$TRASH/hb.log" &&
	test_is "\"h\"" "$(cat "$C/partitions/default/ht")" "the push"
'

test_expect_success 'an api/transaction whose read times out runs again and commits' '
	C=$MNT/queues/cl6 &&
	fresh_queue "$C" &&
	redo_on_hb hold cl6 api_out a6.out "$TRASH/hb/api/transaction" \
	    "{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"cl6\",\"transactionId\":\"at\",\"payload\":\"a\"}]}]}" &&
	grep -q "\"success\":true" a6.out &&
	grep -q "api/transaction: the call failed, to run again: .*reserved" \
	    "$TRASH/hb.log" &&
	test_is "\"a\"" "$(cat "$C/partitions/default/at")" "the push"
'

# Acks through HTTP and api/ack on that daemon whose cursor psql holds
# past the lock timeout: each runs again and answers success once the
# row is free (HTTP answered each item failed, api/ack failed the call,
# before).
test_expect_success CURL 'an HTTP ack and an api/ack whose cursor is held run again and succeed' '
	K=$MNT/queues/ak &&
	mkdir "$K" &&
	printf "lease_time = 300\nwait = 0\n" >"$K/config" &&
	echo k1 >"$K/k1" &&
	echo k2 >"$K/k2" &&
	settled "${MNT##*/}" &&
	http_pop "$H2" ak &&
	redo_on_hb hold_cursor ak http_post hk "$H2" /api/v1/ack \
	    "{\"transactionId\":\"k1\",\"partitionId\":\"$pid\",\"leaseId\":\"$lease\",\"status\":\"completed\"}" &&
	test_is 200 "$(cat hk.code)" "the HTTP status" &&
	grep -q "\"success\":true" hk.body &&
	grep -q "POST /api/v1/ack: 200, to run again" "$TRASH/hb.log" &&
	http_pop "$H2" ak &&
	redo_on_hb hold_cursor ak api_out ak.out "$TRASH/hb/api/ack" \
	    "{\"transactionId\":\"k2\",\"partitionId\":\"$pid\",\"leaseId\":\"$lease\",\"status\":\"completed\"}" &&
	grep -q "\"success\":true" ak.out &&
	grep -q "api/ack: the call failed, to run again" "$TRASH/hb.log" &&
	test_is 0 "$(stat_of "$K/stats" depth)" "both acked" &&
	test_is 0 "$(stat_of "$K/stats" leases)" "no lease left"
'

# The gate for a user who is not the mount's owner: a daemon mounted
# with allow_other,default_permissions, a queue uid 4242 made 0700.  The
# user's publishes kept and gated behind each other read back to the
# user and to no one else, land in order once the row is free, and the
# user pops them (one pushed before the hold makes the partition's row).
U1=4242
U2=4243

if test "$(id -u)" = 0 && command -v setpriv >/dev/null 2>&1; then
	test_set_prereq SETPRIV
fi
test_expect_success SETPRIV 'a second user'\''s publishes wait behind a kept one of theirs' '
	mount_extra u -o allow_other,default_permissions \
	    --db "$(pg_uri "$SCHEMA")%20-clock_timeout%3D300" &&
	chmod 0711 "$TRASH" &&
	U=$TRASH/u/queues/mine &&
	as_user $U1 mkdir -m 0700 "$U" &&
	test_is "$U1:$U1 700" "$(stat -c "%u:%g %a" "$U")" "the queue" &&
	as_user $U1 sh -c "printf \"wait = 0\n\" >\"\$1/config\" &&
	    echo p0 >\"\$1/p0\"" sh "$U" &&
	hold mine &&
	as_user $U1 sh -c "echo p1 >\"\$1/p1\"" sh "$U" &&
	kept_log mine/p1 u.log &&
	test_is 1 "$(as_user $U1 ls "$U" | grep -c "^p1\$")" \
	    "the kept file listed to its writer, once" &&
	test_must_fail as_user $U2 ls "$U" 2>err &&
	grep -q "Permission denied" err &&
	as_user $U1 sh -c "echo other >\"\$1/.p1\"" sh "$U" &&
	test_must_fail as_user $U1 mv "$U/.p1" "$U/p1" 2>err &&
	grep -q "Operation not permitted" err &&
	test_is other "$(as_user $U1 cat "$U/.p1")" "the dot-file stays" &&
	as_user $U1 rm "$U/.p1" &&
	as_user $U1 sh -c "exec 7>\"\$1/p2\" && echo a >&7 && (echo b >&7) && exec 7>&-" sh "$U" &&
	test_is p1 "$(as_user $U1 cat "$U/p1")" "p1 to its writer" &&
	test_is "a b" "$(as_user $U1 cat "$U/p2" | tr "\n" " " | sed "s/ $//")" \
	    "p2 to its writer" &&
	test_must_fail as_user $U2 cat "$U/p1" 2>err &&
	grep -q "Permission denied" err &&
	unhold mine &&
	settled u &&
	for m in p0 p1 p2; do
		L=$(as_user $U1 timeout 15 cat "$U/next") &&
		test_is $m "${L##*/}" "the user pops $m" &&
		as_user $U1 mv "$U/$L" "$U/ack/" || return 1
	done &&
	test_is 3 "$(stat_of "$U/stats" messages)" "messages"
'

# That user's ack by rename on a mount whose statements wait at most
# 1 s for a row, while psql holds the cursor: the rename runs again and
# returns 0 once the row is free.  grep -r and cp -r of the queue by the
# same user, started while the ack waits, read every message, take no
# lease and end; the next read gets m2, which a lease taken by either
# would have hidden (wait = 0).
test_expect_success SETPRIV 'a second user'\''s ack runs again while grep -r and cp -r walk the queue' '
	mount_extra ua -o allow_other,default_permissions \
	    --db "$(pg_uri "$SCHEMA")%20-clock_timeout%3D1000" &&
	chmod 0711 "$TRASH" &&
	mkdir "$TRASH/home1" && chown $U1:$U1 "$TRASH/home1" &&
	U=$TRASH/ua/queues/mack &&
	as_user $U1 mkdir -m 0700 "$U" &&
	as_user $U1 sh -c "printf \"lease_time = 300\nwait = 0\n\" >\"\$1/config\" &&
	    echo m1 >\"\$1/m1\" && echo m2 >\"\$1/m2\"" sh "$U" &&
	settled ua &&
	L=$(as_user $U1 cat "$U/next") &&
	test_is m1 "${L##*/}" "the message popped" &&
	hold_cursor mack &&
	{ as_user $U1 mv "$U/$L" "$U/ack/" 2>mv.err & } && mvp=$! &&
	track_pid $mvp &&
	wait_until 20 "grep -q \"rename queues/mack/leased/.*lock timeout\" ua.log" &&
	{ as_user $U1 grep -rh "^m[0-9]$" "$U" >grep.out & } && gp=$! &&
	track_pid $gp &&
	{ as_user $U1 cp -r "$U" "$TRASH/home1/copy" & } && cpp=$! &&
	track_pid $cpp &&
	wait_until 10 "test -d \"$TRASH/home1/copy\"" &&
	unhold mack &&
	wait $mvp && wait $gp && wait $cpp &&
	! test -s mv.err &&
	test_is "m1 m2" "$(sort -u grep.out | tr "\n" " " | sed "s/ $//")" \
	    "grep -r read both messages" &&
	test_is m2 "$(cat "$TRASH/home1/copy/partitions/default/m2")" "cp -r" &&
	grep -q "rename queues/mack/leased/.*(to run again)" ua.log &&
	! grep -q "rename queues/mack/.*(EIO)" ua.log &&
	test_is 0 "$(stat_of "$U/stats" leases)" "leases after the ack" &&
	test_is 1 "$(stat_of "$U/stats" depth)" "depth after the ack" &&
	L=$(as_user $U1 cat "$U/next") &&
	test_is m2 "${L##*/}" "the next read"
'

# A daemon killed (kill -9) while an ack by rename waits to run again:
# the rename fails (ECONNABORTED, the kernel's answer when the daemon
# is gone), nothing of the ack commits (its session's locking read
# finds the connection closed once psql lets the row go), and the
# daemon started again hands the message out once more when its lease
# ends; that ack returns 0.
test_expect_success 'an ack waiting to run again when its daemon is killed is not half done' '
	mount_extra kk --db "$(pg_uri "$SCHEMA")%20-clock_timeout%3D1000" &&
	K=$TRASH/kk/queues/kr &&
	mkdir "$K" &&
	printf "lease_time = 4\nwait = 10\n" >"$K/config" &&
	echo k1 >"$K/k1" &&
	echo k2 >"$K/k2" &&
	settled kk &&
	L=$(cat "$K/next") &&
	test_is k1 "${L##*/}" "the message popped" &&
	hold_cursor kr &&
	{ sysc rename "$K/$L" "$K/ack/k1" >mv.out & } && mvp=$! &&
	track_pid $mvp &&
	wait_until 20 "grep -q \"rename queues/kr/leased/.*lock timeout\" kk.log" &&
	kill9_extra kk &&
	wait $mvp &&
	test_is rename:ECONNABORTED "$(cat mv.out)" "the rename" &&
	unhold kr &&
	remount_extra kk &&
	test_is 2 "$(stat_of "$K/stats" depth)" "depth after the restart" &&
	L2=$(timeout 20 cat "$K/next") &&
	test_is k1 "${L2##*/}" "k1 handed out again" &&
	test "$L2" != "$L" &&
	test_is k1 "$(cat "$K/$L2")" "its payload" &&
	mv "$K/$L2" "$K/ack/" &&
	L3=$(timeout 20 cat "$K/next") &&
	test_is k2 "${L3##*/}" "then k2" &&
	mv "$K/$L3" "$K/ack/" &&
	test_is 0 "$(stat_of "$K/stats" depth)" "depth at the end"
'

test_done
