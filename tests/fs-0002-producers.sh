#!/bin/sh
# fs-0002-producers: every usual producer tool pushes exactly one message
# per file, with the file's bytes as the payload byte for byte (text,
# binary, multi-MB written in small pieces), to "default" or to the
# partition it was created in.
. "$(dirname "$0")/lib.sh"
mount_queenfs

# expect_messages N: the queue holds N messages, all pushed once, and the
# partition listings hold N names in all.
expect_messages () {
	cat "$Q/stats" >stats &&
	test_is "$1" "$(stat_of stats messages)" messages &&
	test_is "$1" "$(stat_of stats pushed)" pushed &&
	test_is "$1" "$(stat_of stats depth)" depth &&
	find "$Q/partitions" -type f >listing &&
	test_line_count = "$1" listing
}

test_expect_success 'setup: a queue and some source files outside the mount' '
	q_init jobs &&
	mkdir src &&
	printf "hello, world\n" >src/text &&
	python3 -c "import sys; sys.stdout.buffer.write(bytes(range(256)) * 4)" >src/binary &&
	head -c 3000000 /dev/urandom >src/big &&
	ls -l src
'

test_expect_success 'sh redirection pushes one message' '
	printf "hello, world\n" >"$Q/m-redirect" &&
	ls "$Q/partitions" >parts &&
	echo default >expect &&
	test_cmp expect parts &&
	ls "$Q/partitions/default" >actual &&
	echo m-redirect >expect &&
	test_cmp expect actual &&
	test_cmp src/text "$Q/partitions/default/m-redirect" &&
	expect_messages 1
'

test_expect_success 'cp pushes one message' '
	cp src/text "$Q/m-cp" &&
	test_cmp src/text "$Q/partitions/default/m-cp" &&
	expect_messages 2
'

test_expect_success 'cp of a binary payload keeps every byte (NUL included)' '
	cp src/binary "$Q/m-binary" &&
	test_cmp src/binary "$Q/partitions/default/m-binary" &&
	test_is 1024 "$(wc -c <"$Q/partitions/default/m-binary")" size &&
	expect_messages 3
'

test_expect_success 'mv from another filesystem pushes one message and removes the source' '
	cp src/text src/m-mv &&
	mv src/m-mv "$Q/" &&
	test_path_is_missing src/m-mv &&
	test_cmp src/text "$Q/partitions/default/m-mv" &&
	expect_messages 4
'

test_expect_success RSYNC 'rsync (dot-file + rename) pushes one message' '
	cp src/binary src/m-rsync &&
	rsync src/m-rsync "$Q/" &&
	test_cmp src/binary "$Q/partitions/default/m-rsync" &&
	expect_messages 5
'

test_expect_success RSYNC 'rsync -a of a directory pushes one message per file' '
	mkdir rs && printf one >rs/rs-1 && printf two >rs/rs-2 && printf three >rs/rs-3 &&
	rsync -a rs/ "$Q/" &&
	for f in rs-1 rs-2 rs-3; do
		test_cmp rs/$f "$Q/partitions/default/$f" || return 1
	done &&
	expect_messages 8
'

test_expect_success TAR 'tar -x pushes one message per member' '
	mkdir t && printf alpha >t/tar-1 && cp src/binary t/tar-2 &&
	tar -C t -cf members.tar tar-1 tar-2 &&
	tar -C "$Q" -xf members.tar &&
	test_cmp t/tar-1 "$Q/partitions/default/tar-1" &&
	test_cmp t/tar-2 "$Q/partitions/default/tar-2" &&
	expect_messages 10
'

test_expect_success 'install pushes one message' '
	install -m 644 src/text "$Q/m-install" &&
	test_cmp src/text "$Q/partitions/default/m-install" &&
	expect_messages 11
'

test_expect_success PYTHON 'Python open().write() pushes one message' '
	python3 -c "
