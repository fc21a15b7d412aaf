#!/bin/sh
# fs-0056-busy-reads: read-your-writes while the writer is busy.  A push
# is published by its file's RELEASE, after close() has returned; on a
# server's store the daemon answers lookups and reads on a connection of
# its own, which sees a publish only once it has committed.  Until then
# the name is answered by the writer's connection, behind the publish,
# under both of its names (the queue's directory and partitions/default).
# Another process keeps the writer's queue full throughout, so that each
# publish waits behind other batches: a read by name, a stat and a
# listing at once after the push must still find it, and the queue's
# stats count it; and an ack is seen at once by the reads after it.
. "$(dirname "$0")/lib.sh"
mount_queenfs

Q="$MNT/queues/q"

test_expect_success 'setup: a queue, and a producer that keeps the writer busy' '
	mkdir "$Q" "$MNT/queues/bg" &&
	{ sh -c "i=0; while :; do i=\$((i + 1));
		echo b >\"$MNT/queues/bg/b\$i\" || exit 1; done" & } &&
	bg=$! && track_pid $bg && echo $bg >bg.pid
'

test_expect_success 'a push through the queue is read at once through partitions/default' '
	for i in $(seq 1 40); do
		printf "p$i" >"$Q/x$i" &&
		test_is "p$i" "$(cat "$Q/partitions/default/x$i")" "read $i" ||
			return 1
	done
'

test_expect_success 'a push through partitions/default is found at once in the queue' '
	for i in $(seq 1 40); do
		printf "d$i" >"$Q/partitions/default/y$i" &&
		test -f "$Q/y$i" &&
		test_is "d$i" "$(cat "$Q/partitions/default/y$i")" "read $i" ||
			return 1
	done
'

test_expect_success 'one process: close, then at once open it by either name' '
	python3 - "$Q" <<-\EOF
	import os, sys
	q = sys.argv[1]
	for i in range(300):
	    a, b = ("%s/w%d" % (q, i), "%s/partitions/default/w%d" % (q, i))
	    if i % 3 == 1:
	        a, b = b, a
	    elif i % 3 == 2:
	        b = a
	    with open(a, "w") as f:
	        f.write("v%d" % i)
	    with open(b) as f:
	        got = f.read()
	    if got != "v%d" % i:
	        sys.exit("%s: %r" % (b, got))
	EOF
'

test_expect_success 'a listing and the stats at once after the push' '
	d0=$(stat_of "$Q/stats" depth) &&
	for i in $(seq 1 20); do
		printf "l$i" >"$Q/z$i" &&
		ls "$Q/partitions/default" >ls.out &&
		grep -qx "z$i" ls.out &&
		test_is $((d0 + i)) "$(stat_of "$Q/stats" depth)" "depth $i" ||
			return 1
	done
'

# The readers' connection answers for a millisecond from rows it read
# ahead: an ack committed by the writer meanwhile must not be hidden.
test_expect_success 'a message acked by rename is gone from its lease at once' '
	mkdir "$MNT/queues/s" &&
	python3 - "$MNT/queues/s" <<-\EOF
	import errno, os, sys
	q = sys.argv[1]
	for i in range(200):
	    with open("%s/m%d" % (q, i), "w") as f:
	        f.write("x")
	    with open(q + "/next") as f:
	        p = q + "/" + f.read().strip()
	    with open(p) as f:
	        f.read()
	    os.rename(p, q + "/ack/" + os.path.basename(p))
	    try:
	        os.stat(p)
	    except OSError as e:
	        if e.errno in (errno.ENOENT, errno.ESTALE):
	            continue
	        raise
	    sys.exit("%s: still there after its ack (round %d)" % (p, i))
	EOF
'

test_expect_success 'the producer ran all along' '
	kill -0 "$(cat bg.pid)" &&
	stop_pid "$(cat bg.pid)" &&
	test "$(stat_of "$MNT/queues/bg/stats" depth)" -gt 40
'

test_done
