#!/bin/sh
# fs-0034-stress: a bounded load run.  8 producers push into 100
# partitions while 8 consumers (4 in each of 2 groups) pop, read, and ack
# (whole leases, message by message, and now and then a retry/), for
# QUEENFS_STRESS_SECONDS (default 15; `make stress` runs 60); then the
# consumers drain the queue.  Every process logs what the mount confirmed,
# and the logs must show conservation and order: every confirmed push is
# delivered to each group and acked there; nothing unconfirmed shows up;
# nothing acked is delivered to that group again; inside a lease the
# offsets of a partition are consecutive, and each lease of a (partition,
# group) starts just after what the previous ones acked; each partition's
# offsets are dense and the same in both groups.  The daemon's open fds
# must not grow and its RSS must stay bounded (sampled at start, middle and
# end).  Throughput is reported, never judged.  With a sanitizer build
# (make tsan) any report in the daemon's log fails the script.
: "${QUEENFS_STRESS_SECONDS:=15}"
# the run, the drain (slow under TSan) and the checks, with room to spare
: "${QUEENFS_TEST_TIMEOUT:=$((QUEENFS_STRESS_SECONDS * 4 + 240))}"
. "$(dirname "$0")/lib.sh"
test_have_prereq PYTHON || skip_all "no python3"
mount_queenfs

Q="$MNT/queues/stress"
LOGS="$TRASH/logs"

# sample WHEN: the daemon's open fds but its FUSE workers' epoll
# instances (fs/order.c: one a worker, closed when it ends), VmRSS (kB),
# those epoll instances and its threads, one line to samples (also run by
# stress.py, in the middle of the load)
cat >"$TRASH/sampler.sh" <<\EOF
ep=$(ls -l "/proc/$2/fd" | grep -c 'anon_inode:\[eventpoll\]')
printf '%s %s %s %s %s\n' "$1" "$(($(ls "/proc/$2/fd" | wc -l) - ep))" \
    "$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$2/status")" \
    "$ep" "$(ls "/proc/$2/task" | wc -l)" >>"$3"
EOF
sample () {
	sh "$TRASH/sampler.sh" "$1" "$DAEMON_PID" "$TRASH/samples"
}

test_expect_success 'setup: queue, two groups from the start, 100 partitions' '
	mkdir "$Q" &&
	printf "wait = 1\nlease_time = 60\n" >"$Q/config" &&
	mkdir "$Q/groups/g1" "$Q/groups/g2" &&
	printf "subscription = all\nbatch = 8\nwait = 1\n" >"$Q/groups/g1/config" &&
	printf "subscription = all\nbatch = 3\nwait = 1\n" >"$Q/groups/g2/config" &&
	test_is 8 "$(stat_of "$Q/groups/g1/config" batch)" "g1 batch" &&
	mkdir "$LOGS" &&
	: >"$TRASH/samples" &&
	sample start
'

cat >"$TRASH/stress.py" <<\PYEOF
import errno, json, os, random, sys, time
import multiprocessing as mp

Q, LOGS, SECONDS, SAMPLER = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
NPROD, NPART, GROUPS, PER_GROUP = 8, 100, ("g1", "g2"), 4
MAX_BACKLOG = 3000          # producers wait while consumers are this far behind
DRAIN_MAX = 120 + 2 * SECONDS   # consumers give up draining after this
MAX_ERRORS = 20             # a worker stops after this many unexpected errors
PARTS = ["p%02d" % i for i in range(NPART)]

def now():
    return time.monotonic()

def producer(i, stop, pushed, acked):
    rnd = random.Random(i)
    seq = 0
    errs = 0
    with open(os.path.join(LOGS, "push-%d" % i), "w") as log:
        while not stop.is_set():
            if pushed.value - min(a.value for a in acked) > MAX_BACKLOG:
                time.sleep(0.01)
                continue
            seq += 1
            p = rnd.choice(PARTS)
            tx = "P%d-%d" % (i, seq)
            path = os.path.join(Q, "partitions", p, tx)
            try:
                fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
                try:
                    os.write(fd, ("%s:%s" % (tx, p)).encode())
                finally:
                    os.close(fd)
            except OSError as e:
                errs += 1
                log.write(json.dumps(["err", tx, p, errno.errorcode.get(e.errno, str(e.errno))]) + "\n")
                if e.errno == errno.ENOTCONN or errs >= MAX_ERRORS:
                    sys.exit(1)     # the daemon is gone, or something is wrong
                continue
            log.write(json.dumps(["push", tx, p]) + "\n")
            with pushed.get_lock():
                pushed.value += 1

