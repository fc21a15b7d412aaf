#!/bin/sh
# fs-0050-producer-zoo: every common way a Unix program writes a file makes
# one message holding every byte written through the open file, by
# whichever process wrote it (dups, children, the shell's redirections),
# published once at the last close.  Each case checks the exact bytes
# stored and that the queue holds exactly one more message.
. "$(dirname "$0")/lib.sh"
mount_queenfs

N=0
P=

# stored NAME EXPECT-FILE: NAME holds exactly those bytes, and the queue
# one message more than before.
stored () {
	N=$((N + 1)) &&
	test_cmp "$2" "$P/$1" &&
	cat "$Q/stats" >stats &&
	test_is "$N" "$(stat_of stats messages)" messages &&
	ls "$P" >names &&
	test_line_count = "$N" names &&
	test_is 1 "$(grep -cx -- "$1" names)" "listings of $1"
}

test_expect_success 'setup: a queue and source files' '
	q_init zoo &&
	P="$Q/partitions/default" &&
	printf "first file\n" >a &&
	printf "second file\nof two lines\n" >b &&
	head -c 100000 /dev/urandom >big &&
	printf "3\n1\n2\n" >unsorted
'

test_expect_success 'a subshell of two cats into one redirect' '
	( cat a; cat b ) >"$Q/sub" &&
	cat a b >expect &&
	stored sub expect
'

test_expect_success 'exec 3> with two echos, closed by exec 3>&-' '
	exec 3>"$Q/ex" && echo l1 >&3 && echo l2 >&3 && exec 3>&- &&
	printf "l1\nl2\n" >expect &&
	stored ex expect
'

test_expect_success 'a { } group of an external and a builtin echo' '
	{ /bin/echo a; echo b; } >"$Q/grp" &&
	printf "a\nb\n" >expect &&
	stored grp expect
'

test_expect_success 'bash -c "exec >file" then builtins and a child' '
	bash -c "exec >\"$Q/bx\"; echo one; /bin/echo two; echo three" &&
	printf "one\ntwo\nthree\n" >expect &&
	stored bx expect
'

test_expect_success 'dup'\''d descriptors (exec 4>&3) both write' '
	exec 3>"$Q/dup" && exec 4>&3 && echo x >&3 && echo y >&4 &&
	exec 3>&- && echo z >&4 && exec 4>&- &&
	printf "x\ny\nz\n" >expect &&
	stored dup expect
'

test_expect_success 'a pipeline into a redirect' '
	cat unsorted | sort -r | cat >"$Q/pipe" &&
	printf "3\n2\n1\n" >expect &&
	stored pipe expect
'

test_expect_success 'xargs -P: parallel children share one stdout' '
	seq 1 40 | xargs -P 4 -n 1 sh -c "echo line-\$0" >"$Q/xa" &&
	seq 1 40 | sed "s/^/line-/" | sort >expect &&
	sort "$P/xa" >got &&
	test_cmp expect got &&
	N=$((N + 1)) && ls "$P" >names && test_line_count = "$N" names
'

test_expect_success 'background children writing to the same redirect' '
	sh -c "(echo c1) & (echo c2) & wait; echo end" >"$Q/bg" &&
	sort "$P/bg" >got && printf "c1\nc2\nend\n" >expect &&
	test_cmp expect got &&
	N=$((N + 1)) && ls "$P" >names && test_line_count = "$N" names
'

test_expect_success 'tee' '
	cat a b | tee "$Q/tee" >/dev/null &&
	cat a b >expect &&
	stored tee expect
'

test_expect_success 'sort -o' '
	sort -o "$Q/so" unsorted &&
	sort unsorted >expect &&
	stored so expect
'

test_expect_success 'awk print > redirection' '
	awk -v f="$Q/awk" "BEGIN { print \"x\" > f; print \"y\" > f; close(f) }" &&
	printf "x\ny\n" >expect &&
	stored awk expect
'

test_expect_success 'dd with bs smaller than the file' '
	dd if=big of="$Q/dd" bs=4096 2>/dev/null &&
	stored dd big
'

test_expect_success 'dd conv=notrunc into a new name' '
	dd if=b of="$Q/ddn" bs=5 conv=notrunc 2>/dev/null &&
	stored ddn b
'

test_expect_success 'install' '
	install -m 0644 big "$Q/inst" &&
	stored inst big
'

test_expect_success 'cp and cp -p' '
	cp big "$Q/cp" && stored cp big &&
	cp -p a "$Q/cpp" && stored cpp a
'

test_expect_success 'rsync (a temp dot-file, then rename)' '
	rsync big "$Q/rs" &&
	stored rs big
'

