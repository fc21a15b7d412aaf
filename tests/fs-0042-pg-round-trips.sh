#!/bin/sh
# fs-0042-pg-round-trips: what a daemon on PostgreSQL waits for.  sys/stats
# and sys/metrics count its round trips.  A push through a file takes 4
# with its flush (its lookup reads the queue, partition and dedup window in
# one statement, so does the push under the partition's lock, and its
# writes, the wake-up of caught-up cursors and its announcement travel
# with the COMMIT); a cycle about 11 with its two flushes (a pop reads its
# queue and group, the ready cursor, its partition and message in one
# statement; the lookup of the lease's directory reads the
# lease's rows, its first hash row and message in one statement, which
# answers the lookup and read of the message's name; the ack reads them
# again, its cursor locked, in one statement); an ack by name of one message of a lease of three commits
# that message, not one read before it; an
# api/push of many items one partition apart takes a handful, not one an
# item (their dedup lookups are one statement, their inserts another), and
# duplicates are still found, against the log and inside the request; an
# api/ack of 100 items of one lease reads their rows once, not per item;
# an api/push into an empty partition finds its duplicates among its own
# items without a lookup an item; a stat of a message reads its queue and
# partition rows, its hash row and the message in one statement, once
# for the kernel's lookup and getattr.  Run under tests/pg.sh.
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
mount_queenfs_on "$(pg_uri "t0042_$$")"
export MNT

# rt_mark, then rt_now: the round trips between the two, less what
# reading them costs.  A read costs the same each time once rows read
# ahead (kept for a millisecond) are gone: so each read waits a moment.
# The once-a-second tick adds its own to one gap between reads, never to
# two in a row: the cost of a read is the smaller of two gaps.
rt_read () {
	sleep 0.05 &&
	stat_of "$MNT/sys/stats" pg_round_trips
}
rt_mark () {
	rt_read
}
rt_now () {
	rt_a_=$(rt_read) &&
	rt_b_=$(rt_read) &&
	rt_c_=$(rt_read) &&
	rt_d_=$((rt_b_ - rt_a_)) &&
	if [ $((rt_c_ - rt_b_)) -lt $rt_d_ ]; then rt_d_=$((rt_c_ - rt_b_)); fi &&
	echo $((rt_a_ - rt_d_))
}

test_expect_success 'sys/stats and sys/metrics count the round trips' '
	mkdir "$MNT/queues/rt" &&
	echo m0 >"$MNT/queues/rt/f0" &&
	test "$(stat_of "$MNT/sys/stats" pg_round_trips)" -gt 0 &&
	grep -q "^queenfs_pg_round_trips_total [1-9]" "$MNT/sys/metrics"
'

test_expect_success 'a push through a file: at most 5 round trips' '
	t0=$(rt_mark) &&
	for i in $(seq 1 20); do echo "m$i" >"$MNT/queues/rt/f$i" || return 1; done &&
	t1=$(rt_now) &&
	echo "20 pushes: $((t1 - t0)) round trips" &&
	test $((t1 - t0)) -le 100
'

test_expect_success 'a cycle (push, next, read the leased file, ack): at most 13' '
	mkdir "$MNT/queues/cy" &&
	t0=$(rt_mark) &&
	for i in $(seq 1 10); do
		echo "c$i" >"$MNT/queues/cy/c$i" &&
		l=$(cat "$MNT/queues/cy/next") &&
		test_is "c$i" "$(cat "$MNT/queues/cy/$l")" payload &&
		mv "$MNT/queues/cy/$l" "$MNT/queues/cy/ack/${l##*/}" || return 1
	done &&
	t1=$(rt_now) &&
	echo "10 cycles: $((t1 - t0)) round trips" &&
	test $((t1 - t0)) -le $((10 * 13)) &&
	test_is 0 "$(stat_of "$MNT/queues/cy/stats" depth)" depth
'

committed () {
	sed -n "s/^partition default: committed = \([0-9]*\),.*/\1/p" \
	    "$MNT/queues/$1/stats"
}

test_expect_success 'a lease of three: each ack by name commits its own message' '
	mkdir "$MNT/queues/l3" &&
	echo "batch = 3" >"$MNT/queues/l3/config" &&
	for i in 1 2 3; do printf "three-%s" $i >"$MNT/queues/l3/t$i" || return 1; done &&
	cat "$MNT/queues/l3/next" >lines &&
	test_line_count = 3 lines &&
	i=0 &&
	while read -r l; do
		i=$((i + 1)) &&
		test_is "three-$i" "$(cat "$MNT/queues/l3/$l")" "$l" || return 1
	done <lines &&
	L=$(sed -n "1s|^leased/\([^/]*\)/.*|\1|p" lines) &&
	mv "$MNT/queues/l3/leased/$L/t2" "$MNT/queues/l3/ack/" &&
	test_is 2 "$(committed l3)" "committed (t1 implicitly complete)" &&
	ls "$MNT/queues/l3/leased/$L" >actual &&
	echo t3 >expect &&
	test_cmp expect actual &&
	test_is "three-3" "$(cat "$MNT/queues/l3/leased/$L/t3")" t3 &&
	mv "$MNT/queues/l3/leased/$L/t3" "$MNT/queues/l3/ack/" &&
	test_is 3 "$(committed l3)" committed &&
	test_is 0 "$(stat_of "$MNT/queues/l3/stats" leases)" leases
