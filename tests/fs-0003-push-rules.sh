#!/bin/sh
# fs-0003-push-rules: dot-file staging, deduplication (O_EXCL, idempotent
# re-create, dedup_window), max_message_bytes at write(), and the name
# rules (invalid names, reserved names).
. "$(dirname "$0")/lib.sh"
mount_queenfs

# pushed: the queue's `pushed` count
pushed () {
	stat_of "$Q/stats" pushed
}

test_expect_success 'setup' '
	q_init stage
'

test_expect_success 'a dot-file is not pushed' '
	printf staged >"$Q/.m1.tmp" &&
	test_is 0 "$(pushed)" pushed &&
	ls -A "$Q/partitions" >actual &&
	test_line_count = 0 actual
'

test_expect_success 'a staged file can be reopened and appended to' '
	printf " more" >>"$Q/.m1.tmp" &&
	printf "staged more" >expect &&
	test_cmp expect "$Q/.m1.tmp" &&
	test_is 0 "$(pushed)" pushed
'

test_expect_success 'renaming the dot-file to a plain name pushes it once' '
	mv "$Q/.m1.tmp" "$Q/m1" &&
	test_is 1 "$(pushed)" pushed &&
	ls "$Q/partitions/default" >actual &&
	echo m1 >expect &&
	test_cmp expect actual &&
	printf "staged more" >expect &&
	test_cmp expect "$Q/partitions/default/m1" &&
	test_path_is_missing "$Q/.m1.tmp"
'

test_expect_success 'renaming a dot-file to another dot-file does not push' '
	printf two >"$Q/.a" &&
	mv "$Q/.a" "$Q/.b" &&
	test_is 1 "$(pushed)" pushed &&
	printf two >expect &&
	test_cmp expect "$Q/.b"
'

test_expect_success 'a removed dot-file is never pushed' '
	rm "$Q/.b" &&
	test_path_is_missing "$Q/.b" &&
	test_is 1 "$(pushed)" pushed
'

test_expect_success 'staging inside partitions/<p>/ pushes to p on rename' '
	printf inp >"$Q/partitions/p2/.x.tmp" &&
	test_is 1 "$(pushed)" pushed &&
	mv "$Q/partitions/p2/.x.tmp" "$Q/partitions/p2/x" &&
	test_is 2 "$(pushed)" pushed &&
	printf inp >expect &&
	test_cmp expect "$Q/partitions/p2/x" &&
	test_path_is_missing "$Q/partitions/default/x"
'

test_expect_success 'renaming a staged file to an invalid name fails with EINVAL, nothing pushed' '
	printf bad >"$Q/.bad" &&
	echo rename:EINVAL >expect &&
	sysc rename "$Q/.bad" "$Q/a b" >actual &&
	test_cmp expect actual &&
	test_is 2 "$(pushed)" pushed
'

test_expect_success 'an unrenamed dot-file is never pushed, even across a remount' '
	printf never >"$Q/.never" &&
	sleep 1 &&
	test_is 2 "$(pushed)" pushed &&
	remount &&
	test_is 2 "$(pushed)" pushed &&
	ls "$Q/partitions/default" >actual &&
	echo m1 >expect &&
	test_cmp expect actual
'

test_expect_success PYTHON 'a producer killed mid-write: a plain file pushes what was written, a staged one nothing' '
	cat >killed.py <<-\EOF &&
	import os, signal, sys
	q = sys.argv[1]
	plain = os.open(q + "/killed-plain", os.O_WRONLY | os.O_CREAT, 0o644)
	staged = os.open(q + "/.killed-staged.tmp", os.O_WRONLY | os.O_CREAT, 0o644)
	os.write(plain, b"first half")
	os.write(staged, b"first half")
	os.kill(os.getpid(), signal.SIGKILL)   # the kernel closes both
	EOF
	test_must_fail "$PYTHON3" killed.py "$Q" ;
	wait_until 5 "test -f \"$Q/partitions/default/killed-plain\"" &&
	printf "first half" >expect &&
	test_cmp expect "$Q/partitions/default/killed-plain" &&
	test_is 3 "$(pushed)" pushed &&
	test_path_is_missing "$Q/partitions/default/killed-staged.tmp" &&
	test_path_is_missing "$Q/partitions/default/.killed-staged.tmp"
