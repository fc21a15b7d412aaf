#!/bin/sh
# fs-0044-pg-wake: wake-ups across daemons on PostgreSQL (run under
# tests/pg.sh).  A and B share one schema, C has another with a queue of
# the same name.  A reader blocked in `next` on A is woken by a push
# through B, by an ack or a retry through B that frees the partition it
# waits for (the lease is far from expiring, its `wait` far from over),
# and by a lease taken through B running out; the queue's deletion
# through B answers it.  Pushes behind a waiting message announce
# nothing, nor does anything in C's schema reach A (sys/stats: notifies,
# notified), and a daemon listens to a queue only while a reader waits on
# it (listening).
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
mount_queenfs_on "$(pg_uri "t0042_$$")"
A=$MNT
B=$TRASH/b
C=$TRASH/c

# reader QUEUE-DIR OUT: cat next in the background, tracked; sets $reader
reader () {
	{ timeout 25 cat "$1/next" >"$2" 2>"$2.err" & } &&
	reader=$! && track_pid $reader
}

# parked MOUNT N: N readers wait there
parked () {
	wait_until 10 "test \"\$(stat_of \"$1/sys/stats\" waiting_readers)\" = $2"
}

# settled MOUNT: the retries that listening to a queue starts are over
# (the count holds still for half a second); sets $tries
settled () {
	tries=$(stat_of "$1/sys/stats" waiter_retries)
	st_n_=20
	while sleep 0.5 && test $st_n_ -gt 0; do
		st_t_=$(stat_of "$1/sys/stats" waiter_retries)
		test "$st_t_" = "$tries" && return 0
		tries=$st_t_
		st_n_=$((st_n_ - 1))
	done
	echo "settled: waiter_retries still moving"
	return 1
}

test_expect_success 'B on the same schema, C on another' '
	mount_extra b &&
	mount_extra c --db "$(pg_uri "t0042o_$$")" &&
	mkdir "$A/queues/w" &&
	test -d "$B/queues/w" &&
	test_path_is_missing "$C/queues/w" &&
	mkdir "$C/queues/w" &&
	printf "wait = 30\nlease_time = 300\n" >"$A/queues/w/config" &&
	echo "wait = 4" >"$C/queues/w/config"
'

test_expect_success 'nobody waits: nothing is listened to' '
	test_is 0 "$(stat_of "$A/sys/stats" listening)" "A listening" &&
	test_is 0 "$(stat_of "$B/sys/stats" listening)" "B listening"
'

test_expect_success 'a reader blocked on A is woken by a push through B' '
	reader "$A/queues/w" r1 && ra=$reader &&
	parked "$A" 1 &&
	wait_until 5 "test \"\$(stat_of \"$A/sys/stats\" listening)\" = 1" &&
	reader "$C/queues/w" rc && rc_pid=$reader &&
	parked "$C" 1 &&
	printf one >"$B/queues/w/m1" &&
	wait_until 20 "! kill -0 $ra 2>/dev/null" &&
	wait $ra &&
	grep -q "^leased/[^/]*/m1$" r1 &&
	mv "$A/queues/w/$(cat r1)" "$A/queues/w/ack/"
'

test_expect_success 'the reader in the other schema heard nothing and timed out' '
	wait_until 10 "! kill -0 $rc_pid 2>/dev/null" &&
	test_must_fail wait $rc_pid &&
	grep -q "No data available" rc.err &&
	test_is 0 "$(stat_of "$C/sys/stats" notified)" "C notified" &&
	test "$(stat_of "$A/sys/stats" notified)" -ge 1
'

test_expect_success 'a reader on A waits behind the lease B holds; the ack through B frees it' '
	printf two >"$B/queues/w/m2" &&
	printf three >"$B/queues/w/m3" &&
	LB=$(pop "$B/queues/w") &&
	test_is m2 "${LB##*/}" "B holds m2" &&
	reader "$A/queues/w" r2 &&
	parked "$A" 1 &&
	mv "$B/queues/w/$LB" "$B/queues/w/ack/" &&
	wait_until 20 "! kill -0 $reader 2>/dev/null" &&
	wait $reader &&
	grep -q "^leased/[^/]*/m3$" r2 &&
	mv "$A/queues/w/$(cat r2)" "$A/queues/w/ack/"
'

test_expect_success 'a retry through B releases the lease: the reader on A gets the redelivery' '
	printf four >"$B/queues/w/m4" &&
	LB=$(pop "$B/queues/w") &&
	test_is m4 "${LB##*/}" "B holds m4" &&
	reader "$A/queues/w" r3 &&
	parked "$A" 1 &&
	mv "$B/queues/w/$LB" "$B/queues/w/retry/" &&
	wait_until 20 "! kill -0 $reader 2>/dev/null" &&
	wait $reader &&
	grep -q "^leased/[^/]*/m4$" r3 &&
	mv "$A/queues/w/$(cat r3)" "$A/queues/w/ack/"
'

