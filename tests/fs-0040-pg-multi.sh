#!/bin/sh
# fs-0040-pg-multi: three daemons, each on its own mountpoint, on one
# PostgreSQL schema (run under tests/pg.sh, which sets QUEEN_TEST_PG): a
# queue made and a message pushed through A is seen and popped through B;
# a lease held through A is respected by B (ENODATA, ESTALE) until it
# expires (the lease id itself is a bearer credential on every mount, as
# between two processes on one mount); a reader blocked in `next` on B is woken by a push through A
# (LISTEN/NOTIFY), so is poll(); api/transaction on A and B interleaved
# stays atomic and the lease fences them; config written through A is
# read by B and C.
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
SCHEMA=t0040_$$
mount_queenfs_on "$(pg_uri "$SCHEMA")"
A=$MNT
B=$TRASH/b
C=$TRASH/c
export A B C

test_expect_success 'two more daemons on the same schema' '
	mount_extra b &&
	mount_extra c
'

test_expect_success 'every mount is on PostgreSQL, not on a file named like the URI' '
	for m in "$A" "$B" "$C"; do
		src=$(awk -v m="$m" "\$2 == m { print \$1 }" /proc/mounts) &&
		echo "$m: $src" &&
		case "$src" in postgres*) ;; *) return 1 ;; esac || return 1
	done &&
	test_path_is_missing "$TRASH/postgresql:"
'

test_expect_success 'mkdir and push through A: B sees the queue and the payload' '
	mkdir "$A/queues/q" &&
	echo "wait = 1" >"$A/queues/q/config" &&
	test -d "$B/queues/q" &&
	ls "$C/queues" >actual &&
	grep -qx q actual &&
	printf "hello from A" >"$A/queues/q/m1" &&
	printf "hello from A" >expect &&
	# published by the RELEASE on A, which runs after the close returned
	wait_until 10 "test -f \"$B/queues/q/partitions/default/m1\"" &&
	test_cmp expect "$B/queues/q/partitions/default/m1" &&
	test_is 1 "$(stat_of "$C/queues/q/stats" depth)" "depth through C"
'

test_expect_success 'B pops what A pushed and acks it; A and C see the ack' '
	LINE=$(pop "$B/queues/q") &&
	echo "B got $LINE" &&
	test_is m1 "${LINE##*/}" txid &&
	test_cmp expect "$B/queues/q/$LINE" &&
	mv "$B/queues/q/$LINE" "$B/queues/q/ack/" &&
	test_is 0 "$(stat_of "$A/queues/q/stats" depth)" "depth through A" &&
	test_is 0 "$(stat_of "$C/queues/q/stats" leases)" "leases through C"
'

test_expect_success 'a lease held through A: B and C get ENODATA (wait = 1)' '
	mkdir "$A/queues/l" &&
	printf "lease_time = 4\nwait = 1\n" >"$A/queues/l/config" &&
	printf one >"$A/queues/l/l1" &&
	LA=$(pop "$A/queues/l") &&
	echo "A holds $LA" &&
	test_is l1 "${LA##*/}" txid &&
	echo read:ENODATA >expect &&
	sysc read "$B/queues/l/next" >actual &&
	test_cmp expect actual &&
	sysc read "$C/queues/l/next" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$B/queues/l/stats" leases)" "leases through B"
'