'

test_expect_success 'O_CREAT|O_EXCL of a pushed transactionId fails with EEXIST' '
	echo open:EEXIST >expect &&
	sysc create_excl "$Q/m1" again >actual &&
	test_cmp expect actual &&
	sysc create_excl "$Q/partitions/default/m1" again >actual &&
	test_cmp expect actual &&
	test_is 3 "$(pushed)" pushed
'

test_expect_success 'the shell noclobber redirect (O_EXCL) also refuses a duplicate' '
	test_must_fail sh -c "set -C; echo again >\"$Q/m1\"" &&
	test_is 3 "$(pushed)" pushed
'

test_expect_success 'a plain re-create is an idempotent retry counted in stats' '
	dup0=$(stat_of "$Q/stats" duplicates) &&
	printf "other bytes" >"$Q/m1" &&
	printf x >x && cp x "$Q/m1" &&
	test_is 3 "$(pushed)" pushed &&
	test_is 3 "$(stat_of "$Q/stats" messages)" messages &&
	test_is $((dup0 + 2)) "$(stat_of "$Q/stats" duplicates)" duplicates &&
	printf "staged more" >expect &&
	test_cmp expect "$Q/partitions/default/m1" &&
	grep -q "^queenfs_duplicates_total 2$" "$MNT/sys/metrics"
'

test_expect_success 'a staged file renamed onto a pushed name is an idempotent retry' '
	dup0=$(stat_of "$Q/stats" duplicates) &&
	printf retried >"$Q/.m1.retry" &&
	mv "$Q/.m1.retry" "$Q/m1" &&
	test_is 3 "$(pushed)" pushed &&
	test_is $((dup0 + 1)) "$(stat_of "$Q/stats" duplicates)" duplicates &&
	printf "staged more" >expect &&
	test_cmp expect "$Q/partitions/default/m1" &&
	test_path_is_missing "$Q/.m1.retry"
'

test_expect_success 'dedup is per partition: the same name in another partition is a new message' '
	echo ok >expect &&
	sysc create_excl "$Q/partitions/p3/m1" p3 >actual &&
	test_cmp expect actual &&
	test_is 4 "$(pushed)" pushed &&
	printf p3 >expect &&
	test_cmp expect "$Q/partitions/p3/m1"
'

test_expect_success 'dedup_window = 0 stores a re-pushed name again' '
	mkdir "$MNT/queues/nodedup" &&
	echo "dedup_window = 0" >"$MNT/queues/nodedup/config" &&
	printf one >"$MNT/queues/nodedup/same" &&
	printf two >"$MNT/queues/nodedup/same" &&
	cat "$MNT/queues/nodedup/stats" >stats &&
	test_is 2 "$(stat_of stats messages)" messages &&
	test_is 0 "$(stat_of stats duplicates)" duplicates
'

# Both pushes are in the log, but the partition lists the name once, as
# the newest, which a read of the name reads: a directory never holds a
# name twice (it did, and cp -r failed on it with EEXIST, tar stored both).
test_expect_success 'a name pushed twice is listed once; cp -r copies the newest' '
	printf other >"$MNT/queues/nodedup/other" &&
	ls "$MNT/queues/nodedup/partitions/default" >actual &&
	printf "%s\n" other same >expect &&
	test_cmp expect actual &&
	cp -r "$MNT/queues/nodedup/partitions/default" copy &&
	test_is two "$(cat copy/same)" "the copy" &&
	test_is two "$(cat "$MNT/queues/nodedup/partitions/default/same")" "a read"
'

test_expect_success 'dedup_window = 0 still writes the hash rows: a lease-less ack resolves' '
	echo ok >expect &&
	sysc rename "$MNT/queues/nodedup/partitions/default/same" \
		"$MNT/queues/nodedup/ack/same" >actual &&
	test_cmp expect actual &&
	grep -q "^partition default: committed = [12]," "$MNT/queues/nodedup/stats"
