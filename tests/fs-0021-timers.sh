#!/bin/sh
# fs-0021-timers: queues/<q>/timers/<key> (docs/design.md#mount-timers): the
# contents are the payload, the mtime is the due time (touch -d), ls -l
# shows the schedule, a rewrite upserts, rm cancels, a timer written
# without a time fires after the queue's timer_delay, and a timer fires
# exactly once, also across kill -9 of the daemon, then disappears.
. "$(dirname "$0")/lib.sh"
mount_queenfs

# msgs [PARTITION]: the messages of $Q's partition, one "txid" a line
msgs () {
	ls "$Q/partitions/${1:-default}" 2>/dev/null
}

# fired_once PAYLOAD: the one message in $Q is PAYLOAD, one push, no timer
fired_once () {
	payloads >actual &&
	echo "$1" >expect &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$Q/stats" pushed)" pushed &&
	ls -A "$Q/timers" >actual &&
	test_line_count = 0 actual
}

# payloads: the payloads of $Q's default partition, one a line, in order
payloads () {
	for m in $(msgs); do
		cat "$Q/partitions/default/$m" && echo || return 1
	done
}

# mtime_ms FILE: the modification time in ms
mtime_ms () {
	python3 -c 'import os, sys; print(os.stat(sys.argv[1]).st_mtime_ns // 1000000)' "$1"
}

now_ms () {
	python3 -c 'import time; print(int(time.time() * 1000))'
}

# near WANT GOT SLACK: |WANT - GOT| <= SLACK
near () {
	d_=$(($1 - $2))
	test ${d_#-} -le "$3" && return 0
	echo "near: want $1, got $2 (off by $d_, slack $3)"
	return 1
}

test_expect_success 'setup: queue t, timer_delay = 3600 so only touch -d decides' '
	q_init t &&
	echo "timer_delay = 3600" >"$Q/config" &&
	test_is 3600 "$(stat_of "$Q/config" timer_delay)" timer_delay &&
	ls -A "$Q/timers" >actual &&
	test_line_count = 0 actual
'

test_expect_success 'a timer: contents are the payload, touch -d sets when it fires' '
	printf pay-1 >"$Q/timers/k1" &&
	printf cancel-me >"$Q/timers/kc" &&
	touch -d "+8 seconds" "$Q/timers/k1" "$Q/timers/kc" &&
	DUE=$(mtime_ms "$Q/timers/k1") &&
	near "$(($(now_ms) + 8000))" "$DUE" 4000 &&
	printf pay-1 >expect &&
	test_cmp expect "$Q/timers/k1" &&
	test_is 5 "$(stat -c %s "$Q/timers/k1")" size &&
	ls "$Q/timers" >actual &&
	printf "%s\n" k1 kc >expect &&
	test_cmp expect actual &&
	test_is 0 "$(stat_of "$Q/stats" pushed)" "pushed before the due time" &&
	msgs >actual &&
	test_line_count = 0 actual
'

test_expect_success 'rm cancels a timer' '
	rm "$Q/timers/kc" &&
	ls "$Q/timers" >actual &&
	echo k1 >expect &&
	test_cmp expect actual &&
	echo open:ENOENT >expect &&
	sysc read "$Q/timers/kc" >actual &&
	test_cmp expect actual &&
	echo unlink:ENOENT >expect &&
	sysc unlink "$Q/timers/kc" >actual &&
	test_cmp expect actual
'

test_expect_success 'nothing is pushed before the due time; then exactly the payload, once' '
	test "$(now_ms)" -lt "$DUE" &&
	msgs >actual &&
	test_line_count = 0 actual &&
	wait_until 15 "test -n \"\$(msgs)\"" &&
	test "$(now_ms)" -ge "$DUE" &&
	sleep 1.2 &&
	payloads >actual &&
	echo pay-1 >expect &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$Q/stats" pushed)" pushed &&
	m=$(msgs) &&
	at=$(getfattr --only-values -n user.queen.created_at "$Q/partitions/default/$m") &&
	test "$(date -d "$at" +%s%3N)" -ge "$DUE"
'

test_expect_success 'a fired timer is gone from timers/' '
	ls -A "$Q/timers" >actual &&
	test_line_count = 0 actual &&
	echo open:ENOENT >expect &&
	sysc read "$Q/timers/k1" >actual &&
	test_cmp expect actual
'

test_expect_success 'ls -l shows every pending timer and when it fires' '
	printf a >"$Q/timers/la" && printf bb >"$Q/timers/lb" &&
	touch -d "2031-01-02 03:04:05 UTC" "$Q/timers/la" &&
	touch -d "2032-06-07 08:09:10 UTC" "$Q/timers/lb" &&
	TZ=UTC ls -l --time-style=+%Y-%m-%dT%H:%M:%S "$Q/timers" >ll &&
	cat ll &&
	awk "NF >= 7 { print \$(NF-1), \$NF, \$(NF-2) }" ll >actual &&
	printf "%s\n" "2031-01-02T03:04:05 la 1" "2032-06-07T08:09:10 lb 2" >expect &&
	test_cmp expect actual
'

test_expect_success 'touch -d reschedules and keeps the payload' '
	touch -d "2033-01-01 00:00:00 UTC" "$Q/timers/lb" &&
	test_is "$(date -d "2033-01-01 00:00:00 UTC" +%s)" "$(stat -c %Y "$Q/timers/lb")" mtime &&
	printf bb >expect &&
	test_cmp expect "$Q/timers/lb"
'

test_expect_success 'a rewrite upserts: one timer, the new payload, due after timer_delay' '
	printf "new payload" >"$Q/timers/lb" &&
	ls "$Q/timers" >actual &&
	printf "%s\n" la lb >expect &&
	test_cmp expect actual &&
	printf "new payload" >expect &&
	test_cmp expect "$Q/timers/lb" &&
	near "$(($(now_ms) + 3600000))" "$(mtime_ms "$Q/timers/lb")" 2000
'

test_expect_success PYTHON 'a time set on the open file before close goes with the write' '
	python3 - "$Q/timers/py" <<\PYEOF &&
import os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, b"from python")
os.utime(fd, (1999999999, 1999999999))
os.close(fd)
PYEOF
	test_is 1999999999 "$(stat -c %Y "$Q/timers/py")" mtime &&
	printf "from python" >expect &&
	test_cmp expect "$Q/timers/py"
