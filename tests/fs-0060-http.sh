#!/bin/sh
# fs-0060-http: Queen's HTTP API (docs/http.md, QUEEN-HTTP.md) served by
# the mounted daemon with --listen: every REQUIRED route and its shapes,
# 204 on an empty pop, long polls woken by a push through a file and by a
# lease release, a client gone mid-poll freeing its waiter, keep-alive
# with pipelining, 16 concurrent clients, round trips between files and
# HTTP, seed 000's ack honesty and seed 002's rollbacks over HTTP, and
# malformed HTTP answered 4xx with nothing written; the USEFUL status
# routes and the message browser (a message read back byte for byte,
# its DELETE refused and the message kept); pops over several
# partitions; traces recorded and read back.
. "$(dirname "$0")/lib.sh"
test_have_prereq PYTHON || skip_all "no python3"
command -v curl >/dev/null 2>&1 || skip_all "no curl"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
QHTTP=127.0.0.1:$PORT
URL=http://$QHTTP
mount_queenfs --listen "$QHTTP"
export MNT QHTTP
cp "$TEST_DIRECTORY/http_base.py" "$TRASH/" || exit 1

test_expect_success 'the startup log names the address and says it needs no token' '
	grep "http: serving Queen.s API on http://$QHTTP (loopback, no token)" "$DAEMON_LOG"
'

test_expect_success 'GET /health: 200 healthy, JSON' '
	curl -s -o body -w "%{http_code} %{content_type}\n" $URL/health >actual &&
	echo "200 application/json" >expect && test_cmp expect actual &&
	grep "\"status\":\"healthy\"" body
'

test_expect_success 'configure echoes all 15 options with their JSON types and defaults' '
	python3 <<\EOF &&
from http_base import *
st, js, _ = call("POST", "/api/v1/configure", {"queue": "cq", "namespace": None,
    "options": {"leaseTime": 60, "retryLimit": 1, "dlqAfterMaxRetries": True,
                "unknownKey": 7}})
eq(200, st, "status")
eq(True, js["configured"], "configured")
eq("cq", js["queue"], "queue")
o = js["options"]
eq(15, len(o), "option count")
eq(60, o["leaseTime"], "leaseTime"); check(type(o["leaseTime"]) is int, "int")
eq(1, o["retryLimit"], "retryLimit")
eq(True, o["dlqAfterMaxRetries"], "dlqAfterMaxRetries")
eq(False, o["deadLetterQueue"], "deadLetterQueue default")
eq(1000, o["retryDelay"], "retryDelay default")
eq(3600, o["ttl"], "ttl default")
check(js["partitionId"], "the Default partition id")
st, js2, _ = call("POST", "/api/v1/configure", {"queue": "cq"})
eq(js["partitionId"], js2["partitionId"], "a reconfigure keeps the partition")
eq(300, js2["options"]["leaseTime"], "full replace: leaseTime back to its default")
call("POST", "/api/v1/configure", {"queue": "cq", "options": {"leaseTime": 60, "retryLimit": 1}})
EOF
	ls "$MNT/queues/cq/partitions" | grep -qx default &&
	grep -q "^lease_time = 60" "$MNT/queues/cq/config" &&
	grep -q "^retry_limit = 1" "$MNT/queues/cq/config"
'

test_expect_success 'configure refuses a bad body or name with 400 {error}, nothing made' '
	python3 <<\EOF &&
from http_base import *
for body in ({"options": {}}, {"queue": 5}, {"queue": "a/b"}, {"queue": ".."},
             {"queue": "ok", "options": {"leaseTime": "300"}}):
    st, js, _ = call("POST", "/api/v1/configure", body)
    eq(400, st, "status for %r" % (body,))
    check(isinstance(js.get("error"), str), "an error text")
EOF
	test_path_is_missing "$MNT/queues/ok"
'

test_expect_success 'push: one result per item in order, dedup with the stored id, {} and null round-trip' '
	python3 <<\EOF
from http_base import *
st, js, _ = call("POST", "/api/v1/push", {"items": [
    {"queue": "pq", "partition": "Default", "payload": {}, "transactionId": "t1", "producerSub": "x"},
    {"queue": "pq", "payload": None, "transactionId": "t2"},
    {"queue": "pq", "payload": {"n": 3}, "transactionId": "t1"},
    {"queue": "pq", "partition": "p2", "payload": 1, "transactionId": "t1"}]})
eq(201, st, "status")
eq(4, len(js), "results")
eq([0, 1, 2, 3], [r["index"] for r in js], "indexes")
eq(["queued", "queued", "duplicate", "queued"], [r["status"] for r in js], "statuses")
eq(js[0]["message_id"], js[2]["message_id"], "a duplicate names the stored message")
check(js[0]["partition_id"] != js[3]["partition_id"], "partition ids differ")
for r in js:
    eq("pq", r["queueName"], "queueName")
    check(isinstance(r["transaction_id"], str), "transaction_id")
st, js, _ = call("POST", "/api/v1/push", {"items": []})
eq(201, st, "empty push status"); eq([], js, "empty push answer")
st, js = pop("pq", "Default", batch=10)
eq(200, st, "pop")
eq([{}, None], [m["data"] for m in js["messages"]], "payloads round-trip")
EOF
'

test_expect_success 'push refuses a bad item with 400 and stores none of the call' '
	python3 <<\EOF &&
from http_base import *
for items in ([{"queue": "bq", "payload": 1}, {"queue": 7, "payload": 2}],
              [{"queue": "bq", "payload": 1}, {"queue": "bq", "partition": "a/b", "payload": 2}],
              [{"queue": "bq", "payload": 1, "transactionId": 5}], "notalist"):
    st, js, _ = call("POST", "/api/v1/push", {"items": items})
    eq(400, st, "status for %r" % (items,))
    check(js.get("error"), "error")
