#!/bin/sh
# fs-0078-pg-publish-hold: publishes held back for company, on PostgreSQL
# (run under tests/pg.sh).  A stream of publishes of closed files waits
# a moment for others to share its commit, and the pops that come
# meanwhile run ahead of it (fs/engine.c).  QUEENFS_TEST_PUBLISH_HOLD_MS
# makes every such publish wait that long, so that each case meets one
# held: a read of `next` right after a push still gets it (non-blocking,
# with `wait = 0`, in a group); a batch takes the held pushes it has
# room for (b1 is in the store, since the read of the queue's stats took
# it along; b2 and b3 are held), and a window a held push keeps open is
# respected; an ack takes the pushes before it along (another mount sees
# a result pushed before the ack once the ack returns); a listing, a read
# by name and the stats count a push at once; a rename that publishes,
# which its caller waits for, is not held, nor is anything while a reader
# waits on the mount; held pushes land in order; a clean unmount
# publishes what it held (another mount reads it while the first is
# down), and after a kill -9 the spool publishes them once.
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
QUEENFS_TEST_PUBLISH_HOLD_MS=400
export QUEENFS_TEST_PUBLISH_HOLD_MS
mount_queenfs_on "$(pg_uri "t0078_$$")"
Q=$MNT/queues/h

holds () {
	stat_of "$MNT/sys/stats" publish_holds
}

# got OUT NAME: OUT is sysc's answer to a read of next, one lease of NAME
got () {
	test_is ok "$(sed -n 1p "$1")" "the read" &&
	sed -n 2p "$1" | grep -q "^leased/[^/]*/$2\$" ||
		{ echo "no lease of $2 in:"; cat "$1"; return 1; }
}

test_expect_success 'setup: a queue, and a second mount on the schema' '
	mkdir "$Q" &&
	printf "lease_time = 300\nwait = 5\n" >"$Q/config" &&
	mount_extra b
'

test_expect_success 'a non-blocking read of next right after a push gets it' '
	h0=$(holds) &&
	for i in 1 2 3 4 5; do
		printf "n$i" >"$Q/n$i" &&
		sysc read_nonblock "$Q/next" >out &&
		got out "n$i" &&
		mv "$Q/$(sed -n 2p out)" "$Q/ack/" || return 1
	done &&
	test "$(holds)" -ge $((h0 + 5)) ||
		{ echo "publish_holds: $h0 -> $(holds)"; return 1; }
'

test_expect_success 'with wait = 0 a blocking read right after a push gets it' '
	echo "wait = 0" >"$Q/config" &&
	printf z >"$Q/z1" &&
	sysc read "$Q/next" >out &&
	got out z1 &&
	mv "$Q/$(sed -n 2p out)" "$Q/ack/" &&
	echo "wait = 5" >"$Q/config"
'

test_expect_success 'a group reads a push of a moment before' '
	mkdir "$MNT/queues/hg" "$MNT/queues/hg/groups/g" &&
	printf g >"$MNT/queues/hg/g1" &&
	sysc read_nonblock "$MNT/queues/hg/groups/g/next" >out &&
	got out g1 &&
	mv "$MNT/queues/hg/groups/g/$(sed -n 2p out)" \
	    "$MNT/queues/hg/groups/g/ack/"
'

test_expect_success 'a pop of a batch takes the held pushes it has room for' '
	echo "batch = 3" >"$Q/config" &&
	printf b >"$Q/b1" &&
	cat "$Q/stats" >/dev/null &&
	printf b >"$Q/b2" &&
	printf b >"$Q/b3" &&
	sysc read "$Q/next" >ans &&
	test_is ok "$(sed -n 1p ans)" "the read" &&
	sed 1d ans >out &&
	test_line_count = 3 out &&
	sed "s|^leased/[^/]*/||" out >names &&
	printf "%s\n" b1 b2 b3 >expect &&
	test_cmp expect names &&
	mv "$Q/leased/$(cut -d/ -f2 out | sort -u)" "$Q/ack/" &&
	echo "batch = 1" >"$Q/config"
'

test_expect_success 'a window that a held push keeps open is respected' '
	mkdir "$MNT/queues/hw" &&
	printf "window_buffer = 2\nwait = 0\n" >"$MNT/queues/hw/config" &&
	printf w >"$MNT/queues/hw/partitions/b/w1" &&
	cat "$MNT/queues/hw/stats" >/dev/null &&
	sleep 2.5 &&
	printf w >"$MNT/queues/hw/partitions/b/w2" &&
	sysc read_nonblock "$MNT/queues/hw/next" >out &&
	test_is read:EAGAIN "$(cat out)" "the read, with b just pushed to"
'

test_expect_success 'an ack takes the pushes before it along' '
	mkdir "$MNT/queues/res" &&
	printf x >"$Q/x1" &&
	pop >lease &&
	grep -q "^leased/[^/]*/x1$" lease &&
	printf r >"$MNT/queues/res/r1" &&
	mv "$Q/$(cat lease)" "$Q/ack/" &&
	test_is r "$(cat "$TRASH/b/queues/res/r1")" "r1 through b"
'

