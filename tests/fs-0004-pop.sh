#!/bin/sh
# fs-0004-pop: reading `next` leases messages and prints
# `leased/<lease>/<txid>` lines; looking never consumes; the leased file
# holds the payload and user.queen.* xattrs; batch; ENODATA after `wait`,
# EAGAIN under O_NONBLOCK; one open is one pop; fairness across
# partitions; delay and window_buffer; no FLUSH for read-only closes.
. "$(dirname "$0")/lib.sh"
mount_queenfs

test_expect_success 'setup: three messages, wait = 1' '
	q_init jobs &&
	echo "wait = 1" >"$Q/config" &&
	for i in 1 2 3; do
		printf "payload %s\n" $i >"$Q/m$i" || return 1
	done &&
	test_is 3 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'ls, find, stat, getfattr, open+close and backups never consume' '
	mkdir "$Q/groups/g1" &&
	cat "$Q/stats" >stats.before &&
	stat_of "$MNT/sys/stats" pops >pops.before &&
	ls -lRa "$MNT" >/dev/null &&
	find "$MNT" >/dev/null &&
	find "$MNT" -type f -newer stats.before >/dev/null &&
	stat "$Q/next" "$MNT/queues/jobs/groups/g1/next" >/dev/null &&
	{ getfattr -R -d "$MNT/queues" >/dev/null 2>&1; :; } &&
	python3 -c "
import os, sys
for p in sys.argv[1:]:
    os.close(os.open(p, os.O_RDONLY))
    os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
" "$Q/next" "$Q/groups/g1/next" &&
	{ tar -C "$Q" -cf backup.tar . 2>/dev/null; :; } &&
	{ rsync -a "$Q/" backup/ 2>/dev/null; :; } &&
	cat "$Q/stats" >stats.after &&
	test_cmp stats.before stats.after &&
	stat_of "$MNT/sys/stats" pops >pops.after &&
	test_cmp pops.before pops.after &&
	test_is 0 "$(stat_of stats.after leases)" leases &&
	ls "$Q/leased" >actual &&
	test_line_count = 0 actual &&
	ls "$Q/groups" >actual &&
	echo g1 >expect &&
	test_cmp expect actual
'

test_expect_success 'cat next prints one leased/<lease>/<txid> line' '
	pop >line &&
	test_line_count = 1 line &&
	grep -q "^leased/[A-Za-z0-9._:@=+-]*/m1$" line &&
	LEASE=$(sed "s|^leased/\([^/]*\)/.*|\1|" line) &&
	MSG="$Q/$(cat line)"
'

test_expect_success 'the line is a path relative to the queue dir; the file holds the payload' '
	printf "payload 1\n" >expect &&
	test_cmp expect "$MSG" &&
	ls "$Q/leased" >actual &&
	echo "$LEASE" >expect &&
	test_cmp expect actual &&
	ls "$Q/leased/$LEASE" >actual &&
	echo m1 >expect &&
	test_cmp expect actual &&
	test_is 10 "$(stat -c %s "$MSG")" size
'

test_expect_success 'stats count the lease' '
	cat "$Q/stats" >stats &&
	test_is 1 "$(stat_of stats leases)" leases &&
	test_is 1 "$(stat_of stats leased_messages)" leased_messages &&
	test_is 3 "$(stat_of stats depth)" depth
'

test_expect_success 'the leased file is read-only' '
	sysc write "$MSG" changed >actual &&
	grep -q "^open:E" actual &&
	printf "payload 1\n" >expect &&
	test_cmp expect "$MSG"
'

test_expect_success ATTR 'user.queen.* xattrs of a leased message' '
	getfattr --absolute-names -d -m "^user\\.queen\\." "$MSG" >x &&
	sed -n "s/^\(user\.queen\.[a-z_]*\)=.*/\1/p" x | sort >names &&
	printf "user.queen.%s\n" created_at lease_expires_at offset partition \
		partition_id retry_count transaction_id >expect &&
	test_cmp expect names &&
	grep -q "^user.queen.partition=\"default\"$" x &&
	grep -q "^user.queen.offset=\"1\"$" x &&
	grep -q "^user.queen.transaction_id=\"m1\"$" x &&
	grep -q "^user.queen.retry_count=\"0\"$" x &&
	grep -q "^user.queen.partition_id=\"[0-9a-f-]\{36\}\"$" x &&
	grep -q "^user.queen.created_at=\"20[0-9-]*T[0-9:.]*Z\"$" x &&
	exp=$(getfattr --only-values -n user.queen.lease_expires_at "$MSG") &&
	left=$(( $(date -d "$exp" +%s) - $(date +%s) )) &&
	test "$left" -ge 295 && test "$left" -le 301
