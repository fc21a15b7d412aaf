#!/bin/sh
# fs-0022-api: the api/ JSON files (docs/design.md#mount-api) through the mount: api/push, api/pop, api/ack (its wire
# shape and both honesty guarantees in one call, design.md#clamp), api/renew; base64 and JSON
# payloads; malformed, mistyped, unknown and oversize requests answer a
# JSON error and write nothing; a request closed without reading runs (or
# is refused whole) and close() says how it went.
. "$(dirname "$0")/lib.sh"
mount_queenfs
export MNT

# $TRASH/qapi.py, imported by the Python of the cases (they run in $TRASH)
cp "$TEST_DIRECTORY/qapi_base.py" "$TRASH/" &&
cat >"$TRASH/qapi.py" <<\PYEOF
from qapi_base import *
def content(path):
    with open(MNT + "/" + path, "rb") as f:
        return f.read()

def refused(ans, reason, what):
    check(isinstance(ans, dict), what + ": the answer is an object: %r" % (ans,))
    eq(False, ans.get("success"), what + ": success")
    eq(reason, ans.get("reason"), what + ": reason")
    check(isinstance(ans.get("error"), str) and ans["error"], what + ": an error text")
PYEOF

test_expect_success 'api/ lists the five request files' '
	ls "$MNT/api" >actual &&
	printf "%s\n" ack pop push renew transaction >expect &&
	test_cmp expect actual
'

test_expect_success 'api/push: one result per item with index, transactionId, status, messageId, partition' '
	python3 <<\EOF
from qapi import *
ans = api("push", {"items": [
    {"queue": "a", "transactionId": "m1", "payload": {"n": 1}},
    {"queue": "a", "partition": "p1", "transactionId": "m2", "payload": {"n": 2}}]})
eq(list, type(ans), "a top-level array")
eq(2, len(ans), "results")
for i, (txid, part) in enumerate([("m1", "default"), ("m2", "p1")]):
    r = ans[i]
    eq(i, r["index"], "index")
    eq(txid, r["transactionId"], "transactionId")
    eq("queued", r["status"], "status")
    eq(part, r["partition"], "partition")
    pid = os.getxattr(MNT + "/queues/a/partitions/%s/%s" % (part, txid),
        "user.queen.partition_id").decode()
    eq(pid, r["partitionId"], "partitionId = user.queen.partition_id")
    eq(pid + ":1", r["messageId"], "messageId")
eq(b"{\"n\":1}", content("queues/a/partitions/default/m1"), "payload m1")
eq(b"{\"n\":2}", content("queues/a/partitions/p1/m2"), "payload m2")
EOF
'

test_expect_success 'api/push: a missing transactionId gets a UUIDv7, the file has that name' '
	python3 <<\EOF
from qapi import *
r = api("push", {"items": [{"queue": "a", "payload": "x"}]})[0]
check(re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
    r["transactionId"]), "a UUIDv7: " + r["transactionId"])
eq(b"\"x\"", content("queues/a/partitions/default/" + r["transactionId"]), "payload")
eq(sorted(["m1", r["transactionId"]]), ls("queues/a/partitions/default"), "log")
EOF
'

test_expect_success 'api/push: a duplicate transactionId answers duplicate and stores nothing' '
	python3 <<\EOF
from qapi import *
r = api("push", {"items": [{"queue": "a", "transactionId": "m1", "payload": "other"}]})[0]
eq("duplicate", r["status"], "status")
eq(b"{\"n\":1}", content("queues/a/partitions/default/m1"), "the stored payload")
eq("3", stats("a")["messages"], "messages")
eq("1", stats("a")["duplicates"], "duplicates")
EOF
'

test_expect_success 'a JSON payload travels as JSON both ways' '
	python3 <<\EOF
from qapi import *
doc = {"a": [1, 2, {"b": None}], "s": "caf\u00e9"}
api("push", {"items": [{"queue": "j", "transactionId": "doc", "payload": doc}]})
eq(json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode(),
    content("queues/j/partitions/default/doc"), "stored as compact JSON")