'

test_expect_success 'setup: max_message_bytes = 1000' '
	q_init small &&
	echo "max_message_bytes = 1000" >"$Q/config" &&
	grep -q "^max_message_bytes = 1000$" "$Q/config"
'

test_expect_success 'a payload of exactly max_message_bytes is pushed' '
	head -c 1000 /dev/urandom >k1000 &&
	cp k1000 "$Q/fits" &&
	test_cmp k1000 "$Q/partitions/default/fits" &&
	test_is 1 "$(pushed)" pushed
'

test_expect_success 'one byte over fails at write() with EFBIG and nothing is pushed' '
	echo write:EFBIG >expect &&
	sysc create "$Q/over" "$(printf "%01001d" 0)" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(pushed)" pushed &&
	ls "$Q/partitions/default" >actual &&
	echo fits >expect &&
	test_cmp expect actual
'

test_expect_success 'a large write through the shell fails and pushes nothing' '
	test_must_fail sh -c "head -c 5000 /dev/zero >\"$Q/over2\"" &&
	head -c 3000 /dev/zero >z3000 && test_must_fail cp z3000 "$Q/over3" &&
	test_is 1 "$(pushed)" pushed &&
	test_path_is_missing "$Q/partitions/default/over2" &&
	test_path_is_missing "$Q/partitions/default/over3"
'

test_expect_success 'after EFBIG the same name can be pushed with a smaller payload' '
	printf small >"$Q/over" &&
	printf small >expect &&
	test_cmp expect "$Q/partitions/default/over" &&
	test_is 2 "$(pushed)" pushed
'

test_expect_success 'invalid transactionIds fail with EINVAL and push nothing' '
	for n in "a b" "star*" "semi;colon" "back\\\\slash" "q?" "$(printf "caf\303\251")" \
	    "$(printf "nl\nx")"; do
		echo open:EINVAL >expect &&
		sysc create "$Q/$n" x >actual &&
		test_cmp expect actual &&
		sysc create "$Q/partitions/default/$n" x >actual &&
		test_cmp expect actual || return 1
	done &&
	test_is 2 "$(pushed)" pushed
'

test_expect_success 'an overlong transactionId is refused' '
	sysc create "$Q/$(printf "%0256d" 0)" x >actual &&
	grep -q "^open:E\(INVAL\|NAMETOOLONG\)$" actual &&
	test_is 2 "$(pushed)" pushed
'

test_expect_success 'an invalid partition name is refused (EINVAL, or ENOENT at lookup)' '
	sysc create "$Q/partitions/a b/x" x >actual &&
	grep -q "^open:E\(INVAL\|NOENT\)$" actual &&
	sysc mkdir "$Q/partitions/a b" >actual &&
	grep -q "^mkdir:E" actual &&
	sysc mkdir "$Q/partitions/.hidden" >actual &&
	grep -q "^mkdir:E" actual &&
	test_is 2 "$(pushed)" pushed
'

test_expect_success 'reserved names in the queue dir are not pushes' '
	test_must_fail sh -c "echo x >\"$Q/next\"" &&
	test_must_fail sh -c "echo x >\"$Q/stats\"" &&
	test_must_fail sh -c "echo x >\"$Q/leased\"" &&
	test_must_fail sh -c "echo x >\"$Q/ack\"" &&
	test_is 2 "$(pushed)" pushed &&
	test_path_is_missing "$Q/partitions/default/next"
'

test_expect_success 'reserved names can be pushed through partitions/<p>/' '
	for n in config stats next leased ack failed retry dlq partitions groups timers; do
		printf "$n" >"$Q/partitions/default/$n" || return 1
	done &&
	test_is 13 "$(pushed)" pushed &&
	printf next >expect &&
	test_cmp expect "$Q/partitions/default/next" &&
	printf config >expect &&
	test_cmp expect "$Q/partitions/default/config"
'

test_done
