#!/bin/sh
# fs-0042-pg-round-trips: what a daemon on PostgreSQL waits for.  sys/stats
# and sys/metrics count its round trips; a push through a file takes a few
# (its lookup reads the queue, partition and dedup window in one statement,
# so does the push under the partition's lock, and its writes travel with
# the COMMIT; then the flush), and an
# api/push of many items one partition apart takes a handful, not one an
# item (their dedup lookups are one statement); duplicates are still
# found, against the log and inside the request; a pop reads its queue and
# group in one statement and each ready cursor with its partition, a
# lease's rows are read with it, so a cycle takes about two dozen.  Run
# under tests/pg.sh.
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
mount_queenfs_on "$(pg_uri "t0042_$$")"
export MNT

# rt_now: the round trips so far, less what reading them costs
rt_now () {
	rt_a_=$(stat_of "$MNT/sys/stats" pg_round_trips) &&
	rt_b_=$(stat_of "$MNT/sys/stats" pg_round_trips) &&
	echo $((2 * rt_a_ - rt_b_))
}

test_expect_success 'sys/stats and sys/metrics count the round trips' '
	mkdir "$MNT/queues/rt" &&
	echo m0 >"$MNT/queues/rt/f0" &&
	test "$(stat_of "$MNT/sys/stats" pg_round_trips)" -gt 0 &&
	grep -q "^queenfs_pg_round_trips_total [1-9]" "$MNT/sys/metrics"
'

test_expect_success 'a push through a file: at most 8 round trips' '
	t0=$(rt_now) &&
	for i in $(seq 1 20); do echo "m$i" >"$MNT/queues/rt/f$i" || return 1; done &&
	t1=$(rt_now) &&
	echo "20 pushes: $((t1 - t0)) round trips" &&
	test $((t1 - t0)) -le $((20 * 8))
'

test_expect_success 'a cycle (push, next, read the leased file, ack): at most 30' '
	mkdir "$MNT/queues/cy" &&
	t0=$(rt_now) &&
	for i in $(seq 1 10); do
		echo "c$i" >"$MNT/queues/cy/c$i" &&
		l=$(cat "$MNT/queues/cy/next") &&
		test_is "c$i" "$(cat "$MNT/queues/cy/$l")" payload &&
		mv "$MNT/queues/cy/$l" "$MNT/queues/cy/ack/${l##*/}" || return 1
	done &&
	t1=$(rt_now) &&
	echo "10 cycles: $((t1 - t0)) round trips" &&
	test $((t1 - t0)) -le $((10 * 30)) &&
	test_is 0 "$(stat_of "$MNT/queues/cy/stats" depth)" depth
'

test_expect_success PYTHON 'an api/push of 302 items: a few dozen round trips at most, duplicates found' '
	cp "$TEST_DIRECTORY/qapi_base.py" . &&
	t0=$(rt_now) &&
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
	test $((t1 - t0)) -le 60 &&
	ls "$MNT/queues/rt/partitions/default" >names &&
	test_line_count = 321 names &&
	test_is 2 "$(stat_of "$MNT/queues/rt/stats" duplicates)" "duplicates"
'

test_done
