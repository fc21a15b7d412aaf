#!/bin/sh
# fs-0006-ack: every rename of docs/design.md#mount-ack's table with its
# outcome (0, ESTALE, EALREADY, ENOENT, EINVAL, EPERM), the retry budget
# and the DLQ (with user.queen.error), lease renewal by touch, lease expiry.
. "$(dirname "$0")/lib.sh"
mount_queenfs

# committed [PARTITION]: the queue-mode cursor of $Q in that partition
committed () {
	sed -n "s/^partition ${1:-default}: committed = \([0-9]*\),.*/\1/p" "$Q/stats"
}

# take: pop one line into $LINE and set $MSG to the leased file's path
take () {
	LINE=$(pop) && MSG="$Q/$LINE" && echo "popped $LINE"
}

test_expect_success 'setup: five messages, wait = 1' '
	q_init a &&
	echo "wait = 1" >"$Q/config" &&
	for i in 1 2 3 4 5; do
		printf "payload %s" $i >"$Q/m$i" || return 1
	done
'

test_expect_success 'leased/L/x -> ack/ commits: the cursor moves to x' '
	take && test_is m1 "${LINE##*/}" txid &&
	echo ok >expect &&
	sysc rename "$MSG" "$Q/ack/m1" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(committed)" committed &&
	test_is 4 "$(stat_of "$Q/stats" depth)" depth &&
	test_is 0 "$(stat_of "$Q/stats" leases)" leases &&
	ls "$Q/leased" >actual &&
	test_line_count = 0 actual &&
	test_path_is_missing "$MSG"
'

test_expect_success 'ack/ lists nothing after an ack; the log keeps the message' '
	ls -A "$Q/ack" >actual &&
	test_line_count = 0 actual &&
	test -f "$Q/partitions/default/m1"
'

test_expect_success 'leased/L/x -> failed/ charges one retry and redelivers x' '
	take && test_is m2 "${LINE##*/}" txid &&
	mv "$MSG" "$Q/failed/" &&
	test_is 1 "$(committed)" committed &&
	take && test_is m2 "${LINE##*/}" "redelivered txid" &&
	test_is 1 "$(getfattr --only-values -n user.queen.retry_count "$MSG")" retry_count &&
	grep -q "^partition default: .*retry_count = 1$" "$Q/stats"
'

test_expect_success 'leased/L/x -> retry/ redelivers x and charges nothing' '
	mv "$MSG" "$Q/retry/" &&
	test_is 1 "$(committed)" committed &&
	take && test_is m2 "${LINE##*/}" "redelivered txid" &&
	test_is 1 "$(getfattr --only-values -n user.queen.retry_count "$MSG")" retry_count
'

test_expect_success 'an ack after failures resets the budget' '
	mv "$MSG" "$Q/ack/" &&
	test_is 2 "$(committed)" committed &&
	grep -q "^partition default: .*retry_count = 0$" "$Q/stats"
'

test_expect_success ATTR 'setfattr user.queen.error, then -> dlq/ dead-letters x with that error' '
	take && test_is m3 "${LINE##*/}" txid &&
	setfattr -n user.queen.error -v "bad input: no id" "$MSG" &&
	test_is "bad input: no id" "$(getfattr --only-values -n user.queen.error "$MSG")" error &&
	mv "$MSG" "$Q/dlq/" &&
	test_is 3 "$(committed)" committed &&
	test_is 1 "$(stat_of "$Q/stats" dlq)" dlq &&
	(cd "$Q/dlq" && find . -type f) >actual &&
	echo ./default/m3 >expect &&
	test_cmp expect actual
'

test_expect_success ATTR 'the DLQ entry keeps payload, error, group, retry count and time' '
	D="$Q/dlq/default/m3" &&
	printf "payload 3" >expect &&
	test_cmp expect "$D" &&
	test_is "bad input: no id" "$(getfattr --only-values -n user.queen.error "$D")" error &&
	test_is __QUEUE_MODE__ "$(getfattr --only-values -n user.queen.group "$D")" group &&
	test_is 0 "$(getfattr --only-values -n user.queen.retry_count "$D")" retry_count &&
	test_is 3 "$(getfattr --only-values -n user.queen.offset "$D")" offset &&
	getfattr --only-values -n user.queen.failed_at "$D" >t &&
	grep -q "^20[0-9-]*T[0-9:.]*Z$" t
'

