#!/usr/bin/env python3
# dirqload.py - the dirq peer of `make bench`: python3-dirq's QueueSimple on
# a local (ext4) directory, one thread.  add = add(); cycle = add + lock +
# get + remove.  Usage: dirqload.py DIR add|cycle SECONDS; prints
# "OPS_PER_S COUNT SECONDS" like the other load programs.
import sys
import time

from dirq.QueueSimple import QueueSimple


def main():
    path, mode, dur = sys.argv[1], sys.argv[2], float(sys.argv[3])
    q = QueueSimple(path)
    body = b"x" * 200
    n = 0
    t0 = time.monotonic()
    end = t0 + dur
    while time.monotonic() < end:
        name = q.add(body)
        if mode == "cycle":
            if not q.lock(name):
                sys.exit("dirqload: lock failed")
            q.get(name)
            q.remove(name)
        n += 1
    t1 = time.monotonic()
    print("%.1f %d %.3f" % (n / (t1 - t0), n, t1 - t0))


if __name__ == "__main__":
    main()