EOF
	test_path_is_missing "$MNT/queues/bq" &&
	grep "http: POST /api/v1/push: 400 " "$DAEMON_LOG" >refusals &&
	test_line_count = 4 refusals
'

test_expect_success 'pop: 204 with no body when empty, unknown queue too; 200 shape otherwise' '
	curl -s -o body -w "%{http_code}\n" "$URL/api/v1/pop/queue/eq?wait=false" >actual &&
	echo 204 >expect && test_cmp expect actual && test ! -s body &&
	curl -s -o body -w "%{http_code}\n" "$URL/api/v1/pop/queue/nosuch/partition/p?wait=false" >actual &&
	test_cmp expect actual &&
	python3 <<\EOF
from http_base import *
push([{"queue": "sq", "partition": "pa", "payload": {"k": "v"}, "transactionId": "s1",
       "traceId": "0b7d2a5e-0000-4000-8000-000000000000"}])
st, js = pop("sq", "pa", batch=5, consumerGroup="g1")
eq(200, st, "status")
m = js["messages"][0]
for k in ("id", "transactionId", "partitionId", "leaseId", "data", "traceId",
          "createdAt", "partition", "consumerGroup", "producerSub"):
    check(k in m, "message field " + k)
eq("s1", m["transactionId"], "txid"); eq({"k": "v"}, m["data"], "data")
eq("pa", m["partition"], "partition"); eq("g1", m["consumerGroup"], "group")
check(m["createdAt"].endswith("Z") and "T" in m["createdAt"], "ISO createdAt")
check(m["leaseId"], "a lease id")
EOF
'

test_expect_success 'ack honesty over HTTP: a lower failed clamps a higher completed; an id outside the window is reported' '
	python3 <<\EOF
from http_base import *
push([{"queue": "hq", "payload": i, "transactionId": "h%d" % i} for i in (1, 2, 3)])
st, js = pop("hq", batch=3)
lease, pid = js["leaseId"], js["partitionId"]
eq(3, len(js["messages"]), "three popped")
st, res, _ = call("POST", "/api/v1/ack/batch", {"consumerGroup": None, "acknowledgments": [
    {"transactionId": "h1", "partitionId": pid, "status": "completed", "leaseId": lease},
    {"transactionId": "h3", "partitionId": pid, "status": "completed", "leaseId": lease},
    {"transactionId": "h2", "partitionId": pid, "status": "failed", "error": "boom", "leaseId": lease}]})
eq(200, st, "status")
eq(3, len(res), "one result per item")
eq(True, res[0]["success"], "h1")
eq(True, res[2]["success"], "the failure is applied")
eq(True, res[2]["leaseReleased"], "and releases the lease")
st, js = pop("hq", batch=3)
eq(["h2", "h3"], [m["transactionId"] for m in js["messages"]],
   "h3 redelivers: the lower failed clamped the cursor")
st, res, _ = call("POST", "/api/v1/ack", {"transactionId": "never", "partitionId": pid,
    "status": "completed", "consumerGroup": None})
eq(200, st, "status")
eq(False, res[0]["success"], "not resolved")
check("unresolvable" in res[0]["error"], "unresolvable: %r" % res[0]["error"])
st, res, _ = call("POST", "/api/v1/ack", {"transactionId": "h1", "partitionId": pid, "status": "completed"})
eq(True, res[0]["noop"], "a completed at or below the cursor is a noop")
st, js, _ = call("POST", "/api/v1/ack", {"partitionId": pid})
eq(400, st, "no transactionId: 400")
EOF
'

test_expect_success 'lease extend: 200 object for a live lease, 409 for a released or unknown one' '
	python3 <<\EOF
from http_base import *
push([{"queue": "lq", "payload": 1, "transactionId": "l1"}])
st, js = pop("lq")
lease, pid = js["leaseId"], js["partitionId"]
st, js, _ = call("POST", "/api/v1/lease/%s/extend" % lease, raw=b"")
eq(200, st, "extend"); eq(True, js["success"], "success"); check(js["newExpiresAt"], "newExpiresAt")
call("POST", "/api/v1/ack", {"transactionId": "l1", "partitionId": pid, "status": "completed", "leaseId": lease})
st, js, _ = call("POST", "/api/v1/lease/%s/extend" % lease, {})
eq(409, st, "a released lease"); eq(False, js["success"], "success false")
st, js, _ = call("POST", "/api/v1/lease/nosuchlease/extend", {})
check(st in (404, 409), "unknown lease: %r" % st)
EOF
'

test_expect_success 'transaction: commit shape; a rollback writes nothing (rejected_ack, bad lease)' '
	python3 <<\EOF
from http_base import *
push([{"queue": "tq", "payload": 1, "transactionId": "x1"}])
st, js = pop("tq")
lease, pid = js["leaseId"], js["partitionId"]
st, js, _ = call("POST", "/api/v1/transaction", {"operations": [
    {"type": "ack", "transactionId": "x1", "partitionId": pid, "status": "completed"},
    {"type": "push", "items": [{"queue": "tq2", "payload": {"n": 1}}]}],
    "requiredLeases": ["not-the-lease"]})
eq(200, st, "status"); eq(False, js["success"], "rolled back")
eq("rejected_ack", js["reason"], "reason"); check(js["error"], "an error sentence")
eq([], js["results"], "no results")
st, js2 = pop("tq2")
eq(204, st, "the push of the rolled-back call is not there")
st, js, _ = call("POST", "/api/v1/transaction", {"operations": [
    {"type": "ack", "transactionId": "x1", "partitionId": pid, "status": "completed"},
    {"type": "push", "items": [{"queue": "tq2", "payload": {"n": 2}}]}],
    "requiredLeases": [lease]})
