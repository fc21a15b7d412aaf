#!/usr/bin/env python3
# apipop.py - batch consume through api/pop the way a Python consumer
# would: pop 1000 under one lease, json.loads the whole answer (every
# payload with it), then commit the span by renaming the last message's
# leased file into ack/.  Usage: apipop.py MOUNT QUEUE SECONDS; stops early
# when the queue runs dry.  Prints "MSGS_PER_S COUNT SECONDS" like the
# other load programs.  The C load program's apipop does the same with
# jansson; `make bench` reports both.
import json
import os
import sys
import time

# one api/ call as the mount tests make it (tests/qapi_base.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from qapi_base import call  # noqa: E402


def main():
    mnt, queue, dur = sys.argv[1], sys.argv[2], float(sys.argv[3])
    qdir = "%s/queues/%s" % (mnt, queue)
    with open(qdir + "/config", "w") as f:
        f.write("batch = 1000\n")
    req = json.dumps({"queue": queue, "batch": 1000}).encode()
    got = 0
    size = 0
    t0 = time.monotonic()
    end = t0 + dur
    while time.monotonic() < end:
        ans, closed = call("pop", req, mnt=mnt)
        if closed != "ok":
            sys.exit("apipop.py: close() of api/pop: " + closed)
        msgs = ans.get("messages") or []
        if not ans.get("success") or not msgs:
            break
        for m in msgs:
            p = m["payload"]
            size += len(p) if isinstance(p, str) else 1
        last = msgs[-1]
        os.rename("%s/leased/%s/%s" % (qdir, last["leaseId"],
                                       last["transactionId"]),
                  "%s/ack/%s" % (qdir, last["transactionId"]))
        got += len(msgs)
    t1 = time.monotonic()
    if got == 0:
        sys.exit("apipop.py: nothing popped from " + queue)
    print("%.1f %d %.3f" % (got / (t1 - t0), got, t1 - t0))


if __name__ == "__main__":
    main()
