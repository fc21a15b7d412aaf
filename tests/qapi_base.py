"""qapi_base - what the api/ mount tests share: one call to an api/ file
(write the request, read the answer, report how close() went), and small
checks and readers of the mount.  The scripts that talk to api/ copy it
into their trash directory and import it from there."""
import errno, json, os, re, time
MNT = os.environ.get("MNT", "")

def answer(fd, read=True):
    """Read the whole answer (unless read is False), then close(fd):
    (the bytes read, and how close() went: "ok" or an errno name)."""
    out = b""
    while read:
        b = os.read(fd, 65536)
        if not b:
            break
        out += b
    try:
        os.close(fd)
        c = "ok"
    except OSError as e:
        c = errno.errorcode[e.errno]
    return out, c

def call_raw(ep, data, read=True, mnt=None):
    """Write the bytes data to api/EP of mnt (default: $MNT) and take the
    answer: (bytes, close outcome), or (None, "write:ERRNO") when a write
    is refused."""
    fd = os.open((mnt or MNT) + "/api/" + ep, os.O_RDWR)
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError as e:
        os.close(fd)
        return None, "write:" + errno.errorcode[e.errno]
    return answer(fd, read)

def call(ep, body, read=True, mnt=None):
    """One api/ call: (the answer parsed, or None unread; close outcome)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    out, c = call_raw(ep, data, read, mnt)
    return (json.loads(out) if read and out is not None else None), c

def api(ep, body, mnt=None):
    ans, c = call(ep, body, mnt=mnt)
    eq("ok", c, "close() after reading the answer of api/" + ep)
    return ans

def eq(want, got, what=""):
    if want != got:
        raise SystemExit("%s: want %r, got %r" % (what, want, got))

def check(cond, what):
    if not cond:
        raise SystemExit("check failed: " + what)

def stats(q, group=None):
    p = MNT + "/queues/" + q + ("/groups/" + group if group else "") + "/stats"
    s = {}
    for line in open(p):
        m = re.match(r"partition (\S+): committed = (\d+)", line)
        if m:
            s["committed " + m.group(1)] = int(m.group(2))
        elif " = " in line:
            k, v = line.rstrip("\n").split(" = ", 1)
            s[k] = v
    return s

def committed(q, part="default", group=None):
    return stats(q, group).get("committed " + part, 0)

def ls(path):
    try:
        return sorted(os.listdir(MNT + "/" + path))
    except FileNotFoundError:
        return None
