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

sysc_utime () {
	python3 -c '
import errno, os, sys
try:
    os.utime(sys.argv[1], (0, 0))
    print("ok")
except OSError as e:
    print("utime:" + errno.errorcode[e.errno])
' "$1"
}

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

test_expect_success PYTHON 'symlink, link, mknod of a fifo: EPERM, nothing made' '
	q_init ln &&
	printf x >"$Q/m1" &&
	python3 - "$Q" <<-\PYEOF
	import errno, os, sys
	q = sys.argv[1]
	def refused(what, f):
	    try:
	        f()
	    except OSError as e:
	        if e.errno != errno.EPERM:
	            sys.exit("%s: %s, want EPERM" % (what, errno.errorcode[e.errno]))
	        return
	    sys.exit(what + ": answered 0")
	refused("symlink", lambda: os.symlink("/etc/passwd", q + "/s1"))
	refused("link", lambda: os.link(q + "/partitions/default/m1", q + "/l1"))
	refused("mkfifo", lambda: os.mkfifo(q + "/f1"))
	PYEOF
	test_is 1 "$(stat_of "$Q/stats" pushed)" pushed &&
	test_path_is_missing "$Q/partitions/default/s1" &&
	grep -q "symlink .*/s1 -> /etc/passwd: the mount holds no links (EPERM)" "$DAEMON_LOG"
'

test_expect_success PYTHON 'chmod/chown/truncate/utime that would change nothing: EPERM, and logged' '
	q_init cm &&
	printf x >"$Q/m1" &&
	echo "wait = 1" >"$Q/config" &&
	line=$(pop) &&
	python3 - "$MNT" "$Q" "$line" <<-\PYEOF
	import errno, os, sys
	mnt, q, leased = sys.argv[1:]
	def refused(what, f):
	    try:
	        f()
	    except OSError as e:
	        if e.errno != errno.EPERM:
	            sys.exit("%s: %s, want EPERM" % (what, errno.errorcode[e.errno]))
	        return
	    sys.exit(what + ": answered 0")
	for p in (mnt + "/api/push", q + "/partitions/default/m1", q + "/" + leased,
	          q + "/config", q + "/stats", mnt + "/sys/stats"):
	    refused("chmod " + p, lambda: os.chmod(p, 0o777))
	    refused("chown " + p, lambda: os.chown(p, 4242, 4242))
	for p in (q + "/config", q + "/partitions/default/m1", q + "/" + leased):
	    refused("truncate " + p, lambda: os.truncate(p, 0))
	# a queue keeps its owner and mode: chmod works there
	os.chmod(q, 0o750)
	if os.stat(q).st_mode & 0o777 != 0o750:
	    sys.exit("chmod of the queue did not hold")
	# touch of a leased file renews its lease: still answered
	os.utime(q + "/" + leased)
	PYEOF
	test_is 1 "$(stat_of "$Q/stats" depth)" depth &&
	cat "$Q/config" >conf &&
	test_is 1 "$(stat_of conf wait)" wait &&
	grep -q "setattr api/push: only queues, groups and KV namespaces have an owner" "$DAEMON_LOG"
'

test_expect_success PYTHON 'touch of a dead letter: EPERM' '
	q_init dl &&
	printf "retry_limit = 0\nwait = 1\n" >"$Q/config" &&
	printf x >"$Q/d1" &&
	line=$(pop) &&
	mv "$Q/$line" "$Q/dlq/" &&
	test -f "$Q/dlq/default/d1" &&
	test "$(sysc_utime "$Q/dlq/default/d1")" = "utime:EPERM"
'

test_expect_success 'config: a line split across write(2)s is one line, applied at close' '
	q_init cf &&
	{ printf "lease_time = 4"; printf "5\n"; } >"$Q/config" &&
	test_is 45 "$(stat_of "$Q/config" lease_time)" lease_time &&
	{ printf "batch = 2\nwait"; printf " = 7\n"; } >"$Q/config" &&
	test_is 2 "$(stat_of "$Q/config" batch)" batch &&
	test_is 7 "$(stat_of "$Q/config" wait)" wait
'

