#!/bin/sh
# fs-0077-pg-apipush-crash: an api/push whose items are interleaved over
# four partitions, killed -9 in flight, on PostgreSQL (run under
# tests/pg.sh, which sets QUEEN_TEST_PG).  A client writes requests of
# 40 items round robin over p0..p3 into a second mount's api/push, one
# after another, while that mount's daemon is killed -9 at random
# moments and remounted.  The harness's own mount (never killed) reads
# the outcome: a request is all or nothing (the daemon takes it a
# partition at a time, in one transaction); every item of a request
# whose answer said "queued" is there byte for byte; within each
# partition the items keep their request's order and the requests
# their client's.
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
test_have_prereq PYTHON || skip_all "no python3"
mount_queenfs_on "$(pg_uri "t0077_$$")"
A=$MNT
: "${CRASH_CYCLES:=3}"

test_expect_success 'a second daemon on the same schema; a queue' '
	mount_extra b &&
	mkdir "$A/queues/mix" &&
	test -d "$TRASH/b/queues/mix"
'

# The client: request r is the items r-0 .. r-39, item i into p(i % 4);
# a request answered with 40 "queued" goes to confirmed, one that failed
# (the daemon killed under it, ENOTCONN while it is down) to tried.
cp "$TEST_DIRECTORY/qapi_base.py" "$TRASH/" || exit 1
cat >"$TRASH/apiload.py" <<\EOF
import errno, json, os, sys, time
from qapi_base import call_raw
mnt, stop = sys.argv[1], sys.argv[2]
r = 0
with open("confirmed", "a") as conf, open("tried", "a") as tried:
    while not os.path.exists(stop):
        items = [{"queue": "mix", "partition": "p%d" % (i % 4),
                  "transactionId": "r%d-%d" % (r, i),
                  "payload": "payload of r%d-%d" % (r, i)} for i in range(40)]
        ok = False
        try:
            ans, _ = call_raw("push", json.dumps({"items": items}).encode(),
                              mnt=mnt)
            res = json.loads(ans) if ans is not None else None
            ok = (isinstance(res, list) and len(res) == 40 and
                  all(x.get("status") == "queued" for x in res))
            if not ok and res is not None:
                print("request %d answered %.200s" % (r, ans), file=sys.stderr)
        except OSError as e:
            # the daemon killed under the call, or down
            if e.errno not in (errno.ENOTCONN, errno.ECONNABORTED,
                               errno.EIO, errno.ENOENT):
                raise
        except ValueError:
            pass
        (conf if ok else tried).write("%d\n" % r)
        conf.flush()
        tried.flush()
        if not ok:
            time.sleep(0.05)
        r += 1
EOF

test_expect_success "requests of 40 over 4 partitions; $CRASH_CYCLES kill -9 of their daemon" '
	rm -f stop confirmed tried &&
	{ "$PYTHON3" apiload.py "$TRASH/b" stop 2>load.err & } && lp=$! &&
	track_pid $lp &&
	wait_until 20 "test \$(cat confirmed 2>/dev/null | wc -l) -ge 10" &&
	i=0 &&
	while test $i -lt $CRASH_CYCLES; do
		i=$((i + 1)) &&
		ms=$(( $(random_below 400) + 20 )) &&
		sleep_ms $ms &&
		echo "cycle $i: kill -9 after $ms ms, $(wc -l <confirmed) confirmed" &&
		kill9_extra b &&
		remount_extra b &&
		before=$(wc -l <confirmed) &&
		wait_until 20 "test \$(wc -l <confirmed) -ge $((before + 5))" ||
			return 1
	done &&
	touch stop &&
	wait $lp &&
	echo "confirmed $(wc -l <confirmed), failed $(wc -l <tried)" &&
	! test -s load.err || { cat load.err; false; }
'

test_expect_success 'all or nothing; every confirmed item there, in order' '
	"$PYTHON3" - "$A/queues/mix" <<-\EOF
	import json, os, sys
	q = sys.argv[1]
	bad = []
	confirmed = set(int(l) for l in open("confirmed"))
	tried = set(int(l) for l in open("tried"))
	have = {}    # request -> {item: (partition, offset)}
	for p in range(4):
	    d = "%s/partitions/p%d" % (q, p)
	    offs = sorted((int(os.getxattr(d + "/" + n, "user.queen.offset")), n)
	                  for n in os.listdir(d))
	    last = (-1, -1)
	    for off, n in offs:
	        r, i = (int(x) for x in n[1:].split("-"))
	        if i % 4 != p:
	            bad.append("%s in p%d" % (n, p))
	        if (r, i) <= last:
	            bad.append("p%d: %s at offset %d after r%d-%d" % ((p, n, off) + last))
	        last = (r, i)
	        have.setdefault(r, {})[i] = (p, off)
	for r, items in have.items():
	    if r not in confirmed and r not in tried:
	        bad.append("request %d in the log, never sent" % r)
	    if len(items) != 40:
	        bad.append("request %d: %d of its 40 items" % (r, len(items)))
	for r in confirmed:
	    if r not in have:
	        bad.append("confirmed request %d lost" % r)
	        continue
	    for i, (p, _) in have[r].items():
	        n = "r%d-%d" % (r, i)
	        # a payload is stored as its JSON text (docs/api.md)
	        with open("%s/partitions/p%d/%s" % (q, p, n), "rb") as f:
	            if f.read() != json.dumps("payload of " + n).encode():
	                bad.append("wrong payload: " + n)
	kept = sum(1 for r in tried if r in have)
	print("requests confirmed %d, failed %d (of them kept whole: %d)" %
	      (len(confirmed), len(tried), kept))
	for b in bad[:20]:
	    print(b)
	sys.exit(1 if bad else 0)
	EOF
'

test_expect_success 'no daemon failed an assertion' '
	! grep -e "Assertion" -e "ERROR: .*Sanitizer" -e "runtime error:" \
	    "$DAEMON_LOG" "$TRASH"/b.log
'

test_done
