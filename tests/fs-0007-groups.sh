#!/bin/sh
# fs-0007-groups: consumer groups under groups/<g>/ (made by mkdir) with
# their own cursor, next, leased/, ack/ and dlq/; subscription modes (all,
# new, since); seek (start, end, offset, time, "<p> <pos>"); group config.
# fs-0075 has mkdir's refusals and the walkers.
. "$(dirname "$0")/lib.sh"
mount_queenfs

# committed DIR [PARTITION]: the cursor shown by DIR/stats
committed () {
	sed -n "s/^partition ${2:-default}: committed = \([0-9]*\),.*/\1/p" "$1/stats"
}

# gpop DIR: pop one message from DIR/next; sets LINE, MSG (its path) and
# TXID
gpop () {
	LINE=$(pop "$1") && MSG="$1/$LINE" && TXID=${LINE##*/} &&
	echo "popped $LINE from $1"
}

test_expect_success 'setup: a queue with a1..a3' '
	q_init g &&
	echo "wait = 1" >"$Q/config" &&
	for i in 1 2 3; do printf "a%s" $i >"$Q/a$i" || return 1; done &&
	G1="$Q/groups/g1" &&
	ls -A "$Q/groups" >actual &&
	test_line_count = 0 actual
'

test_expect_success 'mkdir groups/<g> makes a group; ls groups lists it' '
	mkdir "$G1" &&
	ls "$Q/groups" >actual &&
	echo g1 >expect &&
	test_cmp expect actual &&
	grep -q "^group = g1$" "$G1/stats" &&
	test_is 1 "$(stat_of "$Q/stats" groups)" "groups in the queue stats"
'

test_expect_success 'groups/<g>/ has its own config, stats, next, seek, leased/, ack/ ...' '
	ls "$G1" >actual &&
	printf "%s\n" ack config dlq failed leased retry seek stats >expect &&
	test -f "$G1/next" &&
	test_cmp expect actual
'

test_expect_success 'a new group reads from the oldest message; lines are relative to the group dir' '
	gpop "$G1" && test_is a1 "$TXID" txid &&
	test_is leased "${LINE%%/*}" "first path element" &&
	printf a1 >expect &&
	test_cmp expect "$MSG"
'

test_expect_success 'the queue-mode cursor is independent of the group' '
	gpop "$Q" && test_is a1 "$TXID" "queue-mode txid" &&
	mv "$MSG" "$Q/ack/" &&
	test_is 1 "$(committed "$Q")" "queue-mode committed" &&
	test_is 0 "$(committed "$G1")" "g1 committed"
'

test_expect_success 'the group acks through its own ack/, the queue mode is untouched' '
	mv "$G1/leased/"*/a1 "$G1/ack/" &&
	test_is 1 "$(committed "$G1")" "g1 committed" &&
	gpop "$G1" && test_is a2 "$TXID" txid &&
	mv "$MSG" "$G1/ack/" &&
	test_is 2 "$(committed "$G1")" "g1 committed" &&
	test_is 1 "$(committed "$Q")" "queue-mode committed" &&
	gpop "$Q" && test_is a2 "$TXID" "queue-mode txid" &&
	mv "$MSG" "$Q/ack/"
'

test_expect_success 'a group message cannot be acked through the queue-mode ack/' '
	gpop "$G1" && test_is a3 "$TXID" txid &&
	echo rename:EINVAL >expect &&
	sysc rename "$MSG" "$Q/ack/a3" >actual &&
	test_cmp expect actual &&
	mv "$MSG" "$G1/ack/" &&
	test_is 3 "$(committed "$G1")" "g1 committed"
'

test_expect_success 'two groups lease the same partition at the same time' '
	gpop "$Q" && test_is a3 "$TXID" "queue-mode" && QMSG=$MSG &&
	mkdir "$Q/groups/g9" &&
	gpop "$Q/groups/g9" && test_is a1 "$TXID" "g9" &&
	test_is 1 "$(stat_of "$Q/stats" leases)" "queue-mode leases" &&
	test_is 1 "$(stat_of "$Q/groups/g9/stats" leases)" "g9 leases" &&
	mv "$QMSG" "$Q/ack/"
'

test_expect_success 'partitions/p/x -> groups/<g>/ack/ moves only that group' '
	echo ok >expect &&
	mkdir "$Q/groups/g8" &&
	sysc rename "$Q/partitions/default/a2" "$Q/groups/g8/ack/a2" >actual &&
	test_cmp expect actual &&
	test_is 2 "$(committed "$Q/groups/g8")" "g8 committed" &&
	test_is 3 "$(committed "$Q")" "queue-mode committed" &&
	test_is 3 "$(committed "$G1")" "g1 committed"
'

test_expect_success 'group config holds batch, wait, auto_ack and subscription' '
	cat "$G1/config" >gconf &&
	for k in batch wait auto_ack subscription; do
		grep -q "^$k = " gconf || return 1
	done &&
	grep -q "^subscription = all$" gconf
'

test_expect_success 'subscription = new: only messages pushed after the group was created' '
	mkdir "$Q/groups/gnew" &&
	echo "subscription = new" >"$Q/groups/gnew/config" &&
	ls "$Q/groups" >actual &&
	grep -q "^gnew$" actual &&
	echo read:EAGAIN >expect &&
	sysc read_nonblock "$Q/groups/gnew/next" >actual &&
	test_cmp expect actual &&
	printf a4 >"$Q/a4" &&
	gpop "$Q/groups/gnew" && test_is a4 "$TXID" txid
'

test_expect_success 'subscription = since <RFC 3339>: messages from that time on' '
	sleep 1.1 &&
	T=$(date -u +%Y-%m-%dT%H:%M:%SZ) &&
	sleep 0.1 &&
	printf a5 >"$Q/a5" &&
	sleep 0.2 &&
	mkdir "$Q/groups/gsince" &&
	echo "subscription = since $T" >"$Q/groups/gsince/config" &&
	grep -q "^subscription = since " "$Q/groups/gsince/config" &&
	gpop "$Q/groups/gsince" && test_is a5 "$TXID" txid
'

test_expect_success 'a bad subscription fails with EINVAL and changes nothing' '
	mkdir "$Q/groups/gbad" &&
	sysc write "$Q/groups/gbad/config" "subscription = sometimes" >actual &&
	grep -q ":EINVAL$" actual &&
	grep -q "^subscription = all$" "$Q/groups/gbad/config" &&
	rmdir "$Q/groups/gbad"
'

test_expect_success 'config and seek of a group that does not exist: ENOENT, nothing made' '
	echo open:ENOENT >expect &&
	sysc write "$Q/groups/gnone/config" "batch = 2" >actual &&
	test_cmp expect actual &&
	sysc write "$Q/groups/gnone/seek" "start" >actual &&
	test_cmp expect actual &&
	sysc read_nonblock "$Q/groups/gnone/next" >actual &&
	test_cmp expect actual &&
	ls "$Q/groups" >actual &&
	! grep -q "^gnone$" actual
'

test_expect_success 'seek start: the group replays from the first message' '
	echo start >"$G1/seek" &&
	test_is 0 "$(committed "$G1")" "g1 committed" &&
	gpop "$G1" && test_is a1 "$TXID" txid &&
	mv "$MSG" "$G1/ack/"
'

test_expect_success 'a seek ends the leases it passes: a leased file read before is gone' '
	gpop "$G1" && test_is a2 "$TXID" txid &&
	test_is a2 "$(cat "$MSG")" "the leased file" &&
	echo start >"$G1/seek" &&
	test_must_fail cat "$MSG" 2>err &&
	cat err
'

test_expect_success 'seek end: nothing left to deliver' '
	echo end >"$G1/seek" &&
	test_is 5 "$(committed "$G1")" "g1 committed" &&
	echo read:EAGAIN >expect &&
	sysc read_nonblock "$G1/next" >actual &&
	test_cmp expect actual
'

test_expect_success 'seek <offset>: that offset is the next one delivered' '
	echo 3 >"$G1/seek" &&
	gpop "$G1" && test_is a3 "$TXID" txid &&
	mv "$MSG" "$G1/ack/"
'

test_expect_success 'seek "<p> <pos>" moves one partition' '
	printf b1 >"$Q/partitions/pb/b1" &&
	printf b2 >"$Q/partitions/pb/b2" &&
	echo end >"$G1/seek" &&
	echo "default 2" >"$G1/seek" &&
	test_is 1 "$(committed "$G1")" "default committed" &&
	test_is 2 "$(committed "$G1" pb)" "pb committed" &&
	gpop "$G1" && test_is a2 "$TXID" txid &&
	mv "$MSG" "$G1/ack/"
'

test_expect_success 'seek <RFC 3339 time>: the first message at or after it' '
	echo "$T" >"$G1/seek" &&
	gpop "$G1" && test_is a5 "$TXID" txid &&
	mv "$MSG" "$G1/ack/"
'

test_expect_success 'seek releases the group live leases (the old lease is ESTALE)' '
	echo start >"$G1/seek" &&
	gpop "$G1" && test_is a1 "$TXID" txid && OLD=$MSG &&
	test_is 1 "$(stat_of "$G1/stats" leases)" leases &&
	echo start >"$G1/seek" &&
	test_is 0 "$(stat_of "$G1/stats" leases)" leases &&
	echo rename:ESTALE >expect &&
	sysc rename "$OLD" "$G1/ack/a1" >actual &&
	test_cmp expect actual &&
	gpop "$G1" && test_is a1 "$TXID" "redelivered txid"
'

test_expect_success 'a bad seek fails with EINVAL and moves nothing' '
	c0=$(committed "$G1") &&
	for v in bogus -1 "default x" "2026-13-45T99:00:00Z"; do
		sysc write "$G1/seek" "$v" >actual &&
		echo "seek \"$v\": $(cat actual)" &&
		grep -q ":EINVAL$" actual || return 1
	done &&
	sysc write "$G1/seek" "nosuch 1" >actual &&
	grep -q "^close:E\(INVAL\|NOENT\)$" actual &&
	test_is "$c0" "$(committed "$G1")" committed
'

test_expect_success 'the queue seek moves the queue-mode cursor' '
	echo start >"$Q/seek" &&
	test_is 0 "$(committed "$Q")" committed &&
	gpop "$Q" && test_is a1 "$TXID" txid &&
	mv "$MSG" "$Q/ack/" &&
	echo end >"$Q/seek" &&
	test_is 5 "$(committed "$Q")" committed
'

test_expect_success 'group batch is independent of the queue batch' '
	mkdir "$Q/groups/gb" &&
	printf "batch = 3\n" >"$Q/groups/gb/config" &&
	pop "$Q/groups/gb" >lines &&
	test_line_count = 3 lines &&
	grep -q "^batch = 1$" "$Q/config"
'

test_expect_success 'a group failed/ and retry/ redeliver within the group only' '
	G=$Q/groups/gf &&
	mkdir "$G" &&
	gpop "$G" && test_is a1 "$TXID" txid &&
	mv "$MSG" "$G/failed/" &&
	gpop "$G" && test_is a1 "$TXID" "redelivered after failed" &&
	test_is 1 "$(getfattr --only-values -n user.queen.retry_count "$MSG")" retry_count &&
	mv "$MSG" "$G/retry/" &&
	gpop "$G" && test_is a1 "$TXID" "redelivered after retry" &&
	mv "$MSG" "$G/ack/" &&
	test_is 1 "$(committed "$G")" "gf committed" &&
	test_is 5 "$(committed "$Q")" "queue-mode committed"
'

test_expect_success 'creating files in a group ack/ failed/ retry/ is EPERM' '
	for t in ack failed retry; do
		echo open:EPERM >expect &&
		sysc create "$Q/groups/gf/$t/fake" x >actual &&
		test_cmp expect actual || return 1
	done
'

test_expect_success 'groups/<g>/dlq/ lists <p>/<txid> dead letters with the group in xattrs' '
	G=$Q/groups/gd &&
	mkdir "$G" &&
	gpop "$G" && test_is a1 "$TXID" txid &&
	setfattr -n user.queen.error -v "group reason" "$MSG" &&
	mv "$MSG" "$G/dlq/" &&
	(cd "$G/dlq" && find . -type f) >actual &&
	echo ./default/a1 >expect &&
	test_cmp expect actual &&
	test_is gd "$(getfattr --only-values -n user.queen.group "$G/dlq/default/a1")" group &&
	test_is "group reason" "$(getfattr --only-values -n user.queen.error "$G/dlq/default/a1")" error &&
	printf a1 >expect &&
	test_cmp expect "$G/dlq/default/a1" &&
	gpop "$G" && test_is a2 "$TXID" "after the dead letter" &&
	test_is 1 "$(stat_of "$G/stats" dlq)" dlq
'

test_expect_success 'another group dlq/ does not list it' '
	(cd "$G1/dlq" && find . -type f) >actual &&
	test_line_count = 0 actual
'

test_expect_success 'an invalid group name is refused' '
	sysc read_nonblock "$Q/groups/bad name/next" >actual &&
	grep -q "^open:E\(INVAL\|NOENT\)$" actual &&
	sysc write "$Q/groups/.hidden/config" "batch = 2" >actual &&
	grep -q "^open:E\(INVAL\|NOENT\)$" actual &&
	ls -A "$Q/groups" >actual &&
	! grep -e "^bad name$" -e "^\.hidden$" actual
'

test_expect_success 'rmdir of a group with a live lease is ENOTEMPTY; acked, it goes' '
	test_must_fail rmdir "$Q/groups/gd" &&
	test -d "$Q/groups/gd" &&
	for l in "$Q/groups/gd/leased/"*; do
		mv "$l" "$Q/groups/gd/ack/" || return 1
	done
'

test_expect_success 'rmdir of a group drops it; a group made again by its name has its dead letters' '
	rmdir "$Q/groups/gd" &&
	ls "$Q/groups" >actual &&
	! grep -q "^gd$" actual &&
	test_must_fail ls "$Q/groups/gd" &&
	mkdir "$Q/groups/gd" &&
	test_is 0 "$(committed "$Q/groups/gd")" "a new cursor" &&
	test -f "$Q/groups/gd/dlq/default/a1" &&
	test_is gd "$(getfattr --only-values -n user.queen.group "$Q/groups/gd/dlq/default/a1")" group
'

test_expect_success 'groups and their cursors survive a remount' '
	ls "$Q/groups" >before &&
	committed "$Q/groups/gnew" >c.before &&
	remount &&
	ls "$Q/groups" >after &&
	test_cmp before after &&
	committed "$Q/groups/gnew" >c.after &&
	test_cmp c.before c.after &&
	grep -q "^subscription = new$" "$Q/groups/gnew/config"
'

test_done