def consumer(g, c, stop, acked, producers_done):
    rnd = random.Random(1000 + 10 * c + len(g))
    gdir = os.path.join(Q, "groups", g)
    whole = c % 2 == 0      # half ack whole leases, half message by message
    idle = 0
    errs = 0
    drain_end = None
    with open(os.path.join(LOGS, "con-%s-%d" % (g, c)), "w") as log:
        def rec(*a):
            log.write(json.dumps(a) + "\n")
        while True:
            t0 = now()
            if producers_done.is_set():
                drain_end = drain_end or t0 + DRAIN_MAX
                if t0 > drain_end:
                    rec("gaveup", "draining")
                    sys.exit(1)
            try:
                with open(os.path.join(gdir, "next"), "rb") as f:
                    lines = f.read().decode().split()
            except OSError as e:
                if e.errno in (errno.ENODATA, errno.EAGAIN):
                    # drained once the producers are done and it stays empty
                    if producers_done.is_set():
                        idle += 1
                        if idle >= 3:
                            break
                    continue
                rec("poperr", errno.errorcode.get(e.errno, str(e.errno)))
                errs += 1
                if e.errno == errno.ENOTCONN or errs >= MAX_ERRORS:
                    sys.exit(1)
                continue
            t1 = now()
            idle = 0
            msgs = []
            lease = None
            for ln in lines:
                _, lease, name = ln.split("/")
                lp = os.path.join(gdir, ln)
                with open(lp, "rb") as f:
                    payload = f.read().decode()
                off = int(os.getxattr(lp, "user.queen.offset"))
                part = os.getxattr(lp, "user.queen.partition").decode()
                msgs.append([name, part, off, payload])
            rec("lease", lease, t0, t1, msgs)
            # acks: ["ack", lease, txid or "*" for the whole lease, ok/errno, t_end]
            if rnd.random() < 0.03:
                try:
                    os.rename(os.path.join(gdir, "leased", lease, msgs[0][0]),
                              os.path.join(gdir, "retry", msgs[0][0]))
                    rec("retry", lease, "ok", now())
                except OSError as e:
                    rec("retry", lease, errno.errorcode.get(e.errno, str(e.errno)), now())
                continue
            if whole:
                try:
                    os.rename(os.path.join(gdir, "leased", lease),
                              os.path.join(gdir, "ack", lease))
                    rec("ack", lease, "*", "ok", now())
                    with acked[GROUPS.index(g)].get_lock():
                        acked[GROUPS.index(g)].value += len(msgs)
                except OSError as e:
                    rec("ack", lease, "*", errno.errorcode.get(e.errno, str(e.errno)), now())
            else:
                for m in msgs:
                    try:
                        os.rename(os.path.join(gdir, "leased", lease, m[0]),
                                  os.path.join(gdir, "ack", m[0]))
                        rec("ack", lease, m[0], "ok", now())
                        with acked[GROUPS.index(g)].get_lock():
                            acked[GROUPS.index(g)].value += 1
                    except OSError as e:
                        rec("ack", lease, m[0], errno.errorcode.get(e.errno, str(e.errno)), now())
                        break

def main():
    mp.set_start_method("fork")
    stop, producers_done = mp.Event(), mp.Event()
    pushed = mp.Value("q", 0)
    acked = [mp.Value("q", 0) for _ in GROUPS]
    prods = [mp.Process(target=producer, args=(i, stop, pushed, acked)) for i in range(NPROD)]
    cons = [mp.Process(target=consumer, args=(g, c, stop, acked, producers_done))
            for g in GROUPS for c in range(PER_GROUP)]
    t0 = now()
    for p in prods + cons:
        p.start()
    time.sleep(SECONDS / 2)
    os.system(SAMPLER + " middle")
    time.sleep(max(0, t0 + SECONDS - now()))
    stop.set()
    for p in prods:
        p.join()
    t1 = now()
    producers_done.set()
    for p in cons:
        p.join()
    t2 = now()
    with open(os.path.join(LOGS, "times"), "w") as f:
        json.dump({"load": t1 - t0, "drain": t2 - t1,
                   "codes": [p.exitcode for p in prods + cons]}, f)

main()
PYEOF

cat >"$TRASH/check.py" <<\PYEOF
import glob, json, os, sys
from collections import defaultdict

LOGS = sys.argv[1]
bad = []
def fail(msg):
    if len(bad) < 30:
        print("FAIL:", msg)
    bad.append(msg)