test_expect_success 'config: a refused complete line fails its write(2), and the close, changing nothing' '
	cat "$Q/config" >before &&
	sysc create "$Q/config" "$(printf "lease_time = -1\nbatch = 9")" >actual &&
	test_is write:EINVAL "$(cat actual)" &&
	cat "$Q/config" >after &&
	test_cmp before after &&
	grep -q "write queues/cf/config: lease_time: .*(EINVAL)" "$DAEMON_LOG" &&
	! { printf "batch = 3\n"; printf "bogus = 1\n"; } >"$Q/config" &&
	grep -q "close queues/cf/config: a refused line was written; nothing applied (EINVAL)" "$DAEMON_LOG" &&
	! echo "bogus = 1" >"$Q/config" 2>/dev/null &&
	cat "$Q/config" >after &&
	test_cmp before after
'

test_expect_success 'config: a last line without a newline is checked at close: close() EINVAL' '
	cat "$Q/config" >before &&
	sysc create "$Q/config" "$(printf "batch = 9\nwait = zz")" >actual &&
	test_is close:EINVAL "$(cat actual)" &&
	cat "$Q/config" >after &&
	test_cmp before after &&
	grep -q "close queues/cf/config: .*(EINVAL)" "$DAEMON_LOG"
'

test_expect_success 'config: written over a held-open descriptor, applied at its close' '
	exec 3>"$Q/config" &&
	printf "batch = 5\n" >&3 &&
	printf "wait = 3\n" >&3 &&
	exec 3>&- &&
	test_is 5 "$(stat_of "$Q/config" batch)" batch &&
	test_is 3 "$(stat_of "$Q/config" wait)" wait
'

test_expect_success 'seek: a position split across write(2)s is one position' '
	q_init sk &&
	for i in 1 2 3 4 5 6 7 8 9 10 11 12; do printf x >"$Q/m$i" || return 1; done &&
	mkdir "$Q/groups/g" &&
	{ printf 1; printf "0\n"; } >"$Q/groups/g/seek" &&
	echo "wait = 1" >"$Q/groups/g/config" &&
	line=$(pop "$Q/groups/g") &&
	test_is "m10" "${line##*/}" "offset 10 is the next delivered"
'

test_expect_success 'subscription = new on a group made a moment earlier: the tail, no old message again' '
	q_init sub &&
	G="$Q/groups/g" &&
	ok=0 &&
	for i in 1 2 3 4 5 6 7 8 9 10; do
		printf x >"$Q/o$i" &&
		mkdir "$Q/groups/g$i" &&
		printf "batch = 1\nwait = 1\n" >"$Q/groups/g$i/config" &&
		printf y >"$Q/p$i" &&
		echo "subscription = new" >"$Q/groups/g$i/config" &&
		sysc read_nonblock "$Q/groups/g$i/next" >out &&
		test_is "read:EAGAIN" "$(head -1 out)" "g$i: nothing to pop" ||
		return 1
	done
'

test_expect_success 'inside a live lease, a message an ack of a later one committed: failed/ EALREADY, ack/ a noop' '
	q_init imp &&
	printf "batch = 3\nwait = 1\n" >"$Q/config" &&
	printf A >"$Q/a" && printf B >"$Q/b" && printf C >"$Q/c" &&
	pop >lines &&
	test_line_count = 3 lines &&
	L=$(sed -n "1s|^leased/\([^/]*\)/a$|\1|p" lines) &&
	test -n "$L" &&
	mv "$Q/leased/$L/b" "$Q/ack/" &&
	test_is "rename:EALREADY" "$(sysc rename "$Q/leased/$L/a" "$Q/failed/a")" failed &&
	test_is "rename:EALREADY" "$(sysc rename "$Q/leased/$L/a" "$Q/retry/a")" retry &&
	test_is "rename:EALREADY" "$(sysc rename "$Q/leased/$L/a" "$Q/dlq/a")" dlq &&
	grep -q "already committed" "$DAEMON_LOG" &&
	test_is ok "$(sysc rename "$Q/leased/$L/a" "$Q/ack/a")" "ack: a noop" &&
	test_is ok "$(sysc rename "$Q/leased/$L/b" "$Q/ack/b")" "ack of b again: a noop" &&
	test_is A "$(cat "$Q/leased/$L/a")" "a still reads" &&
	ls "$Q/leased/$L" >listed &&
	echo c >expect &&
	test_cmp expect listed &&
	test_is 1 "$(stat_of "$Q/stats" leases)" "the lease still lives" &&
	test_is "rename:ENOENT" "$(sysc rename "$Q/leased/$L/zz" "$Q/failed/zz")" "an unknown id" &&
	mv "$Q/leased/$L/c" "$Q/ack/" &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth
'

test_done
