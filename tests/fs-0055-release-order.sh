#!/bin/sh
# fs-0055-release-order: read-your-writes does not hang on the scheduler.
# A message is published by its file's RELEASE, which the kernel queues
# before the closing process returns; libfuse runs requests on several
# workers at once, so a reader started next could be served before the
# RELEASE's handler ran.  The daemon here is started with every RELEASE
# handler delayed by 300 ms (QUEENFS_TEST_RELEASE_DELAY_MS, a test hook),
# as a worker the scheduler left behind would be: a push followed at once
# by a pop, a listing, stats and a read by name must all see the message.
. "$(dirname "$0")/lib.sh"
QUEENFS_TEST_RELEASE_DELAY_MS=300
export QUEENFS_TEST_RELEASE_DELAY_MS
mount_queenfs

Q="$MNT/queues/q"

test_expect_success 'a pop at once after the push sees it, however late its RELEASE runs' '
	mkdir "$Q" &&
	echo "wait = 0" >"$Q/config" &&
	for i in 1 2 3 4 5; do
		echo "m$i" >"$Q/m$i" &&
		sysc read_nonblock "$Q/next" >got &&
		test_is ok "$(head -n 1 got)" "pop $i" &&
		test_is "m$i" "$(sed -n "2s|^leased/[^/]*/||p" got)" "popped $i" &&
		mv "$Q/$(sed -n 2p got)" "$Q/ack/" || return 1
	done
'

test_expect_success 'a listing, stats and a read by name at once after the push' '
	printf "payload" >"$Q/x1" &&
	ls "$Q/partitions/default" >ls.out &&
	grep -qx x1 ls.out &&
	printf "payload" >"$Q/x2" &&
	test_is payload "$(cat "$Q/partitions/default/x2")" "read by name" &&
	printf "payload" >"$Q/x3" &&
	grep -q "^depth = 3$" "$Q/stats"
'

test_done
