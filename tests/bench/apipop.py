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

CHUNK = 64 * 1024   # one FUSE READ each, as in loadapi.c


def call(mnt, endpoint, body):
    fd = os.open("%s/api/%s" % (mnt, endpoint), os.O_RDWR)
    try:
        os.write(fd, body)
        parts = []
        while True:
            b = os.read(fd, CHUNK)
            if not b:
                break
            parts.append(b)
    finally:
        os.close(fd)
    return json.loads(b"".join(parts))


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
        ans = call(mnt, "pop", req)
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
