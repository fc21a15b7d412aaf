#!/bin/sh
# fs-0041-pg-crash: fs-0010's conservation on PostgreSQL with three mounts
# (run under tests/pg.sh, which sets QUEEN_TEST_PG).  A producer and a
# consumer on each of three mounts (b, c, d), four partitions; a few times
# one of those daemons, picked at random, is killed -9 at a random moment
# while the other two keep serving, then remounted.  A fourth mount (the
# harness's own, never killed) makes the queue and reads the outcome.  Afterwards: every push whose close() returned 0 is in
# the log byte for byte, in its producer's order within its partition;
# everything was delivered; no message whose ack rename() returned 0 was
# delivered again; acks within a partition went in offset order.
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
test_have_prereq PYTHON || skip_all "no python3"
SCHEMA=t0041_$$
mount_queenfs_on "$(pg_uri "$SCHEMA")"
A=$MNT
: "${CRASH_CYCLES:=3}"

test_expect_success 'three more daemons on the same schema; a queue of four partitions' '
	mount_extra b &&
	mount_extra c &&
	mount_extra d &&
	mkdir "$A/queues/dur" &&
	printf "wait = 1\nlease_time = 3\nretry_limit = 1000\n" >"$A/queues/dur/config" &&
	grep -qx "lease_time = 3" "$TRASH/c/queues/dur/config"
'

# the producer and the consumer of each mount: tests/qload.py
QLOAD="$TEST_DIRECTORY/qload.py"

test_expect_success "a producer and a consumer per mount; $CRASH_CYCLES kill -9 of a random daemon" '
	rm -f stop &&
	hung= &&
	for w in b c d; do
		: >pushed.$w && : >deliv.$w && : >acked.$w && : >tried.$w || return 1
	done &&
	{ "$PYTHON3" "$QLOAD" produce "$TRASH/b" dur b 0.002 4000 & } && pb=$! && track_pid $pb &&
	{ "$PYTHON3" "$QLOAD" produce "$TRASH/c" dur c 0.002 4000 & } && pc=$! && track_pid $pc &&
	{ "$PYTHON3" "$QLOAD" produce "$TRASH/d" dur d 0.002 4000 & } && pd=$! && track_pid $pd &&
	{ "$PYTHON3" "$QLOAD" consume "$TRASH/b" dur b & } && cb=$! && track_pid $cb &&
	{ "$PYTHON3" "$QLOAD" consume "$TRASH/c" dur c & } && cc=$! && track_pid $cc &&
	{ "$PYTHON3" "$QLOAD" consume "$TRASH/d" dur d & } && cdd=$! && track_pid $cdd &&
	wait_until 20 "test \$(cat pushed.* | wc -l) -ge 60 && test \$(cat acked.* | wc -l) -ge 20" &&
	i=0 &&
	while test $i -lt $CRASH_CYCLES; do
		i=$((i + 1)) &&
		victim=$(echo b c d | cut -d" " -f$(( $(random_below 3) + 1 ))) &&
		ms=$(( $(random_below 1500) + 200 )) &&
		sleep_ms $ms &&
		before=$(cat pushed.* | wc -l) &&
		echo "cycle $i: kill -9 the daemon of $victim after $ms ms" &&
		{ kill9_extra $victim || hung="$hung $victim"; } &&
		wait_until 20 "test \$(cat pushed.* | wc -l) -ge $((before + 20))" &&
		echo "  the other mounts pushed on: $before -> $(cat pushed.* | wc -l)" &&
		remount_extra $victim || { echo "cycle $i failed"; return 1; }
		sleep 1 || return 1
	done &&
	touch stop &&
	wait_until 40 "! kill -0 $pb 2>/dev/null && ! kill -0 $pc 2>/dev/null && ! kill -0 $pd 2>/dev/null" &&
	wait_until 40 "! kill -0 $cb 2>/dev/null && ! kill -0 $cc 2>/dev/null && ! kill -0 $cdd 2>/dev/null" &&
	echo "pushed $(cat pushed.* | wc -l), delivered $(cat deliv.* | wc -l), acked $(cat acked.* | wc -l)" &&
	if test -n "$hung"; then
		echo "killed daemons that did not exit (their FUSE connection was aborted):$hung"
		echo "a thread blocked in fuse_reverse_inval_entry (fs/inval.c) keeps a killed daemon alive"
		false
	fi
'

test_expect_success 'every mount serves again after the kills' '
	for m in "$A" "$TRASH/b" "$TRASH/c" "$TRASH/d"; do
		test "$(cat "$m/sys/health")" = ok || return 1
	done
'

