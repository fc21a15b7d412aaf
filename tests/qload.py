"""qload.py - the producer and the consumer of the conservation tests on
several mounts (fs-0041, fs-0043), run in the test's temp dir, each until
./stop exists.  They record what the mount confirmed; the tests check it.

  qload.py produce MNT QUEUE WHO [PAUSE [CAP]]
      pushes WHO-1, WHO-2, ... into partition p(seq % 4) of QUEUE, a file
      each, PAUSE seconds apart (default 0.005), at most CAP of them
      (default: no end).  pushed.WHO gets a name once its close()
      returned 0; refused.WHO "name errno" for each one refused (its
      number is skipped).
  qload.py consume MNT QUEUE WHO
      reads next and acks by rename(2) into ack/, until ./stop exists and
      next answered ENODATA twice in a row.  deliv.WHO: "t txid offset"
      per message read; tried.WHO: the txid of each ack tried; acked.WHO:
      "t_start t_done txid offset" per rename() that returned 0; errs.WHO:
      "call errno" per failed call.  Times: CLOCK_MONOTONIC ns.

A failed call waits 50 ms (a killed daemon answers ENOTCONN until it is
mounted again).  Once ./stop exists, 100 failed calls of next in a row end
the consumer with an error: the mount stays broken.
"""
import errno
import os
import sys
import time

PAUSE_ERR = 0.05


def produce(mnt, queue, who, pause=0.005, cap=None):
    q = os.path.join(mnt, "queues", queue)
    log = open("pushed." + who, "a")
    bad = open("refused." + who, "a")
    seq = 0
    while not os.path.exists("stop"):
        if cap is not None and seq >= cap:
            time.sleep(0.1)
            continue
        seq += 1
        time.sleep(pause)
        name = "%s-%d" % (who, seq)
        try:
            fd = os.open("%s/partitions/p%d/%s" % (q, seq % 4, name),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, b"payload of " + name.encode())
            finally:
                os.close(fd)
        except OSError as e:
            bad.write("%s %s\n" % (name, e.errno))
            bad.flush()
            time.sleep(PAUSE_ERR)
            continue
        log.write(name + "\n")
        log.flush()


def record(f, line):
    f.write(line + "\n")
    f.flush()


def consume(mnt, queue, who):
    q = os.path.join(mnt, "queues", queue)
    deliv = open("deliv." + who, "a")
    acked = open("acked." + who, "a")
    tried = open("tried." + who, "a")
    errs = open("errs." + who, "a")
    idle = failed = 0
    while not (os.path.exists("stop") and idle >= 2):
        try:
            with open(q + "/next", "rb") as f:
                line = f.read().decode().strip()
        except (OSError, TypeError) as e:
            # TypeError: CPython's read of an aborted FUSE connection
            code = getattr(e, "errno", None) or errno.ENOTCONN
            if code == errno.ENODATA:
                idle += 1
                continue
            record(errs, "next %s" % code)
            failed += 1
            if os.path.exists("stop") and failed > 100:
                sys.exit("consumer %s: %s" % (who, e))
            time.sleep(PAUSE_ERR)
            continue
        failed = 0
        if not line:
            continue
        idle = 0
        t = time.monotonic_ns()
        txid = line.rsplit("/", 1)[1]
        try:
            off = int(os.getxattr(q + "/" + line, "user.queen.offset"))
        except OSError:
            off = -1
        record(deliv, "%d %s %d" % (t, txid, off))
        record(tried, txid)
        t0 = time.monotonic_ns()
        try:
            os.rename(q + "/" + line, q + "/ack/" + txid)
        except OSError as e:
            record(errs, "rename %s" % e.errno)
            time.sleep(PAUSE_ERR)
            continue
        record(acked, "%d %d %s %d" % (t0, time.monotonic_ns(), txid, off))


def main(argv):
    if len(argv) >= 5 and argv[1] == "produce":
        pause = float(argv[5]) if len(argv) > 5 else 0.005
        cap = int(argv[6]) if len(argv) > 6 else None
        produce(argv[2], argv[3], argv[4], pause, cap)
    elif len(argv) == 5 and argv[1] == "consume":
        consume(argv[2], argv[3], argv[4])
    else:
        sys.exit("usage: qload.py produce MNT QUEUE WHO [PAUSE [CAP]] | "
                 "consume MNT QUEUE WHO")


if __name__ == "__main__":
    main(sys.argv)