with open(MNT + "/queues/j/pretty", "w") as f:
    f.write("{\n  \"x\": [true, 2.5]\n}\n")
p = api("pop", {"queue": "j", "batch": 10})
eq(["doc", "pretty"], [m["transactionId"] for m in p["messages"]], "popped")
eq("json", p["messages"][0]["encoding"], "encoding")
eq(doc, p["messages"][0]["payload"], "payload")
eq({"x": [True, 2.5]}, p["messages"][1]["payload"], "a file pushed through the mount")
EOF
'

test_expect_success 'binary payloads round-trip byte for byte through base64' '
	python3 <<\EOF
from qapi import *
import base64
blob = bytes(range(256)) * 3 + b"\x00\xff{"
api("push", {"items": [{"queue": "bin", "transactionId": "b1",
    "payload": base64.b64encode(blob).decode(), "encoding": "base64"}]})
eq(blob, content("queues/bin/partitions/default/b1"), "stored bytes")
raw = os.urandom(5000) + b"\xff"
with open(MNT + "/queues/bin/b2", "wb") as f:
    f.write(raw)
with open(MNT + "/queues/bin/b3", "wb") as f:
    f.write(b"plain text, not JSON\n")
p = api("pop", {"queue": "bin", "batch": 3})
eq(3, len(p["messages"]), "popped")
got = {}
for m in p["messages"]:
    eq("base64", m["encoding"], "encoding of " + m["transactionId"])
    got[m["transactionId"]] = base64.b64decode(m["payload"])
eq(blob, got["b1"], "b1")
eq(raw, got["b2"], "b2")
eq(b"plain text, not JSON\n", got["b3"], "b3")
EOF
'

test_expect_success 'api/pop: success, leaseId and each message with its fields' '
	python3 <<\EOF
from qapi import *
api("push", {"items": [{"queue": "p", "transactionId": "x%d" % i, "payload": i} for i in (1, 2, 3)]})
p = api("pop", {"queue": "p", "batch": 2})
eq(True, p["success"], "success")
L = p["leaseId"]
check(isinstance(L, str) and L, "a leaseId")
eq(["x1", "x2"], [m["transactionId"] for m in p["messages"]], "messages")
pid = os.getxattr(MNT + "/queues/p/partitions/default/x1", "user.queen.partition_id").decode()
for i, m in enumerate(p["messages"]):
    for k in ("transactionId", "partitionId", "partition", "leaseId", "consumerGroup", "createdAt", "payload"):
        check(k in m, "message field " + k)
    eq(L, m["leaseId"], "leaseId")
    eq(pid, m["partitionId"], "partitionId")
    eq("default", m["partition"], "partition")
    eq("__QUEUE_MODE__", m["consumerGroup"], "consumerGroup")
    eq(i + 1, m["payload"], "payload")
    check(abs(m["createdAt"] - time.time() * 1000) < 60000, "createdAt in ms")
eq([L], ls("queues/p/leased"), "leased/")
eq(["x1", "x2"], ls("queues/p/leased/" + L), "leased/L")
eq("1", stats("p")["leases"], "leases")
eq(0, committed("p"), "committed")
EOF
'

test_expect_success 'api/pop: partition, consumerGroup and batch are honoured' '
	python3 <<\EOF
from qapi import *
api("push", {"items": [{"queue": "p", "partition": "p1", "transactionId": "y%d" % i, "payload": i} for i in (1, 2)]})
p = api("pop", {"queue": "p", "partition": "p1", "batch": 10})
eq(["y1", "y2"], [m["transactionId"] for m in p["messages"]], "partition p1 only")
eq("p1", p["messages"][0]["partition"], "partition")
g = api("pop", {"queue": "p", "consumerGroup": "audit", "batch": 1})
eq(1, len(g["messages"]), "batch 1")
eq("audit", g["messages"][0]["consumerGroup"], "consumerGroup")
eq([g["leaseId"]], ls("queues/p/groups/audit/leased"), "the group lease")
eq("2", stats("p")["leases"], "queue-mode leases untouched")
EOF
'

