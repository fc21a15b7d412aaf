#!/bin/sh
# fs-0070-operator: the operator's toolkit through the mount: dead letters
# requeued with mv (same transactionId, past dedup) and purged with rm,
# both permission-checked and logged; groups made and removed with mkdir
# and rmdir.
. "$(dirname "$0")/lib.sh"
mount_queenfs

# gpop DIR: pop one message from DIR/next; sets LINE, MSG, TXID
gpop () {
	LINE=$(pop "$1") && MSG="$1/$LINE" && TXID=${LINE##*/} &&
	echo "popped $LINE from $1"
}

# kill DIR NAME: pop DIR's next message, check it is NAME, dead-letter it
kill_one () {
	gpop "$1" && test_is "$2" "$TXID" txid && mv "$MSG" "$1/dlq/"
}

test_expect_success 'setup: a queue with d1..d3, all dead-lettered in queue mode' '
	q_init ops &&
	echo "wait = 1" >"$Q/config" &&
	for i in 1 2 3; do
		printf "body %s" $i >"$Q/d$i" || return 1
	done &&
	kill_one "$Q" d1 && kill_one "$Q" d2 && kill_one "$Q" d3 &&
	test_is 3 "$(stat_of "$Q/stats" dlq)" dlq
'

test_expect_success ATTR 'a dead letter shows its group and partition' '
	test_is __QUEUE_MODE__ "$(getfattr --only-values -n user.queen.group "$Q/dlq/default/d1")" group &&
	test_is default "$(getfattr --only-values -n user.queen.partition "$Q/dlq/default/d1")" partition
'

test_expect_success 'mv dlq/<p>/<x> into the queue requeues x: same id, new offset, out of the DLQ' '
	mv "$Q/dlq/default/d1" "$Q/" &&
	test_is 2 "$(stat_of "$Q/stats" dlq)" dlq &&
	test_path_is_missing "$Q/dlq/default/d1" &&
	printf "body 1" >expect &&
	test_cmp expect "$Q/partitions/default/d1" &&
	test_is 4 "$(getfattr --only-values -n user.queen.offset "$Q/partitions/default/d1")" offset &&
	grep -q "requeue .*dlq/default/d1.*offset 4" "$DAEMON_LOG" &&
	ls "$Q/partitions/default" >names &&
	printf "%s\n" d1 d2 d3 >expect &&
	test_cmp expect names
'

test_expect_success 'the requeued message is delivered again and can be acked' '
	gpop "$Q" && test_is d1 "$TXID" txid &&
	printf "body 1" >expect && test_cmp expect "$MSG" &&
	mv "$MSG" "$Q/ack/"
'

test_expect_success 'mv into partitions/<p>/ requeues too; another partition is EPERM' '
	sysc rename "$Q/dlq/default/d2" "$Q/partitions/other/d2" >actual &&
	echo rename:EPERM >expect && test_cmp expect actual &&
	sysc rename "$Q/dlq/default/d2" "$Q/x2" >actual &&
	test_cmp expect actual &&
	mv "$Q/dlq/default/d2" "$Q/partitions/default/" &&
	test_is 1 "$(stat_of "$Q/stats" dlq)" dlq &&
	test -f "$Q/partitions/default/d2"
'

test_expect_success 'rm dlq/<p>/<x> purges it, logged; a second rm is ENOENT' '
	rm "$Q/dlq/default/d3" &&
	test_is 0 "$(stat_of "$Q/stats" dlq)" dlq &&
	grep -q "purge .*dlq/default/d3" "$DAEMON_LOG" &&
	sysc unlink "$Q/dlq/default/d3" >actual &&
	echo unlink:ENOENT >expect && test_cmp expect actual
'

test_expect_success 'a group dead letter: requeue through groups/<g>/dlq, purge too' '
	printf "g body" >"$Q/g1" && printf "g2 body" >"$Q/g2" &&
	G="$Q/groups/gx" &&
	mkdir "$G" &&
	echo "wait = 1" >"$G/config" &&
	kill_one "$G" d1 && kill_one "$G" d2 &&
	test_is gx "$(getfattr --only-values -n user.queen.group "$G/dlq/default/d1")" group &&
	mv "$G/dlq/default/d1" "$Q/" &&
	rm "$G/dlq/default/d2" &&
	test_is 0 "$(stat_of "$G/stats" dlq)" dlq &&
	test_is 8 "$(getfattr --only-values -n user.queen.offset "$Q/partitions/default/d1")" "offset of the requeued copy"
'

test_expect_success 'a lookup makes no group: ls groups lists only groups that exist' '
	q_init gq &&
	echo "wait = 1" >"$Q/config" &&
	printf x >"$Q/k1" &&
	test_must_fail ls "$Q/groups/ghost/" &&
	echo open:ENOENT >expect &&
	sysc read_nonblock "$Q/groups/ghost/next" >actual &&
	test_cmp expect actual &&
	ls -A "$Q/groups" >actual &&
	test_line_count = 0 actual &&
	sysc rmdir "$Q/groups/ghost" >actual &&
	echo rmdir:ENOENT >expect && test_cmp expect actual
'

test_expect_success 'rmdir of a group with a live lease: ENOTEMPTY, logged, nothing changes' '
	G="$Q/groups/busy" &&
	mkdir "$G" &&
	echo "wait = 1" >"$G/config" &&
	gpop "$G" && test_is k1 "$TXID" txid &&
	sysc rmdir "$G" >actual &&
	echo rmdir:ENOTEMPTY >expect && test_cmp expect actual &&
	grep -q "group .busy. holds 1 live lease" "$DAEMON_LOG" &&
	ls "$Q/groups" >actual && echo busy >expect && test_cmp expect actual &&
	test -f "$MSG"
'

test_expect_success 'once the lease is acked, rmdir deletes the group' '
	mv "$MSG" "$G/ack/" &&
	rmdir "$G" &&
	ls -A "$Q/groups" >actual &&
	test_line_count = 0 actual
'

test_expect_success 'sys/queues: a header and one aligned line per queue' '
	q_init sq &&
	echo "wait = 1" >"$Q/config" &&
	for i in 1 2 3 4; do printf x >"$Q/s$i" || return 1; done &&
	G="$Q/groups/sg" && mkdir "$G" && echo "wait = 1" >"$G/config" &&
	gpop "$G" && mv "$MSG" "$G/ack/" &&
	gpop "$G" && mv "$MSG" "$G/dlq/" &&
	gpop "$G" &&
	cat "$MNT/sys/queues" >out &&
	head -n 1 out | tr -s " " >actual &&
	echo "QUEUE DEPTH OLDEST GROUPS LAG LEASES DLQ" >expect &&
	test_cmp expect actual &&
	grep "^sq " out | awk "{print \$1, \$2, \$4, \$5, \$6, \$7}" >actual &&
	echo "sq 4 1 2 1 1" >expect &&
	test_cmp expect actual &&
	grep "^sq " out | awk "{print \$3}" | grep -Eq "^([0-9]+[smhd]|-)$" &&
	awk "{ print length(\$0) }" out | sort -u >widths &&
	test_line_count = 1 widths
'

test_expect_success 'sys/metrics: per-group lag and the oldest waiting age' '
	cat "$MNT/sys/metrics" >m &&
	grep -q "^# TYPE queenfs_lag gauge$" m &&
	grep -q "^queenfs_lag{queue=\"sq\",group=\"sg\"} 2$" m &&
	grep -q "^queenfs_lag{queue=\"sq\",group=\"__QUEUE_MODE__\"} 4$" m &&
	grep -q "^# TYPE queenfs_oldest_waiting_ms gauge$" m &&
	grep -Eq "^queenfs_oldest_waiting_ms\{queue=\"sq\",group=\"sg\"\} [0-9]+$" m
'

# df on the mount shows the room on the disk that holds the database and
# the spool, where every close() stages its bytes (it showed 0 blocks, so
# a script that checks the room before it writes would never write)
test_expect_success SQLITE_STORE 'df shows the database disk'"'"'s room' '
	df -P "$MNT" >mnt.df &&
	df -P "$(dirname "$DB")" >db.df &&
	size=$(awk "NR == 2 { print \$2 }" mnt.df) &&
	test "$size" -gt 0 &&
	test_is "$(awk "NR == 2 { print \$2 }" db.df)" "$size" "1K-blocks"
'

test_done
