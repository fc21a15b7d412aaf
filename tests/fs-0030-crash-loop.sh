#!/bin/sh
# fs-0030-crash-loop: kill -9 of the daemon at random moments under two
# producers and two consumers (in two groups), cycle after cycle, then a
# drain and the conservation checks: every push whose close() (or staging
# rename()) returned 0 is there byte for byte; no ack whose rename()
# returned 0 is followed by a delivery of that offset (or a lower one) to
# that group; offsets come in order inside each lease and are dense in
# each partition; a staged file never renamed is never pushed, also when
# its producer is killed mid-write; PRAGMA integrity_check is ok.  Then a
# timer and transactions across crashes.
# QUEENFS_CRASH_CYCLES (default 8) sets the number of cycles.
. "$(dirname "$0")/lib.sh"
mount_queenfs
export MNT
cp "$TEST_DIRECTORY/qapi_base.py" "$TRASH/" || exit 1
: "${QUEENFS_CRASH_CYCLES:=8}"
CYCLES=$QUEENFS_CRASH_CYCLES
test_have_prereq SQLITE_STORE && command -v sqlite3 >/dev/null 2>&1 &&
	test_set_prereq SQLITE3

# producer.py DIR ID CYCLE N: push N messages into partitions p0..p2 of
# queue DIR, one in three through a dot-file and a rename.  Logs, one
# flushed line each, to prod-ID.log:
#   W txid | S txid (before), R txid (before the rename), C part txid (after
#   a close() or rename() that returned 0).
cat >"$TRASH/producer.py" <<\EOF
import os, random, sys
d, pid, cyc, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def body(t):
    return (("%s|" % t) * (1 + (sum(t.encode()) % 40))).encode()
log = open("prod-%s.log" % pid, "a")
def say(*a):
    log.write(" ".join(a) + "\n"); log.flush()