test_expect_success 'api/pop: autoAck true commits at once, no lease' '
	python3 <<\EOF
from qapi import *
api("push", {"items": [{"queue": "auto", "transactionId": "z%d" % i, "payload": i} for i in (1, 2)]})
p = api("pop", {"queue": "auto", "batch": 2, "autoAck": True})
eq(None, p["leaseId"], "leaseId")
eq(["z1", "z2"], [m["transactionId"] for m in p["messages"]], "messages")
eq(2, committed("auto"), "committed")
eq("0", stats("auto")["leases"], "leases")
eq({"success": True, "leaseId": None, "messages": []}, api("pop", {"queue": "auto"}), "then empty")
EOF
'

test_expect_success 'api/ack single: a top-level array of exactly the contract fields' '
	python3 <<\EOF
from qapi import *
api("push", {"items": [{"queue": "k", "transactionId": "s1", "payload": 1}]})
m = api("pop", {"queue": "k"})["messages"][0]
ans = api("ack", {"transactionId": "s1", "partitionId": m["partitionId"],
    "status": "completed", "leaseId": m["leaseId"], "error": None})
eq([{"index": 0, "transactionId": "s1", "success": True, "error": None,
    "leaseReleased": True, "dlq": False, "noop": False}], ans, "answer")
eq(1, committed("k"), "committed")
eq([], ls("queues/k/leased"), "leased/")
EOF
'