test_expect_success 'tar -x' '
	mkdir -p tsrc && cp b tsrc/tar && tar -cf t.tar -C tsrc tar &&
	tar -xf t.tar -C "$Q" &&
	stored tar b
'

test_expect_success 'python: flush, a child writing to the same file, more' '
	python3 - "$Q/rep" <<-\EOF &&
	import subprocess, sys
	f = open(sys.argv[1], "w")
	f.write("header\n")
	f.flush()
	subprocess.run(["echo", "child"], stdout=f, check=True)
	f.write("trailer\n")
	f.close()
	EOF
	printf "header\nchild\ntrailer\n" >expect &&
	stored rep expect
'

test_expect_success 'python fork: parent and child both write' '
	python3 - "$Q/fork" <<-\EOF &&
	import os, sys
	fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
	os.write(fd, b"parent1\n")
	pid = os.fork()
	if pid == 0:
	    os.write(fd, b"child\n")
	    os._exit(0)
	os.waitpid(pid, 0)
	os.write(fd, b"parent2\n")
	os.close(fd)
	EOF
	printf "parent1\nchild\nparent2\n" >expect &&
	stored fork expect
'

test_expect_success 'C fork: the child writes, exits; the parent writes' '
	cat >fork.c <<-\EOF &&
	#include <fcntl.h>
	#include <sys/wait.h>
	#include <unistd.h>
	int main(int argc, char **argv)
	{
		int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		pid_t pid;
		if (fd < 0 || write(fd, "p1\n", 3) != 3)
			return 1;
		if ((pid = fork()) == 0)
			_exit(write(fd, "c\n", 2) == 2 ? 0 : 1);
		waitpid(pid, NULL, 0);
		if (write(fd, "p2\n", 3) != 3)
			return 1;
		return close(fd) == 0 ? 0 : 1;
	}
	EOF
	cc -o fork fork.c &&
	./fork "$Q/cfork" &&
	printf "p1\nc\np2\n" >expect &&
	stored cfork expect
'

test_expect_success 'O_APPEND, partial and vectored writes' '
	python3 - "$Q/app" <<-\EOF &&
	import os, sys
	fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)
	os.write(fd, b"one\n")
	os.write(fd, b"two\n")
	os.close(fd)
	EOF
	printf "one\ntwo\n" >expect && stored app expect &&
	python3 - "$Q/vec" <<-\EOF &&
	import os, sys
	fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
	data = memoryview(b"abcdefghij" * 1000)
	while data:
	    n = os.write(fd, data[:777])
	    data = data[n:]
	os.writev(fd, [b"-x", b"-y", b"-z\n"])
	os.close(fd)
	EOF
	python3 -c "import sys; sys.stdout.write(\"abcdefghij\" * 1000 + \"-x-y-z\n\")" >expect &&
	stored vec expect
'

test_expect_success 'a producer killed with SIGKILL mid-write: what it wrote, once' '
	python3 - "$Q/killed" <<-\EOF
	import os, signal, sys
	fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
	os.write(fd, b"written before the kill\n")
	os.kill(os.getpid(), signal.SIGKILL)
	EOF
	echo "written before the kill" >expect &&
	stored killed expect
'

test_expect_success 'two opens with O_TRUNC are two attempts: the first closed wins' '
	python3 - "$Q/two" <<-\EOF &&
	import os, sys
	f1 = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
	os.write(f1, b"AAAA")
	f2 = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
	os.write(f2, b"BB")
	os.write(f1, b"aaaa")
	os.close(f1)
	os.close(f2)
	EOF
	printf AAAAaaaa >expect &&
	stored two expect
'

test_expect_success 'unlink of a file open for writing: 0, and nothing is pushed' '
	python3 - "$Q/gone" <<-\EOF &&
	import os, sys
	fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
	os.write(fd, b"never\n")
	os.unlink(sys.argv[1])
	os.write(fd, b"still never\n")
	os.close(fd)
	EOF
	test_path_is_missing "$P/gone" &&
	cat "$Q/stats" >stats &&
	test_is "$N" "$(stat_of stats messages)" messages
'

test_expect_success 'unlink of a name two opens are writing: neither is pushed' '
	python3 - "$Q/gone2" <<-\EOF &&
	import os, sys
	a = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
	os.write(a, b"first open\n")
	b = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
	os.write(b, b"second open\n")
	os.close(os.dup(a))
	os.unlink(sys.argv[1])
	os.close(a)
	os.close(b)
	EOF
	test_path_is_missing "$P/gone2" &&
	cat "$Q/stats" >stats &&
	test_is "$N" "$(stat_of stats messages)" messages
'

test_expect_success 'mknod of a regular file: EPERM, nothing made' '
	python3 -c "