'

# Each read of a leased file from the store costs a round trip at least;
# the mount that popped the lease answers from the pop.  What a tick
# adds, if one falls in the window, is a few (fewer than 10).
test_expect_success 'a lease popped here is read back with no round trip' '
	mkdir "$MNT/queues/rb" &&
	echo "batch = 20" >"$MNT/queues/rb/config" &&
	for i in $(seq 1 20); do printf "back-%s" $i >"$MNT/queues/rb/b$i" || return 1; done &&
	cat "$MNT/queues/rb/next" >lines &&
	test_line_count = 20 lines &&
	t0=$(rt_mark) &&
	i=0 &&
	while read -r l; do
		i=$((i + 1)) &&
		test_is "back-$i" "$(cat "$MNT/queues/rb/$l")" "$l" &&
		test_is ${#i} $(($(stat -c %s "$MNT/queues/rb/$l") - 5)) "size of $l" ||
			return 1
	done <lines &&
	t1=$(rt_now) &&
	echo "20 reads and 20 stats of a lease: $((t1 - t0)) round trips" &&
	test $((t1 - t0)) -lt 10 &&
	L=$(sed -n "1s|^leased/\([^/]*\)/.*|\1|p" lines) &&
	mv "$MNT/queues/rb/leased/$L/b19" "$MNT/queues/rb/ack/" &&
	ls "$MNT/queues/rb/leased/$L" >actual &&
	echo b20 >expect &&
	test_cmp expect actual &&
	test_is "back-20" "$(cat "$MNT/queues/rb/leased/$L/b20")" b20 &&
	mv "$MNT/queues/rb/leased/$L/b20" "$MNT/queues/rb/ack/" &&
	test_is 0 "$(stat_of "$MNT/queues/rb/stats" leases)" leases
'

test_expect_success 'an ack of a name the lease does not hold: refused, the lease kept' '
	for i in 1 2 3; do printf "k%s" $i >"$MNT/queues/l3/k$i" || return 1; done &&
	cat "$MNT/queues/l3/next" >lines &&
	L=$(sed -n "1s|^leased/\([^/]*\)/.*|\1|p" lines) &&
	test_must_fail mv "$MNT/queues/l3/leased/$L/t1" "$MNT/queues/l3/ack/" 2>err &&
	test_is 3 "$(committed l3)" committed &&
	test_is 1 "$(stat_of "$MNT/queues/l3/stats" leases)" leases &&
	mv "$MNT/queues/l3/leased/$L" "$MNT/queues/l3/ack/$L" &&
	test_is 6 "$(committed l3)" committed &&
	test_is 0 "$(stat_of "$MNT/queues/l3/stats" depth)" depth
'

test_expect_success PYTHON 'an api/push of 302 items: 20 round trips at most, duplicates found' '
	cp "$TEST_DIRECTORY/qapi_base.py" . &&
	t0=$(rt_mark) &&
	python3 <<-\EOF &&
	import os
	from qapi_base import api, eq
	ids = ["f3"] + ["b%03d" % i for i in range(300)] + ["b007"]
	ans = api("push", {"items": [{"queue": "rt", "transactionId": t,
	    "payload": t} for t in ids]}, mnt=os.environ["MNT"])
	st = [r["status"] for r in ans]
	eq(["duplicate"] + ["queued"] * 300 + ["duplicate"], st, "statuses")
	eq(ans[8]["messageId"], ans[301]["messageId"], "b007 twice: one message")
	EOF
	t1=$(rt_now) &&
	echo "api/push of 302 items: $((t1 - t0)) round trips" &&
	test $((t1 - t0)) -le 20 &&
	ls "$MNT/queues/rt/partitions/default" >names &&
	test_line_count = 321 names &&
	test_is 2 "$(stat_of "$MNT/queues/rt/stats" duplicates)" "duplicates"
'

test_expect_success PYTHON 'an api/ack of 100 items of one lease: 20 round trips at most' '
	cp "$TEST_DIRECTORY/qapi_base.py" . &&
	python3 <<-\EOF &&
	import os
	from qapi_base import api, eq
	m = os.environ["MNT"]
	api("push", {"items": [{"queue": "ak", "transactionId": "a%03d" % i,
	    "payload": i} for i in range(100)]}, mnt=m)
	p = api("pop", {"queue": "ak", "batch": 100}, mnt=m)
	eq(100, len(p["messages"]), "popped")
	with open("ack.json", "w") as f:
	    import json
	    json.dump({"acknowledgments": [{"transactionId": x["transactionId"],
	        "partitionId": x["partitionId"], "leaseId": p["leaseId"],
	        "status": "completed"} for x in p["messages"]]}, f)
	EOF
	t0=$(rt_mark) &&
	python3 -c "
import json, os
from qapi_base import api, eq
ans = api(\"ack\", json.load(open(\"ack.json\")), mnt=os.environ[\"MNT\"])
eq([True] * 100, [r[\"success\"] for r in ans], \"acked\")
" &&
	t1=$(rt_now) &&
	echo "api/ack of 100 items: $((t1 - t0)) round trips" &&
	test $((t1 - t0)) -le 20 &&
	test_is 0 "$(stat_of "$MNT/queues/ak/stats" depth)" depth
'

test_expect_success PYTHON 'an api/push of 1000 items creating its queue: 40 round trips at most' '
	t0=$(rt_mark) &&
	python3 -c "
import os
from qapi_base import api, eq
ids = [\"e%04d\" % i for i in range(1000)] + [\"e0500\"]
ans = api(\"push\", {\"items\": [{\"queue\": \"fresh\", \"transactionId\": t,
    \"payload\": t} for t in ids]}, mnt=os.environ[\"MNT\"])
eq([\"queued\"] * 1000 + [\"duplicate\"], [r[\"status\"] for r in ans], \"statuses\")
" &&
	t1=$(rt_now) &&
	echo "api/push of 1000 items into a new queue: $((t1 - t0)) round trips" &&
	test $((t1 - t0)) -le 40 &&
	test_is 1000 "$(stat_of "$MNT/queues/fresh/stats" messages)" messages
'

test_expect_success PYTHON 'a stat of a message by its name: 2 round trips at most' '
	python3 -c "
import os
from qapi_base import api
api(\"push\", {\"items\": [{\"queue\": \"st\", \"transactionId\": \"s%02d\" % i,
    \"payload\": i} for i in range(20)]}, mnt=os.environ[\"MNT\"])
" &&
	t0=$(rt_mark) &&
	for i in $(seq -w 0 19); do
		stat -c %s "$MNT/queues/st/partitions/default/s$i" >>sizes || return 1
	done &&
	t1=$(rt_now) &&
	echo "20 stats: $((t1 - t0)) round trips" &&
	test_line_count = 20 sizes &&
	test $((t1 - t0)) -ge 20 && test $((t1 - t0)) -le $((20 * 2))
'

# Which part of the round trips is the writer's: the lookups and reads
# go on a connection of their own.
writer_rt () {
	wr_s_=$(cat "$MNT/sys/stats") &&
	echo $(($(echo "$wr_s_" | sed -n "s/^pg_round_trips = //p") - \
		$(echo "$wr_s_" | sed -n "s/^pg_reader_round_trips = //p")))
}

test_expect_success 'lookups and reads go on the readers connection' '
	r0=$(stat_of "$MNT/sys/stats" pg_reader_round_trips) &&
	for i in $(seq 1 10); do echo "r$i" >"$MNT/queues/rt/r$i" || return 1; done &&
	for i in $(seq 1 10); do
		stat -c %s "$MNT/queues/rt/partitions/default/r$i" >/dev/null ||
			return 1
	done &&
	r1=$(stat_of "$MNT/sys/stats" pg_reader_round_trips) &&
	echo "10 pushes and 10 stats: $((r1 - r0)) on the readers connection" &&
	test $((r1 - r0)) -ge 20
'

# The partition row held by another session (psql) for 3 s: the first
# publish waits for it, and those behind it queue up meanwhile, since a
# push's close() waits only for the readers' connection and the spool.
cat >hold.sql <<EOF
BEGIN;
SET search_path = t0042_$$;
SELECT 1 FROM partitions p JOIN queues q ON q.id = p.queue_id
    WHERE q.name = 'gc' FOR UPDATE OF p;
\! touch held
SELECT pg_sleep(3);
COMMIT;
EOF

test_expect_success 'publishes queued behind a busy writer go as one call' '
	mkdir "$MNT/queues/gc" && echo w >"$MNT/queues/gc/w0" &&
	{ psql -X -q -v ON_ERROR_STOP=1 -f hold.sql "$QUEEN_TEST_PG" \
		>hold.out 2>&1 & } && hp=$! && track_pid $hp &&
	wait_until 10 "test -f held" &&
	c0=$(stat_of "$MNT/sys/stats" commits) && w0=$(writer_rt) &&
	for i in $(seq 1 20); do echo "g$i" >"$MNT/queues/gc/g$i" || return 1; done &&
	wait "$hp" &&
	wait_until 10 "test \"\$(stat_of \"$MNT/sys/stats\" staged)\" = 0" &&
	c1=$(stat_of "$MNT/sys/stats" commits) && w1=$(writer_rt) &&
	echo "20 publishes: $((c1 - c0)) commits, $((w1 - w0)) writer round trips with the reads of sys/stats" &&
	test $((c1 - c0)) -le 3 &&
	test_is 21 "$(stat_of "$MNT/queues/gc/stats" messages)" messages &&
	test_is g20 "$(cat "$MNT/queues/gc/partitions/default/g20")" payload
'

test_done
