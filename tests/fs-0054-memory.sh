#!/bin/sh
# fs-0054-memory: what the daemon holds stays bounded by what users hold,
# not by what they once looked at.  `ls -l` of a big partition looks up
# every message; past the mount's node bound (20,000) the names are handed
# back to the kernel and sys/stats' nodes falls back under it.  `ls -l`
# of a big DLQ reads each dead letter by its name (an index), so the dead
# letter rows read (sys/stats dlq_rows_read) grow with the listing, not
# with its square (a lookup, its xattrs and its open read one row each).
# An api/ request past 256 KiB is kept in an unlinked spool file, not the
# heap, and the daemon's RSS goes back near idle once it has run.  The daemon's RSS after such listings stays bounded.
# An open file's bytes past 64 KiB (or past 4 MiB of such buffers in all)
# are held in an unlinked spool file: files held open do not grow the
# daemon's RSS, every byte is published, and a spill that cannot be made
# fails the write (and the close) with ENOSPC and a log line.
. "$(dirname "$0")/lib.sh"
mount_queenfs
export MNT

: "${MEM_MSGS:=30000}"
: "${MEM_DLQ:=10000}"
export MEM_MSGS MEM_DLQ

cp "$TEST_DIRECTORY/qapi_base.py" "$TRASH/"

sys_stat () {
	sed -n "s/^$1 = //p" "$MNT/sys/stats"
}

# RSS says nothing under a sanitizer (shadow memory, quarantined frees)
grep -qa -e __asan_init -e __tsan_init "$QUEENFS" || test_set_prereq RSS

rss_kib () {
	awk -v k="$1:" '$1 == k { print $2 }' "/proc/$DAEMON_PID/status"
}

# spill_fds: the daemon's descriptors on unlinked spill files of open files
spill_fds () {
	ls -l "/proc/$DAEMON_PID/fd" 2>/dev/null | grep -c "queenfs-pend-.*(deleted)"
}
export DAEMON_PID TRASH