test_expect_success 'the message after a dead letter comes next' '
	take && test_is m4 "${LINE##*/}" txid &&
	mv "$MSG" "$Q/ack/" &&
	take && test_is m5 "${LINE##*/}" txid &&
	mv "$MSG" "$Q/ack/" &&
	test_is 5 "$(committed)" committed &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'leased/L -> ack/ completes the whole batch in one move' '
	echo "batch = 3" >"$Q/config" &&
	for i in 6 7 8; do printf "p%s" $i >"$Q/m$i" || return 1; done &&
	pop >lines &&
	test_line_count = 3 lines &&
	L=$(sed -n "1s|^leased/\([^/]*\)/.*|\1|p" lines) &&
	echo ok >expect &&
	sysc rename "$Q/leased/$L" "$Q/ack/$L" >actual &&
	test_cmp expect actual &&
	test_is 8 "$(committed)" committed &&
	test_is 0 "$(stat_of "$Q/stats" leases)" leases &&
	test_path_is_missing "$Q/leased/$L"
'

test_expect_success 'a partial ack keeps the lease on the rest of the span' '
	for i in 9 10 11; do printf "p%s" $i >"$Q/m$i" || return 1; done &&
	pop >lines &&
	L=$(sed -n "1s|^leased/\([^/]*\)/.*|\1|p" lines) &&
	mv "$Q/leased/$L/m10" "$Q/ack/" &&
	test_is 10 "$(committed)" "committed (m9 implicitly complete)" &&
	test_is 1 "$(stat_of "$Q/stats" leases)" leases &&
	ls "$Q/leased/$L" >actual &&
	echo m11 >expect &&
	test_cmp expect actual &&
	mv "$Q/leased/$L/m11" "$Q/ack/" &&
	test_is 11 "$(committed)" committed &&
	test_is 0 "$(stat_of "$Q/stats" leases)" leases
'

test_expect_success 'failed in the middle of a batch redelivers x and what follows' '
	for i in 12 13 14; do printf "p%s" $i >"$Q/m$i" || return 1; done &&
	pop >lines &&
	L=$(sed -n "1s|^leased/\([^/]*\)/.*|\1|p" lines) &&
	mv "$Q/leased/$L/m12" "$Q/ack/" &&
	mv "$Q/leased/$L/m13" "$Q/failed/" &&
	test_is 12 "$(committed)" committed &&
	pop >lines &&
	sed "s|.*/||" lines >actual &&
	printf "%s\n" m13 m14 >expect &&
	test_cmp expect actual &&
	L=$(sed -n "1s|^leased/\([^/]*\)/.*|\1|p" lines) &&
	mv "$Q/leased/$L" "$Q/ack/" &&
	test_is 14 "$(committed)" committed &&
	echo "batch = 1" >"$Q/config"
'

test_expect_success 'partitions/p/x -> ack/ is a lease-less ack: the cursor moves' '
	printf a >"$Q/partitions/p2/x1" && printf b >"$Q/partitions/p2/x2" &&
	printf c >"$Q/partitions/p2/x3" &&
	echo ok >expect &&
	a0=$(stat_of "$MNT/sys/stats" acks) &&
	sysc rename "$Q/partitions/p2/x2" "$Q/ack/x2" >actual &&
	test_cmp expect actual &&
	test_is 2 "$(committed p2)" committed &&
	test_is $((a0 + 1)) "$(stat_of "$MNT/sys/stats" acks)" "acks" &&
	test -f "$Q/partitions/p2/x2" &&
	take && test_is x3 "${LINE##*/}" "next after the lease-less ack"
'

test_expect_success 'a lease-less ack ignores the live lease of another worker' '
	sysc rename "$Q/partitions/p2/x3" "$Q/ack/x3" >actual &&
	test_cmp expect actual &&
	test_is 3 "$(committed p2)" committed &&
	test_is 0 "$(stat_of "$Q/stats" leases)" leases
'

test_expect_success 'a duplicate completed at or below the cursor is a harmless 0' '
	echo ok >expect &&
	a0=$(stat_of "$MNT/sys/stats" acks) &&
	sysc rename "$Q/partitions/p2/x1" "$Q/ack/x1" >actual &&
	test_cmp expect actual &&
	sysc rename "$Q/partitions/default/m1" "$Q/ack/m1" >actual &&
	test_cmp expect actual &&
	test_is 3 "$(committed p2)" committed &&
	test_is 14 "$(committed)" committed &&
	test_is "$a0" "$(stat_of "$MNT/sys/stats" acks)" "acks (the repeats ack nothing)"
'