'

test_expect_success ATTR 'a message of the log has the same partition_id and offset' '
	getfattr --absolute-names -d -m "^user\\.queen\\." "$Q/partitions/default/m1" >y &&
	grep "^user.queen.partition_id=" x >expect &&
	grep "^user.queen.partition_id=" y >actual &&
	test_cmp expect actual &&
	grep -q "^user.queen.offset=\"1\"$" y &&
	grep -q "^user.queen.transaction_id=\"m1\"$" y
'

test_expect_success 'a held partition gives ENODATA after wait (1 s)' '
	echo read:ENODATA >expect &&
	SYSC_MS=1 sysc read "$Q/next" >actual &&
	sed -n 1p actual >got &&
	test_cmp expect got &&
	ms=$(sed -n "s/^ms=//p" actual) &&
	test $ms -ge 950 && test $ms -lt 3000
'

test_expect_success 'O_NONBLOCK gives EAGAIN at once' '
	echo read:EAGAIN >expect &&
	SYSC_MS=1 sysc read_nonblock "$Q/next" >actual &&
	sed -n 1p actual >got &&
	test_cmp expect got &&
	ms=$(sed -n "s/^ms=//p" actual) &&
	test $ms -lt 500
'

test_expect_success 'a refused read took no lease' '
	test_is 1 "$(stat_of "$Q/stats" leases)" leases
'

test_expect_success 'after the ack the next message comes' '
	mv "$MSG" "$Q/ack/" &&
	pop >line &&
	grep -q "^leased/[^/]*/m2$" line &&
	printf "payload 2\n" >expect &&
	test_cmp expect "$Q/$(cat line)" &&
	mv "$Q/$(cat line)" "$Q/ack/"
'

test_expect_success 'batch = 2 leases two messages under one lease' '
	echo "batch = 2" >"$Q/config" &&
	printf "payload 4\n" >"$Q/m4" &&
	pop >lines &&
	test_line_count = 2 lines &&
	sed -n 1p lines | grep -q "^leased/[^/]*/m3$" &&
	sed -n 2p lines | grep -q "^leased/[^/]*/m4$" &&
	cut -d/ -f2 lines | sort -u >leases &&
	test_line_count = 1 leases &&
	ls "$Q/leased/$(cat leases)" >actual &&
	printf "%s\n" m3 m4 >expect &&
	test_cmp expect actual &&
	printf "payload 4\n" >expect &&
	test_cmp expect "$Q/$(sed -n 2p lines)" &&
	test_is 2 "$(stat_of "$Q/stats" leased_messages)" leased_messages &&
	mv "$Q/leased/$(cat leases)" "$Q/ack/"
'

test_expect_success 'an empty queue gives ENODATA after wait, EAGAIN with O_NONBLOCK' '
	test_is 0 "$(stat_of "$Q/stats" depth)" depth &&
	echo read:ENODATA >expect &&
	sysc read "$Q/next" >actual &&
	test_cmp expect actual &&
	echo read:EAGAIN >expect &&
	sysc read_nonblock "$Q/next" >actual &&
	test_cmp expect actual
'

test_expect_success 'setup: batch 1, two partitions with one message each' '
	echo "batch = 1" >"$Q/config" &&
	printf a >"$Q/partitions/pa/a1" &&
	sleep 0.05 &&
	printf b >"$Q/partitions/pb/b1" &&
	printf a2 >"$Q/partitions/pa/a2"
'

test_expect_success 'one open is one pop: a second read on the same fd is EOF' '
	python3 - "$Q/next" >out <<-\EOF &&
	import os, sys
	fd = os.open(sys.argv[1], os.O_RDONLY)
	first = b""
	while not first.endswith(b"\n"):
	    b = os.read(fd, 7)       # small reads: the line comes in pieces
	    assert b, "EOF before the end of the line"
	    first += b
	rest = os.read(fd, 4096)
	os.close(fd)
	sys.stdout.write(first.decode())
	sys.stdout.write("rest=%r\n" % rest)
	EOF
	cat out &&
	test_line_count = 2 out &&
	grep -q "^leased/[^/]*/a1$" out &&
	grep -q "^rest=b..$" out &&
	test_is 1 "$(stat_of "$Q/stats" leases)" leases
