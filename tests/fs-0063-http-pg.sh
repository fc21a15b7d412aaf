#!/bin/sh
# fs-0063-http-pg: Queen's HTTP API served by two daemons on one
# PostgreSQL schema (run under tests/pg.sh, which sets QUEEN_TEST_PG),
# each with its own --listen and mount: a push over HTTP to A pops and
# acks over HTTP on B; a long poll parked on B is woken by a push over
# HTTP on A; a transaction over HTTP on A is seen on B; a lease taken on
# A keeps B's pops out of that partition, while its lease id acks
# through B; dedup holds across the daemons; a configure on A is B's;
# a trace recorded on A is read on B, and pops over several partitions
# through both take each message once; a third daemon with --listen
# and no mount pushes what A's next pops.
. "$(dirname "$0")/lib.sh"
test -n "${QUEEN_TEST_PG:-}" ||
	skip_all "QUEEN_TEST_PG is not set (run under tests/pg.sh)"
test_have_prereq PYTHON || skip_all "no python3"
command -v curl >/dev/null 2>&1 || skip_all "no curl"
free_port () {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
QA=127.0.0.1:$(free_port)
QB=127.0.0.1:$(free_port)
SCHEMA=t0063_$$
mount_queenfs_on "$(pg_uri "$SCHEMA")" --listen "$QA"
A=$MNT
B=$TRASH/b
QHTTP=$QA
export A B QA QB QHTTP
cp "$TEST_DIRECTORY/http_base.py" "$TRASH/" || exit 1

test_expect_success 'a second daemon on the same schema serves HTTP too' '
	mount_extra b --listen "$QB" &&
	grep "http: serving Queen.s API on http://$QA" "$DAEMON_LOG" &&
	grep "http: serving Queen.s API on http://$QB" "$TRASH/b.log"
'

test_expect_success 'push over HTTP to A; pop and ack over HTTP on B' '
	python3 <<\EOF
from http_base import *
QA, QB, B = os.environ["QA"], os.environ["QB"], os.environ["B"]
a, b = Client(addr=QA), Client(addr=QB)
st, js, _ = a.call("POST", "/api/v1/push", {"items": [
    {"queue": "hq", "payload": {"n": 1}, "transactionId": "m1"},
    {"queue": "hq", "payload": {"n": 2}, "transactionId": "m2"}]})
eq(201, st, "push on A")
eq(["queued", "queued"], [r["status"] for r in js], "both queued")
st, js, _ = b.call("GET", "/api/v1/pop/queue/hq?wait=false&batch=10")
eq(200, st, "pop on B")
eq(["m1", "m2"], [m["transactionId"] for m in js["messages"]], "both, in order")
eq([{"n": 1}, {"n": 2}], [m["data"] for m in js["messages"]], "payloads")
m = js["messages"][1]
st, res, _ = b.call("POST", "/api/v1/ack", {"transactionId": "m2",
    "partitionId": m["partitionId"], "status": "completed", "leaseId": m["leaseId"]})
eq(200, st, "ack on B"); eq(True, res[0]["success"], "acked")
st, js, _ = a.call("GET", "/api/v1/pop/queue/hq?wait=false")
eq(204, st, "A sees the ack: nothing left")
EOF
'

test_expect_success 'the ack is the same cursor through both mounts' '
	test_is 0 "$(stat_of "$A/queues/hq/stats" depth)" "depth through A" &&
	test_is 0 "$(stat_of "$B/queues/hq/stats" depth)" "depth through B"
'

test_expect_success 'dedup across the daemons: the push repeated on B is a duplicate' '
	python3 <<\EOF
from http_base import *
QA, QB, B = os.environ["QA"], os.environ["QB"], os.environ["B"]
a, b = Client(addr=QA), Client(addr=QB)
st, ja, _ = a.call("POST", "/api/v1/push", {"items": [
    {"queue": "dq", "payload": 1, "transactionId": "d1"}]})
st, jb, _ = b.call("POST", "/api/v1/push", {"items": [
    {"queue": "dq", "payload": 1, "transactionId": "d1"}]})
eq("queued", ja[0]["status"], "A stores it")
eq("duplicate", jb[0]["status"], "B finds it")
eq(ja[0]["message_id"], jb[0]["message_id"], "with the stored id")
EOF
'

test_expect_success 'a long poll parked on B is woken by a push over HTTP on A' '
	python3 <<\EOF
import threading
from http_base import *
QA, QB, B = os.environ["QA"], os.environ["QB"], os.environ["B"]
out = {}
def waiter():
    out["r"] = Client(addr=QB).call("GET",
        "/api/v1/pop/queue/wq?wait=true&timeout=20000")
t = threading.Thread(target=waiter); t.start()
deadline = time.time() + 10
while stat_of(B + "/sys/stats", "waiting_readers") != "1" and time.time() < deadline:
    time.sleep(0.05)
eq("1", stat_of(B + "/sys/stats", "waiting_readers"), "the poll waits on B")
st, js, _ = Client(addr=QA).call("POST", "/api/v1/push", {"items": [
    {"queue": "wq", "payload": {"from": "A"}, "transactionId": "w1"}]})
eq(201, st, "push on A")
t.join(15)
check(not t.is_alive(), "the poll on B was answered")
eq(200, out["r"][0], "status")
eq({"from": "A"}, out["r"][1]["messages"][0]["data"], "the message pushed on A")
EOF
'

test_expect_success 'a transaction over HTTP on A is seen on B, a rollback is not' '
	python3 <<\EOF
from http_base import *
QA, QB, B = os.environ["QA"], os.environ["QB"], os.environ["B"]
a, b = Client(addr=QA), Client(addr=QB)
a.call("POST", "/api/v1/push", {"items": [{"queue": "tq", "payload": 1, "transactionId": "x1"}]})
st, js, _ = a.call("GET", "/api/v1/pop/queue/tq?wait=false")
lease, pid = js["leaseId"], js["partitionId"]
st, js, _ = a.call("POST", "/api/v1/transaction", {"operations": [
    {"type": "ack", "transactionId": "x1", "partitionId": pid, "status": "completed"},
    {"type": "push", "items": [{"queue": "tq2", "payload": {"n": 1}}]}],
    "requiredLeases": ["not-the-lease"]})
eq(False, js["success"], "a bad lease rolls back")
eq(204, b.call("GET", "/api/v1/pop/queue/tq2?wait=false")[0], "B sees no push")
st, js, _ = a.call("POST", "/api/v1/transaction", {"operations": [
    {"type": "ack", "transactionId": "x1", "partitionId": pid, "status": "completed"},
    {"type": "push", "items": [{"queue": "tq2", "payload": {"n": 2}}]}],
    "requiredLeases": [lease]})
eq(True, js["success"], "committed on A")
st, js, _ = b.call("GET", "/api/v1/pop/queue/tq2?wait=false")
eq(200, st, "B pops the transaction push")
eq({"n": 2}, js["messages"][0]["data"], "its payload")
st, js, _ = b.call("GET", "/api/v1/pop/queue/tq?wait=false")
eq(204, st, "and sees the transaction ack")
EOF
'

test_expect_success 'a lease taken on A is refused on B; its id acks through B' '
	python3 <<\EOF
from http_base import *
QA, QB, B = os.environ["QA"], os.environ["QB"], os.environ["B"]
a, b = Client(addr=QA), Client(addr=QB)
a.call("POST", "/api/v1/configure", {"queue": "lq", "options": {"leaseTime": 60}})
a.call("POST", "/api/v1/push", {"items": [
    {"queue": "lq", "payload": 1, "transactionId": "l1"},
    {"queue": "lq", "payload": 2, "transactionId": "l2"}]})
st, ja, _ = a.call("GET", "/api/v1/pop/queue/lq?wait=false")
eq(200, st, "A takes a lease"); eq("l1", ja["messages"][0]["transactionId"], "on l1")
lease, pid = ja["leaseId"], ja["partitionId"]
eq(204, b.call("GET", "/api/v1/pop/queue/lq?wait=false")[0],
   "B finds the partition leased")
eq(204, b.call("GET", "/api/v1/pop/queue/lq/partition/Default?wait=false")[0],
   "the long form too")
st, res, _ = b.call("POST", "/api/v1/ack", {"transactionId": "l1",
    "partitionId": pid, "status": "completed", "leaseId": "a" + lease[1:]
    if lease[0] != "a" else "b" + lease[1:]})
eq(False, res[0]["success"], "B refuses another lease id")
st, js, _ = b.call("POST", "/api/v1/lease/%s/extend" % lease, {})
eq(200, st, "B extends the lease taken on A"); eq(True, js["success"], "extended")
st, res, _ = b.call("POST", "/api/v1/ack", {"transactionId": "l1",
    "partitionId": pid, "status": "completed", "leaseId": lease})
eq(200, st, "ack on B"); eq(True, res[0]["success"], "the lease of A acks through B")
st, res, _ = a.call("POST", "/api/v1/ack", {"transactionId": "l1",
    "partitionId": pid, "status": "completed", "leaseId": lease})
eq(False, res[0]["success"], "the acked lease is gone for A too")
st, js, _ = b.call("GET", "/api/v1/pop/queue/lq?wait=false")
eq(200, st, "B pops now"); eq("l2", js["messages"][0]["transactionId"], "the next one")
EOF
'

test_expect_success 'a configure on A is what B answers and applies' '
	python3 <<\EOF
from http_base import *
QA, QB, B = os.environ["QA"], os.environ["QB"], os.environ["B"]
a, b = Client(addr=QA), Client(addr=QB)
st, ja, _ = a.call("POST", "/api/v1/configure", {"queue": "cq",
    "options": {"leaseTime": 77, "retryLimit": 2}})
eq(200, st, "configure on A")
st, jb, _ = b.call("GET", "/api/v1/resources/queues/cq")
eq(200, st, "B knows the queue")
EOF
	grep -q "^lease_time = 77" "$B/queues/cq/config" &&
	grep -q "^retry_limit = 2" "$B/queues/cq/config"
'

test_expect_success 'a trace recorded on A is read on B; partitions=N over both' '
	python3 <<\EOF
from http_base import *
QA, QB, B = os.environ["QA"], os.environ["QB"], os.environ["B"]
a, b = Client(addr=QA), Client(addr=QB)
st, js, _ = a.call("POST", "/api/v1/push", {"items": [
    {"queue": "mq", "partition": p, "payload": p, "transactionId": "t" + p} for p in "xyz"]})
pid = js[0]["partition_id"]
st, js, _ = a.call("POST", "/api/v1/traces", {"transactionId": "tx", "partitionId": pid,
    "traceNames": ["n1"], "data": {"on": "A"}})
eq(201, st, "trace on A")
st, js, _ = b.call("GET", "/api/v1/traces/%s/tx" % pid)
eq([{"on": "A"}], [t["data"] for t in js["traces"]], "read on B")
st, ja, _ = a.call("GET", "/api/v1/pop/queue/mq?wait=false&batch=10&partitions=2")
eq(2, ja["partitionsClaimed"], "A claims two partitions")
st, jb, _ = b.call("GET", "/api/v1/pop/queue/mq?wait=false&batch=10&partitions=3")
eq(1, jb["partitionsClaimed"], "B gets the third only")
got = sorted(m["transactionId"] for m in ja["messages"] + jb["messages"])
eq(["tx", "ty", "tz"], got, "each message once")
EOF
'

test_expect_success 'a third daemon serves HTTP alone (no mount) on the schema' '
	QC=127.0.0.1:$(free_port) &&
	{ "$QUEENFS" -f --db "$DB" --listen "$QC" >>"$TRASH/c.log" 2>&1 </dev/null & } &&
	CPID=$! && track_pid $CPID &&
	wait_until 10 "curl -s -o /dev/null http://$QC/health" &&
	export QC &&
	python3 <<\EOF &&
from http_base import *
c = Client(addr=os.environ["QC"])
st, js, _ = c.call("POST", "/api/v1/push", {"items": [
    {"queue": "fq", "payload": "from C", "transactionId": "c1"}]})
eq(201, st, "push on C")
EOF
	LINE=$(pop "$A/queues/fq") &&
	test_is c1 "${LINE##*/}" "the file pop on A gets what C pushed" &&
	printf "\"from C\"" >expect &&
	test_cmp expect "$A/queues/fq/$LINE" &&
	kill -TERM $CPID && wait $CPID
'

test_done