# hold.py DIR COUNT BYTES: write COUNT files of BYTES random bytes each
# into DIR without closing them, copies into $TRASH/copies/; print the
# daemon's VmRSS (kB) and spill descriptors while all are open; then close
# them all.
cat >"$TRASH/hold.py" <<-\PYEOF
import os, sys
d, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pid = os.environ["DAEMON_PID"]
os.makedirs(os.environ["TRASH"] + "/copies", exist_ok=True)
def rss():
    with open("/proc/%s/status" % pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
def spills():
    n = 0
    for e in os.listdir("/proc/%s/fd" % pid):
        try:
            t = os.readlink("/proc/%s/fd/%s" % (pid, e))
        except OSError:
            continue
        n += "queenfs-pend-" in t and t.endswith("(deleted)")
    return n
fds, peak = [], 0
for i in range(count):
    fd = os.open("%s/f%03d" % (d, i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    data = os.urandom(size)
    with open(os.environ["TRASH"] + "/copies/f%03d" % i, "wb") as c:
        c.write(data)
    for at in range(0, size, 1 << 20):
        os.write(fd, data[at:at + (1 << 20)])
    fds.append(fd)
    peak = max(peak, rss())
print(peak, rss(), spills())
for fd in fds:
    os.close(fd)
PYEOF

test_expect_success 'eight files of 15 MiB held open at once: spilled to disk, RSS under 64 MiB, exact bytes after the closes' '
	mkdir "$MNT/queues/hold" &&
	idle=$(rss_kib VmRSS) &&
	"$PYTHON3" "$TRASH/hold.py" "$MNT/queues/hold" 8 $((15 << 20)) >held &&
	read peak open spills <held &&
	diag "VmRSS idle $idle kB, highest while writing $peak kB, all open $open kB, $spills spill files" &&
	test_is 8 "$spills" "spill files while open" &&
	if test_have_prereq RSS; then test "$peak" -lt 65536; fi &&
	wait_until 60 "test \$(stat_of \"$MNT/queues/hold/stats\" messages) = 8" &&
	for i in 000 001 002 003 004 005 006 007; do
		cmp "$TRASH/copies/f$i" "$MNT/queues/hold/partitions/default/f$i" || return 1
	done &&
	wait_until 30 "test \$(spill_fds) = 0" &&
	after=$(rss_kib VmRSS) &&
	diag "VmRSS after the closes $after kB" &&
	if test_have_prereq RSS; then test "$after" -lt $((idle + 16384)); fi
'

test_expect_success '200 files of 100 KiB held open at once: spilled, RSS under 64 MiB, exact bytes' '
	mkdir "$MNT/queues/many" &&
	idle=$(rss_kib VmRSS) &&
	"$PYTHON3" "$TRASH/hold.py" "$MNT/queues/many" 200 102400 >held &&
	read peak open spills <held &&
	diag "VmRSS idle $idle kB, highest while writing $peak kB, all open $open kB, $spills spill files" &&
	test_is 200 "$spills" "spill files while open" &&
	if test_have_prereq RSS; then test "$peak" -lt 65536; fi &&
	wait_until 60 "test \$(stat_of \"$MNT/queues/many/stats\" messages) = 200" &&
	i=0 && while test $i -lt 200; do
		f=$(printf "f%03d" $i) &&
		cmp "$TRASH/copies/$f" "$MNT/queues/many/partitions/default/$f" || return 1
		i=$((i + 1))
	done &&
	wait_until 30 "test \$(spill_fds) = 0" &&
	after=$(rss_kib VmRSS) &&
	diag "VmRSS after the closes $after kB" &&
	if test_have_prereq RSS; then test "$after" -lt $((idle + 16384)); fi
'

test_expect_success 'small files held open stay in memory; read back while open, past the spill too' '
	mkdir "$MNT/queues/small" &&
	"$PYTHON3" - <<-\PYEOF
	import os
	q = os.environ["MNT"] + "/queues/small/"
	pid = os.environ["DAEMON_PID"]
	def spills():
	    return sum("queenfs-pend-" in os.readlink("/proc/%s/fd/%s" % (pid, e))
	               for e in os.listdir("/proc/%s/fd" % pid))
	fds = [os.open(q + "s%d" % i, os.O_RDWR | os.O_CREAT, 0o644) for i in range(10)]
	for fd in fds:
	    os.write(fd, b"a" * 1000)
	assert spills() == 0, "10 files of 1000 bytes: in memory (%d spilled)" % spills()
	# grow one past 64 KiB: a gap, then bytes; it reads back whole, zeros in the gap
	os.pwrite(fds[0], b"z" * 100, 200000)
	assert spills() == 1, "one spilled (%d)" % spills()
	got = os.pread(fds[0], 300000, 0)
	assert got == b"a" * 1000 + bytes(199000) + b"z" * 100, "read back %d bytes" % len(got)
	os.ftruncate(fds[0], 500)
	assert os.pread(fds[0], 1000, 0) == b"a" * 500, "truncated"
	os.ftruncate(fds[0], 70000)
	os.pwrite(fds[0], b"end", 70000)
	for fd in fds:
	    os.close(fd)
	PYEOF
	wait_until 30 "test \$(stat_of \"$MNT/queues/small/stats\" messages) = 10" &&
	"$PYTHON3" -c "
import os
b = open(os.environ[\"MNT\"] + \"/queues/small/partitions/default/s0\", \"rb\").read()
assert b == b\"a\" * 500 + bytes(69500) + b\"end\", len(b)
"
'

test_expect_success 'a spilled file written by several children of one open file: every close stages it, one message of every byte' '
	mkdir "$MNT/queues/kids" &&
	head -c 300000 /dev/urandom >a &&
	head -c 500000 /dev/urandom >b &&
	head -c 70000 /dev/urandom >c &&
	( cat a; cat b; ( cat c ) ) >"$MNT/queues/kids/x" &&
	cat a b c >want &&
	cmp want "$MNT/queues/kids/partitions/default/x" &&
	wait_until 30 "test \$(spill_fds) = 0"
'

test_expect_success 'a spill that cannot be made: ENOSPC at the write and the close, the reason in the log, nothing published' '
	mkdir "$MNT/queues/nospill" &&
	low=$(ls "/proc/$DAEMON_PID/fd" | sort -n | awk "BEGIN { n = 0 } \$1 == n { n++ } END { print n }") &&
	diag "the lowest free descriptor of the daemon: $low" &&
	hard=$(awk "/^Max open files/ { print \$5 }" "/proc/$DAEMON_PID/limits") &&
	soft=$(awk "/^Max open files/ { print \$4 }" "/proc/$DAEMON_PID/limits") &&
	prlimit --pid "$DAEMON_PID" --nofile="$low:$hard" &&
	"$PYTHON3" - >out <<-\PYEOF
	import errno, os
	p = os.environ["MNT"] + "/queues/nospill/big"
	fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)
	os.write(fd, b"x" * 1000)
	try:
	    os.write(fd, b"y" * 100000)
	    print("wrote")
	except OSError as e:
	    print(errno.errorcode[e.errno])
	try:
	    os.close(fd)
	    print("closed")
	except OSError as e:
	    print(errno.errorcode[e.errno])
	PYEOF
	prlimit --pid "$DAEMON_PID" --nofile="$soft:$hard" &&
	test_is "ENOSPC ENOSPC" "$(echo $(cat out))" "the write past 64 KiB, the close" &&
	grep -q "cannot spill nospill/big in .*: Too many open files" "$DAEMON_LOG" &&
	test_is 0 "$(stat_of "$MNT/queues/nospill/stats" messages)" messages
'

test_expect_success "push $MEM_MSGS messages into one partition through api/push" '
	mkdir "$MNT/queues/big" &&
	"$PYTHON3" - <<-\PYEOF
	import os
	from qapi_base import *
	n = int(os.environ["MEM_MSGS"])
	for start in range(0, n, 5000):
	    items = [{"queue": "big", "partition": "p", "transactionId": "m%06d" % i,
	              "payload": "x%d" % i} for i in range(start, min(n, start + 5000))]
	    ans, c = call("push", {"items": items})
	    eq("ok", c, "close")
	    eq(len(items), len(ans), "one result per item")
	PYEOF
'

test_expect_success '`ls -l` of the partition: every message, then the nodes fall back under the bound' '
	ls -l "$MNT/queues/big/partitions/p" >listing &&
	test_is "$MEM_MSGS" "$(grep -c "^-" listing)" messages &&
	wait_until 30 "test \$(sys_stat nodes) -le 20100" &&
	diag "nodes after the listing: $(sys_stat nodes)"
'

test_expect_success '`ls -l` of it again: the same, nodes still bounded, RSS bounded' '
	ls -l "$MNT/queues/big/partitions/p" >listing &&
	test_is "$MEM_MSGS" "$(grep -c "^-" listing)" messages &&
	wait_until 30 "test \$(sys_stat nodes) -le 20100" &&
	rss=$(rss_kib VmRSS) &&
	diag "daemon VmRSS $rss kB, VmHWM $(rss_kib VmHWM) kB" &&
	if test_have_prereq RSS; then test "$rss" -lt 131072; fi
'

test_expect_success "dead-letter $MEM_DLQ messages through api/pop and api/ack" '
	mkdir "$MNT/queues/dead" &&
	"$PYTHON3" - <<-\PYEOF
	import os
	from qapi_base import *
	n = int(os.environ["MEM_DLQ"])
	for start in range(0, n, 5000):
	    items = [{"queue": "dead", "transactionId": "d%06d" % i,
	              "payload": "y%d" % i} for i in range(start, min(n, start + 5000))]
	    ans, c = call("push", {"items": items})
	    eq("ok", c, "push close")
	# one dead letter per pop: past a dlq ack the rest of a span redelivers
	for i in range(n):
	    ans, c = call("pop", {"queue": "dead", "batch": 1})
	    eq("ok", c, "pop close")
	    m = ans["messages"][0]
	    ans, c = call("ack", {"transactionId": m["transactionId"],
	                          "partitionId": m["partitionId"], "leaseId": m["leaseId"],
	                          "status": "dlq", "error": "test"})
	    eq("ok", c, "ack close")
	    check(ans[0]["dlq"], "dead-lettered: %r" % ans)
	PYEOF
'

test_expect_success '`ls -l` of the DLQ partition reads each dead letter once, not the DLQ per name' '
	before=$(sys_stat dlq_rows_read) &&
	ls -l "$MNT/queues/dead/dlq/default" >listing &&
	test_is "$MEM_DLQ" "$(grep -c "^-" listing)" "dead letters" &&
	after=$(sys_stat dlq_rows_read) &&
	diag "dlq rows read by the listing: $((after - before)) for $MEM_DLQ" &&
	test $((after - before)) -le $((5 * MEM_DLQ + 10))
'

test_expect_success 'a dead letter still reads by its name, with its facts' '
	test_is "\"y5\"" "$(cat "$MNT/queues/dead/dlq/default/d000005")" payload &&
	test_is 4 "$(stat -c %s "$MNT/queues/dead/dlq/default/d000007")" size &&
	test_must_fail cat "$MNT/queues/dead/dlq/default/nosuch" 2>err &&
	grep -q "No such file" err
'

test_expect_success 'a 30 MB api/push (jansson path) runs from the spool; RSS after it is back near idle' '
	mkdir "$MNT/queues/bulk" &&
	idle=$(rss_kib VmRSS) &&
	"$PYTHON3" - <<-\PYEOF &&
	import json
	from qapi_base import *
	items = [{"queue": "bulk", "payload": {"id": i, "t": "b" * 560}} for i in range(50000)]
	body = json.dumps({"items": items}).encode()
	check(len(body) > 29000000, "a body of %d bytes" % len(body))
	ans, c = call("push", body)
	eq("ok", c, "close")
	eq(50000, len(ans), "one result per item")
	eq("queued", ans[49999]["status"], "the last queued")
	PYEOF
	after=$(rss_kib VmRSS) &&
	diag "VmRSS idle $idle kB, after the call $after kB" &&
	test_is 50000 "$(stat_of "$MNT/queues/bulk/stats" messages)" messages &&
	if test_have_prereq RSS; then test "$after" -lt $((idle + 40960)); fi
'

test_expect_success 'a 12 MB base64 payload (read in place, decoded once) comes back byte for byte' '
	mkdir "$MNT/queues/blob" &&
	echo "max_message_bytes = 16777216" >"$MNT/queues/blob/config" &&
	"$PYTHON3" - <<-\PYEOF
	import base64, json, os
	from qapi_base import *
	data = os.urandom(12 << 20)
	body = json.dumps({"items": [{"queue": "blob", "transactionId": "b1",
	    "encoding": "base64", "payload": base64.b64encode(data).decode()}]}).encode()
	ans, c = call("push", body)
	eq("ok", c, "close")
	eq("queued", ans[0]["status"], "queued")
	with open(MNT + "/queues/blob/partitions/default/b1", "rb") as f:
	    check(f.read() == data, "the same bytes")
	PYEOF
'

test_expect_success 'error notes: past 4096 bytes E2BIG; past 2048 notes the oldest is forgotten' '
	mkdir "$MNT/queues/notes" &&
	printf "batch = 2100\nwait = 1\n" >"$MNT/queues/notes/config" &&
	"$PYTHON3" - <<-\PYEOF
	import errno, os
	from qapi_base import *
	items = [{"queue": "notes", "transactionId": "n%04d" % i, "payload": "x"}
	         for i in range(2100)]
	ans, c = call("push", {"items": items})
	eq("ok", c, "close")
	q = os.environ["MNT"] + "/queues/notes/"
	with open(q + "next") as f:
	    lines = f.read().split()
	eq(2100, len(lines), "one lease of 2100")
	try:
	    os.setxattr(q + lines[0], "user.queen.error", b"e" * 4097)
	    check(False, "4097 bytes refused")
	except OSError as e:
	    eq(errno.E2BIG, e.errno, "4097 bytes: E2BIG")
	for i, l in enumerate(lines):
	    os.setxattr(q + l, "user.queen.error", b"why %d" % i)
	try:
	    os.getxattr(q + lines[0], "user.queen.error")
	    check(False, "the first note is forgotten")
	except OSError as e:
	    eq(errno.ENODATA, e.errno, "the oldest: no note")
	eq(b"why 2099", os.getxattr(q + lines[-1], "user.queen.error"), "the newest")
	eq(b"why 52", os.getxattr(q + lines[52], "user.queen.error"), "the 2048th newest")
	PYEOF
	grep -q "more than the 4096 an error keeps (E2BIG)" "$DAEMON_LOG"
'

test_done