eq(200, st, "status"); eq(True, js["success"], "committed")
p = [r for r in js["results"] if r["type"] == "push"][0]
eq("tq2", p["queueName"], "queueName"); check(p["messageId"], "messageId")
st, js = pop("tq2")
eq({"n": 2}, js["messages"][0]["data"], "the committed push")
st, js, _ = call("POST", "/api/v1/transaction", {"operations": []})
eq(400, st, "empty operations: 400")
st, js, _ = call("POST", "/api/v1/transaction", {"operations": [{"type": "bogus"}]})
eq(400, st, "unknown op type: 400")
EOF
'

test_expect_success 'DLQ listing, group delete, seek, subscription, maintenance answer their shapes' '
	python3 <<\EOF
from http_base import *
call("POST", "/api/v1/configure", {"queue": "dq", "options": {"retryLimit": 0, "dlqAfterMaxRetries": True}})
push([{"queue": "dq", "payload": {"bad": 1}, "transactionId": "d1"}])
st, js = pop("dq")
call("POST", "/api/v1/ack", {"transactionId": "d1", "partitionId": js["partitionId"],
     "status": "failed", "error": "no good", "leaseId": js["leaseId"]})
st, js, _ = call("GET", "/api/v1/dlq?queue=dq&limit=10&offset=0")
eq(200, st, "dlq"); eq(1, js["total"], "total")
m = js["messages"][0]
eq("d1", m["transactionId"], "txid"); eq({"bad": 1}, m["data"], "data")
eq("no good", m["errorMessage"], "errorMessage")
st, js, _ = call("GET", "/api/v1/dlq?queue=nosuch")
eq(200, st, "empty dlq"); eq(0, js["total"], "total 0")
push([{"queue": "gq", "payload": i, "transactionId": "g%d" % i} for i in range(3)])
st, js, _ = call("POST", "/api/v1/consumer-groups/cg/queues/gq/seek", {"toEnd": True})
eq(200, st, "seek"); eq(True, js["seekToEnd"], "seekToEnd")
st, js = pop("gq", consumerGroup="cg")
eq(204, st, "after a seek to the end nothing is left for cg")
st, js, _ = call("POST", "/api/v1/consumer-groups/cg/queues/gq/seek", raw=b"")
eq(400, st, "seek without options")
st, js, _ = call("DELETE", "/api/v1/consumer-groups/cg?deleteMetadata=true")
eq(200, st, "group delete"); eq(1, js["deletedPartitions"], "deleted")
st, js = pop("gq", consumerGroup="cg", batch=5)
eq(3, len(js["messages"]), "a deleted group starts again from the first message")
st, js, _ = call("DELETE", "/api/v1/consumer-groups/none/queues/gq?deleteMetadata=false")
eq(200, st, "unknown group: 200"); eq(0, js["deletedPartitions"], "0")
st, js, _ = call("POST", "/api/v1/consumer-groups/cg/subscription", {"subscriptionTimestamp": "2026-01-01T00:00:00.000Z"})
eq(200, st, "subscription"); eq(True, js["success"], "success")
st, js, _ = call("POST", "/api/v1/consumer-groups/cg/subscription", {})
eq(400, st, "subscription without a time")
st, js, _ = call("GET", "/api/v1/system/maintenance")
eq(200, st, "maintenance"); eq(0, js["bufferedMessages"], "buffered")
st, js, _ = call("POST", "/api/v1/system/maintenance", {"enabled": True})
eq(True, js["maintenanceMode"], "on")
eq("queued", push([{"queue": "mq", "payload": 1}])[0]["status"], "pushes go on")
call("POST", "/api/v1/system/maintenance", {"enabled": False})
st, js, _ = call("POST", "/api/v1/system/maintenance", {"enabled": "yes"})
eq(400, st, "not a boolean")
EOF
'

test_expect_success 'queue delete: idempotent; a queue with messages, a group, a DLQ entry goes whole, dedup state too' '
	python3 <<\EOF &&
from http_base import *
st, js, _ = call("DELETE", "/api/v1/resources/queues/never")
eq(200, st, "status"); eq({"deleted": True, "queue": "never", "existed": False}, js, "answer")
call("POST", "/api/v1/configure", {"queue": "delq", "options": {"retryLimit": 0, "dlqAfterMaxRetries": True}})
push([{"queue": "delq", "payload": i, "transactionId": "dd%d" % i} for i in range(3)])
st, js = pop("delq", consumerGroup="dg")
call("POST", "/api/v1/ack", {"transactionId": "dd0", "partitionId": js["partitionId"],
     "status": "dlq", "leaseId": js["leaseId"], "consumerGroup": "dg"})
st, js, _ = call("DELETE", "/api/v1/resources/queues/delq")
eq(200, st, "status"); eq(True, js["existed"], "existed"); eq(True, js["deleted"], "deleted")
eq(204, pop("delq")[0], "no message left")
st, js, _ = call("GET", "/api/v1/dlq?queue=delq&consumerGroup=dg")
eq(0, js["total"], "no DLQ entry left")
st, js, _ = call("DELETE", "/api/v1/resources/queues/delq")
eq(False, js["existed"], "a second delete: existed false")
eq("queued", push([{"queue": "delq", "payload": 9, "transactionId": "dd1"}])[0]["status"],
   "an old transactionId is queued again after delete and re-create")
EOF
	ls "$MNT/queues/delq/groups" >actual && test_line_count = 0 actual
'

test_expect_success 'pop partitions=N: up to N partitions, batch a global cap, each acked under its lease' '
	python3 <<\EOF
from http_base import *
items = []
for p in ("a", "b", "c"):
    for k in range(3):
        items.append({"queue": "mp", "partition": p, "payload": {"p": p, "k": k},
                      "transactionId": "%s%d" % (p, k)})
push(items)
st, js = pop("mp", batch=7, partitions=2)
eq(200, st, "status")
eq(2, js["partitionsClaimed"], "two partitions claimed")
ms = js["messages"]
eq(6, len(ms), "three of each: the batch cap is not reached")
parts = [m["partition"] for m in ms]
check(parts[:3] == [parts[0]] * 3 and parts[3:] == [parts[3]] * 3 and parts[0] != parts[3],
      "each partition contiguous: %r" % parts)
