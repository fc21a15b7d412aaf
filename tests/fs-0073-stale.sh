#!/bin/sh
# fs-0073-stale: after kill -9 the mount stays and answers ENOTCONN;
# fs/unstale-mount.sh (run by `make run`) unmounts it, and touches
# nothing else: a live mount, a path that is not mounted.
. "$(dirname "$0")/lib.sh"
mount_queenfs
UNSTALE="$TEST_DIRECTORY/../fs/unstale-mount.sh"
# cleanup_ unmounts $TRASH/st should a case fail with it still mounted
EXTRA_MOUNTS="$EXTRA_MOUNTS st"
mkdir -p "$TRASH/.extra"

test_expect_success 'setup: a second daemon, killed with -9, leaves ENOTCONN' '
	mkdir "$TRASH/st" &&
	{ "$QUEENFS" -f --db "$TRASH/st.db" "$TRASH/st" >"$TRASH/st.out" 2>&1 </dev/null 5>&- & } &&
	P=$! && track_pid $P &&
	k=100 && while ! stat "$TRASH/st/sys" >/dev/null 2>&1 && test $k -gt 0; do
		sleep 0.1; k=$((k - 1)); done &&
	kill -KILL $P && wait $P;
	is_mounted_at "$TRASH/st" &&
	! LC_ALL=C stat "$TRASH/st" 2>err &&
	grep -q "Transport endpoint is not connected" err
'

test_expect_success 'a live mount and an unmounted path are left alone' '
	sh "$UNSTALE" "$MNT" >out 2>&1 &&
	test_line_count = 0 out && is_mounted &&
	sh "$UNSTALE" "$TRASH/nowhere" >out 2>&1 &&
	test_line_count = 0 out
'

test_expect_success 'the stale mount is unmounted, and says so in one line' '
	sh "$UNSTALE" "$TRASH/st" >out 2>&1 &&
	echo "queenfs: $TRASH/st was a stale mount (its daemon died): unmounted it" >expect &&
	test_cmp expect out &&
	! is_mounted_at "$TRASH/st" &&
	mkdir -p "$TRASH/st"
'

test_expect_success 'make run calls it before mkdir -p' '
	grep -A3 "^run:" "$TEST_DIRECTORY/../Makefile" >run &&
	grep -q "fs/unstale-mount.sh \$(MNT)" run
'

test_done
