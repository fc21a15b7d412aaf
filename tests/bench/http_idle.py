"""http_idle - `make bench`'s resident-size figure of the HTTP daemon: open
N keep-alive connections to 127.0.0.1:PORT, make one request on each, keep
them idle, then print the daemon's VmRSS in MiB.
Usage: http_idle.py PORT PID N"""
import socket
import sys
import time

port, pid, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
conns = []
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: b\r\n\r\n")
    s.recv(4096)
    conns.append(s)
time.sleep(0.5)
with open("/proc/%s/status" % pid) as f:
    for line in f:
        if line.startswith("VmRSS:"):
            print("%.1f" % (int(line.split()[1]) / 1024))
for s in conns:
    s.close()