for i in range(n):
    t = "P%s-c%s-%d" % (pid, cyc, i)
    p = "p%d" % (i % 3)
    base = os.path.join(d, "partitions", p)
    staged = i % 3 == 1
    try:
        if staged:
            say("S", p, t)
            fd = os.open(os.path.join(base, "." + t), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, body(t)); os.close(fd)
            say("R", p, t)
            os.rename(os.path.join(base, "." + t), os.path.join(base, t))
        else:
            say("W", p, t)
            fd = os.open(os.path.join(base, t), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(fd, body(t)); os.close(fd)
        say("C", p, t)
    except OSError as e:
        say("E", p, t, str(e.errno))
        sys.exit(0)
EOF

# consumer.py DIR GROUP CYCLE [drain]: pop from groups/GROUP/next, read
# each message and its offset, ack it by rename; logs to cons-GROUP.log:
#   D cycle lease part offset txid (read), A part offset txid (rename 0)
# Stops at the first error other than ENODATA/ESTALE (the daemon died),
# or, draining, at the first ENODATA.
cat >"$TRASH/consumer.py" <<\EOF
import errno, os, sys
d, g, cyc = sys.argv[1], sys.argv[2], sys.argv[3]
drain = len(sys.argv) > 4
gd = os.path.join(d, "groups", g)
log = open("cons-%s.log" % g, "a")
def say(*a):
    log.write(" ".join(a) + "\n"); log.flush()
while True:
    try:
        with open(os.path.join(gd, "next"), "rb") as f:
            lines = f.read().decode().split()
    except OSError as e:
        if e.errno == errno.ENODATA and not drain:
            continue
        sys.exit(0 if e.errno == errno.ENODATA else 3)
    for line in lines:
        _, lease, txid = line.split("/")
        path = os.path.join(gd, line)
        try:
            data = open(path, "rb").read()
            off = os.getxattr(path, "user.queen.offset").decode()
            part = os.getxattr(path, "user.queen.partition").decode()
        except OSError as e:
            if e.errno == errno.ESTALE or e.errno == errno.ENOENT:
                break
            sys.exit(3)
        want = (("%s|" % txid) * (1 + (sum(txid.encode()) % 40))).encode()
        say("D", cyc, lease, part, off, txid, "ok" if data == want else "BAD")
        try:
            os.rename(path, os.path.join(gd, "ack", txid))
        except OSError as e:
            if e.errno in (errno.ESTALE, errno.EALREADY):
                break
            sys.exit(3)
        say("A", part, off, txid)
EOF

# slow.py DIR ID: a producer that writes a staged file in small pieces,
# slowly, to be killed mid-write; logs the name to slow.log first
cat >"$TRASH/slow.py" <<\EOF
import os, sys, time
d, i = sys.argv[1], sys.argv[2]
t = "slow-%s" % i
open("slow.log", "a").write("p1 %s\n" % t)
fd = os.open(os.path.join(d, "partitions", "p1", "." + t), os.O_WRONLY | os.O_CREAT, 0o644)
while True:
    os.write(fd, b"partial ")
    time.sleep(0.05)
EOF

test_expect_success 'setup: a queue with three partitions, two groups' '
	q_init c &&
	printf "lease_time = 2\nwait = 1\n" >"$Q/config" &&
	mkdir "$Q/groups/g1" "$Q/groups/g2" &&
	echo "batch = 1" >"$Q/groups/g1/config" &&
	echo "batch = 3" >"$Q/groups/g2/config" &&
	: >slow.log
'

# one cycle: workers, a kill -9 at a random moment, workers stopped, restart
crash_cycle () {
	cy_=$1
	"$PYTHON3" "$TRASH/producer.py" "$Q" a "$cy_" 400 & p1_=$!
	"$PYTHON3" "$TRASH/producer.py" "$Q" b "$cy_" 400 & p2_=$!
	"$PYTHON3" "$TRASH/consumer.py" "$Q" g1 "$cy_" & c1_=$!
	"$PYTHON3" "$TRASH/consumer.py" "$Q" g2 "$cy_" & c2_=$!
	"$PYTHON3" "$TRASH/slow.py" "$Q" "$cy_" & s_=$!
	track_pid $p1_; track_pid $p2_; track_pid $c1_; track_pid $c2_; track_pid $s_
	# 0.2 to 1.5 s
	sleep "$(awk -v s="$cy_$$" "BEGIN { srand(s); printf \"%.2f\", 0.2 + rand() * 1.3 }")"
	# the staging producer dies mid-write while the daemon lives
	kill -KILL $s_
	kill9_daemon || return 1
	for p_ in $p1_ $p2_ $c1_ $c2_ $s_; do
		stop_pid $p_
	done
	remount_after_kill
}

# the mount of a killed daemon goes with -uz; then a fresh daemon
remount_after_kill () {
	fusermount3 -uz "$MNT" 2>/dev/null
	start_daemon_
}

test_expect_success PYTHON "$CYCLES crash cycles under two producers and two consumers" '
	i=1 &&
	while test $i -le $CYCLES; do
		crash_cycle $i || { echo "cycle $i: no restart"; return 1; }
		test_is ok "$(cat "$MNT/sys/health")" "health after cycle $i" || return 1
		i=$((i + 1))
	done &&
	cat prod-a.log prod-b.log | grep -c "^C " >nconf &&
	test $(cat nconf) -ge $((CYCLES * 5)) &&
	grep -c "^A " cons-g1.log && grep -c "^A " cons-g2.log
'

test_expect_success PYTHON 'drain: each group consumes the rest' '
	# leases of killed consumers run out after lease_time (2 s)
	n=0 &&
	while test $n -lt 6; do
		"$PYTHON3" "$TRASH/consumer.py" "$Q" g1 drain drain &&
		"$PYTHON3" "$TRASH/consumer.py" "$Q" g2 drain drain || return 1
		test "$(stat_of "$Q/groups/g1/stats" depth)" = 0 &&
		test "$(stat_of "$Q/groups/g2/stats" depth)" = 0 && break
		sleep 1
		n=$((n + 1))
	done &&
	test_is 0 "$(stat_of "$Q/groups/g1/stats" depth)" "g1 depth" &&
	test_is 0 "$(stat_of "$Q/groups/g2/stats" depth)" "g2 depth"
'

# check.py: the conservation checks over the logs and the mount
cat >"$TRASH/check.py" <<\EOF
import collections, os, sys
d = sys.argv[1]
def body(t):
    return (("%s|" % t) * (1 + (sum(t.encode()) % 40))).encode()
bad = []
conf, staged_only, attempted = {}, {}, set()
for pid in "ab":
    st = {}
    for line in open("prod-%s.log" % pid):
        f = line.split()
        if f[0] == "C":
            conf[f[2]] = f[1]
        elif f[0] in ("S", "R"):
            st[f[2]] = (f[0], f[1])
        if f[0] in ("W", "R"):
            attempted.add(f[2])
    for t, (k, p) in st.items():
        if k == "S":
            staged_only[t] = p
for line in open("slow.log"):
    p, t = line.split()
    staged_only[t] = p
# the log of each partition: txid -> offset, with every payload whole
present = {}
for p in ("p0", "p1", "p2"):
    pd = os.path.join(d, "partitions", p)
    offs = []
    for t in os.listdir(pd):
        path = os.path.join(pd, t)
        off = int(os.getxattr(path, "user.queen.offset"))
        offs.append(off)
        present[t] = (p, off)
        if open(path, "rb").read() != body(t):
            bad.append("partial or wrong payload: %s/%s" % (p, t))
    offs.sort()
    if offs != list(range(1, len(offs) + 1)):
        bad.append("offsets of %s not dense: %d messages, max %s" % (p, len(offs), offs[-1:]))
for t, p in conf.items():
    if t not in present:
        bad.append("confirmed push lost: %s/%s" % (p, t))
    elif present[t][0] != p:
        bad.append("confirmed push in the wrong partition: %s" % t)
for t, p in staged_only.items():
    if t in present:
        bad.append("a staged file never renamed was pushed: %s/%s" % (p, t))
for t in present:
    if t not in conf and t not in attempted:
        bad.append("a message nobody pushed: %s" % t)
ndeliv = 0
for g in ("g1", "g2"):
    acked = collections.defaultdict(int)
    ackedtx = set()
    leases = {}
    seen = set()
    for line in open("cons-%s.log" % g):
        f = line.split()
        if f[0] == "D":
            _, cyc, lease, p, off, t, ok = f
            off = int(off)
            ndeliv += 1
            seen.add(t)
            if ok != "ok":
                bad.append("%s: wrong payload delivered: %s" % (g, t))
            if off <= acked[p]:
                bad.append("%s: %s/%d delivered after the ack of %s/%d (cycle %s)" % (g, p, off, p, acked[p], cyc))
            if t in ackedtx:
                bad.append("%s: %s redelivered after its ack" % (g, t))
            if t not in present:
                bad.append("%s: %s delivered, then gone after a crash" % (g, t))
            elif present[t] != (p, off):
                bad.append("%s: %s delivered as %s/%d, is %s" % (g, t, p, off, present[t]))
            last = leases.get(lease)
            if last is not None and off != last + 1:
                bad.append("%s: lease %s out of order: %d after %d" % (g, lease, off, last))
            leases[lease] = off
        elif f[0] == "A":
            _, p, off, t = f
            acked[p] = max(acked[p], int(off))
            ackedtx.add(t)
    for t in present:
        if t not in seen:
            bad.append("%s: never delivered: %s" % (g, t))
for b in bad[:30]:
    print(b)
print("confirmed %d present %d staged-never-renamed %d deliveries %d" % (len(conf), len(present), len(staged_only), ndeliv))
sys.exit(1 if bad else 0)
EOF

test_expect_success PYTHON 'conservation: pushes, acks, order, density, staging' '
	"$PYTHON3" "$TRASH/check.py" "$Q" >check.out; rc=$?
	cat check.out &&
	diag "crash cycles survived: $CYCLES; $(tail -n 1 check.out)" >&5 &&
	test $rc = 0
'

test_expect_success SQLITE3 'PRAGMA integrity_check after the crashes' '
	stop_daemon_ &&
	test_is ok "$(sqlite3 "$DB" "PRAGMA integrity_check")" integrity_check &&
	start_daemon_
'

# --- a timer across crashes ----------------------------------------------

test_expect_success 'a timer due in 2 s survives a crash before it is due' '
	q_init t &&
	echo "timer_delay = 3600" >"$Q/config" &&
	printf fired >"$Q/timers/k" &&
	touch -d "+2 seconds" "$Q/timers/k" &&
	kill9_daemon &&
	remount_after_kill &&
	test -f "$Q/timers/k" &&
	test_is 0 "$(stat_of "$Q/stats" messages)" "not fired yet"
'

test_expect_success 'a crash while it is due: it fires once, at the restart' '
	kill9_daemon &&
	sleep 2.5 &&
	remount_after_kill &&
	wait_until 5 "test \"\$(stat_of \"$Q/stats\" messages)\" = 1" &&
	test_path_is_missing "$Q/timers/k"
'

test_expect_success 'a crash after it fired: still exactly once' '
	kill9_daemon &&
	remount_after_kill &&
	sleep 1.5 &&
	test_is 1 "$(stat_of "$Q/stats" messages)" "fired once" &&
	ls "$Q/partitions/default" >names &&
	test_line_count = 1 names &&
	printf fired >expect &&
	test_cmp expect "$Q/partitions/default/$(cat names)" &&
	test_path_is_missing "$Q/timers/k"
'

# --- transactions across a crash ------------------------------------------

cat >"$TRASH/txn.py" <<\EOF
from qapi_base import api
def call(body):
    return api("transaction", body)
ok = call({"operations": [{"type": "push", "queue": "x", "items": [
        {"transactionId": "x1", "payload": "one"}, {"transactionId": "x2", "partition": "px", "payload": "two"}]}],
    "kv": [{"op": "put", "ns": "xs", "key": "a", "value": 1}, {"op": "incr", "ns": "xs", "key": "n", "by": 5}]})
assert ok["success"] is True, ok
no = call({"operations": [{"type": "push", "queue": "x", "items": [{"transactionId": "x3", "payload": "three"}]}],
    "kv": [{"op": "put", "ns": "xs", "key": "b", "value": 2}, {"op": "put", "ns": "xs", "key": "a", "value": 9, "expect": 7, "required": True}]})
assert no["success"] is False and no.get("reason") == "kv_precondition", no
print("committed and refused")
EOF

test_expect_success PYTHON 'a committed transaction is whole after a crash, a refused one absent' '
	mkdir "$MNT/queues/x" &&
	"$PYTHON3" "$TRASH/txn.py" &&
	kill9_daemon &&
	remount_after_kill &&
	ls "$MNT/queues/x/partitions/default" >actual &&
	echo x1 >expect && test_cmp expect actual &&
	ls "$MNT/queues/x/partitions/px" >actual &&
	echo x2 >expect && test_cmp expect actual &&
	printf "\"one\"" >expect && test_cmp expect "$MNT/queues/x/partitions/default/x1" &&
	printf 1 >expect && test_cmp expect "$MNT/kv/xs/a" &&
	printf 5 >expect && test_cmp expect "$MNT/kv/xs/n" &&
	test_path_is_missing "$MNT/kv/xs/b" &&
	test_path_is_missing "$MNT/queues/x/partitions/default/x3" &&
	test_is 2 "$(stat_of "$MNT/queues/x/stats" messages)" messages
'

test_done