'

test_expect_success 'the oldest waiting message is served first; partitions lease independently' '
	pop >line2 &&
	grep -q "^leased/[^/]*/b1$" line2 &&
	test_is 2 "$(stat_of "$Q/stats" leases)" leases &&
	ls "$Q/leased" >actual &&
	test_line_count = 2 actual &&
	echo read:EAGAIN >expect &&
	sysc read_nonblock "$Q/next" >actual &&
	test_cmp expect actual
'

test_expect_success 'cleanup: ack both' '
	mv "$Q/$(sed -n 1p out)" "$Q/ack/" &&
	mv "$Q/$(cat line2)" "$Q/ack/" &&
	pop >line3 &&
	grep -q "^leased/[^/]*/a2$" line3 &&
	mv "$Q/$(cat line3)" "$Q/ack/" &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'batch = 100: 100 lines (more than one read buffer) in push order' '
	q_init big &&
	printf "batch = 100\nwait = 1\n" >"$Q/config" &&
	i=100 &&
	while test $i -lt 200; do
		printf "$i" >"$Q/message-number-$i" || return 1
		i=$((i + 1))
	done &&
	pop >lines &&
	test_line_count = 100 lines &&
	sed "s|.*/||" lines >actual &&
	seq -f "message-number-%g" 100 199 >expect &&
	test_cmp expect actual &&
	cut -d/ -f2 lines | sort -u >leases &&
	test_line_count = 1 leases &&
	printf 150 >expect &&
	test_cmp expect "$Q/leased/$(cat leases)/message-number-150" &&
	mv "$Q/leased/$(cat leases)" "$Q/ack/" &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'a 3 MB binary payload reads back whole from leased/' '
	q_init bigpayload &&
	head -c 3000000 /dev/urandom >big &&
	cp big "$Q/blob" &&
	LINE=$(pop) &&
	test_cmp big "$Q/$LINE" &&
	test_is 3000000 "$(stat -c %s "$Q/$LINE")" size &&
	dd if="$Q/$LINE" bs=1000 skip=1500 count=1 2>/dev/null >piece &&
	dd if=big bs=1000 skip=1500 count=1 2>/dev/null >expect &&
	test_cmp expect piece &&
	mv "$Q/$LINE" "$Q/ack/"
'

test_expect_success 'delay hides a message for that long after its push' '
	q_init delayed &&
	printf "wait = 0\ndelay = 1\n" >"$Q/config" &&
	printf d >"$Q/d1" &&
	echo read:EAGAIN >expect &&
	sysc read_nonblock "$Q/next" >actual &&
	test_cmp expect actual &&
	sleep 1.2 &&
	pop >line &&
	grep -q "^leased/[^/]*/d1$" line
'

test_expect_success 'window_buffer holds back a partition until its newest message is that old' '
	q_init windowed &&
	printf "wait = 0\nwindow_buffer = 2\n" >"$Q/config" &&
	printf w >"$Q/w1" &&
	echo read:EAGAIN >expect &&
	sysc read_nonblock "$Q/next" >actual &&
	test_cmp expect actual &&
	sleep 1.2 &&
	printf w >"$Q/w2" &&
	sleep 1.2 &&
	sysc read_nonblock "$Q/next" >actual &&
	test_cmp expect actual &&
	sleep 1 &&
	pop >line &&
	grep -q "^leased/[^/]*/w1$" line
'

# A close can only report an error of something written: the daemon asks
# the kernel for no FLUSH on files opened read-only (two requests of every
# push-pop-read-ack cycle).  Counted in the -d request log.
test_expect_success 'closing what was opened read-only sends no FLUSH; a push does' '
	DAEMON_ARGS=-d && remount &&
	q_init noflush &&
	printf x >"$Q/f1" &&
	: >"$DAEMON_LOG" &&
	line=$(pop) &&
	cat "$Q/$line" >/dev/null &&
	cat "$Q/config" "$Q/stats" >/dev/null &&
	test_is 0 "$(grep -c "opcode: FLUSH" "$DAEMON_LOG")" "FLUSHes of reads" &&
	grep -q "opcode: READ" "$DAEMON_LOG" &&
	printf y >"$Q/f2" &&
	# the shell closes twice (the file and its dup on stdout)
	test "$(grep -c "opcode: FLUSH" "$DAEMON_LOG")" -ge 1 &&
	DAEMON_ARGS= && remount
'

test_done
