#!/bin/sh
# fs-0074-log: where the daemon's log goes.  --log FILE (and -o log=),
# --log-level (and -o log_level=) drop what is below the level; without -f
# and without a syslog socket the daemon says on stderr which file it logs
# to, and logs there.
. "$(dirname "$0")/lib.sh"
mount_queenfs

# bg_up NAME ARGS...: a daemon on $TRASH/NAME.db mounted on $TRASH/NAME,
# started in the foreground (-f is in ARGS when wanted); its stdout and
# stderr go to $TRASH/NAME.out.  Waits for the mount.
bg_up () {
	bu_n_=$1
	shift
	mkdir -p "$TRASH/$bu_n_" &&
	{ "$QUEENFS" --db "$TRASH/$bu_n_.db" "$@" "$TRASH/$bu_n_" \
	    >"$TRASH/$bu_n_.out" 2>&1 </dev/null 5>&- & } &&
	BG_PID=$! && track_pid $BG_PID &&
	wait_mount "$TRASH/$bu_n_"
}

# wait_mount DIR: up to 10 s for DIR to be a working queenfs mount
wait_mount () {
	wm_k_=100
	while test $wm_k_ -gt 0; do
		is_mounted_at "$1" && stat "$1/sys" >/dev/null 2>&1 && return 0
		sleep 0.1
		wm_k_=$((wm_k_ - 1))
	done
	echo "no mount on $1"
	return 1
}

# pid_on DIR: the pid of the queenfs serving DIR (a daemon that forked)
pid_on () {
	for p_ in /proc/[0-9]*; do
		tr "\0" " " <"$p_/cmdline" 2>/dev/null |
		    grep -q "^$QUEENFS .*$1 $" && { echo "${p_#/proc/}"; return 0; }
	done
	return 1
}

# bg_down DIR PID: unmount DIR, wait for PID to exit
bg_down () {
	fusermount3 -u "$1" || return 1
	bd_k_=100
	while kill -0 "$2" 2>/dev/null && test $bd_k_ -gt 0; do
		sleep 0.1
		bd_k_=$((bd_k_ - 1))
	done
	! kill -0 "$2" 2>/dev/null
}

# test_expect_code_ CODE CMD...: CMD exits with CODE
test_expect_code_ () {
	tec_want_=$1
	shift
	"$@"
	tec_rc_=$?
	test "$tec_rc_" = "$tec_want_" ||
		{ echo "exit $tec_rc_, want $tec_want_: $*"; return 1; }
}

# refuse DIR: an operation the daemon refuses and logs at info level
refuse () {
	! ln -s target "$1/queues/l" 2>/dev/null
}

test_expect_success '--log FILE: lines go to the file, with time, pid and level' '
	bg_up f1 -f --log "$TRASH/f1.log" &&
	refuse "$TRASH/f1" &&
	bg_down "$TRASH/f1" $BG_PID &&
	grep -Eq "^20[0-9-]+T[0-9:.]+Z queenfs\\[[0-9]+\\] info: symlink queues/l -> target: the mount holds no links \\(EPERM\\)$" "$TRASH/f1.log" &&
	! grep -q symlink "$TRASH/f1.out"
'

test_expect_success '--log-level warn drops info lines' '
	bg_up f2 -f --log "$TRASH/f2.log" --log-level warn &&
	refuse "$TRASH/f2" &&
	bg_down "$TRASH/f2" $BG_PID &&
	! grep -q symlink "$TRASH/f2.log" &&
	! grep -q symlink "$TRASH/f2.out"
'

test_expect_success '-o log=FILE,log_level=debug as in fstab' '
	bg_up f3 -f -o "log=$TRASH/f3.log,log_level=debug" &&
	refuse "$TRASH/f3" &&
	bg_down "$TRASH/f3" $BG_PID &&
	grep -q "info: symlink queues/l" "$TRASH/f3.log"
'

test_expect_success 'without -f and no syslog socket: stderr says where the log goes' '
	mkdir -p "$TRASH/f4" &&
	QUEENFS_SYSLOG_SOCKET=$TRASH/no-such-socket \
	    "$QUEENFS" --db "$TRASH/f4dir/f4.db" "$TRASH/f4" \
	    >"$TRASH/f4.out" 2>&1 </dev/null 5>&- &&
	wait_mount "$TRASH/f4" &&
	P=$(pid_on "$TRASH/f4") && track_pid "$P" &&
	echo "queenfs: no syslog socket (/dev/log): the log goes to $TRASH/f4dir/queenfs.log" >expect &&
	test_cmp expect "$TRASH/f4.out" &&
	refuse "$TRASH/f4" &&
	bg_down "$TRASH/f4" "$P" &&
	grep -q "queenfs\\[$P\\] info: symlink queues/l" "$TRASH/f4dir/queenfs.log"
'

test_expect_success 'a bad --log-level or an unwritable --log: exit 2, nothing mounted' '
	mkdir -p "$TRASH/f5" &&
	test_expect_code_ 2 "$QUEENFS" -f --db "$TRASH/f5.db" --log-level loud "$TRASH/f5" 2>err &&
	grep -q "^queenfs: --log-level: error, warn, info or debug$" err &&
	test_expect_code_ 2 "$QUEENFS" -f --db "$TRASH/f5.db" --log "$TRASH/no/dir/x.log" "$TRASH/f5" 2>err &&
	grep -q "^queenfs: --log $TRASH/no/dir/x.log: No such file or directory$" err &&
	! is_mounted_at "$TRASH/f5"
'

test_done
