#!/bin/sh
# fs-0005-waiting: a read of `next` that waits: woken by a push, ended by
# Ctrl-C (EINTR / KeyboardInterrupt) with the daemon still serving, poll()
# reporting readable on a push, and many waiters at once.
. "$(dirname "$0")/lib.sh"
mount_queenfs

test_expect_success 'setup: an empty queue, wait = 20' '
	q_init w &&
	echo "wait = 20" >"$Q/config" &&
	grep -q "^wait = 20$" "$Q/config"
'

test_expect_success 'a blocked cat next is woken by a push' '
	{ timeout 25 cat "$Q/next" >woken & } &&
	reader=$! && track_pid $reader &&
	sleep 0.5 &&
	kill -0 $reader &&
	test_line_count = 0 woken &&
	start=$(date +%s%N) &&
	printf wake >"$Q/wake1" &&
	wait_until 5 "! kill -0 $reader 2>/dev/null" &&
	wait $reader &&
	ms=$(( ($(date +%s%N) - start) / 1000000 )) &&
	echo "woken after $ms ms" &&
	test $ms -lt 2000 &&
	grep -q "^leased/[^/]*/wake1$" woken &&
	printf wake >expect &&
	test_cmp expect "$Q/$(cat woken)" &&
	mv "$Q/$(cat woken)" "$Q/ack/"
'

test_expect_success 'sys/stats shows no waiting reader once it is served' '
	test_is 0 "$(stat_of "$MNT/sys/stats" waiting_readers)" waiting_readers
'

test_expect_success PYTHON 'SIGINT ends a blocked reader with KeyboardInterrupt (EINTR)' '
	cat >reader.py <<-\EOF &&
	import errno, os, signal, sys, time
	# a background job of a script starts with SIGINT ignored
	signal.signal(signal.SIGINT, signal.default_int_handler)
	fd = os.open(sys.argv[1], os.O_RDONLY)
	open("ready", "w").close()
	t0 = time.monotonic()
	try:
	    data = os.read(fd, 4096)
	    print("read returned %r" % data)
	except KeyboardInterrupt:
	    print("interrupted after %d ms" % ((time.monotonic() - t0) * 1000))
	except OSError as e:
	    print("error %s" % errno.errorcode[e.errno])
	os.close(fd)
	EOF
	rm -f ready &&
	{ "$PYTHON3" reader.py "$Q/next" >reader.out 2>&1 & } &&
	reader=$! && track_pid $reader &&
	wait_until 5 "test -f ready" &&
	sleep 0.5 &&
	kill -0 $reader &&
	test_is 1 "$(stat_of "$MNT/sys/stats" waiting_readers)" waiting_readers &&
	kill -INT $reader &&
	wait_until 3 "! kill -0 $reader 2>/dev/null";
	r=$?
	stop_pid $reader
	cat reader.out &&
	test $r = 0 &&
	grep -q "^interrupted after [0-9]* ms$" reader.out
'

test_expect_success 'the daemon keeps working; the interrupted read took no lease' '
	wait_until 3 "test \"\$(stat_of \"$MNT/sys/stats\" waiting_readers)\" = 0" &&
	test_is 0 "$(stat_of "$Q/stats" leases)" leases &&
	printf after >"$Q/after-int" &&
	pop >line &&
	grep -q "^leased/[^/]*/after-int$" line &&
	mv "$Q/$(cat line)" "$Q/ack/" &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'SIGTERM and SIGKILL of a blocked cat end it too' '
	{ cat "$Q/next" >/dev/null & } &&
	r1=$! && track_pid $r1 &&
	{ cat "$Q/next" >/dev/null & } &&
	r2=$! && track_pid $r2 &&
	sleep 0.5 &&
	kill -0 $r1 && kill -0 $r2 &&
	kill -TERM $r1 && kill -KILL $r2 &&
	wait_until 3 "! kill -0 $r1 2>/dev/null && ! kill -0 $r2 2>/dev/null" &&
	wait_until 3 "test \"\$(stat_of \"$MNT/sys/stats\" waiting_readers)\" = 0" &&
	printf x >"$Q/after-kill" &&
	pop >line &&
	grep -q "^leased/[^/]*/after-kill$" line &&
	mv "$Q/$(cat line)" "$Q/ack/"
'

test_expect_success PYTHON 'poll() on next: not readable when empty, readable after a push' '
	q_init polled &&
	python3 - "$Q" >poll.out <<-\EOF &&
	import os, select, sys, threading, time
	q = sys.argv[1]
	fd = os.open(q + "/next", os.O_RDONLY | os.O_NONBLOCK)
	p = select.poll()
	p.register(fd, select.POLLIN)
	print("empty:", p.poll(0))
	def push():
	    time.sleep(0.5)
	    with open(q + "/polled", "w") as f:
	        f.write("p")
	threading.Thread(target=push).start()
	t0 = time.monotonic()
	ev = p.poll(5000)
	ms = (time.monotonic() - t0) * 1000
	print("after push:", [e for _, e in ev], "in",
	      "time" if 300 < ms < 3000 else "%d ms" % ms)
	line = os.read(fd, 4096).decode()
	print("read:", line.split("/")[0], line.rstrip().split("/")[-1])
	os.close(fd)
	EOF
	cat poll.out &&
	cat >expect <<-EOF &&
	empty: []
	after push: [1] in time
	read: leased polled
	EOF
	test_cmp expect poll.out
'

test_expect_success PYTHON 'poll() is not readable while the only partition is leased, nor after its ack' '
	q_init polled2 &&
	printf a >"$Q/a" &&
	python3 - "$Q" >poll.out <<-\EOF &&
	import os, select, sys
	q = sys.argv[1]
	def readable(fd, ms):
	    p = select.poll()
	    p.register(fd, select.POLLIN)
	    return [e & select.POLLIN for _, e in p.poll(ms)]
	fd = os.open(q + "/next", os.O_RDONLY | os.O_NONBLOCK)
	print("waiting message:", readable(fd, 2000))
	line = os.read(fd, 4096).decode().strip()
	os.close(fd)
	fd = os.open(q + "/next", os.O_RDONLY | os.O_NONBLOCK)
	print("leased:", readable(fd, 300))
	os.rename(q + "/" + line, q + "/ack/a")
	print("acked, same fd:", readable(fd, 300))
	os.close(fd)
	fd = os.open(q + "/next", os.O_RDONLY | os.O_NONBLOCK)
	print("acked, new fd:", readable(fd, 300))
	try:
	    print("read:", os.read(fd, 4096))
	except BlockingIOError:
	    print("read: EAGAIN")
	os.close(fd)
	EOF
	cat >expect <<-EOF &&
	waiting message: [1]
	leased: []
	acked, same fd: []
	acked, new fd: []
	read: EAGAIN
	EOF
	test_cmp expect poll.out
'

test_expect_success 'five blocked readers, five pushes: each gets exactly one message' '
	q_init many &&
	echo "wait = 10" >"$Q/config" &&
	pids= &&
	for i in 1 2 3 4 5; do
		{ timeout 15 cat "$Q/next" >r$i & } &&
		pids="$pids $!" && track_pid $! || return 1
	done &&
	sleep 0.3 &&
	for i in 1 2 3 4 5; do
		printf "%s" $i >"$Q/partitions/p$i/n$i" || return 1
	done &&
	for p in $pids; do
		wait $p || return 1
	done &&
	cat r1 r2 r3 r4 r5 | sed "s|.*/||" | sort >actual &&
	printf "%s\n" n1 n2 n3 n4 n5 >expect &&
	test_cmp expect actual
'

test_done
