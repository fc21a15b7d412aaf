"""http_base - what the HTTP mount tests share: requests to the daemon's
Queen API (http.client, one keep-alive connection per Client), raw socket
exchanges for malformed HTTP, and small checks.  The scripts copy it into
their trash directory and import it from there.  QHTTP is host:port."""
import http.client, json, os, socket, time
QHTTP = os.environ.get("QHTTP", "127.0.0.1:6632")
MNT = os.environ.get("MNT", "")

def check(cond, what):
    if not cond:
        raise SystemExit("FAILED: " + what)

def eq(want, got, what):
    check(want == got, "%s: want %r, got %r" % (what, want, got))

class Client:
    def __init__(self, timeout=30, token=None, addr=None):
        host, port = (addr or QHTTP).rsplit(":", 1)
        self.c = http.client.HTTPConnection(host, int(port), timeout=timeout)
        self.token = token

    def call(self, method, path, body=None, raw=None, headers=None):
        """(status, parsed JSON or None, the headers)"""
        h = {"Content-Type": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(headers or {})
        data = raw if raw is not None else (
            json.dumps(body).encode() if body is not None else None)
        self.c.request(method, path, body=data, headers=h)
        r = self.c.getresponse()
        text = r.read()
        js = None
        if text:
            try:
                js = json.loads(text)
            except ValueError:
                js = text.decode("utf-8", "replace")
        return r.status, js, r

    def close(self):
        self.c.close()

_c = None
def call(method, path, body=None, **kw):
    global _c
    if _c is None:
        _c = Client()
    return _c.call(method, path, body, **kw)

def push(items):
    st, js, _ = call("POST", "/api/v1/push", {"items": items})
    check(st in (200, 201), "push answered %r %r" % (st, js))
    return js

def pop(queue, partition=None, **q):
    path = "/api/v1/pop/queue/" + queue
    if partition:
        path += "/partition/" + partition
    q.setdefault("wait", "false")
    path += "?" + "&".join("%s=%s" % kv for kv in q.items())
    st, js, _ = call("GET", path)
    return st, js

def raw_exchange(data, wait=2.0, chunks=None):
    """Send bytes on a fresh socket, then read until the peer closes or
    wait seconds pass; returns the bytes read."""
    host, port = QHTTP.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.settimeout(wait)
    s.sendall(data)
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        pass
    s.close()
    return out

def stat_of(path, key):
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(" = ")
            if k.strip() == key:
                return v.strip()
    return None
