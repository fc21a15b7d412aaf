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
grep -qa __asan_init "$QUEENFS" || test_set_prereq RSS

rss_kib () {
	awk -v k="$1:" '$1 == k { print $2 }' "/proc/$DAEMON_PID/status"
}

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