import sys
with open(sys.argv[1], \"wb\") as f:
    f.write(b\"from python\\x00\\xff\")
" "$Q/m-python" &&
	printf "from python\000\377" >expect &&
	test_cmp expect "$Q/partitions/default/m-python" &&
	expect_messages 12
'

test_expect_success PYTHON 'a 3 MB payload written 1000 bytes at a time is one message' '
	python3 - "$Q/m-big" <<-\EOF &&
	import os, sys
	data = open("src/big", "rb").read()
	fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
	for i in range(0, len(data), 1000):
	    os.write(fd, data[i:i + 1000])
	os.close(fd)
	EOF
	test_cmp src/big "$Q/partitions/default/m-big" &&
	expect_messages 13
'

test_expect_success 'dd with 512-byte blocks of a 3 MB file is one message' '
	dd if=src/big of="$Q/m-dd" bs=512 2>/dev/null &&
	test_cmp src/big "$Q/partitions/default/m-dd" &&
	expect_messages 14
'

test_expect_success 'a slow writer (pauses between writes) is still one message' '
	{ printf part1; sleep 0.3; printf part2; sleep 0.3; printf part3; } >"$Q/m-slow" &&
	printf part1part2part3 >expect &&
	test_cmp expect "$Q/partitions/default/m-slow" &&
	expect_messages 15
'

test_expect_success 'stat of a pushed message shows its payload size' '
	test_is 3000000 "$(stat -c %s "$Q/partitions/default/m-big")" size &&
	test_is 13 "$(stat -c %s "$Q/partitions/default/m-redirect")" size
'

test_expect_success 'the listing holds every pushed name exactly once' '
	ls "$Q/partitions/default" >actual &&
	printf "%s\n" m-big m-binary m-cp m-dd m-install m-mv m-python \
		m-redirect m-rsync m-slow rs-1 rs-2 rs-3 tar-1 tar-2 >expect &&
	test_cmp expect actual
'

test_expect_success 'creating a file in partitions/<p>/ pushes to p, creating p' '
	printf "to p1" >"$Q/partitions/p1/x1" &&
	ls "$Q/partitions" >actual &&
	printf "%s\n" default p1 >expect &&
	test_cmp expect actual &&
	ls "$Q/partitions/p1" >actual &&
	echo x1 >expect &&
	test_cmp expect actual &&
	printf "to p1" >expect &&
	test_cmp expect "$Q/partitions/p1/x1" &&
	test_path_is_missing "$Q/partitions/default/x1" &&
	expect_messages 16
'

test_expect_success 'cp and Python into a partition dir push there' '
	cp src/binary "$Q/partitions/p1/x2" &&
	python3 -c "open(\"$Q/partitions/p1/x3\", \"w\").write(\"py\")" &&
	test_cmp src/binary "$Q/partitions/p1/x2" &&
	printf py >expect && test_cmp expect "$Q/partitions/p1/x3" &&
	cat "$Q/stats" >stats &&
	test_is 2 "$(stat_of stats partitions)" partitions &&
	expect_messages 18
'

test_expect_success 'no producer tool was counted as a duplicate' '
	cat "$Q/stats" >stats &&
	test_is 0 "$(stat_of stats duplicates)" duplicates
'

# Any name under partitions/ is a partition dir, so the kernel may keep
# it: pushes spread over 50 partitions, each revisited after the 1 s
# that other directory names keep, ask only for the new file names (and
# a few directories above), not for the partition dirs again.
test_expect_success 'a partition dir is not looked up again at every push' '
	S="$MNT/queues/spread" && mkdir "$S" &&
	for i in $(seq 0 49); do
		printf a >"$S/partitions/p$i/a" || return 1
	done &&
	sleep 1.5 &&
	l0=$(stat_of "$MNT/sys/stats" lookups) &&
	for i in $(seq 0 49); do
		printf b >"$S/partitions/p$i/b" || return 1
	done &&
	l1=$(stat_of "$MNT/sys/stats" lookups) &&
	echo "LOOKUPs for 50 pushes: $((l1 - l0))" &&
	test $((l1 - l0)) -ge 50 && test $((l1 - l0)) -lt 75
'

# Each push reads its queue and partition rows (at the lookup that asks
# the dedup window, and at the push): from the store's copies, not SQLite.
test_expect_success SQLITE_STORE 'pushes read their queue and partition rows from memory' '
	h0=$(stat_of "$MNT/sys/stats" row_cache_hits) &&
	m0=$(stat_of "$MNT/sys/stats" row_cache_misses) &&
	for i in $(seq 0 49); do
		printf c >"$S/partitions/p$i/c" || return 1
	done &&
	h1=$(stat_of "$MNT/sys/stats" row_cache_hits) &&
	m1=$(stat_of "$MNT/sys/stats" row_cache_misses) &&
	echo "50 pushes: $((h1 - h0)) rows from memory, $((m1 - m0)) from SQLite" &&
	test $((h1 - h0)) -ge 100 && test $((m1 - m0)) -lt 5
'

test_expect_success 'writing over a message of the log never changes what it reads' '
	sysc create "$Q/partitions/default/m-cp" changed >actual &&
	echo ok >expect &&
	test_cmp expect actual &&
	test_cmp src/text "$Q/partitions/default/m-cp" &&
	sysc write "$Q/partitions/default/m-redirect" changed >actual &&
	test_cmp src/text "$Q/partitions/default/m-redirect" &&
	expect_messages 18
'

test_expect_success 'pushed messages survive a remount byte for byte' '
	remount &&
	test_cmp src/big "$Q/partitions/default/m-big" &&
	test_cmp src/binary "$Q/partitions/p1/x2" &&
	ls "$Q/partitions/default" >actual &&
	test_line_count = 15 actual
'

test_done
