#!/bin/sh
# fs-0008-config: the queue's config file (every key shown, a write sets
# only the keys it names, unknown keys and bad values fail with EINVAL and
# change nothing, values survive a remount), the keys' effects not covered
# elsewhere (auto_ack, retention, completed_retention), and sys/ counters.
. "$(dirname "$0")/lib.sh"
mount_queenfs

test_expect_success 'setup' '
	q_init c
'

test_expect_success 'config shows every key once, as "key = value", with the defaults' '
	cat "$Q/config" >config &&
	cat >expect <<-\EOF &&
	lease_time = 300
	retry_limit = 3
	dlq = on
	batch = 1
	wait = 30
	delay = 0
	window_buffer = 0
	retention = 0
	completed_retention = 0
	expiry_charges_retry = off
	auto_ack = off
	EOF
	while read -r line; do
		grep -qx "$line" config || { echo "missing: $line"; return 1; }
	done <expect &&
	for k in dedup_window max_message_bytes; do
		grep -q "^$k = [0-9]" config || { echo "missing: $k"; return 1; }
	done &&
	! grep -v "^[a-z_]* = ." config &&
	cut -d" " -f1 config | sort | uniq -d >dups &&
	test_line_count = 0 dups
'

test_expect_success 'echo "lease_time = 60" > config changes only that key' '
	cat "$Q/config" >before &&
	echo "lease_time = 60" >"$Q/config" &&
	cat "$Q/config" >after &&
	sed "s/^lease_time = 300$/lease_time = 60/" before >expect &&
	test_cmp expect after
'

test_expect_success 'a write naming several keys sets them all, leaves the rest' '
	printf "retry_limit = 5\nbatch = 4\ndlq = off\n" >"$Q/config" &&
	cat "$Q/config" >after2 &&
	sed -e "s/^retry_limit = .*/retry_limit = 5/" -e "s/^batch = .*/batch = 4/" \
	    -e "s/^dlq = .*/dlq = off/" after >expect &&
	test_cmp expect after2
'

test_expect_success 'the whole config read back can be written back unchanged' '
	cat "$Q/config" >whole &&
	cat whole >"$Q/config" &&
	cat "$Q/config" >again &&
	test_cmp whole again
'

test_expect_success 'an unknown key fails with EINVAL (the write of a whole line, else the close) and changes nothing' '
	cat "$Q/config" >before &&
	sysc write "$Q/config" "bogus = 1" >actual &&
	grep -q "^close:EINVAL$" actual &&
	! echo "bogus = 1" 2>/dev/null >"$Q/config" &&
	cat "$Q/config" >after &&
	test_cmp before after &&
	grep -q "bogus" "$DAEMON_LOG"
'

test_expect_success 'bad values fail with EINVAL and change nothing' '
	for v in "lease_time = abc" "lease_time = -5" "lease_time = 0" \
	    "batch = 0" "dlq = maybe" "retry_limit = 1.5" "wait =" \
	    "max_message_bytes = 0" "auto_ack = sometimes" "lease_time"; do
		sysc write "$Q/config" "$v" >actual &&
		echo "$v: $(cat actual)" &&
		grep -q "^\(write\|close\):EINVAL$" actual || return 1
	done &&
	cat "$Q/config" >after &&
	test_cmp before after
'

test_expect_success 'one bad line in a write changes none of its keys' '
	sysc write "$Q/config" "$(printf "lease_time = 77\nbatch = zero\n")" >actual &&
	grep -q "^\(write\|close\):EINVAL$" actual &&
	cat "$Q/config" >after &&
	test_cmp before after &&
	grep -q "^lease_time = 60$" after
'

test_expect_success 'settings take effect at once (lease_time sets the lease expiry)' '
	printf "batch = 1\nwait = 1\n" >"$Q/config" &&
	printf x >"$Q/x1" &&
	LINE=$(pop) &&
	exp=$(getfattr --only-values -n user.queen.lease_expires_at "$Q/$LINE") &&
	left=$(( $(date -d "$exp" +%s) - $(date +%s) )) &&
	echo "lease left: $left s" &&
	test $left -ge 55 && test $left -le 61 &&
	mv "$Q/$LINE" "$Q/ack/"
'

test_expect_success 'config values survive a remount' '
	cat "$Q/config" >before &&
	remount &&
	cat "$Q/config" >after &&
	test_cmp before after &&
	grep -q "^lease_time = 60$" after &&
	grep -q "^retry_limit = 5$" after
'

test_expect_success 'each queue has its own config' '
	mkdir "$MNT/queues/c2" &&
	grep -q "^lease_time = 300$" "$MNT/queues/c2/config"
'

test_expect_success 'auto_ack = on: a read of next commits at once, no lease' '
	q_init auto &&
	printf "auto_ack = on\nwait = 1\n" >"$Q/config" &&
	printf one >"$Q/o1" && printf two >"$Q/o2" &&
	pop >got &&
	test -s got &&
	cat got &&
	cat "$Q/stats" >stats &&
	test_is 0 "$(stat_of stats leases)" leases &&
	test_is 1 "$(stat_of stats depth)" depth &&
	grep -q "^partition default: committed = 1," stats &&
	ls -A "$Q/leased" >actual &&
	test_line_count = 0 actual &&
	pop >got2 &&
	! test_cmp got got2 &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'retention = 1: messages older than that are deleted, consumed or not' '
	q_init ret &&
	echo "retention = 1" >"$Q/config" &&
	printf r >"$Q/r1" &&
	test -f "$Q/partitions/default/r1" &&
	wait_until 6 "test \"\$(stat_of \"$Q/stats\" messages)\" = 0" &&
	ls "$Q/partitions/default" >actual &&
	test_line_count = 0 actual
'

test_expect_success 'completed_retention = 1: only what every group passed is deleted' '
	q_init cret &&
	printf "completed_retention = 1\nwait = 1\n" >"$Q/config" &&
	printf 1 >"$Q/k1" && printf 2 >"$Q/k2" &&
	LINE=$(pop) && mv "$Q/$LINE" "$Q/ack/" &&
	wait_until 6 "test \"\$(stat_of \"$Q/stats\" messages)\" = 1" &&
	sleep 1.5 &&
	ls "$Q/partitions/default" >actual &&
	echo k2 >expect &&
	test_cmp expect actual
'

test_expect_success 'sys/metrics counts pushes, pops and acks' '
	cat "$MNT/sys/metrics" >m0 &&
	q_init m &&
	printf m >"$Q/m1" &&
	LINE=$(pop) && mv "$Q/$LINE" "$Q/ack/" &&
	cat "$MNT/sys/metrics" >m1 &&
	for c in pushes pops acks; do
		a=$(sed -n "s/^queenfs_${c}_total //p" m0) &&
		b=$(sed -n "s/^queenfs_${c}_total //p" m1) &&
		test_is $((a + 1)) "$b" "queenfs_${c}_total" || return 1
	done &&
	grep -q "^queenfs_depth{queue=\"m\",group=\"__QUEUE_MODE__\"} 0$" m1 &&
	grep -q "^queenfs_messages{queue=\"m\"} 1$" m1
'

test_expect_success 'sys/health stays ok and sys/stats adds up the queues' '
	echo ok >expect &&
	cat "$MNT/sys/health" >actual &&
	test_cmp expect actual &&
	ls "$MNT/queues" | wc -l >n &&
	test_is "$(cat n | tr -d " ")" "$(stat_of "$MNT/sys/stats" queues)" queues
'

test_done
