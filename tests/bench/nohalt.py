#!/usr/bin/env python3
# nohalt.py CMD [ARGS...]: run CMD while /dev/cpu_dma_latency is held at
# 0, so that an idle CPU polls rather than halts.  On a virtual machine a
# halt exits to the host, and the wake-up that ends it waits on the host
# too; the bench runs a few figures both ways to show what that costs.
# Needs root; the setting ends when this process closes the device.
import os
import struct
import subprocess
import sys

fd = os.open("/dev/cpu_dma_latency", os.O_WRONLY)
os.write(fd, struct.pack("i", 0))
rc = subprocess.call(sys.argv[1:])
os.close(fd)
sys.exit(rc)