test_expect_success 'a lease read through next and acked by api/ack: its file is gone' '
	mkdir "$MNT/queues/nk" && printf nk1 >"$MNT/queues/nk/n1" &&
	l=$(cat "$MNT/queues/nk/next") &&
	test_is nk1 "$(cat "$MNT/queues/nk/$l")" "the leased file" &&
	L=${l#leased/} && L=${L%%/*} &&
	P=$(getfattr --only-values -n user.queen.partition_id "$MNT/queues/nk/$l") &&
	printf "{\"transactionId\": \"n1\", \"partitionId\": \"%s\", \"leaseId\": \"%s\"}" \
	    "$P" "$L" >"$MNT/api/ack" &&
	test_is 0 "$(stat_of "$MNT/queues/nk/stats" leases)" leases &&
	test_is 0 "$(stat_of "$MNT/queues/nk/stats" depth)" depth &&
	test_must_fail cat "$MNT/queues/nk/$l" 2>err &&
	cat err
'

test_expect_success 'the clamp in one api/ack: m1 completed, m2 failed, m3 m4 completed' '
	python3 <<\EOF
from qapi import *
api("push", {"items": [{"queue": "h", "transactionId": "m%d" % i, "payload": i} for i in (1, 2, 3, 4)]})
p = api("pop", {"queue": "h", "batch": 4})
eq(["m1", "m2", "m3", "m4"], [m["transactionId"] for m in p["messages"]], "popped")
P, L = p["messages"][0]["partitionId"], p["leaseId"]
ans = api("ack", {"acknowledgments": [
    {"transactionId": "m1", "partitionId": P, "leaseId": L, "status": "completed"},
    {"transactionId": "m2", "partitionId": P, "leaseId": L, "status": "failed", "error": "boom"},
    {"transactionId": "m3", "partitionId": P, "leaseId": L, "status": "completed"},
    {"transactionId": "m4", "partitionId": P, "leaseId": L, "status": "completed"}]})
eq(4, len(ans), "one result per item")
for i, r in enumerate(ans):
    eq(["dlq", "error", "index", "leaseReleased", "noop", "success", "transactionId"],
        sorted(r), "fields of item %d" % i)
    eq(i, r["index"], "index")
    eq("m%d" % (i + 1), r["transactionId"], "transactionId")
    eq(False, r["dlq"], "dlq")
    eq(False, r["noop"], "noop")
    # accepted and honoured as far as the model allows (docs/engine.md)
    eq(True, r["success"], "success of item %d" % i)
    eq(True, r["leaseReleased"], "leaseReleased of item %d" % i)
eq(1, committed("h"), "the cursor commits past m1 only")
eq([], ls("queues/h/leased"), "the failure released the lease")
r = api("pop", {"queue": "h", "batch": 10})
eq(["m2", "m3", "m4"], [m["transactionId"] for m in r["messages"]], "m2, m3, m4 redeliver")
eq(1, r["messages"][0]["retryCount"], "the failure charged one retry")
api("ack", {"transactionId": "m4", "partitionId": P, "leaseId": r["leaseId"]})
eq(4, committed("h"), "committed")
EOF
'

test_expect_success 'api/ack reports: noop at or below the cursor, already committed, unresolvable' '
	python3 <<\EOF
from qapi import *
P = os.getxattr(MNT + "/queues/h/partitions/default/m1", "user.queen.partition_id").decode()
ans = api("ack", {"acknowledgments": [
    {"transactionId": "m2", "partitionId": P, "status": "completed"},
    {"transactionId": "m3", "partitionId": P, "status": "failed"},
    {"transactionId": "nosuch", "partitionId": P, "status": "completed"}]})
eq(True, ans[0]["success"], "completed below the cursor: success")
eq(True, ans[0]["noop"], "completed below the cursor: noop")
eq(None, ans[0]["error"], "no error")
eq(False, ans[1]["success"], "failed below the cursor")
eq("already committed: the cursor moved past this message before this ack", ans[1]["error"], "error")
eq(False, ans[2]["success"], "unknown txid")
eq("unresolvable: transaction not in the ack window (hash purged or never pushed); if leased, the message redelivers", ans[2]["error"], "error")
eq(4, committed("h"), "nothing moved")
eq("0", stats("h")["dlq"], "dlq")
EOF
'

test_expect_success 'api/ack statuses: success, ok, acked and absent complete; a typo fails' '
	python3 <<\EOF
from qapi import *
api("push", {"items": [{"queue": "st", "transactionId": "n%d" % i, "payload": i} for i in range(1, 6)]})
P = api("pop", {"queue": "st", "batch": 1})["messages"][0]["partitionId"]
for i, st in ((1, "success"), (2, "ok"), (3, "acked"), (4, None)):
    item = {"transactionId": "n%d" % i, "partitionId": P}
    if st:
        item["status"] = st
    r = api("ack", item)[0]
    eq(True, r["success"], st)
    eq(i, committed("st"), "committed after " + str(st))
p = api("pop", {"queue": "st"})
eq("n5", p["messages"][0]["transactionId"], "next")
r = api("ack", {"transactionId": "n5", "partitionId": P, "leaseId": p["leaseId"], "status": "complete"})[0]
eq(4, committed("st"), "a typo does not commit")
p = api("pop", {"queue": "st"})
eq("n5", p["messages"][0]["transactionId"], "redelivered")
eq(1, p["messages"][0]["retryCount"], "the typo counted as failed")
EOF
'

test_expect_success 'api/ack without partitionId: bad_request, nothing acked' '
	python3 <<\EOF
from qapi import *
P = os.getxattr(MNT + "/queues/st/partitions/default/n5", "user.queen.partition_id").decode()
L = ls("queues/st/leased")[0]
ans = api("ack", {"acknowledgments": [
    {"transactionId": "n5", "partitionId": P, "leaseId": L},
    {"transactionId": "n5", "leaseId": L}]})
refused(ans, "bad_request", "no partitionId")
check("partitionId" in ans["error"], ans["error"])
eq(4, committed("st"), "committed")
eq([L], ls("queues/st/leased"), "the lease is still held")
ans, c = call("ack", {"transactionId": "n5", "leaseId": L}, read=False)
eq("EIO", c, "close() of a refused call")
eq(4, committed("st"), "committed")
EOF
'

test_expect_success 'api/renew extends a lease: success, leaseId, expiresAt' '
	python3 <<\EOF
from qapi import *
os.mkdir(MNT + "/queues/rn")
with open(MNT + "/queues/rn/config", "w") as f:
    f.write("lease_time = 1\n")
api("push", {"items": [{"queue": "rn", "transactionId": "r1", "payload": 1}]})
p = api("pop", {"queue": "rn"})
L, P = p["leaseId"], p["messages"][0]["partitionId"]
r = api("renew", {"leaseId": L, "seconds": 30})
eq(True, r["success"], "success")
eq(L, r["leaseId"], "leaseId")
check(abs(r["expiresAt"] - (time.time() * 1000 + 30000)) < 3000, "expiresAt ~ now + 30 s: %r" % r["expiresAt"])
time.sleep(1.5)
eq([], api("pop", {"queue": "rn"})["messages"], "still leased after lease_time")
a = api("ack", {"transactionId": "r1", "partitionId": P, "leaseId": L})[0]
eq(True, a["success"], "the renewed lease acks")
eq(1, committed("rn"), "committed")
EOF
'

test_expect_success 'api/renew of an unknown or released lease: success false; close EIO unread' '
	python3 <<\EOF
from qapi import *
api("push", {"items": [{"queue": "rn", "transactionId": "r2", "payload": 2}]})
p = api("pop", {"queue": "rn"})
eq("r2", p["messages"][0]["transactionId"], "popped")
api("ack", {"transactionId": "r2", "partitionId": p["messages"][0]["partitionId"], "leaseId": p["leaseId"]})
for L in ("01a00000-0000-7000-8000-000000000000", p["leaseId"]):
    r = api("renew", {"leaseId": L, "seconds": 5})
    eq(False, r["success"], "success")
    eq(L, r["leaseId"], "leaseId")
    eq("invalid or expired lease", r["error"], "error")
ans, c = call("renew", {"leaseId": "01a00000-0000-7000-8000-000000000000"}, read=False)
eq("EIO", c, "close()")
EOF
'

test_expect_success 'malformed JSON: bad_request, nothing written, close EIO unread' '
	ls "$MNT/queues" >before &&
	python3 <<\EOF
from qapi import *
bodies = [b"{bad", b"", b"   ", b"[1, 2]", b"\"items\"",
    b"{\"items\": [{\"queue\": \"mal\", \"payload\": 1}]} trailing",
    b"{\"items\": [{\"queue\": \"mal\", \"payload\": 1}], \"items\": []}",
    b"{\"items\": [{\"queue\": \"mal\", \"payload\": 1,}]}"]
for b in bodies:
    for ep in ("push", "pop", "ack", "renew", "transaction"):
        if not b:
            continue
        ans, c = call(ep, b)
        refused(ans, "bad_request", "%s %r" % (ep, b))
        ans, c = call(ep, b, read=False)
        eq("EIO", c, "close() of %s %r" % (ep, b))
check(ls("queues/mal") is None, "no queue mal")
EOF
	ls "$MNT/queues" >after &&
	test_cmp before after
'

test_expect_success 'wrong types: bad_request and nothing written' '
	python3 <<\EOF
from qapi import *
os.mkdir(MNT + "/queues/w")
api("push", {"items": [{"queue": "w", "transactionId": "w1", "payload": 1}]})
P = os.getxattr(MNT + "/queues/w/partitions/default/w1", "user.queen.partition_id").decode()
ok = {"queue": "w", "transactionId": "good", "payload": 1}
cases = [
    ("push", {"items": {}}),
    ("push", {"items": [ok, {"queue": 5, "payload": 1}]}),
    ("push", {"items": [ok, {"queue": "w", "transactionId": 7, "payload": 1}]}),
    ("push", {"items": [ok, {"queue": "w", "partition": ["p"], "payload": 1}]}),
    ("push", {"items": [ok, {"queue": "w", "payload": "!!not base64", "encoding": "base64"}]}),
    ("push", {"items": [ok, {"queue": "w", "payload": 5, "encoding": "base64"}]}),
    ("push", {"items": [ok, {"queue": "w", "payload": 1, "encoding": "rot13"}]}),
    ("push", {"items": [ok, {"queue": "w"}]}),
    ("push", {"items": [ok, "just a string"]}),
    ("pop", {"queue": "w", "batch": "2"}),
    ("pop", {"queue": "w", "autoAck": "yes"}),
    ("pop", {"queue": 1}),
    ("pop", {"queue": "w", "consumerGroup": 3}),
    ("pop", {"queue": "w", "batch": -1}),
    ("ack", {"transactionId": 1, "partitionId": P}),
    ("ack", {"transactionId": "w1", "partitionId": P, "status": 1}),
    ("ack", {"acknowledgments": {"transactionId": "w1", "partitionId": P}}),
    ("ack", {"acknowledgments": [{"transactionId": "w1", "partitionId": P}, 5]}),
    ("renew", {"leaseId": "x", "seconds": "10"}),
    ("renew", {"leaseId": 5}),
    ("transaction", {"operations": {}}),
    ("transaction", {"operations": [{"type": "push", "items": [ok]}], "kv": {"op": "put"}}),
    ("transaction", {"operations": [{"type": "push", "items": [ok]}], "timers": "x"}),
    ("transaction", {"operations": [{"type": "push", "items": [ok]}], "requiredLeases": [1]}),
    ("transaction", {"operations": [{"type": "push", "items": ok}]}),
    ("transaction", {"operations": [{"type": "push", "items": [ok]}],
        "kv": [{"op": "put", "ns": "wt", "key": "k", "value": 1, "required": "yes"}]}),
    ("transaction", {"operations": [{"type": "push", "items": [ok]}],
        "kv": [{"op": "put", "ns": "wt", "key": "k", "value": 1, "ttl": "10 parsecs"}]}),
    ("transaction", {"operations": [{"type": "push", "items": [ok]}],
        "kv": [{"op": "put", "ns": "wt", "key": "k", "value": 1, "expect": -1}]}),
    ("transaction", {"operations": [{"type": "push", "items": [ok]}],
        "kv": [{"op": "put", "ns": "wt", "key": 7, "value": 1}]}),
    ("transaction", {"operations": [{"type": "push", "items": [ok]}],
        "kv": [{"op": "put", "ns": "wt", "key": "k"}]}),
    ("transaction", {"operations": [{"type": "push", "items": [ok]}],
        "timers": [{"op": "schedule", "queue": "w", "key": "t", "dueAt": [1], "payload": 1}]}),
    ("transaction", {"operations": [{"type": 5, "items": [ok]}]}),
]
for ep, body in cases:
    ans, c = call(ep, body)
    refused(ans, "bad_request", "%s %s" % (ep, json.dumps(body)))
eq(["w1"], ls("queues/w/partitions/default"), "nothing pushed")
eq("0", stats("w")["leases"], "nothing leased")
eq(0, committed("w"), "nothing acked")
check(not ls("kv/wt"), "no KV key")
eq([], ls("queues/w/timers"), "no timer")
EOF
'

test_expect_success 'unknown operation types: bad_request, nothing written' '
	python3 <<\EOF
from qapi import *
push = {"type": "push", "queue": "w", "transactionId": "u1", "payload": 1}
put = {"op": "put", "ns": "unk", "key": "k", "value": 1}
for body in (
        {"operations": [push, {"type": "bogus"}]},
        {"operations": [push, {"queue": "w"}]},
        {"operations": [push], "kv": [put, {"op": "getPrefix", "ns": "unk", "prefix": "k"}]},
        {"operations": [push], "kv": [put, {"op": "frobnicate", "ns": "unk", "key": "j"}]},
        {"operations": [push], "kv": [put], "timers": [{"op": "fire", "queue": "w", "key": "t"}]},
        {"operations": [push], "kv": [put], "timers": [{"queue": "w", "key": "t"}]}):
    ans, c = call("transaction", body)
    refused(ans, "bad_request", json.dumps(body))
    eq([], ans.get("results", []), "no results")
    ans, c = call("transaction", body, read=False)
    eq("EIO", c, "close() unread")
eq(["w1"], ls("queues/w/partitions/default"), "nothing pushed")
check(not ls("kv/unk"), "no KV key")
eq([], ls("queues/w/timers"), "no timer")
EOF
'

test_expect_success 'an oversize body (over 64 MiB, written in chunks): too_large, nothing written' '
	python3 <<\EOF
from qapi import *
head = b"{\"items\": [{\"queue\": \"w\", \"transactionId\": \"huge\", \"payload\": \""
chunk = b"A" * (1 << 20)
for read in (True, False):
    fd = os.open(MNT + "/api/push", os.O_RDWR)
    os.write(fd, head)
    for i in range(64):
        os.write(fd, chunk)
    os.write(fd, b"\"}]}")
    out, c = answer(fd, read)
    if read:
        ans = json.loads(out)
        refused(ans, "too_large", "a 64 MiB body")
        eq("ok", c, "close() after reading")
    else:
        eq("EIO", c, "close() unread")
eq(["w1"], ls("queues/w/partitions/default"), "nothing pushed")
EOF
'

test_expect_success 'a truncated request closed without reading: close EIO, nothing half-applied' '
	python3 <<\EOF
from qapi import *
full = json.dumps({"items": [{"queue": "half", "transactionId": "h%d" % i, "payload": i} for i in range(50)]}).encode()
for cut in (len(full) // 2, len(full) - 1):
    ans, c = call("push", full[:cut], read=False)
    eq("EIO", c, "close() of a body cut at %d" % cut)
check(ls("queues/half") is None, "no queue, no message: %r" % ls("queues/half"))
txn = json.dumps({"operations": [{"type": "push", "queue": "w", "transactionId": "t1", "payload": 1}],
    "kv": [{"op": "put", "ns": "half", "key": "k", "value": 1}]}).encode()
ans, c = call("transaction", txn[:-2], read=False)
eq("EIO", c, "close() of a cut transaction")
eq(["w1"], ls("queues/w/partitions/default"), "nothing pushed")
check(not ls("kv/half"), "no KV key")
EOF
'

test_expect_success 'a valid request closed without reading still runs: close() returns 0' '
	python3 <<\EOF
from qapi import *
ans, c = call("push", {"items": [{"queue": "w", "transactionId": "w2", "payload": 2}]}, read=False)
eq("ok", c, "close() of a push")
eq(["w1", "w2"], ls("queues/w/partitions/default"), "pushed")
ans, c = call("transaction", {"kv": [{"op": "put", "ns": "blind", "key": "k", "value": {"v": 1}}]}, read=False)
eq("ok", c, "close() of a transaction")
eq(b"{\"v\":1}", content("kv/blind/k"), "KV written")
P = os.getxattr(MNT + "/queues/w/partitions/default/w1", "user.queen.partition_id").decode()
ans, c = call("ack", {"transactionId": "w2", "partitionId": P}, read=False)
eq("ok", c, "close() of an ack")
eq(2, committed("w"), "acked")
EOF
'

test_expect_success 'a call that fails whole (a push over max_message_bytes): too_large; close EIO unread' '
	echo "max_message_bytes = 8" >"$MNT/queues/w/config" &&
	python3 <<\EOF
from qapi import *
body = {"items": [{"queue": "w", "transactionId": "ok3", "payload": 1},
    {"queue": "w", "transactionId": "big", "payload": "0123456789abcdef"}]}
refused(api("push", body), "too_large", "oversize payload")
ans, c = call("push", body, read=False)
eq("EIO", c, "close()")
eq(["w1", "w2"], ls("queues/w/partitions/default"), "nothing pushed, not even ok3")
EOF
'

test_expect_success 'shell tools: echo > api/push runs it; cat of a bad request fails at close' '
	printf "{\"items\":[{\"queue\":\"sh\",\"transactionId\":\"s1\",\"payload\":\"hi\"}]}" >"$MNT/api/push" &&
	printf "\"hi\"" >expect &&
	test_cmp expect "$MNT/queues/sh/partitions/default/s1" &&
	printf "{\"items\":[{\"queue\":\"sh\",\"transactionId\":\"s2\"" >bad.json &&
	test_must_fail cat bad.json >"$MNT/api/push" &&
	ls "$MNT/queues/sh/partitions/default" >actual &&
	echo s1 >expect &&
	test_cmp expect actual
'

test_expect_success 'one request per open: a write after the answer is EBUSY' '
	python3 <<\EOF
from qapi import *
fd = os.open(MNT + "/api/pop", os.O_RDWR)
os.write(fd, b"{\"queue\": \"sh\"}")
first = os.read(fd, 65536)
eq(b"", os.read(fd, 65536), "EOF after the answer")
try:
    os.write(fd, b"{\"queue\": \"sh\"}")
    raise SystemExit("a second write succeeded")
except OSError as e:
    eq("EBUSY", errno.errorcode[e.errno], "second write")
os.close(fd)
eq("s1", json.loads(first)["messages"][0]["transactionId"], "popped")
eq("1", stats("sh")["leases"], "one pop, one lease")
EOF
'

test_expect_success 'api/pop with wait: an empty queue answers an empty pop when the wait runs out; a push wakes it' '
	mkdir "$MNT/queues/waiting" &&
	python3 <<\EOF
from qapi import *
import threading
t0 = time.time()
ans = api("pop", {"queue": "waiting", "wait": 1})
eq([], ans["messages"], "nothing came: empty messages")
eq(True, ans["success"], "an empty pop is a success")
check(time.time() - t0 >= 0.9, "it waited for the wait")
def later():
    time.sleep(0.5)
    api("push", {"items": [{"queue": "waiting", "transactionId": "w1",
                            "payload": 1}]})
threading.Thread(target=later).start()
ans = api("pop", {"queue": "waiting", "wait": 30})
eq(["w1"], [m["transactionId"] for m in ans["messages"]], "woken by the push")
check(ans["leaseId"] is not None, "under a lease")
EOF
'

test_expect_success SQLITE_STORE 'api/push: 40,000 pushes fold hashes into the index, in memory a bounded number, the filter answers new ids; dedup holds throughout and across a remount' '
	mkdir "$MNT/queues/fold" &&
	cat >fold.py <<\EOF &&
from qapi import *
import sys
def sysstat(key):
    for line in open(MNT + "/sys/stats"):
        k, _, v = line.strip().partition(" = ")
        if k == key:
            return int(v)
    raise KeyError(key)
def push(names):
    return api("push", {"items": [{"queue": "fold", "transactionId": n,
                                    "payload": "x"} for n in names]})
if sys.argv[1] == "fill":
    for b in range(40):
        r = push(["f%d" % i for i in range(b * 1000, b * 1000 + 1000)])
        eq(["queued"] * 1000, [x["status"] for x in r], "batch %d queued" % b)
    # past 32,768 the held pairs freeze and two fold per push after
    check(sysstat("hashes_folded") > 5000,
          "hashes folded: %d" % sysstat("hashes_folded"))
    check(sysstat("hashes_held") <= 2 * 32768,
          "held, at most two tables: %d" % sysstat("hashes_held"))
    # a new id is answered by the filter, not the index (1% may not be)
    check(sysstat("hash_filter_skips") >= 39000,
          "filter answered: %d" % sysstat("hash_filter_skips"))
else:
    check(sysstat("hash_filter_builds") == 1 and
          sysstat("hash_filter_bytes") > 0, "filter built at the mount")
    # the page cache gives up what the filter takes
    eq(4096 - sysstat("hash_filter_bytes") // 1024,
       sysstat("page_cache_kib"), "page cache less the filter")
r = push(["f0", "f20000", "f39999", "new-" + sys.argv[1]])
eq(["duplicate"] * 3 + ["queued"], [x["status"] for x in r],
   "old, middle and newest are duplicates")
eq([1, 20001, 40000], [x["offset"] for x in r[:3]], "at their offsets")
EOF
	python3 fold.py fill &&
	remount &&
	python3 fold.py again &&
	test_is 40002 "$(stat_of "$MNT/queues/fold/stats" messages)" messages
'

test_done
