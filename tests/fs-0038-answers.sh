#!/bin/sh
# fs-0038-answers: every answer of the mount is the truth (issue 17,
# "Semantics and answers"): an ack through a live lease of a message an
# ack of a later one already committed; `subscription = new` at the
# partition's tail; a config write applied whole at close; the
# transaction_id xattr is the id; no inode op answers 0 while doing
# nothing.
. "$(dirname "$0")/lib.sh"
mount_queenfs
export MNT

test_expect_success ATTR 'user.queen.transaction_id is the id, not its %XX file name' '
	q_init tx &&
	printf "{\"items\":[{\"queue\":\"tx\",\"transactionId\":\"a/b\",\"payload\":\"x\"}]}" >"$MNT/api/push" &&
	test -f "$Q/partitions/default/a%2Fb" &&
	getfattr --only-values -n user.queen.transaction_id \
		"$Q/partitions/default/a%2Fb" >actual &&
	printf "a/b" >expect &&
	test_cmp expect actual &&
	echo "wait = 1" >"$Q/config" &&
	line=$(pop) &&
	test_is "leased/${line#leased/}" "$line" &&
	getfattr --only-values -n user.queen.transaction_id "$Q/$line" >actual &&
	test_cmp expect actual
'

test_done
