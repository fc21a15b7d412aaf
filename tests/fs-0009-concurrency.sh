#!/bin/sh
# fs-0009-concurrency: order inside a partition, one lease per partition
# (two consumers never hold one partition at once), many concurrent
# producers landing exactly once, and concurrent consumers draining many
# partitions with every message consumed once and in order per partition.
. "$(dirname "$0")/lib.sh"
mount_queenfs

test_expect_success 'setup: 50 messages pushed in an order unlike their names' '
	q_init order &&
	echo "wait = 1" >"$Q/config" &&
	i=1 &&
	while test $i -le 50; do
		printf "message %d" $i >"$Q/x$((100 - i))" || return 1
		i=$((i + 1))
	done &&
	test_is 50 "$(stat_of "$Q/stats" messages)" messages
'

test_expect_success 'popping and acking one by one gives them in push order' '
	: >got &&
	i=1 &&
	while test $i -le 50; do
		line=$(pop) &&
		echo "${line##*/} $(cat "$Q/$line")" >>got &&
		mv "$Q/$line" "$Q/ack/" || return 1
		i=$((i + 1))
	done &&
	i=1 && : >expect &&
	while test $i -le 50; do
		echo "x$((100 - i)) message $i" >>expect
		i=$((i + 1))
	done &&
	test_cmp expect got &&
	echo read:EAGAIN >expect &&
	sysc read_nonblock "$Q/next" >actual &&
	test_cmp expect actual
'

test_expect_success 'two consumers never hold one partition at once' '
	q_init single &&
	echo "wait = 1" >"$Q/config" &&
	printf 1 >"$Q/s1" && printf 2 >"$Q/s2" &&
	LINE=$(pop) &&
	test_is s1 "${LINE##*/}" "first consumer" &&
	echo read:EAGAIN >expect &&
	sysc read_nonblock "$Q/next" >actual &&
	test_cmp expect actual &&
	echo read:ENODATA >expect &&
	sysc read "$Q/next" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$Q/stats" leases)" leases &&
	mv "$Q/$LINE" "$Q/ack/" &&
	LINE=$(pop) &&
	test_is s2 "${LINE##*/}" "second consumer after the ack" &&
	mv "$Q/$LINE" "$Q/ack/"
'

test_expect_success 'two readers racing for one partition: one gets it, the other waits for the ack' '
	q_init race &&
	echo "wait = 5" >"$Q/config" &&
	printf 1 >"$Q/r1" && printf 2 >"$Q/r2" &&
	{ timeout 10 cat "$Q/next" >ra & } && pa=$! && track_pid $pa &&
	{ timeout 10 cat "$Q/next" >rb & } && pb=$! && track_pid $pb &&
	sleep 0.5 &&
	cat ra rb >both &&
	test_line_count = 1 both &&
	grep -q "/r1$" both &&
	test_is 1 "$(stat_of "$Q/stats" leases)" leases &&
	mv "$Q/$(cat both)" "$Q/ack/" &&
	wait $pa && wait $pb &&
	cat ra rb | sed "s|.*/||" | sort >actual &&
	printf "%s\n" r1 r2 >expect &&
	test_cmp expect actual
'

test_expect_success '8 producers x 50 pushes at once: all 400 land exactly once' '
	q_init many &&
	pids= &&
	for i in 1 2 3 4 5 6 7 8; do
		{ sh -c "
			j=1
			while test \$j -le 50; do
				printf \"payload $i-%d\" \$j >\"$Q/p$i-\$j\" || exit 1
				j=\$((j + 1))
			done
		" & } &&
		pids="$pids $!" && track_pid $! || return 1
	done &&
	for p in $pids; do
		wait $p || return 1
	done &&
	cat "$Q/stats" >stats &&
	test_is 400 "$(stat_of stats messages)" messages &&
	test_is 400 "$(stat_of stats pushed)" pushed &&
	test_is 0 "$(stat_of stats duplicates)" duplicates &&
	ls "$Q/partitions/default" >names &&
	test_line_count = 400 names &&
	python3 - "$Q/partitions/default" >bad <<-\EOF &&
	import os, sys
	d = sys.argv[1]
	for i in range(1, 9):
	    for j in range(1, 51):
	        n = "p%d-%d" % (i, j)
	        with open(os.path.join(d, n), "rb") as f:
	            if f.read() != ("payload %d-%d" % (i, j)).encode():
	                print("wrong payload:", n)
	EOF
	test_line_count = 0 bad
'

test_expect_success 'setup: 4 partitions x 50 messages' '
	q_init drain &&
	printf "wait = 1\nlease_time = 30\n" >"$Q/config" &&
	for k in 1 2 3 4; do
		j=10 &&
		while test $j -lt 60; do
			printf "$k-$j" >"$Q/partitions/p$k/$k-$j" || return 1
			j=$((j + 1))
		done || return 1
	done &&
	test_is 200 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success '4 concurrent consumers: every message once, in order per partition' '
	cat >consumer.sh <<-\EOF &&
	Q=$1
	while line=$(timeout 10 cat "$Q/next" 2>/dev/null) && test -n "$line"; do
		for l in $line; do
			echo "${l##*/}" >>consumed.log
			mv "$Q/$l" "$Q/ack/" || echo "ack failed: $l" >>consumed.log
		done
	done
	EOF
	: >consumed.log &&
	pids= &&
	for c in 1 2 3 4; do
		{ sh consumer.sh "$Q" & } &&
		pids="$pids $!" && track_pid $! || return 1
	done &&
	for p in $pids; do
		wait $p || return 1
	done &&
	! grep "ack failed" consumed.log &&
	test_line_count = 200 consumed.log &&
	sort consumed.log | uniq -d >dups &&
	test_line_count = 0 dups &&
	for k in 1 2 3 4; do
		grep "^$k-" consumed.log >got.$k &&
		seq -f "$k-%g" 10 59 >expect.$k &&
		test_cmp expect.$k got.$k || return 1
	done &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth &&
	test_is 0 "$(stat_of "$Q/stats" leases)" leases
'

test_done