eq(["%s%d" % (parts[0], k) for k in range(3)] + ["%s%d" % (parts[3], k) for k in range(3)],
   [m["transactionId"] for m in ms], "each in partition order")
leases = {m["partition"]: m["leaseId"] for m in ms}
eq(2, len(set(leases.values())), "one lease per partition")
eq(js["leaseId"], ms[0]["leaseId"], "the top-level lease is the first partition")
st, js2 = pop("mp", batch=7, partitions=3)
eq(200, st, "the third partition is still free")
eq(1, js2["partitionsClaimed"], "only it")
eq(3, len(js2["messages"]), "its three")
check(js2["messages"][0]["partition"] not in leases, "not a leased one")
eq(204, pop("mp", partitions=3)[0], "all three leased now")
st, res, _ = call("POST", "/api/v1/ack/batch", {"acknowledgments": [
    {"transactionId": m["transactionId"], "partitionId": m["partitionId"],
     "status": "completed", "leaseId": m["leaseId"]} for m in ms]})
eq(200, st, "batch ack")
eq([True] * 6, [r["success"] for r in res], "every message acked under its own lease")
eq(204, pop("mp", batch=2, partitions=3)[0], "two partitions acked empty, the third leased")
m = js2["messages"][2]
call("POST", "/api/v1/ack", {"transactionId": m["transactionId"],
     "partitionId": m["partitionId"], "status": "completed", "leaseId": m["leaseId"]})
push([{"queue": "mp", "partition": p, "payload": 1, "transactionId": p + "9"} for p in "abc"])
st, js4 = pop("mp", batch=2, partitions=3)
eq(2, len(js4["messages"]), "batch=2 caps the total over the partitions")
eq(2, js4["partitionsClaimed"], "one message from each of two partitions")
st, js5 = pop("mp", partition="a", batch=5, partitions=3)
check(st == 204 or js5["partitionsClaimed"] == 1, "the long form claims one partition at most")
EOF
'

test_expect_success 'traces: recorded on a message, read by message, by name and as names' '
	python3 <<\EOF &&
from http_base import *
r = push([{"queue": "trq", "payload": 1, "transactionId": "tr1"},
          {"queue": "trq", "payload": 2, "transactionId": "tr1:x"}])
pid = r[0]["partition_id"]
ids = []
for body in ({"transactionId": "tr1", "partitionId": pid, "consumerGroup": "g1",
              "traceNames": ["order-7", "tenant-a"], "eventType": "step", "data": {"n": 1}},
             {"transactionId": "tr1", "partitionId": pid, "traceNames": ["order-7"],
              "data": {"n": 2}},
             {"transactionId": "tr1:x", "partitionId": pid, "traceNames": None,
              "data": {"n": 3}, "unknownField": 1}):
    st, js, _ = call("POST", "/api/v1/traces", body)
    eq(201, st, "recorded"); eq(True, js["success"], "success"); ids.append(js["traceId"])
st, js, _ = call("GET", "/api/v1/traces/%s/tr1" % pid)
eq(200, st, "by message")
t = js["traces"]
eq(2, len(t), "the two of tr1, not tr1:x")
eq(ids[:2], [x["id"] for x in t], "oldest first")
eq("step", t[0]["event_type"], "event_type"); eq({"n": 1}, t[0]["data"], "data")
eq("g1", t[0]["consumer_group"], "consumer_group")
eq("__QUEUE_MODE__", t[1]["consumer_group"], "queue mode by default")
eq("info", t[1]["event_type"], "info by default")
eq(["order-7", "tenant-a"], t[0]["trace_names"], "trace_names")
check(t[0]["created_at"].endswith("Z"), "created_at ISO-8601")
st, js, _ = call("GET", "/api/v1/traces/%s/tr1:x" % pid)
eq([ids[2]], [x["id"] for x in js["traces"]], "tr1:x has its own")
st, js, _ = call("GET", "/api/v1/traces/by-name/order-7?limit=1")
eq(200, st, "by name"); eq(2, js["total"], "two carry order-7")
eq([ids[1]], [x["id"] for x in js["traces"]], "newest first, limit 1")
eq({"limit": 1, "offset": 0, "total": 2}, js["pagination"], "pagination")
st, js, _ = call("GET", "/api/v1/traces/by-name/order-7?limit=5&offset=1")
eq([ids[0]], [x["id"] for x in js["traces"]], "offset 1")
st, js, _ = call("GET", "/api/v1/traces/names")
eq(200, st, "names"); eq(2, js["total"], "two names")
n = {x["trace_name"]: x for x in js["trace_names"]}
eq(["order-7", "tenant-a"], [x["trace_name"] for x in js["trace_names"]], "by name")
eq(2, n["order-7"]["trace_count"], "order-7 traces"); eq(1, n["order-7"]["message_count"], "on one message")
eq(1, n["tenant-a"]["trace_count"], "tenant-a")
st, js, _ = call("GET", "/api/v1/traces/%s/nosuch" % pid)
eq(200, st, "an unknown message"); eq([], js["traces"], "has none")
for bad in ({"partitionId": pid, "data": {}}, {"transactionId": "tr1", "data": {}},
            {"transactionId": "tr1", "partitionId": pid},
            {"transactionId": "a/b", "partitionId": pid, "data": {}},
            {"transactionId": "tr1", "partitionId": pid, "data": {}, "traceNames": "x"},
            {"transactionId": 5, "partitionId": pid, "data": {}}):
    st, js, _ = call("POST", "/api/v1/traces", bad)
    eq(400, st, "refused: %r" % (bad,)); check(isinstance(js.get("error"), str), "an error text")