t = json.load(open(os.path.join(LOGS, "times")))
if any(c != 0 for c in t["codes"]):
    fail("a worker process exited with %s" % t["codes"])

pushed = {}          # txid -> partition
perr = 0
for fn in glob.glob(os.path.join(LOGS, "push-*")):
    for ln in open(fn):
        r = json.loads(ln)
        if r[0] == "push":
            pushed[r[1]] = r[2]
        else:
            perr += 1
            fail("push %s to %s failed: %s" % (r[1], r[2], r[3]))

stats = {"pushes": len(pushed), "push_errors": perr}
offsets = {}         # (partition, offset) -> txid, across groups
for g in ("g1", "g2"):
    leases = []      # (t_end, t_start, lease, msgs)
    outcome = {}     # lease -> highest acked offset (None: nothing)
    ack_end = {}     # txid -> time its ack (or its lease's) returned
    deliveries = defaultdict(list)   # txid -> [t_start]
    errs = defaultdict(int)
    nacks = 0
    for fn in glob.glob(os.path.join(LOGS, "con-%s-*" % g)):
        by_lease = {}
        for ln in open(fn):
            r = json.loads(ln)
            if r[0] == "lease":
                _, lease, t0, t1, msgs = r
                by_lease[lease] = msgs
                leases.append((t1, t0, lease, msgs))
                outcome.setdefault(lease, None)
                for name, part, off, payload in msgs:
                    deliveries[name].append(t0)
                    if payload != "%s:%s" % (name, part):
                        fail("%s: %s has payload %r" % (g, name, payload))
            elif r[0] == "ack":
                _, lease, what, res, tend = r
                if res != "ok":
                    errs["ack " + res] += 1
                    continue
                nacks += 1
                msgs = by_lease[lease]
                done = msgs if what == "*" else [m for m in msgs if m[0] == what]
                for m in done:
                    ack_end[m[0]] = min(ack_end.get(m[0], tend), tend)
                    if outcome[lease] is None or m[2] > outcome[lease]:
                        outcome[lease] = m[2]
            elif r[0] == "retry":
                if r[2] != "ok":
                    errs["retry " + r[2]] += 1
            else:
                errs[r[0] + " " + r[1]] += 1
    for k, v in errs.items():
        if not k.startswith("ack ESTALE"):
            fail("%s: %d x %s" % (g, v, k))
    # conservation: every confirmed push delivered and acked; nothing else
    for tx in pushed:
        if tx not in deliveries:
            fail("%s: confirmed push %s never delivered" % (g, tx))
        elif tx not in ack_end:
            fail("%s: %s delivered but never acked" % (g, tx))
    for tx in deliveries:
        if tx not in pushed:
            fail("%s: delivered %s that no producer saw confirmed" % (g, tx))
    # nothing acked comes back: no pop that started after the ack returned
    redel = 0
    for tx, ts in deliveries.items():
        if tx in ack_end and any(t0 > ack_end[tx] for t0 in ts):
            redel += 1
            fail("%s: %s delivered again after its ack" % (g, tx))
    # order: per partition, leases in the order they were granted
    per_part = defaultdict(list)
    for t1, t0, lease, msgs in sorted(leases):
        if not msgs:
            fail("%s: empty lease %s" % (g, lease))
            continue
        parts = {m[1] for m in msgs}
        if len(parts) != 1:
            fail("%s: lease %s spans partitions %s" % (g, lease, parts))
            continue
        offs = [m[2] for m in msgs]
        if offs != list(range(offs[0], offs[0] + len(offs))):
            fail("%s: lease %s offsets not consecutive: %s" % (g, lease, offs))
        per_part[msgs[0][1]].append((lease, msgs))
    for p, ls in per_part.items():
        expect = None
        for lease, msgs in ls:
            first = msgs[0][2]
            if expect is not None and first != expect:
                fail("%s/%s: lease %s starts at offset %d, expected %d" %
                     (g, p, lease, first, expect))
            if expect is None:
                expect = first
            if outcome[lease] is not None:
                expect = outcome[lease] + 1
            for name, part, off, payload in msgs:
                prev = offsets.setdefault((part, off), name)
                if prev != name:
                    fail("offset %s/%d is %s in one place and %s in another" %
                         (part, off, prev, name))
    stats[g] = {"leases": len(leases), "deliveries": sum(len(v) for v in deliveries.values()),
                "acks": nacks, "redelivered_after_ack": redel,
                "ack_errors": dict(errs)}
# dense offsets: each partition holds exactly its confirmed pushes, no gaps
byp = defaultdict(list)
for (p, off) in offsets:
    byp[p].append(off)
