#!/bin/sh
# fs-0032-bad-input: hostile input through the mount, each answered with
# a precise errno or a JSON error, never a crash and never a partial
# write: file names with every byte, `.` and `..`, 255- and 256-byte
# names, empty and oversize payloads, config garbage, bad seeks, and
# malformed or hostile JSON to each api/ file (the answer says
# bad_request or too_large; close() is 0 once the answer was read, EIO
# when it was not).
. "$(dirname "$0")/lib.sh"
mount_queenfs
export MNT
cp "$TEST_DIRECTORY/qapi_base.py" "$TRASH/" || exit 1

# alive: the daemon runs and answers
alive () {
	kill -0 "$DAEMON_PID" && test "$(cat "$MNT/sys/health")" = ok
}

test_expect_success 'setup' '
	q_init b &&
	echo "max_message_bytes = 1000" >"$Q/config" &&
	printf keep >"$Q/keep"
'

test_expect_success PYTHON 'every byte in a name: valid ones pushed, the rest EINVAL' '
	"$PYTHON3" - "$Q" >bytes.out <<-\EOF &&
	import errno, os, sys
	q = sys.argv[1]
	ok = set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@=+-")
	bad, want = [], set(["keep"])
	def create(name):
	    try:
	        fd = os.open(os.path.join(q.encode(), name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
	    except OSError as e:
	        return "open:" + errno.errorcode[e.errno]
	    try:
	        os.write(fd, b"x")
	        os.close(fd)
	    except OSError as e:
	        return "close:" + errno.errorcode[e.errno]
	    return "ok"
	for b in range(1, 256):
	    if b == ord("/"):
	        continue
	    for name, valid, pushed in ((b"n" + bytes([b]) + b"x", b in ok, b in ok),
	            (bytes([b]) + b"y", b in ok and b != ord("."), b in ok and b != ord(".")),
	            (b"z" + bytes([b]), b in ok, b in ok)):
	        got = create(name)
	        exp = "ok" if valid or name == b".y" else "open:EINVAL"
	        if got != exp:
	            bad.append("%r: want %s, got %s" % (name, exp, got))
	        if pushed:
	            want.add(name.decode())
	# %XX: a byte outside the set, spelled once
	for name, exp in ((b"n%20x", "ok"), (b"n%41x", "open:EINVAL"), (b"n%2", "open:EINVAL"),
	        (b"n%zzx", "open:EINVAL"), (b"%2E", "ok"), (b"%00", "open:EINVAL"),
	        (b"%2e", "open:EINVAL"), (b"%", "open:EINVAL")):
	    got = create(name)
	    if got != exp:
	        bad.append("%r: want %s, got %s" % (name, exp, got))
	    if exp == "ok":
	        want.add(name.decode())
	have = set(os.listdir(os.path.join(q, "partitions", "default")))
	if have != want:
	    bad.append("extra: %s" % sorted(have - want))
	    bad.append("missing: %s" % sorted(want - have))
	for n in have:
	    if n != "keep" and open(os.path.join(q, "partitions", "default", n), "rb").read() != b"x":
	        bad.append("payload of %s" % n)
	print("\n".join(bad))
	print("names %d pushed" % len(want))
	sys.exit(1 if bad else 0)
	EOF
	cat bytes.out &&
	N=$(sed -n "s/^names \([0-9]*\) pushed$/\1/p" bytes.out) &&
	test_is "$N" "$(stat_of "$Q/stats" messages)" messages &&
	alive
'

test_expect_success '. and .. are directories; ..x and .%41 are refused' '
	before=$(stat_of "$Q/stats" messages) &&
	echo open:EISDIR >expect &&
	sysc create "$Q/." x >actual && test_cmp expect actual &&
	sysc create "$Q/.." x >actual && test_cmp expect actual &&
	sysc create "$Q/partitions/default/.." x >actual && test_cmp expect actual &&
	echo open:EINVAL >expect &&
	sysc create "$Q/..x" x >actual && test_cmp expect actual &&
	sysc create "$Q/.%41" x >actual && test_cmp expect actual &&
	echo mkdir:EEXIST >expect &&
	sysc mkdir "$MNT/queues/.." >actual && test_cmp expect actual &&
	echo mkdir:EINVAL >expect &&
	sysc mkdir "$MNT/queues/..q" >actual && test_cmp expect actual &&
	sysc mkdir "$MNT/queues/.q" >actual && test_cmp expect actual &&
	test_is "$before" "$(stat_of "$Q/stats" messages)" messages &&
	ls "$MNT/queues" >actual && echo b >expect && test_cmp expect actual
'

test_expect_success '255-byte names work, 256 bytes is ENAMETOOLONG' '
	before=$(stat_of "$Q/stats" messages) &&
	n255=$(printf "%0255d" 0 | tr 0 a) && n256=${n255}b &&
	echo ok >expect &&
	sysc create "$Q/$n255" x >actual && test_cmp expect actual &&
	test -f "$Q/partitions/default/$n255" &&
	sysc create "$Q/partitions/p255/.$(printf "%0254d" 0 | tr 0 s)" x >actual &&
	test_cmp expect actual &&
	echo open:ENAMETOOLONG >expect &&
	sysc create "$Q/$n256" x >actual && test_cmp expect actual &&
	sysc create "$Q/partitions/$n256/m" x >actual && test_cmp expect actual &&
	echo mkdir:ENAMETOOLONG >expect &&
	sysc mkdir "$MNT/queues/$n256" >actual && test_cmp expect actual &&
	echo ok >expect &&
	sysc mkdir "$MNT/queues/$n255" >actual && test_cmp expect actual &&
	rmdir "$MNT/queues/$n255" &&
	test_is $((before + 1)) "$(stat_of "$Q/stats" messages)" messages
'

test_expect_success 'an empty payload is one message' '
	before=$(stat_of "$Q/stats" messages) &&
	: >"$Q/empty1" &&
	touch "$Q/empty2" &&
	test_is $((before + 2)) "$(stat_of "$Q/stats" messages)" messages &&
	test_is 0 "$(stat -c %s "$Q/partitions/default/empty1")" size &&
	test_is 0 "$(wc -c <"$Q/partitions/default/empty2")" bytes
'

test_expect_success 'max_message_bytes exactly is fine, one more is EFBIG at write' '
	before=$(stat_of "$Q/stats" messages) &&
	echo ok >expect &&
	sysc create "$Q/max" "$(printf "%01000d" 7)" >actual && test_cmp expect actual &&
	test_is 1000 "$(wc -c <"$Q/partitions/default/max")" bytes &&
	echo write:EFBIG >expect &&
	sysc create "$Q/over" "$(printf "%01001d" 7)" >actual && test_cmp expect actual &&
	sysc create "$Q/partitions/p2/over" "$(printf "%01001d" 7)" >actual && test_cmp expect actual &&
	test_path_is_missing "$Q/partitions/default/over" &&
	test_path_is_missing "$Q/partitions/p2/over" &&
	test_is $((before + 1)) "$(stat_of "$Q/stats" messages)" messages
'

test_expect_success PYTHON 'config garbage: EINVAL, nothing changed' '
	cat "$Q/config" >config.before &&
	"$PYTHON3" - "$Q/config" >cfg.out <<-\EOF &&
	import errno, os, sys
	path = sys.argv[1]
	cases = [
	    b"\x00\x01\x02\xff\xfe binary junk\x00\n",
	    b"lease_time = " + b"9" * 100000 + b"\n",
	    b"x" * 200000 + b"\n",
	    b"lease_time = 99999999999999999999\n",
	    b"retry_limit = 99999999999999999999999999999999\n",
	    b"lease_time = -5\n",
	    b"max_message_bytes = -1\n",
	    b"wait = -0.5\n",
	    b"lease_time 60\n",
	    b"lease_time\n",
	    b"= 60\n",
	    b"lease_time = \n",
	    b"lease_time = 60\nbatch = lots\n",
	    b"batch = 2\nno_such_key = 1\n",
	    b"lease_time = 6\x000\n",
	    b"lease_time = \xff\xfe\n",
	    b"dlq = maybe\n",
	    b"lease_time = 1e3\n",
	    b"lease_time = 0x10\n",
	]
	bad = 0
	for c in cases:
	    try:
	        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
	    except OSError as e:
	        print("open:%s %r" % (errno.errorcode[e.errno], c[:40])); bad += 1; continue
	    got = "ok"
	    try:
	        while c:
	            c = c[os.write(fd, c):]
	    except OSError as e:
	        got = "write:" + errno.errorcode[e.errno]
	    try:
	        os.close(fd)
	    except OSError as e:
	        if got == "ok":
	            got = "close:" + errno.errorcode[e.errno]
	    print(got)
	EOF
	sort -u cfg.out >actual &&
	printf "%s\n" write:EFBIG write:EINVAL >expect &&
	test_cmp expect actual &&
	test_line_count = 19 cfg.out &&
	cat "$Q/config" >config.after &&
	test_cmp config.before config.after &&
	alive
'

test_expect_success PYTHON 'seek: negative offsets and garbage are EINVAL' '
	G="$Q/groups/s" &&
	mkdir "$G" &&
	echo "batch = 1" >"$G/config" &&
	cat "$G/stats" >stats.before &&
	"$PYTHON3" - "$G/seek" >seek.out <<-\EOF &&
	import errno, os, sys
	path = sys.argv[1]
	for c in [b"-1\n", b"-9223372036854775808\n", b"default -1\n", b"default -3\n",
	        b"garbage\n", b"99999999999999999999999\n", b"default\n", b"\n", b"",
	        b"1 2 3 4\n", b"\x00\xff\n", b"2021-13-45T99:99:99Z\n", b"start end\n",
	        b"nosuchpartition 1\n" + b"x" * 100000, b"1.5\n", b"+-1\n"]:
	    got = "ok"
	    try:
	        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
	        try:
	            os.write(fd, c)
	        finally:
	            os.close(fd)
	    except OSError as e:
	        got = errno.errorcode[e.errno]
	    print("%s %r" % (got, c[:30]))
	EOF
	cat seek.out &&
	# `start end` names a partition start that is not there; an empty
	# write never reaches the daemon
	grep -v -e "^EINVAL " -e "^ENOENT b.start end" -e "^ok b..$" seek.out >other;
	test_line_count = 0 other &&
	grep -q "^ENOENT b.start end" seek.out &&
	test_line_count = 16 seek.out &&
	cat "$G/stats" >stats.after &&
	test_cmp stats.before stats.after &&
	alive
'

# sh ignores what close() answers: a seek refused only there would look
# done.  Offset 0 is refused at the write(2), as a line that does not parse.
test_expect_success 'seek: offset 0 fails at its write, which sh reports' '
	test_must_fail sh -c "printf \"0\\n\" >\"$Q/groups/s/seek\"" &&
	test_must_fail sh -c "printf \"default 0\\n\" >\"$Q/groups/s/seek\"" &&
	grep -c "groups/s/seek: offsets start at 1; nothing will be applied" \
	    "$DAEMON_LOG" >n &&
	test_is 2 "$(cat n)" "logged twice"
'

# the rename returns once the message is stored (a plain close() does
# not wait, and rm of a push not yet published discards it)
test_expect_success 'rm of a stored message and rmdir of ack/: EPERM, logged' '
	printf keep >"$Q/.rmme" &&
	mv "$Q/.rmme" "$Q/rmme" &&
	test_must_fail rm "$Q/rmme" &&
	test_must_fail rm "$Q/partitions/default/rmme" &&
	test_must_fail rmdir "$Q/ack" &&
	test_is keep "$(cat "$Q/rmme")" "the message" &&
	grep -c "unlink queues/b.*/rmme: a stored message stays" "$DAEMON_LOG" >n &&
	test_is 2 "$(cat n)" "both unlinks logged" &&
	grep -q "rmdir queues/b/ack: only a queue, a group or a KV namespace is removed (EPERM)" "$DAEMON_LOG"
'

test_expect_success PYTHON 'hostile JSON to each api/ file: a JSON error, nothing written' '
	ls -R "$MNT/queues" >tree.before &&
	cat "$Q/stats" >stats.before &&
	"$PYTHON3" - >json.out <<-\EOF &&
	import errno, json, os
	from qapi_base import MNT, answer, call_raw as call
	deep = b"[" * 100000 + b"]" * 100000
	deepo = b"{\"a\":" * 100000 + b"1" + b"}" * 100000
	common = [b"", b"{", b"}", b"null", b"[]", b"\"str\"", b"42", deep, deepo,
	    b"{\"queue\": \"b\"\x00, \"items\": []}", b"\x00" * 100,
	    b"{\"queue\": \"\xff\xfe\", \"items\": [{\"queue\": \"\xc3\x28\", \"payload\": 1}]}",
	    b"{\"items\": [{\"queue\": \"b\", \"payload\": 1}]" + b" " * 10 + b"garbage",
	    b"{\"a\": 1e99999}", b"{\"a\": " + b"9" * 100000 + b"}",
	    b"{\"queue\": \"b\", \"queue\": \"b\", \"items\": [], \"items\": []}",
	    b"\xef\xbb\xbf{}", b"{\"a\": \"\\ud800\"}", b"{'"'"'a'"'"': 1}"]
	per = {
	    "push": [{"items": "x"}, {"items": [1]}, {"items": [{"queue": 5, "payload": 1}]},
	        {"items": [{"queue": "b", "payload": 1, "transactionId": 7}]},
	        {"items": [{"queue": "b", "payload": 1, "partition": []}]},
	        {"items": [{"queue": "b", "payload": 1, "transactionId": ""}]},
	        {"items": [{"queue": "b/../c", "payload": 1}]},
	        {"items": [{"queue": "b", "payload": 1, "transactionId": "ok-1"}, {"queue": "b"}]},
	        {"items": [{"queue": "b", "payload": 1, "partition": "../x"}]},
	        {"items": [{"queue": "b", "payload": 1, "transactionId": "t" * 5000}]}],
	    "pop": [{"queue": 5}, {"queue": "b", "batch": "x"}, {"queue": "b", "batch": -1},
	        {"queue": "b", "batch": 99999999999999999999999}, {"queue": "b", "wait": "x"}, {"queue": "b", "wait": -1},
	        {"queue": "b", "autoAck": "yes"}, {"queue": "b", "consumerGroup": 3},
	        {"queue": "b", "partition": {}}],
	    "ack": [{"transactionId": 1, "partitionId": "x"}, {"acknowledgments": "x"},
	        {"consumerGroup": "g", "acknowledgments": [1, 2]},
	        {"transactionId": "keep"},
	        {"transactionId": "keep", "partitionId": [], "status": 3}],
	    "transaction": [{"operations": "x"}, {"operations": [{"type": "nuke"}]},
	        {"operations": [{"type": "push", "queue": "b", "items": "x"}]},
	        {"kv": [{"op": "put", "ns": 5, "key": "k", "value": 1}]},
	        {"kv": [{"op": "incr", "ns": "n", "key": "k", "by": 1e400}]},
	        {"kv": [{"op": "incr", "ns": "n", "key": "k", "by": "x"}]},
	        {"timers": [{"op": "schedule", "queue": "b", "key": "k", "delay": -1, "payload": 1}]},
	        {"timers": [{"op": "schedule", "queue": "b", "key": 5, "payload": 1}]},
	        {"operations": [{"type": "push", "queue": "b", "items": [{"transactionId": "tx-ok", "payload": 1}]}],
	         "kv": [{"op": "put", "ns": "n", "key": "k", "value": 1, "ttl": "long"}]},
	        {"requiredLeases": "x"}, {"requiredLeases": [5]}],
	    "renew": [{"leaseId": 5}, {"leaseId": "x", "seconds": "y"}, {"leaseId": "x", "seconds": -5},
	        {"seconds": 10}],
	}
	fails = 0
	for ep in ("push", "pop", "ack", "transaction", "renew"):
	    bodies = common + [json.dumps(b).replace("Infinity", "1e400").encode() for b in per[ep]]
	    for body in bodies:
	        out, c = call(ep, body)
	        reason = "?"
	        try:
	            a = json.loads(out)
	            if isinstance(a, dict) and a.get("success") is False:
	                reason = a.get("reason", "?")
	            else:
	                reason = "answered " + out[:80].decode("utf-8", "replace")
	        except Exception:
	            reason = "not json: %r" % (out[:60] if out is not None else None)
	        good = reason in ("bad_request", "too_large") and c == "ok"
	        # the same body again, closed unread: EIO
	        fd = os.open(MNT + "/api/" + ep, os.O_RDWR)
	        d = body
	        while d:
	            d = d[os.write(fd, d):]
	        _, c2 = answer(fd, read=False)
	        # (an empty body is no request at all: nothing to fail)
	        good = good and c2 == ("ok" if body == b"" else "EIO")
	        print("%s %s %s %s %s %r" % ("ok" if good else "BAD", ep, reason, c, c2, body[:50]))
	    print("# %s: %d bodies" % (ep, len(bodies)))
	EOF
	grep -c . json.out &&
	! grep "^BAD" json.out &&
	ls -R "$MNT/queues" >tree.after &&
	test_cmp tree.before tree.after &&
	cat "$Q/stats" >stats.after &&
	test_cmp stats.before stats.after &&
	test_path_is_missing "$MNT/kv/n/k" &&
	alive
'

test_expect_success PYTHON 'a body over the limit answers too_large' '
	cat "$Q/stats" >stats.before &&
	"$PYTHON3" - >big.out <<-\EOF &&
	import json, os
	fd = os.open(os.environ["MNT"] + "/api/push", os.O_RDWR)
	chunk = b" " * (1 << 20)
	head = b"{\"items\": [{\"queue\": \"b\", \"payload\": \""
	os.write(fd, head)
	err = None
	try:
	    for i in range(65):
	        os.write(fd, chunk)
	except OSError as e:
	    err = e.errno
	out = os.read(fd, 65536)
	try:
	    os.close(fd)
	except OSError:
	    pass
	print(err, out[:200].decode())
	EOF
	cat big.out &&
	grep -q "\"reason\":\"too_large\"" big.out &&
	cat "$Q/stats" >stats.after &&
	test_cmp stats.before stats.after &&
	alive
'

test_done