test_expect_success 'B cannot ack or fail the message with a lease nobody holds' '
	LID=${LA#leased/} && LID=${LID%%/*} &&
	ls "$B/queues/l/leased" >actual &&
	echo "$LID" >expect &&
	test_cmp expect actual &&
	fake=$(echo "$LID" | sed "s/.$/0/") &&
	test "$fake" != "$LID" || fake=$(echo "$LID" | sed "s/.$/1/") &&
	for to in ack failed retry dlq; do
		sysc rename "$B/queues/l/leased/$fake/l1" "$B/queues/l/$to/l1" >actual &&
		echo "$to with a made-up lease: $(cat actual)" &&
		! grep -qx ok actual || return 1
	done &&
	test_is 1 "$(stat_of "$A/queues/l/stats" leases)" "still one lease" &&
	grep -q "^partition default: committed = 0," "$C/queues/l/stats"
'

test_expect_success 'after A lease expires B pops it; A then gets ESTALE, B acks' '
	sleep 4.5 &&
	LB=$(pop "$B/queues/l") &&
	echo "B holds $LB" &&
	test_is l1 "${LB##*/}" "the same message" &&
	test "$LB" != "$LA" &&
	echo rename:ESTALE >expect &&
	sysc rename "$A/queues/l/$LA" "$A/queues/l/ack/l1" >actual &&
	test_cmp expect actual &&
	echo ok >expect &&
	sysc rename "$B/queues/l/$LB" "$B/queues/l/ack/l1" >actual &&
	test_cmp expect actual &&
	grep -q "^partition default: committed = 1," "$C/queues/l/stats" &&
	test_is 0 "$(stat_of "$A/queues/l/stats" leases)" "no lease left"
'

# B's reader is parked in next (wait 30 s) while A holds the only lease
# (2 s): it is retried when that lease is due to expire, as on one
# mount, not only at its own deadline.  timeout 20 leaves ten times the
# lease; a reader that waited for its deadline would be killed at 20 s.
test_expect_success 'a reader parked on B is handed the message when A lease expires' '
	mkdir "$A/queues/exp" &&
	printf "lease_time = 2\nwait = 30\n" >"$A/queues/exp/config" &&
	printf e1 >"$A/queues/exp/e1" &&
	LA=$(pop "$A/queues/exp") &&
	test_is e1 "${LA##*/}" "A holds it" &&
	LB=$(timeout 20 cat "$B/queues/exp/next") &&
	echo "B got $LB" &&
	test_is e1 "${LB##*/}" "the same message, through B" &&
	test "$LB" != "$LA" &&
	mv "$B/queues/exp/$LB" "$B/queues/exp/ack/"
'

test_expect_success 'a lease id is a bearer credential, as on one mount: B may ack with the one A took' '
	mkdir "$A/queues/bearer" &&
	printf b1 >"$A/queues/bearer/b1" &&
	LA=$(pop "$A/queues/bearer") &&
	echo ok >expect &&
	sysc rename "$B/queues/bearer/$LA" "$B/queues/bearer/ack/b1" >actual &&
	test_cmp expect actual &&
	echo rename:ESTALE >expect &&
	sysc rename "$A/queues/bearer/$LA" "$A/queues/bearer/ack/b1" >actual &&
	test_cmp expect actual
'

test_expect_success 'a blocked cat next on B is woken by a push through A' '
	mkdir "$A/queues/w" &&
	echo "wait = 20" >"$A/queues/w/config" &&
	{ timeout 25 cat "$B/queues/w/next" >woken & } &&
	reader=$! && track_pid $reader &&
	wait_until 5 "test \"\$(stat_of \"$B/sys/stats\" waiting_readers)\" = 1" &&
	kill -0 $reader &&
	start=$(date +%s) &&
	printf wake >"$A/queues/w/wake1" &&
	wait_until 15 "! kill -0 $reader 2>/dev/null" &&
	wait $reader &&
	took=$(($(date +%s) - start)) &&
	echo "woken after about $took s (wait = 20)" &&
	test $took -lt 10 &&
	grep -q "^leased/[^/]*/wake1$" woken &&
	printf wake >expect &&
	test_cmp expect "$B/queues/w/$(cat woken)" &&
	mv "$B/queues/w/$(cat woken)" "$B/queues/w/ack/"
'

test_expect_success 'several readers blocked on B and C, each woken by one push through A' '
	: >r1 && : >r2 && : >r3 &&
	{ timeout 25 cat "$B/queues/w/next" >r1 & } && p1=$! && track_pid $p1 &&
	{ timeout 25 cat "$B/queues/w/next" >r2 & } && p2=$! && track_pid $p2 &&
	{ timeout 25 cat "$C/queues/w/next" >r3 & } && p3=$! && track_pid $p3 &&
	wait_until 5 "test \"\$(stat_of \"$B/sys/stats\" waiting_readers)\" = 2" &&
	wait_until 5 "test \"\$(stat_of \"$C/sys/stats\" waiting_readers)\" = 1" &&
	start=$(date +%s) &&
	printf x >"$A/queues/w/x1" &&
	printf x >"$A/queues/w/partitions/p2/x2" &&
	printf x >"$A/queues/w/partitions/p3/x3" &&
	wait_until 15 "! kill -0 $p1 2>/dev/null && ! kill -0 $p2 2>/dev/null && ! kill -0 $p3 2>/dev/null" &&
	took=$(($(date +%s) - start)) &&
	echo "all woken after about $took s" &&
	test $took -lt 10 &&
	cat r1 r2 r3 | sed "s|.*/||" | sort >got &&
	printf "x1\nx2\nx3\n" >expect &&
	test_cmp expect got &&
	mv "$B/queues/w/$(cat r1)" "$B/queues/w/ack/" &&
	mv "$B/queues/w/$(cat r2)" "$B/queues/w/ack/" &&
	mv "$C/queues/w/$(cat r3)" "$C/queues/w/ack/"
'

test_expect_success PYTHON 'poll() on next through B is readable after a push through A' '
	mkdir "$A/queues/pl" &&
	python3 - "$B/queues/pl" "$A/queues/pl" >poll.out <<-\EOF &&
	import os, select, sys, threading, time
	qb, qa = sys.argv[1], sys.argv[2]
	fd = os.open(qb + "/next", os.O_RDONLY | os.O_NONBLOCK)
	p = select.poll()
	p.register(fd, select.POLLIN)
	print("empty:", p.poll(0))
	def push():
	    time.sleep(0.5)
	    with open(qa + "/polled", "w") as f:
	        f.write("p")
	threading.Thread(target=push).start()
	t0 = time.monotonic()
	ev = p.poll(20000)
	s = time.monotonic() - t0
	print("after push:", [e for _, e in ev], "in",
	      "time" if s < 10 else "%.1f s" % s)
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

# A group removed through A is gone for B, though B still holds it (a
# shell whose working directory it is: the kernel does not look the
# directory up again): B's read of next, its writes to the group's
# config and seek and its lease-less ack into the group's ack/ answer
# ENOENT, make nothing, and B's log says why, once a step.  Each made
# the group again, from the oldest message, before.
test_expect_success 'a group removed through A is not made again through B' '
	G=queues/gr/groups/g1 &&
	mkdir "$A/queues/gr" &&
	echo "wait = 1" >"$A/queues/gr/config" &&
	echo 1 >"$A/queues/gr/m1" &&
	for step in next config seek ack; do
		mkdir "$A/$G" &&
		n0=$(grep -c "no group .g1. on queue .gr." "$TRASH/b.log" || :) &&
		(
			cd "$B/$G" &&
			rmdir "$A/$G" &&
			case $step in
			next) sysc read next ;;
			config) sysc write config "batch = 2" ;;
			seek) sysc write seek start ;;
			ack) sysc rename ../../partitions/default/m1 ack/m1 ;;
			esac
		) >out &&
		test_is ENOENT "$(sed -n "1s/.*://p" out)" "$step on B" &&
		test_is $((n0 + 1)) "$(grep -c "no group .g1. on queue .gr." "$TRASH/b.log")" \
		    "the reason logged for $step" &&
		test_is 0 "$(stat_of "$A/queues/gr/stats" groups)" "groups after $step" &&
		test_path_is_missing "$A/$G" || return 1
	done
