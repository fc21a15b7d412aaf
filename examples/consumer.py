#!/usr/bin/env python3
"""consumer.py - a queenfs consumer in Python, with error handling.

Reads `next` to lease a batch, processes each payload, and renames the
message into ack/ when the work succeeded or into failed/ when it raised,
after attaching the reason as the user.queen.error xattr (the DLQ keeps
it once the retry budget is spent).  Every rename outcome of the mount is
handled: ESTALE (the lease ran out: someone else will get the message),
EALREADY and ENOENT (nothing left to do).  As the seed's sequential
pattern says, a failed message or a refused ack ends the batch: the rest
redelivers.  Ctrl-C ends a waiting read at once and exits; any error of
`next` other than "nothing to pop" (the queue or the mount gone) exits 1.

usage: consumer.py QUEUE_DIR [--drain]
  --drain   exit when the queue stays empty for the queue's `wait` seconds
QUEUE_DIR may be a consumer group's directory, QUEUE_DIR/groups/G, once
`mkdir` has made the group.
The work here parses a JSON object and requires an "id"; replace handle().
"""
import errno
import json
import os
import sys


def log(msg):
    print("consumer: " + msg, file=sys.stderr, flush=True)


def handle(payload):
    """The work.  Raise to fail the message."""
    doc = json.loads(payload)
    if not isinstance(doc, dict) or "id" not in doc:
        raise ValueError("no id in the message")
    print("processed id %s" % doc["id"], flush=True)


def settle(qdir, rel, target):
    """Rename leased/<lease>/<txid> into target/ (ack, failed, retry, dlq)."""
    src = os.path.join(qdir, rel)
    dst = os.path.join(qdir, target, os.path.basename(rel))
    try:
        os.rename(src, dst)
        return True
    except OSError as e:
        if e.errno == errno.ESTALE:
            log("%s: lease expired or taken over; it will be redelivered" % rel)
        elif e.errno == errno.EALREADY:
            log("%s: already committed" % rel)
        elif e.errno == errno.ENOENT:
            log("%s: no longer known to the queue" % rel)
        else:
            raise
        return False


def pop(qdir):
    """Lease the next batch: a list of leased/<lease>/<txid> paths, or []."""
    # One open is one pop: read to EOF, never reopen to read the rest.
    with open(os.path.join(qdir, "next"), "rb", buffering=0) as f:
        return f.read().decode().split()


def main(argv):
    if len(argv) < 2:
        print("usage: consumer.py QUEUE_DIR [--drain]", file=sys.stderr)
        return 2
    qdir, drain = argv[1], "--drain" in argv[2:]
    while True:
        try:
            batch = pop(qdir)
        except OSError as e:
            if e.errno in (errno.ENODATA, errno.EAGAIN):
                if drain:
                    return 0
                continue
            log("reading next: %s" % e.strerror)
            return 1
        for rel in batch:
            path = os.path.join(qdir, rel)
            try:
                with open(path, "rb") as f:
                    payload = f.read()
                handle(payload)
            except Exception as exc:  # the work failed: say why, then fail it
                reason = ("%s: %s" % (type(exc).__name__, exc))[:1000]
                log("%s failed: %s" % (rel, reason))
                try:
                    os.setxattr(path, "user.queen.error", reason.encode())
                except OSError as e:
                    log("%s: cannot attach the error: %s" % (rel, e.strerror))
                settle(qdir, rel, "failed")
                # the seed's sequential pattern: the nack released the
                # lease and the rest of the batch redelivers
                break
            if not settle(qdir, rel, "ack"):
                break  # the lease is gone: every later ack would fail too


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except KeyboardInterrupt:
        sys.exit(130)