want = defaultdict(int)
for tx, p in pushed.items():
    want[p] += 1
for p in set(byp) | set(want):
    offs = sorted(byp[p])
    if offs and offs != list(range(offs[0], offs[0] + len(offs))):
        fail("partition %s: offsets not dense (%d..%d, %d of them)" %
             (p, offs[0], offs[-1], len(offs)))
    if len(offs) != want[p]:
        fail("partition %s: %d offsets delivered, %d pushes confirmed" %
             (p, len(offs), want[p]))
stats["partitions"] = len(byp)
stats["load_s"] = round(t["load"], 1)
stats["drain_s"] = round(t["drain"], 1)
print("STATS " + json.dumps(stats))
print("%d violation(s)" % len(bad))
sys.exit(1 if bad else 0)
PYEOF

test_expect_success "load: 8 producers, 8 consumers, 2 groups, 100 partitions, ${QUEENFS_STRESS_SECONDS} s, then drain" '
	python3 "$TRASH/stress.py" "$Q" "$LOGS" "$QUEENFS_STRESS_SECONDS" \
	    "sh $TRASH/sampler.sh middle $DAEMON_PID $TRASH/samples" &&
	sample end
'

test_expect_success 'conservation and order hold in what the mount confirmed' '
	python3 "$TRASH/check.py" "$LOGS" >"$TRASH/check.out"
	rc=$?
	cat "$TRASH/check.out" &&
	test $rc = 0
'

test_expect_success 'drained: no depth, no lease left in either group' '
	for g in g1 g2; do
		cat "$Q/groups/$g/stats" >st &&
		test_is 0 "$(stat_of st depth)" "$g depth" &&
		test_is 0 "$(stat_of st leases)" "$g leases" || return 1
	done &&
	test_is "$(sed -n "s/^STATS //p" "$TRASH/check.out" |
	    python3 -c "import json,sys; print(json.load(sys.stdin)[\"pushes\"])")" \
	    "$(stat_of "$Q/stats" pushed)" "pushed"
'

test_expect_success 'the daemon holds no more fds than at the start; RSS is bounded' '
	cat "$TRASH/samples" &&
	awk "
		\$1 == \"start\" { f0 = \$2; r0 = \$3 }
		\$1 == \"middle\" { f1 = \$2; r1 = \$3 }
		\$1 == \"end\" { f2 = \$2; r2 = \$3 }
		\$4 > \$5 { print \"more epoll instances than threads: \" \$0; exit 1 }
		END {
			if (f0 == \"\" || f1 == \"\" || f2 == \"\") { print \"missing samples\"; exit 1 }
			if (f2 > f0 + 4) { print \"fds grew: \" f0 \" -> \" f2; exit 1 }
			if (r2 > 3 * r1 && r2 > 48 * 1024) { print \"RSS grew: \" r1 \" -> \" r2 \" kB\"; exit 1 }
		}" "$TRASH/samples"
'

# The figures, as diag lines (never judged).
if test -s "$TRASH/check.out"; then
	sed -n "s/^STATS //p" "$TRASH/check.out" | python3 -c '
import json, sys
s = json.load(sys.stdin)
load, drain = s["load_s"], s["drain_s"]
print("# %d confirmed pushes in %.1f s: %.0f pushes/s (%d push errors)" %
      (s["pushes"], load, s["pushes"] / max(load, 0.001), s["push_errors"]))
for g in ("g1", "g2"):
    x = s[g]
    print("# %s: %d deliveries, %d leases, %d acks in %.1f s load + %.1f s drain: %.0f deliveries/s; ack errors %s" %
          (g, x["deliveries"], x["leases"], x["acks"], load, drain,
           x["deliveries"] / max(load + drain, 0.001), x["ack_errors"] or "none"))
print("# %d partitions used" % s["partitions"])
'
fi
test -s "$TRASH/samples" &&
	awk '{ printf "# daemon at %s: %d fds and %d epoll instances, %d threads, VmRSS %d kB\n", $1, $2, $4, $5, $3 }' "$TRASH/samples"
test -n "$DAEMON_LOG" && test -f "$DAEMON_LOG" &&
	diag "$(grep -c 'queenfs:' "$DAEMON_LOG") daemon log line(s)"

test_expect_success 'no sanitizer report in the daemon log' '
	! grep -n -e "ThreadSanitizer" -e "AddressSanitizer" -e "LeakSanitizer" \
	    -e "runtime error:" "$DAEMON_LOG"
'

test_done