test_expect_success 'failed/retry/dlq below the cursor: EALREADY, nothing moves' '
	for t in failed retry dlq; do
		echo rename:EALREADY >expect &&
		sysc rename "$Q/partitions/p2/x2" "$Q/$t/x2" >actual &&
		test_cmp expect actual || return 1
	done &&
	test_is 3 "$(committed p2)" committed &&
	test_is 1 "$(stat_of "$Q/stats" dlq)" dlq
'

test_expect_success 'an unknown transactionId: ENOENT' '
	echo rename:ENOENT >expect &&
	sysc rename "$Q/partitions/p2/nosuch" "$Q/ack/nosuch" >actual &&
	test_cmp expect actual &&
	printf n >"$Q/partitions/p2/x4" &&
	take && test_is x4 "${LINE##*/}" txid &&
	L=${LINE#leased/} && L=${L%%/*} &&
	sysc rename "$Q/leased/$L/nosuch" "$Q/ack/nosuch" >actual &&
	test_cmp expect actual
'

test_expect_success 'the target must be ack/ failed/ retry/ dlq/ under the same name: EINVAL' '
	echo rename:EINVAL >expect &&
	mkdir -p "$Q/groups/g9" &&
	for to in "$Q/x4" "$Q/partitions/p2/x4" "$Q/partitions/p2/other" \
	    "$Q/ack/other" "$Q/failed/other" "$Q/leased/x4" "$Q/groups/g9/x4"; do
		sysc rename "$MSG" "$to" >actual &&
		test_cmp expect actual || return 1
	done &&
	test_is 1 "$(stat_of "$Q/stats" leases)" "the lease is untouched" &&
	test_is 3 "$(committed p2)" committed &&
	test -f "$MSG"
'

test_expect_success 'renames never answer EXDEV: another queue ack/ is EINVAL' '
	mkdir "$MNT/queues/other" &&
	echo rename:EINVAL >expect &&
	sysc rename "$MSG" "$MNT/queues/other/ack/x4" >actual &&
	test_cmp expect actual &&
	sysc rename "$Q/partitions/p2/x4" "$MNT/queues/other/ack/x4" >actual &&
	test_cmp expect actual &&
	test -f "$MSG" &&
	mv "$MSG" "$Q/ack/" &&
	test_is 4 "$(committed p2)" committed
'

test_expect_success 'creating files inside ack/ failed/ retry/ is EPERM' '
	for t in ack failed retry; do
		echo open:EPERM >expect &&
		sysc create "$Q/$t/made-up" x >actual &&
		test_cmp expect actual &&
		echo mkdir:EPERM >expect &&
		sysc mkdir "$Q/$t/dir" >actual &&
		test_cmp expect actual || return 1
	done &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'unlinking inside ack/ failed/ retry/ is refused' '
	for t in ack failed retry; do
		sysc unlink "$Q/$t/m1" >actual &&
		grep -q "^unlink:E\(PERM\|NOENT\)$" actual || return 1
	done
'

test_expect_success 'mv of a copy from another filesystem into ack/ fails and fakes nothing' '
	printf fake >m15 &&
	test_must_fail mv m15 "$Q/ack/" &&
	test -f m15 &&
	test_must_fail cp m15 "$Q/failed/" &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth &&
	test_is 14 "$(committed)" committed &&
	test_path_is_missing "$Q/partitions/default/m15"
'

test_expect_success 'touch of the lease dir or of a leased file renews the lease' '
	q_init renew &&
	printf "lease_time = 3\nwait = 1\n" >"$Q/config" &&
	printf r >"$Q/r1" &&
	take &&
	L=${LINE#leased/} && L=${L%%/*} &&
	e0=$(getfattr --only-values -n user.queen.lease_expires_at "$MSG") &&
	sleep 1.5 &&
	touch "$Q/leased/$L" &&
	e1=$(getfattr --only-values -n user.queen.lease_expires_at "$MSG") &&
	test "$(date -d "$e1" +%s%N)" -gt "$(date -d "$e0" +%s%N)" &&
	sleep 1.5 &&
	touch "$MSG" &&
	sleep 1.5 &&
	echo ok >expect &&
	sysc rename "$MSG" "$Q/ack/r1" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(committed)" committed
'

test_expect_success 'an expired lease: ESTALE, nothing moves, the message redelivers free of charge' '
	q_init expire &&
	printf "lease_time = 1\nwait = 1\n" >"$Q/config" &&
	printf e >"$Q/e1" &&
	take && OLD=$MSG &&
	sleep 2 &&
	echo rename:ESTALE >expect &&
	sysc rename "$OLD" "$Q/ack/e1" >actual &&
	test_cmp expect actual &&
	test_is 0 "$(committed)" committed &&
	echo "lease_time = 30" >"$Q/config" &&
	take && test_is e1 "${LINE##*/}" "redelivered" &&
	test_is 0 "$(getfattr --only-values -n user.queen.retry_count "$MSG")" retry_count
'

test_expect_success 'a lease now held by another worker: ESTALE for the old one' '
	sysc rename "$OLD" "$Q/failed/e1" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$Q/stats" leases)" leases &&
	echo ok >expect &&
	sysc rename "$MSG" "$Q/ack/e1" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(committed)" committed
'

test_expect_success 'a lease released by an earlier ack: ESTALE' '
	q_init released &&
	printf "batch = 2\nwait = 1\n" >"$Q/config" &&
	printf a >"$Q/s1" && printf b >"$Q/s2" &&
	pop >lines &&
	L=$(sed -n "1s|^leased/\([^/]*\)/.*|\1|p" lines) &&
	mv "$Q/leased/$L/s1" "$Q/retry/" &&
	echo rename:ESTALE >expect &&
	sysc rename "$Q/leased/$L/s2" "$Q/ack/s2" >actual &&
	test_cmp expect actual &&
	test_is 0 "$(committed)" committed
'

test_expect_success 'expiry_charges_retry = on: an expired lease costs one retry' '
	q_init charged &&
	printf "lease_time = 1\nwait = 1\nexpiry_charges_retry = on\n" >"$Q/config" &&
	printf c >"$Q/c1" &&
	take &&
	sleep 1.5 &&
	take && test_is c1 "${LINE##*/}" redelivered &&
	test_is 1 "$(getfattr --only-values -n user.queen.retry_count "$MSG")" retry_count
'

test_expect_success 'retry_limit = 2: two failures redeliver, the third dead-letters' '
	q_init budget &&
	printf "retry_limit = 2\nwait = 1\n" >"$Q/config" &&
	printf b1 >"$Q/b1" && printf b2 >"$Q/b2" &&
	for n in 0 1; do
		take && test_is b1 "${LINE##*/}" "delivery $n" &&
		test_is $n "$(getfattr --only-values -n user.queen.retry_count "$MSG")" retry_count &&
		mv "$MSG" "$Q/failed/" || return 1
	done &&
	take && test_is b1 "${LINE##*/}" "third delivery" &&
	setfattr -n user.queen.error -v "gave up" "$MSG" &&
	mv "$MSG" "$Q/failed/" &&
	test_is 1 "$(stat_of "$Q/stats" dlq)" dlq &&
	test -f "$Q/dlq/default/b1" &&
	test_is "gave up" "$(getfattr --only-values -n user.queen.error "$Q/dlq/default/b1")" error &&
	test_is 2 "$(getfattr --only-values -n user.queen.retry_count "$Q/dlq/default/b1")" retry_count &&
	take && test_is b2 "${LINE##*/}" "after the dead letter"
'

test_expect_success 'dlq = off: an exhausted message is dropped, not dead-lettered' '
	q_init dropped &&
	printf "retry_limit = 0\ndlq = off\nwait = 1\n" >"$Q/config" &&
	printf d1 >"$Q/d1" && printf d2 >"$Q/d2" &&
	take && test_is d1 "${LINE##*/}" txid &&
	mv "$MSG" "$Q/failed/" &&
	test_is 0 "$(stat_of "$Q/stats" dlq)" dlq &&
	ls -A "$Q/dlq" >actual &&
	test_line_count = 0 actual &&
	take && test_is d2 "${LINE##*/}" "after the drop"
'

test_expect_success 'a purged hash row makes a lease-less ack unresolvable: ENOENT' '
	q_init purged &&
	echo "hash_retention = 1" >"$Q/config" &&
	printf h >"$Q/h1" &&
	sleep 1.2 &&
	printf h >"$Q/h2" &&
	sleep 1.5 &&
	echo rename:ENOENT >expect &&
	sysc rename "$Q/partitions/default/h1" "$Q/ack/h1" >actual &&
	test_cmp expect actual &&
	test_is 0 "$(committed)" committed
'

test_expect_success 'the message itself stays in the log, listed and readable' '
	ls "$Q/partitions/default" >actual &&
	printf "%s\n" h1 h2 >expect &&
	test_cmp expect actual &&
	printf h >expect &&
	test_cmp expect "$Q/partitions/default/h1" &&
	test_is 2 "$(stat_of "$Q/stats" messages)" messages
'

test_expect_success 'each refused ack is in the daemon log with its reason' '
	grep "expire/ack/e1" "$DAEMON_LOG" | grep -q "ESTALE" &&
	grep "p2/x2 -> .*/failed/x2" "$DAEMON_LOG" | grep -q "EALREADY" &&
	grep "ack/other" "$DAEMON_LOG" | grep -q "EINVAL"
'

# The mount remembers the last 4096 lease ids it handed out, so that an
# ack through a dead one fails in rename(2) with ESTALE; older ones are
# forgotten.  4098 pops: the first two fall out, the next stay found.
test_expect_success 'a dead lease resolves until 4096 newer ones were handed out' '
	q_init ring &&
	printf "lease_time = 1\nwait = 1\n" >"$Q/config" &&
	printf x >"$Q/x0" &&
	take && L0=${LINE#leased/} && L0=${L0%%/*} &&
	sleep 1.5 &&
	test -d "$Q/leased/$L0" &&
	take && L1=${LINE#leased/} && L1=${L1%%/*} &&
	mv "$MSG" "$Q/ack/" &&
	test -d "$Q/leased/$L1" &&
	python3 - "$Q" 4096 >leases <<-\EOF &&
	import os, sys
	q, n = sys.argv[1], int(sys.argv[2])
	for i in range(n):
	    with open(os.path.join(q, "r%d" % i), "w") as f:
	        f.write("r")
	    with open(os.path.join(q, "next")) as f:
	        line = f.read().strip()
	    os.rename(os.path.join(q, line), os.path.join(q, "ack", "r%d" % i))
	    print(line.split("/")[1])
	EOF
	test_line_count = 4096 leases &&
	test "$(sort -u leases | wc -l)" -eq 4096 &&
	test_must_fail test -d "$Q/leased/$L0" &&
	test_must_fail test -d "$Q/leased/$L1" &&
	for L in $(sed -n "1p;2p;2048p;4095p;4096p" leases); do
		test -d "$Q/leased/$L" || return 1
	done &&
	test_is 4097 "$(committed)" committed
'

# Without a lease, failed/ charges the retry budget and moves nothing (the
# message before it, never mentioned, is not committed); dlq/ moves the
# cursor past x, so what is below it is committed with it: the cursor is
# one offset (docs/design.md, statuses).
test_expect_success 'partitions/p/x -> failed/ and dlq/ without a lease' '
	q_init ll &&
	printf a >"$Q/partitions/p4/z1" && printf b >"$Q/partitions/p4/z2" &&
	printf c >"$Q/partitions/p4/z3" &&
	echo ok >expect &&
	sysc rename "$Q/partitions/p4/z2" "$Q/failed/z2" >actual &&
	test_cmp expect actual &&
	test_is 0 "$(committed p4)" "committed after failed" &&
	grep -q "^partition p4: .*retry_count = 1" "$Q/stats" &&
	d0=$(stat_of "$Q/stats" dlq) &&
	sysc rename "$Q/partitions/p4/z2" "$Q/dlq/z2" >actual &&
	test_cmp expect actual &&
	test_is 2 "$(committed p4)" "committed after dlq" &&
	test_is $((d0 + 1)) "$(stat_of "$Q/stats" dlq)" dlq &&
	sysc rename "$Q/partitions/p4/z1" "$Q/failed/z1" >actual &&
	echo rename:EALREADY >expect &&
	test_cmp expect actual &&
	mv "$Q/partitions/p4/z3" "$Q/ack/" &&
	test_is 3 "$(committed p4)" "committed after the ack of z3"
'

# An operator dead-letters a stored message by hand with a reason: the
# note set on partitions/<p>/<x> goes with a lease-less rename into dlq/
# (it was accepted and dropped), and only with that message's.
test_expect_success ATTR 'user.queen.error on partitions/p/x goes with its lease-less dlq' '
	printf d >"$Q/partitions/p4/z4" && printf e >"$Q/partitions/p4/z5" &&
	setfattr -n user.queen.error -v "poison: no id" "$Q/partitions/p4/z5" &&
	mv "$Q/partitions/p4/z4" "$Q/ack/" &&
	mv "$Q/partitions/p4/z5" "$Q/dlq/" &&
	test_is "poison: no id" \
	    "$(getfattr --only-values -n user.queen.error "$Q/dlq/p4/z5")" error &&
	test_is 5 "$(committed p4)" committed
'

test_done