test_expect_success 'a rename that publishes is not held' '
	printf s >"$Q/.s1" &&
	h0=$(holds) &&
	mv "$Q/.s1" "$Q/s1" &&
	test_is "$h0" "$(holds)" publish_holds &&
	test_is s "$(cat "$TRASH/b/queues/h/s1")" "s1 through b" &&
	pop >out && grep -q "^leased/[^/]*/s1$" out &&
	mv "$Q/$(cat out)" "$Q/ack/"
'

test_expect_success 'a listing, a read by name and the stats count a push at once' '
	d0=$(stat_of "$Q/stats" depth) &&
	printf v1 >"$Q/l1" &&
	ls "$Q" | grep -qx l1 &&
	printf v2 >"$Q/l2" &&
	test_is v2 "$(cat "$Q/l2")" "l2" &&
	printf v3 >"$Q/l3" &&
	test_is $((d0 + 3)) "$(stat_of "$Q/stats" depth)" depth &&
	for i in 1 2 3; do
		pop >out && grep -q "^leased/[^/]*/l$i$" out &&
		mv "$Q/$(cat out)" "$Q/ack/" || return 1
	done
'

# close() returned 0, so the push is stored: an rm right after it, while
# its publish is still held, is an rm of a stored message (the code
# before took it for an attempt still open and threw the push away).  A
# KV key put and removed in turn is gone: the removal runs after the put.
test_expect_success 'rm right after close(): EPERM, the push is stored' '
	printf keep >"$Q/rmc" &&
	test_must_fail rm "$Q/rmc" &&
	test_is keep "$(cat "$Q/rmc")" "the message" &&
	grep -q "unlink queues/h/rmc: a stored message stays" "$DAEMON_LOG" &&
	pop >out && grep -q "^leased/[^/]*/rmc$" out &&
	mv "$Q/$(cat out)" "$Q/ack/" &&
	mkdir -p "$MNT/kv/rmk" &&
	printf v >"$MNT/kv/rmk/k" &&
	rm "$MNT/kv/rmk/k" &&
	test_must_fail cat "$MNT/kv/rmk/k" 2>/dev/null &&
	ls "$TRASH/b/kv/rmk" >out &&
	test ! -s out
'

test_expect_success 'nothing is held while a reader waits on the mount' '
	{ timeout 20 cat "$Q/next" >w.out 2>w.err & } &&
	rp=$! && track_pid $rp &&
	wait_until 10 "test \"\$(stat_of \"$MNT/sys/stats\" waiting_readers)\" = 1" &&
	h0=$(holds) &&
	printf w >"$Q/w1" &&
	wait $rp &&
	grep -q "^leased/[^/]*/w1$" w.out &&
	test_is "$h0" "$(holds)" publish_holds &&
	mv "$Q/$(cat w.out)" "$Q/ack/"
'

test_expect_success 'held pushes land in order' '
	printf o >"$Q/o1" &&
	printf o >"$Q/o2" &&
	pop >lease &&
	grep -q "^leased/[^/]*/o1$" lease &&
	for i in $(seq 1 20); do
		printf "p$i" >"$Q/p$i" || return 1
	done &&
	mv "$Q/$(cat lease)" "$Q/ack/" &&
	: >names &&
	for i in $(seq 1 21); do
		pop >out && sed "s|^leased/[^/]*/||" out >>names &&
		mv "$Q/$(cat out)" "$Q/ack/" || return 1
	done &&
	{ echo o2; for i in $(seq 1 20); do echo "p$i"; done; } >expect &&
	test_cmp expect names &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'a push confirmed under the limit lands though another mount lowers it' '
	mkdir "$MNT/queues/lim" &&
	printf "%020d" 7 >"$MNT/queues/lim/big" &&
	printf "max_message_bytes = 5\n" >"$TRASH/b/queues/lim/config" &&
	wait_until 10 "test -f \"$TRASH/b/queues/lim/partitions/default/big\"" &&
	test_is 00000000000000000007 "$(cat "$TRASH/b/queues/lim/big")" \
	    "big, through b" &&
	! grep "staged lim/big dropped" "$DAEMON_LOG" &&
	printf 123456 >six &&
	test_must_fail cp six "$TRASH/b/queues/lim/six" 2>err &&
	grep -q "File too large" err
'

test_expect_success 'a clean unmount publishes what it held' '
	printf u >"$Q/u1" &&
	stop_daemon_ &&
	test_is u "$(cat "$TRASH/b/queues/h/u1")" "u1 through b" &&
	start_daemon_ &&
	test_is u "$(cat "$Q/u1")" "u1"
'

test_expect_success 'after a kill -9 with pushes held the spool publishes them once' '
	printf k1 >"$Q/k1" &&
	printf k2 >"$Q/k2" &&
	kill9_daemon &&
	remount &&
	test_is k1 "$(cat "$Q/k1")" k1 &&
	test_is k2 "$(cat "$Q/k2")" k2 &&
	ls "$Q/partitions/default" | grep -c "^k[12]$" >n &&
	test_is 2 "$(cat n)" "k1 and k2, once each"
'

# The spool is the mountpoint'"'"'s, however the restart spells it.
test_expect_success 'a restart that spells the mountpoint otherwise publishes the spool' '
	printf sp1 >"$Q/sp1" &&
	kill9_daemon &&
	MNT_ARG="$MNT/" &&
	remount &&
	MNT_ARG= &&
	test_is sp1 "$(cat "$TRASH/b/queues/h/sp1")" "sp1 through b"
'

test_done