import os, stat, sys
try:
    os.mknod(sys.argv[1], 0o644 | stat.S_IFREG)
    print(\"ok\")
except OSError as e:
    print(\"mknod:\" + __import__(\"errno\").errorcode[e.errno])
" "$Q/nod" >actual &&
	echo mknod:EPERM >expect &&
	test_cmp expect actual &&
	test_path_is_missing "$Q/nod"
'

test_expect_success 'EFBIG at the write that passes max_message_bytes; nothing pushed' '
	q_init small &&
	echo "max_message_bytes = 1000" >"$Q/config" &&
	python3 - "$Q/over" <<-\EOF >actual &&
	import errno, os, sys
	fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
	os.write(fd, b"x" * 600)
	try:
	    os.write(fd, b"y" * 600)
	    print("second write: ok")
	except OSError as e:
	    print("second write:", errno.errorcode[e.errno])
	try:
	    os.close(fd)
	    print("close: ok")
	except OSError as e:
	    print("close:", errno.errorcode[e.errno])
	EOF
	printf "second write: EFBIG\nclose: EFBIG\n" >expect &&
	test_cmp expect actual &&
	test_path_is_missing "$Q/partitions/default/over" &&
	test_is 0 "$(stat_of "$Q/stats" messages)" messages
'

test_expect_success 'read-your-writes: a push, then a pop at once, 200 times' '
	q_init ryw &&
	i=0 && while test $i -lt 200; do
		echo "m$i" >"$Q/m$i" &&
		sysc read_nonblock "$Q/next" >got &&
		sed -n "2s|^leased/[^/]*/||p" got >name &&
		echo "m$i" >expect &&
		test_cmp expect name &&
		mv "$Q/$(sed -n 2p got)" "$Q/ack/m$i" || return 1
		i=$((i + 1))
	done
'

test_expect_success 'a timer staged as a dot-file, dated, then renamed' '
	q_init tim &&
	printf x >"$Q/timers/.k" &&
	touch -d "+1 hour" "$Q/timers/.k" &&
	mv "$Q/timers/.k" "$Q/timers/k" &&
	ls "$Q/timers" >actual && echo k >expect && test_cmp expect actual &&
	due=$(stat -c %Y "$Q/timers/k") && now=$(date +%s) &&
	test $((due - now)) -gt 3000 &&
	printf x >expect && test_cmp expect "$Q/timers/k"
'

test_expect_success 'a confirmed close survives kill -9 of the daemon' '
	q_init crash &&
	{ python3 - "$MNT/queues/crash/held" <<-\EOF & } &&
	import os, sys, time
	fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
	os.write(fd, b"kept\n")
	os.close(os.dup(fd))
	open(sys.argv[1] + ".x", "w").close()
	time.sleep(30)
	EOF
	pid=$! && track_pid $pid &&
	wait_until 10 "test -e \"$MNT/queues/crash/held.x\"" &&
	kill9_daemon && stop_pid $pid && remount &&
	echo kept >expect &&
	wait_until 10 "test -e \"$MNT/queues/crash/partitions/default/held\"" &&
	test_cmp expect "$MNT/queues/crash/partitions/default/held"
'

# partitions/<p>/ lists the partition's log, each message once: a file
# written there is listed once its publish is in the log, and a touch of
# a stored message (an open for write that writes nothing) lists it
# once, not also as an attempt (design.md, "Pushing").
test_expect_success 'ls of a partition lists each message once, written files once published' '
	q_init pw &&
	P="$Q/partitions/default" &&
	for i in $(seq 1 300); do echo $i >"$P/m$i" || return 1; done &&
	touch "$P/m7" &&
	ls -A "$P" >names &&
	test_line_count = 300 names &&
	test_is 300 "$(sort -u names | wc -l)" "names listed once" &&
	exec 6>"$P/w" &&
	echo w >&6 &&
	exec 6>&- &&
	ls -A "$P" >names &&
	test_line_count = 301 names &&
	test_is 1 "$(grep -cx w names)" "listings of w" &&
	test_is w "$(cat "$P/w")" "w"
'

# An in-place editor on a stored message: sed -i writes its copy under a
# plain name beside it (a push of its own: the mount cannot tell it from
# any other file) and then fails to rename it over the message, which
# stays as it was (design.md, "Pushing").
test_expect_success 'sed -i on a message fails and leaves it as it was' '
	q_init sedi &&
	P="$Q/partitions/default" &&
	echo one >"$P/m" &&
	test_must_fail sed -i s/one/two/ "$P/m" 2>err &&
	grep -q "Invalid argument" err &&
	test_is one "$(cat "$P/m")" "the message" &&
	test_is 2 "$(stat_of "$Q/stats" messages)" "messages: m and the copy" &&
	test_is two "$(cat "$P/$(ls "$P" | grep -vx m)")" "the copy"
'

test_done