test_expect_success 'the leases of killed daemons expire: the rest is delivered, then nothing is left' '
	sleep 3.5 &&
	: >deliv.z && : >acked.z && : >tried.z &&
	timeout 60 "$PYTHON3" "$QLOAD" consume "$TRASH/b" dur z &&
	echo "delivered again at the end: $(wc -l <deliv.z)" &&
	test_is 0 "$(stat_of "$A/queues/dur/stats" depth)" depth &&
	test_is 0 "$(stat_of "$TRASH/c/queues/dur/stats" leases)" leases
'

test_expect_success 'conservation: pushes kept in order, all delivered, no ack redelivered, acks in offset order' '
	"$PYTHON3" - "$A/queues/dur" <<-\EOF
	import glob, os, sys
	q = sys.argv[1]
	bad = []
	confirmed = {}
	for f in glob.glob("pushed.*"):
	    for n in open(f).read().split():
	        confirmed[n] = True
	# 1. in the log byte for byte; within a partition in producer order
	log = {}
	for p in range(4):
	    d = "%s/partitions/p%d" % (q, p)
	    offs = []
	    for n in os.listdir(d):
	        offs.append((int(os.getxattr(d + "/" + n, "user.queen.offset")), n))
	    offs.sort()
	    last = {}
	    for off, n in offs:
	        who, seq = n.rsplit("-", 1)
	        if last.get(who, 0) >= int(seq):
	            bad.append("p%d: %s at offset %d after %s-%d" % (p, n, off, who, last[who]))
	        last[who] = int(seq)
	        log[n] = p
	for n in confirmed:
	    if n not in log:
	        bad.append("confirmed push lost: " + n)
	        continue
	    with open("%s/partitions/p%d/%s" % (q, log[n], n), "rb") as f:
	        if f.read() != b"payload of " + n.encode():
	            bad.append("wrong payload: " + n)
	# 2. deliveries and acks
	deliv, acked, tried = [], {}, set()
	for f in glob.glob("deliv.*"):
	    for l in open(f):
	        t, n, off = l.split()
	        deliv.append((int(t), n, int(off)))
	for f in glob.glob("tried.*"):
	    tried.update(open(f).read().split())
	acks = []
	for f in glob.glob("acked.*"):
	    for l in open(f):
	        t0, t1, n, off = l.split()
	        if n in acked:
	            bad.append("acked twice: " + n)
	        acked[n] = int(t1)
	        acks.append((int(t0), n, int(off)))
	delivered = set(n for _, n, _ in deliv)
	for n in confirmed:
	    if n not in delivered:
	        bad.append("confirmed push never delivered: " + n)
	    elif n not in acked and n not in tried:
	        bad.append("delivered, never acked: " + n)
	for t, n, _ in deliv:
	    if n in acked and t > acked[n]:
	        bad.append("redelivered after its ack returned 0: " + n)
	unconfirmed_acks = [n for n in log if n not in acked]
	# an ack whose reply was lost in a kill: tried, not confirmed, not redelivered
	for n in unconfirmed_acks:
	    if n not in tried:
	        bad.append("never acked: " + n)
	# 3. acks within a partition in offset order (by the time they started)
	acks.sort()
	last = {}
	for t, n, off in acks:
	    p = log.get(n)
	    # -1: the getxattr failed (its daemon was killed, and the
	    # rename went through the remounted one): no offset to order
	    if p is None or off < 0:
	        continue
	    if off <= last.get(p, 0):
	        bad.append("p%d: ack of offset %d (%s) after offset %d" % (p, off, n, last[p]))
	    last[p] = max(off, last.get(p, 0))
	redeliv = len(deliv) - len(delivered)
	print("confirmed pushes %d, in the log %d, acks confirmed %d, "
	      "redeliveries %d, acks lost in a kill %d" % (len(confirmed), len(log),
	      len(acked), redeliv, len(unconfirmed_acks)))
	for b in bad[:20]:
	    print(b)
	sys.exit(1 if bad else 0)
	EOF
'

# A request refused with EIO around a kill is allowed (its client did not
# get a confirmation, and the checks above hold); a failed assertion is not.
test_expect_success 'no daemon failed an assertion; what they logged' '
	for f in "$DAEMON_LOG" "$TRASH"/b.log "$TRASH"/c.log "$TRASH"/d.log; do
		sed "s|^|${f##*/}: |" "$f" || return 1
	done &&
	! grep -e "Assertion" -e "ERROR: .*Sanitizer" -e "runtime error:" \
	    "$DAEMON_LOG" "$TRASH"/b.log "$TRASH"/c.log "$TRASH"/d.log
'

test_done
