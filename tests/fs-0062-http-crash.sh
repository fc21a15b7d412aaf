#!/bin/sh
# fs-0062-http-crash: kill -9 under HTTP load.  Eight keep-alive clients
# push single items and batches of 20 over HTTP (sync full) while the
# daemon is killed; after a remount every item a 2xx answered `queued`
# is there, exactly once (dedup makes a retried id `duplicate`).
. "$(dirname "$0")/lib.sh"
test_have_prereq PYTHON || skip_all "no python3"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
QHTTP=127.0.0.1:$PORT
mount_queenfs --listen "$QHTTP"
export MNT QHTTP
cp "$TEST_DIRECTORY/http_base.py" "$TRASH/" || exit 1

test_expect_success 'load: 8 clients push until the daemon dies' '
	cat >load.py <<\EOF &&
import sys, threading
from http_base import *
def worker(w):
    c = Client(timeout=10)
    f = open("confirmed.%d" % w, "w")
    i = 0
    while True:
        n = 1 if w % 2 else 20
        items = [{"queue": "crash", "partition": "p%d" % w, "payload": {"w": w, "i": i + k},
                  "transactionId": "w%d-%d" % (w, i + k)} for k in range(n)]
        try:
            st, js, _ = c.call("POST", "/api/v1/push", {"items": items})
        except Exception:
            return
        if st != 201:
            return
        for r in js:
            if r["status"] == "queued":
                f.write(r["transaction_id"] + "\n")
        f.flush()
        i += n
ts = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
for t in ts: t.start()
for t in ts: t.join()
EOF
	{ "$PYTHON3" load.py & } && lpid=$! && track_pid $lpid &&
	wait_until 20 "test \$(cat confirmed.* 2>/dev/null | wc -l) -gt 500" &&
	kill9_daemon &&
	wait $lpid &&
	cat confirmed.* | sort >confirmed &&
	test $(wc -l <confirmed) -gt 500
'

test_expect_success 'remount: every confirmed push is there, once' '
	remount &&
	python3 <<\EOF
from http_base import *
seen = []
while True:
    st, js = pop("crash", batch=10000)
    if st == 204:
        break
    seen += [m["transactionId"] for m in js["messages"]]
    call("POST", "/api/v1/ack/batch", {"acknowledgments": [{"transactionId": m["transactionId"],
        "partitionId": m["partitionId"], "status": "completed", "leaseId": m["leaseId"]}
        for m in js["messages"]]})
confirmed = open("confirmed").read().split()
eq(len(seen), len(set(seen)), "no message twice")
missing = set(confirmed) - set(seen)
eq(set(), missing, "confirmed pushes lost")
print("confirmed %d, stored %d" % (len(confirmed), len(seen)))
EOF
'

test_done