st, js, _ = call("GET", "/api/v1/traces/names")
eq(2, js["total"], "the refusals stored nothing")
EOF
	ls "$MNT/kv/queen.traces" >actual &&
	test_line_count = 3 actual
'

test_expect_success 'long poll: woken by a push through a file' '
	mkdir "$MNT/queues/wq" &&
	{ curl -s -o lp.out -w "%{http_code}\n" "$URL/api/v1/pop/queue/wq?wait=true&timeout=20000" >lp.code & } &&
	pid=$! && track_pid $pid &&
	wait_until 10 "test \"\$(stat_of $MNT/sys/stats waiting_readers)\" = 1" &&
	printf "{\"from\":\"file\"}" >"$MNT/queues/wq/f1" &&
	wait_until 10 "test -s lp.code" &&
	echo 200 >expect && test_cmp expect lp.code &&
	grep "\"data\":{\"from\":\"file\"}" lp.out
'

test_expect_success 'long poll: woken by a lease release (a retry ack)' '
	python3 <<\EOF
import threading
from http_base import *
push([{"queue": "rq", "payload": 1, "transactionId": "r1"}])
st, js = pop("rq")
out = {}
def waiter():
    c = Client()
    out["r"] = c.call("GET", "/api/v1/pop/queue/rq?wait=true&timeout=20000")
t = threading.Thread(target=waiter); t.start()
deadline = time.time() + 10
while stat_of(MNT + "/sys/stats", "waiting_readers") != "1" and time.time() < deadline:
    time.sleep(0.05)
eq("1", stat_of(MNT + "/sys/stats", "waiting_readers"), "the poll waits")
call("POST", "/api/v1/ack", {"transactionId": "r1", "partitionId": js["partitionId"],
     "status": "retry", "leaseId": js["leaseId"]})
t.join(15)
check(not t.is_alive(), "the waiter was answered")
eq(200, out["r"][0], "status")
eq("r1", out["r"][1]["messages"][0]["transactionId"], "the released message")
EOF
'

test_expect_success 'long poll: 204 after its timeout' '
	curl -s -o body -w "%{http_code}\n" "$URL/api/v1/pop/queue/idleq?wait=true&timeout=300" >actual &&
	echo 204 >expect && test_cmp expect actual
'

test_expect_success 'a client that disconnects mid-poll frees its waiter and claims nothing' '
	python3 <<\EOF
import socket
from http_base import *
host, port = QHTTP.rsplit(":", 1)
s = socket.create_connection((host, int(port)))
s.sendall(b"GET /api/v1/pop/queue/gone?wait=true&timeout=60000 HTTP/1.1\r\nHost: x\r\n\r\n")
deadline = time.time() + 10
while stat_of(MNT + "/sys/stats", "waiting_readers") != "1" and time.time() < deadline:
    time.sleep(0.05)
eq("1", stat_of(MNT + "/sys/stats", "waiting_readers"), "parked")
s.close()
deadline = time.time() + 10
while stat_of(MNT + "/sys/stats", "waiting_readers") != "0" and time.time() < deadline:
    time.sleep(0.05)
eq("0", stat_of(MNT + "/sys/stats", "waiting_readers"), "the waiter is gone")
push([{"queue": "gone", "payload": 1, "transactionId": "z1"}])
st, js = pop("gone")
eq(200, st, "the message was not claimed by the gone client")
EOF
'

test_expect_success 'keep-alive: pipelined requests on one socket, answers in order' '
	python3 <<\EOF
from http_base import *
req = b""
for i in range(3):
    body = ("{\"items\":[{\"queue\":\"kq\",\"payload\":%d,\"transactionId\":\"k%d\"}]}" % (i, i)).encode()
    req += b"POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
req += b"GET /api/v1/pop/queue/kq?batch=10&wait=false HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
out = raw_exchange(req, wait=5)
eq(4, out.count(b"HTTP/1.1 "), "four answers: %r" % out[:300])
eq(3, out.count(b"HTTP/1.1 201"), "three pushes")
pos = [out.find(b"\"transaction_id\":\"k%d\"" % i) for i in range(3)]
check(0 < pos[0] < pos[1] < pos[2], "in order: %r" % pos)
check(b"\"transactionId\":\"k2\"" in out.split(b"HTTP/1.1 200")[1], "the pop sees all three")
EOF
'

test_expect_success '16 concurrent keep-alive clients push 50 each; every message pops once' '
	python3 <<\EOF
import threading
from http_base import *
errs = []
def worker(w):
    c = Client()
    try:
        for i in range(50):
            st, js, _ = c.call("POST", "/api/v1/push", {"items": [{"queue": "cc", "payload": i,
                "transactionId": "w%d-%d" % (w, i)}]})
            if st != 201 or js[0]["status"] != "queued":
                errs.append((st, js))
    except Exception as e:
        errs.append(e)
ts = [threading.Thread(target=worker, args=(w,)) for w in range(16)]
for t in ts: t.start()
for t in ts: t.join()
eq([], errs, "errors")
seen = set()
while True:
    st, js = pop("cc", batch=1000)
    if st == 204:
        break
    for m in js["messages"]:
        seen.add(m["transactionId"])
    call("POST", "/api/v1/ack/batch", {"acknowledgments": [{"transactionId": m["transactionId"],
        "partitionId": m["partitionId"], "status": "completed", "leaseId": m["leaseId"]} for m in js["messages"]]})
eq(800, len(seen), "distinct messages")
EOF
'

test_expect_success 'round trip: a file push is popped and acked over HTTP' '
	mkdir "$MNT/queues/rt" &&
	printf "plain text" >"$MNT/queues/rt/file1" &&
	python3 <<\EOF &&
from http_base import *
st, js = pop("rt")
eq(200, st, "pop")
m = js["messages"][0]
eq("file1", m["transactionId"], "the file name is the transactionId")
eq("plain text", m["data"], "the bytes as text")
st, res, _ = call("POST", "/api/v1/ack", {"transactionId": "file1", "partitionId": m["partitionId"],
    "status": "completed", "leaseId": m["leaseId"]})