test_expect_success 'pushes behind a waiting message announce nothing' '
	printf five >"$B/queues/w/m5" &&
	LB=$(pop "$B/queues/w") &&
	reader "$A/queues/w" r4 &&
	parked "$A" 1 &&
	sent=$(stat_of "$B/sys/stats" notifies) &&
	heard=$(stat_of "$A/sys/stats" notified) &&
	for i in 1 2 3 4 5 6 7 8 9 10; do
		printf x >"$B/queues/w/n$i" || return 1
	done &&
	test_is "$sent" "$(stat_of "$B/sys/stats" notifies)" "B notifies" &&
	kill -0 $reader &&
	mv "$B/queues/w/$LB" "$B/queues/w/ack/" &&
	wait_until 20 "! kill -0 $reader 2>/dev/null" &&
	wait $reader &&
	grep -q "^leased/[^/]*/n1$" r4 &&
	test_is $((heard + 1)) "$(stat_of "$A/sys/stats" notified)" \
	    "A heard the ack only" &&
	test_is $((sent + 1)) "$(stat_of "$B/sys/stats" notifies)" \
	    "B announced the ack only" &&
	L=$(cat r4) && L=${L%/*} &&
	mv "$A/queues/w/$L" "$A/queues/w/ack/"
'

test_expect_success 'three readers wait on A: one push through B makes one of them try' '
	mkdir "$A/queues/t" &&
	printf "wait = 30\nlease_time = 300\n" >"$A/queues/t/config" &&
	: >r7a && : >r7b && : >r7c &&
	reader "$A/queues/t" r7a && p1=$reader &&
	reader "$A/queues/t" r7b && p2=$reader &&
	reader "$A/queues/t" r7c && p3=$reader &&
	parked "$A" 3 &&
	settled "$A" &&
	parked "$A" 3 &&
	printf six >"$B/queues/t/m6" &&
	wait_until 20 "test \"\$(stat_of \"$A/sys/stats\" waiting_readers)\" = 2" &&
	test_is $((tries + 1)) "$(stat_of "$A/sys/stats" waiter_retries)" \
	    "retries on A" &&
	printf seven >"$B/queues/t/m7" &&
	L6=$(cat r7a r7b r7c) &&
	test_is m6 "${L6##*/}" "the first reader" &&
	mv "$A/queues/t/$L6" "$A/queues/t/ack/" &&
	wait_until 20 "test \"\$(stat_of \"$A/sys/stats\" waiting_readers)\" = 1" &&
	printf eight >"$B/queues/t/partitions/p2/m8" &&
	wait_until 20 "! kill -0 $p1 2>/dev/null && ! kill -0 $p2 2>/dev/null && ! kill -0 $p3 2>/dev/null" &&
	cat r7a r7b r7c | sed "s|.*/||" | sort >got &&
	printf "m6\nm7\nm8\n" >expect &&
	test_cmp expect got &&
	for L in $(cat r7a r7b r7c); do
		test "$L" = "$L6" ||
		mv "$A/queues/t/$L" "$A/queues/t/ack/" || return 1
	done
'

test_expect_success 'a reader on A gets the message when the lease B took runs out' '
	mkdir "$B/queues/x" &&
	printf "wait = 30\nlease_time = 2\n" >"$B/queues/x/config" &&
	printf e >"$B/queues/x/e1" &&
	LB=$(pop "$B/queues/x") &&
	reader "$A/queues/x" r5 &&
	wait_until 20 "! kill -0 $reader 2>/dev/null" &&
	wait $reader &&
	grep -q "^leased/[^/]*/e1$" r5 &&
	test "$(cat r5)" != "$LB" &&
	mv "$A/queues/x/$(cat r5)" "$A/queues/x/ack/"
'

# a poll() on d/next that A keeps watching throughout: A listens to d
# from before its deletion to after it is made again
test_expect_success PYTHON 'deleting the queue through B answers the reader on A' '
	mkdir "$A/queues/d" &&
	echo "wait = 30" >"$A/queues/d/config" &&
	{ "$PYTHON3" -c "
import os, select, time
fd = os.open(\"$A/queues/d/next\", os.O_RDONLY | os.O_NONBLOCK)
p = select.poll()
p.register(fd, select.POLLIN)
end = time.time() + 40
while time.time() < end:
    p.poll(200)
" & } && poller=$! && track_pid $poller &&
	reader "$A/queues/d" r6 &&
	parked "$A" 1 &&
	rmdir "$B/queues/d" &&
	wait_until 20 "! kill -0 $reader 2>/dev/null" &&
	test_must_fail wait $reader &&
	grep -q "No such file" r6.err
'

test_expect_success PYTHON 'the queue made again under its name: its push through B wakes A' '
	mkdir "$B/queues/d" &&
	echo "wait = 30" >"$B/queues/d/config" &&
	reader "$A/queues/d" r6b &&
	parked "$A" 1 &&
	printf again >"$B/queues/d/a1" &&
	wait_until 20 "! kill -0 $reader 2>/dev/null" &&
	wait $reader &&
	grep -q "^leased/[^/]*/a1$" r6b &&
	mv "$A/queues/d/$(cat r6b)" "$A/queues/d/ack/" &&
	stop_pid $poller
'

test_expect_success 'with no reader left A stops listening' '
	wait_until 10 "test \"\$(stat_of \"$A/sys/stats\" listening)\" = 0" &&
	test "$(stat_of "$A/sys/stats" listens)" -ge 2
'

test_done
