#!/bin/sh
# fs-0010-crash: kill -9 of the daemon under load.  The mount answers
# ENOTCONN until remounted; after the remount every push whose close()
# returned 0 is there byte for byte, no ack whose rename() returned 0 is
# redelivered, and leases, dead letters and config survive.
. "$(dirname "$0")/lib.sh"
mount_queenfs

test_expect_success 'setup: a lease, a dead letter and a config to survive' '
	q_init keep &&
	printf "lease_time = 120\nwait = 1\nretry_limit = 7\n" >"$Q/config" &&
	printf k1 >"$Q/k1" && printf k2 >"$Q/k2" && printf k3 >"$Q/k3" &&
	LINE=$(pop) && mv "$Q/$LINE" "$Q/dlq/" &&
	HELD=$(pop) &&
	test_is k2 "${HELD##*/}" "held lease" &&
	cat "$Q/config" >config.before &&
	q_init dur &&
	echo "wait = 1" >"$Q/config"
'

test_expect_success PYTHON 'kill -9 while a producer and a consumer are busy' '
	cat >producer.py <<-\EOF &&
	# records a push only once its close() returned 0 (sh ignores
	# the close() errors of a redirection)
	import os, sys
	q = sys.argv[1]
	with open("pushed.ok", "a") as log:
	    for i in range(1, 2001):
	        try:
	            fd = os.open("%s/d%d" % (q, i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
	            os.write(fd, b"payload of d%d" % i)
	            os.close(fd)
	        except OSError:
	            break
	        log.write("d%d\n" % i)
	        log.flush()
	EOF
	cat >consumer.sh <<-\EOF &&
	Q=$1
	while :; do
		line=$(cat "$Q/next" 2>/dev/null) || { test -d "$Q" || exit 0; continue; }
		echo "${line##*/}" >>tried.ok
		mv "$Q/$line" "$Q/ack/" 2>/dev/null || exit 0
		echo "${line##*/}" >>acked.ok
	done
	EOF
	: >pushed.ok && : >acked.ok && : >tried.ok &&
	{ "$PYTHON3" producer.py "$Q" & } && pp=$! && track_pid $pp &&
	{ sh consumer.sh "$Q" & } && pc=$! && track_pid $pc &&
	wait_until 10 "test \$(wc -l <pushed.ok) -ge 100 && test \$(wc -l <acked.ok) -ge 20" &&
	kill9_daemon &&
	wait_until 10 "! kill -0 $pp 2>/dev/null && ! kill -0 $pc 2>/dev/null" &&
	wait $pp; wait $pc;
	echo "pushed $(wc -l <pushed.ok), acked $(wc -l <acked.ok)" &&
	test $(wc -l <pushed.ok) -ge 100 &&
	test $(wc -l <acked.ok) -ge 20
'

test_expect_success 'the dead daemon mount answers ENOTCONN, never wrong data' '
	is_mounted &&
	test_must_fail ls "$MNT" 2>err &&
	grep -q "Transport endpoint is not connected" err &&
	echo open:ENOTCONN >expect &&
	sysc read "$MNT/queues/dur/next" >actual &&
	test_cmp expect actual
'

test_expect_success 'remount on the same database' '
	remount &&
	test -d "$MNT/queues/dur" &&
	echo ok >expect &&
	cat "$MNT/sys/health" >actual &&
	test_cmp expect actual
'

test_expect_success 'every push whose close() returned 0 survived, byte for byte' '
	ls "$Q/partitions/default" >present &&
	sort pushed.ok >confirmed &&
	comm -23 confirmed present >lost &&
	test_line_count = 0 lost &&
	while read -r n; do
		test "$(cat "$Q/partitions/default/$n")" = "payload of $n" ||
			{ echo "wrong payload: $n"; return 1; }
	done <pushed.ok
'

test_expect_success 'no ack whose rename() returned 0 is redelivered' '
	echo "wait = 0" >"$Q/config" &&
	: >redelivered &&
	(cd "$Q" && find leased -type f) >inflight &&
	echo "leases in flight at the kill: $(cat inflight)" &&
	while read -r l; do
		echo "${l##*/}" >>redelivered &&
		mv "$Q/$l" "$Q/ack/" || return 1
	done <inflight &&
	echo "batch = 10000" >"$Q/config" &&
	while lines=$(timeout 10 cat "$Q/next" 2>/dev/null) && test -n "$lines"; do
		printf "%s\n" $lines | sed "s|.*/||" >>redelivered &&
		L=$(printf "%s\n" $lines | sed -n "1s|^leased/\([^/]*\)/.*|\1|p") &&
		mv "$Q/leased/$L" "$Q/ack/" || return 1
	done &&
	sort acked.ok >a && sort redelivered >r &&
	comm -12 a r >both &&
	test_line_count = 0 both &&
	echo "redelivered $(wc -l <redelivered) not yet acked" &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'nothing was lost: pushed = acked + redelivered (+ the ack in flight)' '
	cat a r | sort -u >consumed &&
	comm -23 confirmed consumed >missing &&
	sort tried.ok >tried &&
	comm -23 missing tried >lost &&
	test_line_count = 0 lost &&
	test_line_count -le 1 missing
'

test_expect_success 'the held lease, the dead letter and the config survived' '
	Q="$MNT/queues/keep" &&
	test -f "$Q/$HELD" &&
	printf k2 >expect &&
	test_cmp expect "$Q/$HELD" &&
	test -f "$Q/dlq/default/k1" &&
	cat "$Q/config" >config.after &&
	test_cmp config.before config.after &&
	echo ok >expect &&
	sysc rename "$Q/$HELD" "$Q/ack/k2" >actual &&
	test_cmp expect actual &&
	LINE=$(pop) &&
	test_is k3 "${LINE##*/}" "after the surviving lease"
'

test_expect_success 'a second kill -9 right after acks and pushes loses nothing' '
	Q="$MNT/queues/dur" &&
	printf last >"$Q/last" &&
	LINE=$(pop) && mv "$Q/$LINE" "$Q/ack/" &&
	printf after >"$Q/after" &&
	kill9_daemon &&
	remount &&
	printf after >expect &&
	test_cmp expect "$Q/partitions/default/after" &&
	LINE=$(pop) &&
	test_is after "${LINE##*/}" "the only message left"
'

# hold.py FILE TEXT...: open FILE, and for each TEXT write it and close a
# dup of the descriptor (each close() is a FLUSH that stages and confirms
# the bytes so far); keep one dup open, so no RELEASE publishes them; say
# so in FILE.ready, then sleep until killed.
cat >"$TRASH/hold.py" <<\EOF
import os, sys, time
path, texts = sys.argv[1], sys.argv[2:]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for t in texts:
    os.write(fd, t.encode())
    os.close(os.dup(fd))
open(os.path.basename(path) + ".ready", "w").close()
time.sleep(600)
EOF

hold () {
	{ "$PYTHON3" "$TRASH/hold.py" "$@" & } &&
	track_pid $! && HOLD_PIDS="$HOLD_PIDS $!" &&
	wait_until 10 "test -f ${1##*/}.ready"
}

unhold () {
	for p_ in $HOLD_PIDS; do stop_pid $p_; done
	HOLD_PIDS=
}

test_expect_success PYTHON 'kill -9 between close() and the release: the confirmed bytes are published at the restart' '
	q_init held && HOLD_PIDS= &&
	hold "$Q/h1" "first " "second" &&
	hold "$Q/h2" "only" &&
	test_is 2 "$(stat_of "$MNT/sys/stats" staged)" "staged before the crash" &&
	kill9_daemon && unhold &&
	remount &&
	printf "first second" >expect && test_cmp expect "$Q/partitions/default/h1" &&
	printf only >expect && test_cmp expect "$Q/partitions/default/h2" &&
	test_is 2 "$(stat_of "$Q/stats" messages)" "one message each" &&
	test_is 0 "$(stat_of "$MNT/sys/stats" staged)" "staged after the restart" &&
	grep -q "staged held/h1 published" "$DAEMON_LOG"
'

test_expect_success 'pushes published before a kill -9 are not published again' '
	q_init again &&
	for i in 1 2 3 4 5; do printf "m$i" >"$Q/m$i" || return 1; done &&
	wait_until 10 "test \$(stat_of \"$MNT/sys/stats\" staged) = 0" &&
	kill9_daemon && remount &&
	test_is 5 "$(stat_of "$Q/stats" messages)" messages &&
	test_is 0 "$(stat_of "$Q/stats" duplicates)" "duplicates: none replayed" &&
	! grep "staged again/" "$DAEMON_LOG"
'

test_expect_success PYTHON 'a record cut short by a crash is not published, the ones before it are' '
	q_init torn && HOLD_PIDS= &&
	hold "$Q/t1" "one" && hold "$Q/t2" "two" && hold "$Q/t3" "three" &&
	J=$(ls -t "$(spool_dir)"/*.j | head -n 1) &&
	kill9_daemon && unhold &&
	# the records end at the last byte that is not 0 (the file is
	# allocated ahead of them, and "three" ends the last one)
	size=$("$PYTHON3" -c "import sys; print(len(open(sys.argv[1], \"rb\").read().rstrip(b\"\\0\")))" "$J") &&
	test "$size" -gt 0 &&
	truncate -s $((size - 2)) "$J" &&
	printf "garbage after the cut" >>"$J" &&
	remount &&
	printf one >expect && test_cmp expect "$Q/partitions/default/t1" &&
	printf two >expect && test_cmp expect "$Q/partitions/default/t2" &&
	test_path_is_missing "$Q/partitions/default/t3" &&
	test_is 2 "$(stat_of "$Q/stats" messages)" messages
'

test_expect_success 'a spool file of the older one-file-per-push format is published at start' '
	q_init legacy &&
	stop_daemon_ &&
	printf "QFSSTAGE1\0000\0000\0000\0000\000legacy\000\000old1\000from an older daemon" \
	    >"$(spool_dir)/1000-1" &&
	start_daemon_ &&
	printf "from an older daemon" >expect &&
	test_cmp expect "$Q/partitions/default/old1" &&
	test_path_is_missing "$(spool_dir)/1000-1"
'

test_done