eq(True, res[0]["success"], "acked")
EOF
	test_is 0 "$(stat_of "$MNT/queues/rt/stats" depth)" depth
'

test_expect_success 'round trip: an HTTP push is read through next and acked by rename' '
	mkdir "$MNT/queues/rt2" && echo "wait = 1" >"$MNT/queues/rt2/config" &&
	python3 -c "from http_base import *; push([{\"queue\": \"rt2\", \"payload\": {\"a\": 1}, \"transactionId\": \"hp1\"}])" &&
	LINE=$(timeout 15 cat "$MNT/queues/rt2/next") &&
	test_is hp1 "${LINE##*/}" txid &&
	cat "$MNT/queues/rt2/$LINE" >actual &&
	printf "{\"a\":1}" >expect && test_cmp expect actual &&
	mv "$MNT/queues/rt2/$LINE" "$MNT/queues/rt2/ack/" &&
	test_is 0 "$(stat_of "$MNT/queues/rt2/stats" depth)" depth
'

test_expect_success 'malformed HTTP: a bad request line or version is 4xx/505' '
	python3 <<\EOF
from http_base import *
out = raw_exchange(b"THIS IS NOT HTTP\r\n\r\n")
check(out.startswith(b"HTTP/1.1 400") or out == b"", "answer: %r" % out[:80])
out = raw_exchange(b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n")
check(out[:12] in (b"HTTP/1.1 505", b"HTTP/1.1 400"), "bad version: %r" % out[:80])
eq(200, call("GET", "/health")[0], "still serving")
EOF
'

test_expect_success 'malformed HTTP: huge headers are refused 4xx and the daemon goes on' '
	python3 <<\EOF
from http_base import *
big = b"X-Big: " + b"a" * 200000 + b"\r\n"
out = raw_exchange(b"GET /health HTTP/1.1\r\nHost: x\r\n" + big + b"\r\n")
check(out[9:12] in (b"413", b"431", b"400"), "status: %r" % out[:40])
eq(200, call("GET", "/health")[0], "still serving")
EOF
'

test_expect_success 'malformed HTTP: a truncated body writes nothing' '
	python3 <<\EOF &&
import socket
from http_base import *
host, port = QHTTP.rsplit(":", 1)
s = socket.create_connection((host, int(port)))
body = b"{\"items\":[{\"queue\":\"trunc\",\"payload\":1}]}"
s.sendall(b"POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n" + body)
time.sleep(0.3)
s.close()
time.sleep(0.3)
st, js = pop("trunc")
eq(204, st, "nothing stored")
EOF
	test_path_is_missing "$MNT/queues/trunc"
'

test_expect_success 'malformed HTTP: a slowloris does not stall other clients' '
	python3 <<\EOF
import socket
from http_base import *
host, port = QHTTP.rsplit(":", 1)
slow = []
for i in range(20):
    s = socket.create_connection((host, int(port)))
    s.sendall(b"POST /api/v1/push HTTP/1.1\r\nHost: x\r\n")
    slow.append(s)
for i in range(5):
    for s in slow:
        s.sendall(b"X-Slow: 1\r\n")
    st = push([{"queue": "sl", "payload": i}])
    eq("queued", st[0]["status"], "others are served meanwhile")
for s in slow:
    s.close()
EOF
'

test_expect_success 'malformed HTTP: invalid JSON is 400 {error}, a 64 MiB + 1 body is 413; nothing written' '
	python3 <<\EOF &&
from http_base import *
st, js, _ = call("POST", "/api/v1/push", raw=b"{\"items\": [")
eq(400, st, "invalid JSON"); check(js["error"], "error")
st, js, _ = call("POST", "/api/v1/push", raw=b"[1,2]")
eq(400, st, "not an object")
c = Client(timeout=60)
head, tail = b"{\"items\":[{\"queue\":\"huge\",\"payload\":\"", b"\"}]}"
body = head + b"a" * (64 * 1024 * 1024 + 1 - len(head) - len(tail)) + tail
eq(64 * 1024 * 1024 + 1, len(body), "size")
st, js, _ = c.call("POST", "/api/v1/push", raw=body)
eq(413, st, "too large"); check(js["error"], "error")
EOF
	test_path_is_missing "$MNT/queues/huge" &&
	grep "body over 67108864 bytes refused" "$DAEMON_LOG"
'

test_expect_success 'unknown routes are 404 {error}; pop maintenance answers 204' '
	python3 <<\EOF
from http_base import *
for m, p in (("GET", "/api/v1/nope"), ("POST", "/api/v1/stream/x"), ("GET", "/other")):
    st, js, _ = call(m, p, {} if m == "POST" else None)
    eq(404, st, p); check(js["error"], "error")
call("POST", "/api/v1/system/maintenance/pop", {"enabled": True})
push([{"queue": "pm", "payload": 1}])
eq(204, pop("pm")[0], "pop maintenance")
call("POST", "/api/v1/system/maintenance/pop", {"enabled": False})
eq(200, pop("pm")[0], "pops again")
EOF
'

test_expect_success 'consumer groups: listing, one group by queue, lagging' '
	python3 <<\EOF
from http_base import *
push([{"queue": "lagq", "payload": i, "transactionId": "lg%d" % i} for i in range(4)])
st, js = pop("lagq", consumerGroup="lagger", batch=1)
st, js, _ = call("GET", "/api/v1/consumer-groups")
eq(200, st, "listing")
row = [g for g in js if g["name"] == "lagger"][0]
eq("lagq", row["queueName"], "queueName"); eq(4, row["totalLag"], "totalLag")
st, js, _ = call("GET", "/api/v1/consumer-groups/lagger")
eq(200, st, "one group")
p = js["lagq"]["partitions"][0]
eq("Default", p["partition"], "partition"); eq(True, p["leaseActive"], "leaseActive")
st, js, _ = call("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=0")
check([r for r in js if r["consumer_group"] == "lagger" and r["offset_lag"] == 4], "lagging row: %r" % js)
st, js, _ = call("GET", "/api/v1/consumer-groups/lagging?minLagSeconds=100000")
eq([], [r for r in js if r["consumer_group"] == "lagger"], "not lagging that long")
EOF
'

test_expect_success 'resources: queue listing, one queue with its partitions, 404 for an unknown one, overview' '
	python3 <<\EOF
from http_base import *
push([{"queue": "resq", "partition": "r%d" % i, "payload": i} for i in range(3)])
st, js, _ = call("GET", "/api/v1/resources/queues")
eq(200, st, "listing")
row = [x for x in js["queues"] if x["name"] == "resq"][0]
eq(3, row["partitions"], "partitions"); eq(3, row["messages"]["total"], "messages")
st, js, _ = call("GET", "/api/v1/resources/queues/resq")
eq(200, st, "one queue")
eq(["r0", "r1", "r2"], sorted(p["name"] for p in js["partitions"]), "partition names")
eq(3, js["totals"]["messages"], "totals")
st, js, _ = call("GET", "/api/v1/resources/queues/nosuchq")
eq(404, st, "unknown queue: 404"); check(js["error"], "error")
st, js, _ = call("GET", "/api/v1/resources/overview")
eq(200, st, "overview"); check(js["queues"] >= 1 and js["partitions"] >= 3, "counts %r" % js)
EOF
'

test_expect_success 'status: counts in queue mode, one queue by ?queue=, throughput empty' '
	python3 <<\EOF
from http_base import *
push([{"queue": "stq", "partition": "s%d" % (i % 2), "payload": {"n": i},
       "transactionId": "st%d" % i} for i in range(3)])
st, js, _ = call("GET", "/api/v1/status")
eq(200, st, "status")
for k in ("timeRange", "throughput", "queues", "messages", "leases", "deadLetterQueue"):
    check(k in js, "field " + k)
check(js["timeRange"]["from"] < js["timeRange"]["to"], "time range %r" % js["timeRange"])
check(js["queues"]["total"] >= 1, "queues %r" % js["queues"])
check(js["messages"]["total"] >= 3, "messages %r" % js["messages"])
st, js, _ = call("GET", "/api/v1/status?queue=stq")
eq({"total": 3, "pending": 3, "processing": 0, "completed": 0, "deadLetter": 0},
   js["messages"], "before a pop")
eq(1, js["queues"]["total"], "one queue"); eq(2, js["queues"]["partitions"], "partitions")
st, p = pop("stq", "s0")
eq(200, st, "pop")
st, js, _ = call("GET", "/api/v1/status?queue=stq")
eq({"total": 3, "pending": 2, "processing": 1, "completed": 0, "deadLetter": 0},
   js["messages"], "one leased")
eq(1, js["leases"]["active"], "one lease")
m = p["messages"][0]
st, res, _ = call("POST", "/api/v1/ack", {"transactionId": m["transactionId"],
    "partitionId": m["partitionId"], "status": "completed", "leaseId": m["leaseId"]})
eq(True, res[0]["success"], "acked")
st, js, _ = call("GET", "/api/v1/status?queue=stq")
eq({"total": 3, "pending": 2, "processing": 0, "completed": 1, "deadLetter": 0},
   js["messages"], "one completed")
st, js, _ = call("GET", "/api/v1/status?from=yesterday")
eq(400, st, "a bad from"); check(js["error"], "error")
EOF
'

test_expect_success 'status/queues: pagination over every queue; one queue; 404 for an unknown one' '
	python3 <<\EOF
from http_base import *
st, js, _ = call("GET", "/api/v1/status/queues?limit=100000")
eq(200, st, "listing")
total = js["pagination"]["total"]
names = [q["name"] for q in js["queues"]]
eq(total, len(names), "all of them"); check("stq" in names, "stq listed")
row = [q for q in js["queues"] if q["name"] == "stq"][0]
eq(2, row["partitions"], "partitions")
eq(3, row["messages"]["total"], "messages"); eq(1, row["messages"]["completed"], "completed")
paged = []
for off in range(0, total + 1, 2):
    st, js, _ = call("GET", "/api/v1/status/queues?limit=2&offset=%d" % off)
    eq(200, st, "page %d" % off)
    eq({"limit": 2, "offset": off, "total": total}, js["pagination"], "pagination")
    check(len(js["queues"]) <= 2, "at most 2")
    paged += [q["name"] for q in js["queues"]]
eq(names, paged, "the pages make up the listing")
st, js, _ = call("GET", "/api/v1/status/queues?offset=%d" % (total + 5))
eq([], js["queues"], "past the end")
st, js, _ = call("GET", "/api/v1/status/queues/stq")
eq(200, st, "one queue")
eq("stq", js["queue"]["name"], "name"); eq(3, js["queue"]["messages"]["total"], "total")
eq(["s0", "s1"], sorted(p["name"] for p in js["partitions"]), "partitions")
eq([1, 2], sorted(p["messages"] for p in js["partitions"]), "per partition")
for q in ("nosuchq", "..", "bad%2Fname"):
    st, js, _ = call("GET", "/api/v1/status/queues/" + q)
    eq(404, st, "unknown queue %s" % q); check(js["error"], "error")
EOF
'

test_expect_success 'messages: one queue listed with status, partition filter, limit and offset' '
	python3 <<\EOF
from http_base import *
st, js, _ = call("GET", "/api/v1/messages?queue=stq")
eq(200, st, "listing"); eq("queue", js["mode"], "mode")
ms = js["messages"]
eq(3, len(ms), "three")
for m in ms:
    for k in ("id", "transactionId", "partitionId", "queue", "partition", "status",
              "traceId", "createdAt"):
        check(k in m, "field " + k)
    eq("stq", m["queue"], "queue")
    check(m["createdAt"].endswith("Z"), "ISO createdAt")
by = dict((m["transactionId"], m) for m in ms)
eq("completed", by["st0"]["status"], "st0 acked")
eq("pending", by["st1"]["status"], "st1 pending")
eq("pending", by["st2"]["status"], "st2 pending")
eq(by["st0"]["partitionId"], by["st2"]["partitionId"], "same partition")
check(by["st0"]["partitionId"] != by["st1"]["partitionId"], "partitions differ")
st, p = pop("stq", "s1")
st, js, _ = call("GET", "/api/v1/messages?queue=stq&partition=s1")
eq(["st1"], [m["transactionId"] for m in js["messages"]], "partition filter")
eq("processing", js["messages"][0]["status"], "leased")
ids = [m["id"] for m in ms]
st, js, _ = call("GET", "/api/v1/messages?queue=stq&limit=1&offset=1")
eq(ids[1:2], [m["id"] for m in js["messages"]], "limit 1 offset 1")
st, js, _ = call("GET", "/api/v1/messages?queue=stq&limit=5&offset=2")
eq(ids[2:], [m["id"] for m in js["messages"]], "the rest")
st, js, _ = call("GET", "/api/v1/messages?queue=stq&offset=3")
eq([], js["messages"], "past the end")
st, js, _ = call("GET", "/api/v1/messages")
eq(400, st, "no queue"); check(js["error"], "error")
st, js, _ = call("GET", "/api/v1/messages?queue=nosuchq")
eq(404, st, "unknown queue"); check(js["error"], "error")
EOF
'

test_expect_success 'messages/{partitionId}/{transactionId}: read back byte for byte; DELETE refused, message kept' '
	mkdir "$MNT/queues/mbq" &&
	printf "raw \"bytes\"\\ttab \\303\\251 end\\n" >"$MNT/queues/mbq/rawfile" &&
	python3 <<\EOF &&
from http_base import *
want = open(MNT + "/queues/mbq/rawfile", "rb").read()
check(b"\t" in want and "\u00e9".encode() in want, "the file holds %r" % want)
push([{"queue": "mbq", "payload": {"k": [1, "two", None]}, "transactionId": "mj",
       "traceId": "0b7d2a5e-0000-4000-8000-000000000001"}])
st, js, _ = call("GET", "/api/v1/messages?queue=mbq")
by = dict((m["transactionId"], m) for m in js["messages"])
pid = by["rawfile"]["partitionId"]
st, m, _ = call("GET", "/api/v1/messages/%s/rawfile" % pid)
eq(200, st, "one message")
eq(want, m["data"].encode("utf-8"), "byte for byte")
eq(m["data"], m["payload"], "payload too")
eq(None, m["errorMessage"], "errorMessage"); eq(0, m["retryCount"], "retryCount")
eq("pending", m["status"], "status"); eq("Default", m["partition"], "partition")
eq(by["rawfile"]["id"], m["id"], "the listing id")
st, m, _ = call("GET", "/api/v1/messages/%s/mj" % pid)
eq({"k": [1, "two", None]}, m["data"], "a JSON payload as JSON")
eq("0b7d2a5e-0000-4000-8000-000000000001", m["traceId"], "traceId")
st, js, _ = call("DELETE", "/api/v1/messages/%s/rawfile" % pid)
eq(409, st, "DELETE refused"); check("cannot" in js["error"], "says why: %r" % js)
st, m, _ = call("GET", "/api/v1/messages/%s/rawfile" % pid)
eq(200, st, "still there"); eq(want, m["data"].encode("utf-8"), "unchanged")
for path in ("/api/v1/messages/%s/nosuch" % pid, "/api/v1/messages/nosuchpid/rawfile"):
    for meth in ("GET", "DELETE"):
        st, js, _ = call(meth, path)
        eq(404, st, "%s %s" % (meth, path)); check(js["error"], "error")
st, js, _ = call("GET", "/api/v1/messages?queue=dq")
eq([("d1", "dead_letter")], [(m["transactionId"], m["status"]) for m in js["messages"]],
   "a dead letter")
st, m, _ = call("GET", "/api/v1/messages/%s/d1" % js["messages"][0]["partitionId"])
eq(200, st, "the dead letter"); eq("no good", m["errorMessage"], "its reason")
eq({"bad": 1}, m["data"], "its body")
EOF
	test_is 2 "$(stat_of "$MNT/queues/mbq/stats" depth)" depth
'

test_expect_success 'metrics: JSON and Prometheus text' '
	curl -s -o body -w "%{http_code}\n" $URL/metrics >actual &&
	echo 200 >expect && test_cmp expect actual && grep "\"uptime\"" body &&
	curl -s -D hdr -o body $URL/metrics/prometheus &&
	grep -i "^content-type: text/plain; version=0.0.4" hdr &&
	grep "^queen_http_requests_total " body
'

# A bad number in a pop falls back to its default (a 4xx would stop a
# consumer) and the daemon's log says which and what it used instead.
test_expect_success 'a bad number in a pop is its default, and the log says so' '
	curl -s -o /dev/null -X POST -H "Content-Type: application/json" \
	    -d "{\"items\":[{\"queue\":\"bn\",\"payload\":1},{\"queue\":\"bn\",\"payload\":2}]}" \
	    $URL/api/v1/push &&
	curl -s -o body -w "%{http_code}\n" "$URL/api/v1/pop/queue/bn?batch=-1&wait=false" >actual &&
	echo 200 >expect && test_cmp expect actual &&
	python3 -c "import json,sys; sys.exit(len(json.load(open(\"body\"))[\"messages\"]) != 1)" &&
	grep -q "http: GET /api/v1/pop/queue/bn: batch=-1 is not an integer in \[1, 100000\]: 1 used" "$DAEMON_LOG"
'

test_done
