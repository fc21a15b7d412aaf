#!/bin/sh
# fs-0076-harness-stop: a mount test whose reader is gone (prove killed
# before it) stops its daemon and its background processes and unmounts,
# whether it goes on writing TAP or is then stopped by TERM: by default
# the SIGPIPE of its next write killed it on the spot, its mount left.
. "$(dirname "$0")/lib.sh"
# the parent's own mount: its temp dir is where the cases run
mount_queenfs

# a test of lib.sh's own: mounts, says where, then MODE: "wait" waits to
# be stopped, "talk" writes a line of TAP every tenth of a second
write_child () {
	cat >child.sh <<-EOF
	. "$TEST_DIRECTORY/lib.sh"
	mount_queenfs
	sleep 120 &
	track_pid \$!
	echo "\$MNT \$DAEMON_PID \$!" >"$PWD/child.info"
	if test "\$1" = wait; then
		test_expect_success 'waits' 'wait'
	fi
	i=0
	while test \$i -lt 300; do
		say "# \$i"
		sleep 0.1
		i=\$((i + 1))
	done
	test_done
	EOF
}

# MODE [SIGNAL]: the child in MODE, its reader killed, then SIGNAL sent
stop_child () {
	rm -f child.info out &&
	mkfifo out &&
	{ QUEENFS_BUILD="$QUEENFS_BUILD" TMPDIR="$PWD" sh child.sh $1 \
	    >out 2>child.err & } &&
	child=$! && track_pid $child &&
	{ cat out >/dev/null & } && reader=$! && track_pid $reader &&
	i=0 &&
	while ! test -s child.info && test $i -lt 100; do
		sleep 0.1
		i=$((i + 1))
	done &&
	read -r cmnt cdaemon csleep <child.info &&
	is_mounted_at "$cmnt" &&
	kill $reader && wait $reader
	test -n "$2" && kill -$2 $child
	wait $child
	echo "child exited $?"
	i=0
	while kill -0 $cdaemon 2>/dev/null && test $i -lt 50; do
		sleep 0.1
		i=$((i + 1))
	done
	! is_mounted_at "$cmnt" &&
	! kill -0 $cdaemon 2>/dev/null &&
	! kill -0 $csleep 2>/dev/null && return 0
	# what the child left: stopped here, and the case fails
	is_mounted_at "$cmnt" && fusermount3 -uz "$cmnt"
	stop_pid $cdaemon
	stop_pid $csleep
	return 1
}

test_expect_success 'a child test that mounts' '
	write_child &&
	test -s child.sh
'

test_expect_success 'its reader gone, it stops at its next line: no mount, no daemon, no sleeper' '
	stop_child talk
'

test_expect_success 'its reader gone, then TERM: the same' '
	stop_child wait TERM
'

test_done