'

test_expect_success 'pending timers survive a clean restart, schedule and payload' '
	remount &&
	ls "$Q/timers" >actual &&
	printf "%s\n" la lb py >expect &&
	test_cmp expect actual &&
	test_is "$(date -d "2031-01-02 03:04:05 UTC" +%s)" "$(stat -c %Y "$Q/timers/la")" mtime &&
	printf a >expect &&
	test_cmp expect "$Q/timers/la" &&
	test_is 1 "$(stat_of "$Q/stats" pushed)" pushed
'

test_expect_success 'a timer written without a time fires after the queue timer_delay' '
	q_init td &&
	echo "timer_delay = 2" >"$Q/config" &&
	printf delayed >"$Q/timers/d1" &&
	T0=$(now_ms) &&
	near "$((T0 + 2000))" "$(mtime_ms "$Q/timers/d1")" 1100 &&
	sleep 0.5 &&
	msgs >actual &&
	test_line_count = 0 actual &&
	wait_until 5 "test -n \"\$(msgs)\"" &&
	test "$(now_ms)" -ge "$((T0 + 1000))" &&
	payloads >actual &&
	echo delayed >expect &&
	test_cmp expect actual &&
	ls -A "$Q/timers" >actual &&
	test_line_count = 0 actual
'

test_expect_success 'timer_delay = 0 (the default): a plain write fires at once' '
	q_init t0 &&
	test_is 0 "$(stat_of "$Q/config" timer_delay)" "default timer_delay" &&
	printf now >"$Q/timers/z" &&
	wait_until 3 "test -n \"\$(msgs)\"" &&
	payloads >actual &&
	echo now >expect &&
	test_cmp expect actual