'

# A removal wakes the readers of the group waiting on other mounts: they
# find it gone (ENOENT) rather than wait out their wait (ENODATA).
test_expect_success 'a reader parked on B in a group that A removes gets ENOENT' '
	mkdir "$A/queues/gp" &&
	echo "wait = 20" >"$A/queues/gp/config" &&
	mkdir "$A/queues/gp/groups/g" &&
	{ sysc read "$B/queues/gp/groups/g/next" >parked & } &&
	reader=$! && track_pid $reader &&
	wait_until 5 "test \"\$(stat_of \"$B/sys/stats\" waiting_readers)\" = 1" &&
	rmdir "$A/queues/gp/groups/g" &&
	wait_until 30 "! kill -0 $reader 2>/dev/null" &&
	{ wait $reader || :; } &&
	test_is ENOENT "$(sed -n "1s/.*://p" parked)" "the parked read"
'

test_expect_success 'config written through A is read through B and C' '
	printf "retry_limit = 9\nlease_time = 77\n" >"$A/queues/q/config" &&
	grep -qx "retry_limit = 9" "$B/queues/q/config" &&
	grep -qx "lease_time = 77" "$C/queues/q/config" &&
	echo "retry_limit = 4" >"$C/queues/q/config" &&
	grep -qx "retry_limit = 4" "$A/queues/q/config"
'

# $TRASH/qm.py: the api/ files of a given mount, for the Python cases
cp "$TEST_DIRECTORY/qapi_base.py" "$TRASH/" || exit 1
cat >"$TRASH/qm.py" <<\PYEOF
import errno, json, os, time
from qapi_base import api, eq, check

def call(mnt, ep, body):
    return api(ep, body, mnt=mnt)

def push(mnt, q, *txids):
    call(mnt, "push", {"items": [{"queue": q, "transactionId": t,
        "payload": {"id": t}} for t in txids]})

def pop(mnt, q, batch=1):
    return call(mnt, "pop", {"queue": q, "batch": batch})["messages"]

def ack(m):
    return {"type": "ack", "transactionId": m["transactionId"],
        "partitionId": m["partitionId"], "consumerGroup": m["consumerGroup"],
        "status": "completed", "leaseId": m["leaseId"]}

def step(m, who, out):
    """ack m, push its receipt into out, record who did it in KV: one unit"""
    t = m["transactionId"]
    return {"operations": [ack(m), {"type": "push", "queue": out,
        "items": [{"transactionId": "r-" + t, "payload": {"by": who}}]}],
        "kv": [{"op": "put", "ns": out, "key": t, "value": {"by": who}}]}

PYEOF

test_expect_success PYTHON 'worker on A and worker on B: the lease is the fence across mounts' '
	python3 <<-\EOF
	import os
	from qm import *
	A, B = os.environ["A"], os.environ["B"]
	os.mkdir(A + "/queues/ab")
	with open(A + "/queues/ab/config", "w") as f:
	    f.write("lease_time = 2\nwait = 1\n")
	push(A, "ab", "pay-1")
	ma = pop(A, "ab")
	eq(1, len(ma), "A pops")
	eq([], pop(B, "ab"), "B: the lease of A holds")
	time.sleep(2.5)
	mb = pop(B, "ab")
	eq(1, len(mb), "B pops after the expiry")
	eq("pay-1", mb[0]["transactionId"], "the same message")
	check(mb[0]["leaseId"] != ma[0]["leaseId"], "a new lease")
	ans = call(A, "transaction", step(ma[0], "A", "ab-out"))
	eq(False, ans.get("success"), "A with the expired lease: %r" % ans)
	check(not os.path.exists(A + "/kv/ab-out/pay-1"), "nothing of A in KV")
	ans = call(B, "transaction", step(mb[0], "B", "ab-out"))
	eq(True, ans.get("success"), "B with its lease: %r" % ans)
	with open(A + "/kv/ab-out/pay-1", "rb") as f:
	    eq(b"{\"by\":\"B\"}", f.read(), "the KV write, read through A")
	eq(["r-pay-1"], sorted(os.listdir(A + "/queues/ab-out/partitions/default")),
	    "the receipt, read through A")
	EOF
'

test_expect_success PYTHON 'transactions through A and B interleaved: each one whole, none twice' '
	cat >worker.py <<-\EOF &&
	import os, sys
	from qm import *
	mnt, who = sys.argv[1], sys.argv[2]
	done = bad = idle = 0
	while idle < 3:
	    ms = pop(mnt, "tx-in")
	    if not ms:
	        idle += 1
	        continue
	    idle = 0
	    ans = call(mnt, "transaction", step(ms[0], who, "tx-out"))
	    if ans.get("success"):
	        done += 1
	    else:
	        bad += 1
	        print("refused:", ans, file=sys.stderr)
	print(done, bad)
	EOF
	python3 -c "
import os
from qm import *
os.mkdir(os.environ[\"A\"] + \"/queues/tx-in\")
with open(os.environ[\"A\"] + \"/queues/tx-in/config\", \"w\") as f:
    f.write(\"wait = 1\nlease_time = 60\n\")
push(os.environ[\"A\"], \"tx-in\", *[\"t%03d\" % i for i in range(120)])
" &&
	{ "$PYTHON3" worker.py "$A" A >wa.out 2>wa.err & } && pa=$! && track_pid $pa &&
	{ "$PYTHON3" worker.py "$B" B >wb.out 2>wb.err & } && pb=$! && track_pid $pb &&
	{ "$PYTHON3" worker.py "$C" C >wc.out 2>wc.err & } && pc=$! && track_pid $pc &&
	wait_until 60 "! kill -0 $pa 2>/dev/null && ! kill -0 $pb 2>/dev/null && ! kill -0 $pc 2>/dev/null" &&
	wait $pa && wait $pb && wait $pc &&
	echo "A: $(cat wa.out), B: $(cat wb.out), C: $(cat wc.out) (done refused)" &&
	cat wa.err wb.err wc.err &&
	test_is 120 $(( $(cut -d" " -f1 wa.out) + $(cut -d" " -f1 wb.out) + $(cut -d" " -f1 wc.out) )) "transactions done" &&
	test_is 0 "$(stat_of "$B/queues/tx-in/stats" depth)" "tx-in depth" &&
	test_is 0 "$(stat_of "$B/queues/tx-in/stats" leases)" "tx-in leases" &&
	ls "$C/queues/tx-out/partitions/default" >receipts &&
	test_line_count = 120 receipts &&
	python3 <<-\EOF
	import os
	from qm import *
	A, B = os.environ["A"], os.environ["B"]
	keys = sorted(os.listdir(B + "/kv/tx-out"))
	eq(["t%03d" % i for i in range(120)], keys, "one KV key per message")
	for k in keys:
	    with open(B + "/kv/tx-out/" + k, "rb") as f:
	        kv = f.read()
	    with open(A + "/queues/tx-out/partitions/default/r-" + k, "rb") as f:
	        rc = f.read()
	    eq(kv, rc, "the receipt and the KV value of " + k + " by the same worker")
	EOF
'

test_done