'

test_expect_success 'a timer fires exactly once across kill -9 of the daemon' '
	q_init crash &&
	echo "timer_delay = 3600" >"$Q/config" &&
	printf boom >"$Q/timers/once" &&
	touch -d "+2 seconds" "$Q/timers/once" &&
	DUE=$(mtime_ms "$Q/timers/once") &&
	kill9_daemon &&
	sleep 2.5 &&
	test "$(now_ms)" -gt "$DUE" &&
	remount &&
	wait_until 5 "test -n \"\$(msgs)\"" &&
	sleep 1.2 &&
	fired_once boom
'

test_expect_success 'and it does not fire again after another kill -9 and remount' '
	kill9_daemon &&
	remount &&
	sleep 1.2 &&
	fired_once boom
'

test_expect_success 'a bad timer key is EINVAL and schedules nothing' '
	Q="$MNT/queues/t" &&
	for n in "a b" "x*y"; do
		echo open:EINVAL >expect &&
		sysc create "$Q/timers/$n" x >actual &&
		test_cmp expect actual || return 1
	done &&
	ls "$Q/timers" >actual &&
	printf "%s\n" la lb py >expect &&
	test_cmp expect actual
'

test_expect_success 'a payload over max_message_bytes: write fails EFBIG, no timer' '
	q_init big &&
	printf "timer_delay = 3600\nmax_message_bytes = 10\n" >"$Q/config" &&
	echo write:EFBIG >expect &&
	sysc create "$Q/timers/huge" "0123456789abcdef" >actual &&
	test_cmp expect actual &&
	ls -A "$Q/timers" >actual &&
	test_line_count = 0 actual
'

test_expect_success 'a queue holding only a timer cannot be removed: ENOTEMPTY' '
	q_init only &&
	echo "timer_delay = 3600" >"$Q/config" &&
	printf x >"$Q/timers/t" &&
	echo rmdir:ENOTEMPTY >expect &&
	sysc rmdir "$Q" >actual &&
	test_cmp expect actual &&
	rm "$Q/timers/t" &&
	rmdir "$Q" &&
	test_path_is_missing "$Q"
'

# What this mount holds of timers/ that the store has not scheduled yet
# is listed and removable like what it has: a staging dot-file (the
# rsync way to write a timer), and a timer still open for writing.  On
# the code before, neither was listed and rm of either answered ENOENT
# (the staging file stayed until swept).
test_expect_success 'a staging file and a timer being written: ls lists them, rm removes them' '
	q_init stage &&
	echo "timer_delay = 3600" >"$Q/config" &&
	echo x >"$Q/timers/.t" &&
	ls -A "$Q/timers" >actual &&
	echo .t >expect &&
	test_cmp expect actual &&
	rm "$Q/timers/.t" &&
	test_path_is_missing "$Q/timers/.t" &&
	ls -A "$Q/timers" >actual &&
	test_line_count = 0 actual &&
	exec 6>"$Q/timers/w" &&
	echo y >&6 &&
	ls -A "$Q/timers" >actual &&
	echo w >expect &&
	test_cmp expect actual &&
	rm "$Q/timers/w" &&
	exec 6>&- &&
	ls -A "$Q/timers" >actual &&
	test_line_count = 0 actual
'

test_expect_success 'an append to a timer fails EINVAL, payload and due time stay' '
	q_init apt &&
	printf "timer_delay = 3600\n" >"$Q/config" &&
	printf tpay >"$Q/timers/t" &&
	touch -d "+2 hours" "$Q/timers/t" &&
	due=$(mtime_ms "$Q/timers/t") &&
	test_must_fail sh -c "echo more >>\"$Q/timers/t\"" &&
	printf tpay >expect &&
	test_cmp expect "$Q/timers/t" &&
	test_is "$due" "$(mtime_ms "$Q/timers/t")" "the due time" &&
	grep -q "write queues/apt/timers/t at byte 4: an open without O_TRUNC starts an empty timer" "$DAEMON_LOG"
'

test_done
