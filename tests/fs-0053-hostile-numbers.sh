#!/bin/sh
# fs-0053-hostile-numbers: numbers past every limit, through the mount
# (README "Limits"): dates after 9999-12-31 on timers and leases, dates at
# or before 1970 on timers (due in the past: they fire at once), atime-only
# touches, api/ waits, renews, TTLs, timer times and KV increments past
# their maxima or past 64 bits, and config values that overflow.  Each is
# refused with a precise errno or a bad_request answer, the daemon's log
# names the reason, and the store is as it was (stats, timers, KV value,
# lease expiry).
. "$(dirname "$0")/lib.sh"
mount_queenfs
export MNT
cp "$TEST_DIRECTORY/qapi_base.py" "$TRASH/" || exit 1

# mtime_ms FILE: the modification time in ms
mtime_ms () {
	"$PYTHON3" -c 'import os, sys; print(os.stat(sys.argv[1]).st_mtime_ns // 1000000)' "$1"
}

# logged TEXT: the daemon's log holds TEXT (a fixed string)
logged () {
	grep -F -q -- "$1" "$DAEMON_LOG" && return 0
	echo "the daemon log has no line with: $1"
	tail -n 5 "$DAEMON_LOG"
	return 1
}

test_expect_success 'setup: queue n, a timer k due in 2100, timer_delay = 3600' '
	q_init n &&
	echo "timer_delay = 3600" >"$Q/config" &&
	printf pay >"$Q/timers/k" &&
	touch -d @4102444800 "$Q/timers/k" &&
	test_is 4102444800000 "$(mtime_ms "$Q/timers/k")" "due time"
'

test_expect_success 'touch -d after 9999-12-31 on a timer: EINVAL, the timer keeps its time' '
	test_must_fail touch -d @18446744073709552 "$Q/timers/k" 2>err &&
	grep -q "Invalid argument" err &&
	logged "timers/k: mtime 18446744073709552 s is after 9999-12-31 (EINVAL)" &&
	test_must_fail touch -d @253402300800 "$Q/timers/k" &&
	test_is 4102444800000 "$(mtime_ms "$Q/timers/k")" "due time" &&
	test_is 0 "$(stat_of "$Q/stats" pushed)" pushed &&
	ls "$Q/timers" >actual && echo k >expect && test_cmp expect actual
'

test_expect_success 'the last millisecond of 9999 is taken, with its nanoseconds' '
	touch -d @253402300799.999999999 "$Q/timers/k" &&
	test_is 253402300799999 "$(mtime_ms "$Q/timers/k")" "due time" &&
	touch -d @4102444800.123456789 "$Q/timers/k" &&
	test_is 4102444800123 "$(mtime_ms "$Q/timers/k")" "due time (ms of the ns)"
'

test_expect_success 'an atime-only touch (mtime UTIME_OMIT) leaves a timer alone' '
	touch -a "$Q/timers/k" &&
	touch -a -d @1 "$Q/timers/k" &&
	test_is 4102444800123 "$(mtime_ms "$Q/timers/k")" "due time" &&
	test_is 0 "$(stat_of "$Q/stats" pushed)" pushed
'

test_expect_success 'a timer dated at 1970 or before is due in the past: it fires at once' '
	printf zero >"$Q/timers/z" &&
	touch -d @0 "$Q/timers/z" &&
	printf neg >"$Q/timers/m" &&
	touch -d "1960-01-01 00:00:00Z" "$Q/timers/m" &&
	wait_until 20 "test \$(stat_of \"\$Q/stats\" pushed) = 2" &&
	ls "$Q/timers" >actual && echo k >expect && test_cmp expect actual
'

test_expect_success 'touch -d after 9999 on a lease: EINVAL, its expiry unchanged' '
	echo "lease_time = 600" >"$Q/config" &&
	printf one >"$Q/m1" &&
	LINE=$(pop) &&
	MSG="$Q/$LINE" &&
	getfattr --only-values -n user.queen.lease_expires_at "$MSG" >before &&
	test_must_fail touch -d @18446744073709552 "$MSG" &&
	test_must_fail touch -d @18446744073709552 "$(dirname "$MSG")" &&
	logged "mtime 18446744073709552 s is after 9999-12-31 (EINVAL)" &&
	getfattr --only-values -n user.queen.lease_expires_at "$MSG" >after &&
	test_cmp before after &&
	test -e "$MSG"
'

test_expect_success PYTHON 'api/pop: a wait past a day, or not an integer, is bad_request' '
	"$PYTHON3" <<-\EOF
	from qapi_base import *
	for w in (2**63 - 1, 86401, -1, 1.5, 1e308, "5", True, [1]):
	    a, c = call("pop", {"queue": "n", "wait": w})
	    eq("ok", c, "close after %r" % (w,))
	    eq(False, a["success"], "wait %r: success" % (w,))
	    eq("bad_request", a["reason"], "wait %r: reason" % (w,))
	for body in (b"{\"queue\": \"n\", \"wait\": 9223372036854775808}",
	        b"{\"queue\": \"n\", \"wait\": -0}", b"{\"queue\": \"n\", \"batch\": 1e400}"):
	    a, c = call("pop", body)
	    if body.endswith(b"-0}"):
	        check(a["success"] is not False or a.get("reason") != "bad_request", "wait -0 is 0")
	    else:
	        eq("bad_request", a["reason"], "%r: reason" % (body,))
	EOF
	logged "wait'"'"' is a number of seconds, 0 to 86400"
'

test_expect_success PYTHON 'api/renew: seconds past 100 years are bad_request, the lease unchanged' '
	"$PYTHON3" - "$MSG" <<-\EOF
	import sys
	from qapi_base import *
	msg = sys.argv[1]
	lease = os.path.basename(os.path.dirname(msg))
	before = os.getxattr(msg, "user.queen.lease_expires_at")
	for s in (9300000000000000, 3153600001, 2**63 - 1, 9.3e15, -1, "10", False):
	    a, c = call("renew", {"leaseId": lease, "seconds": s})
	    eq("ok", c, "close after %r" % (s,))
	    eq(False, a["success"], "seconds %r: success" % (s,))
	    eq("bad_request", a["reason"], "seconds %r: reason" % (s,))
	eq(before, os.getxattr(msg, "user.queen.lease_expires_at"), "lease expiry")
	a = api("renew", {"leaseId": lease, "seconds": 3153600000})
	eq(True, a["success"], "100 years is taken")
	check(a["expiresAt"] > 3153600000000, "expiresAt %r" % a["expiresAt"])
	EOF
	logged "seconds from 0 to 3153600000 (100 years)"
'

test_expect_success PYTHON 'api/transaction: incr past INT64_MAX (or below INT64_MIN) is bad_request, the value kept' '
	"$PYTHON3" <<-\EOF
	from qapi_base import *
	with open(MNT + "/kv/nums/big", "w") as f:
	    f.write(str(2**63 - 2))
	with open(MNT + "/kv/nums/small", "w") as f:
	    f.write(str(-2**63 + 1))
	with open(MNT + "/kv/nums/huge", "w") as f:
	    f.write("99999999999999999999")
	for key, by in (("big", 2), ("big", 2**63 - 1), ("small", -2), ("huge", 1)):
	    a = api("transaction", {"kv": [{"op": "incr", "ns": "nums", "key": key, "by": by}]})
	    eq(False, a["success"], "incr %s by %r: success" % (key, by))
	    eq("bad_request", a["reason"], "incr %s by %r: reason" % (key, by))
	eq(str(2**63 - 2), open(MNT + "/kv/nums/big").read(), "big kept")
	eq(str(-2**63 + 1), open(MNT + "/kv/nums/small").read(), "small kept")
	eq("99999999999999999999", open(MNT + "/kv/nums/huge").read(), "huge kept")
	a = api("transaction", {"kv": [{"op": "incr", "ns": "nums", "key": "big", "by": 1}]})
	eq(True, a["success"], "up to INT64_MAX is taken")
	eq(str(2**63 - 1), open(MNT + "/kv/nums/big").read(), "big at the top")
	EOF
	logged "incr of '"'"'big'"'"' by 2 overflows a 64-bit integer"
'

test_expect_success PYTHON 'api/transaction: timer times and KV ttls out of range are bad_request' '
	"$PYTHON3" <<-\EOF
	from qapi_base import *
	def listing():
	    return sorted((t, os.stat(MNT + "/queues/n/timers/" + t).st_mtime_ns)
	        for t in os.listdir(MNT + "/queues/n/timers"))
	before = listing()
	for t in ({"dueAt": 2**63 - 1}, {"dueAt": 253402300800000}, {"dueAt": -1},
	        {"dueAt": "10000-01-01T00:00:00Z"}, {"delay": 2**62}, {"delay": "9223372036854775s"},
	        {"delay": -5}, {"delay": 1.5}, {"delay": True}):
	    op = dict({"op": "schedule", "queue": "n", "key": "k", "payload": "x"}, **t)
	    a = api("transaction", {"timers": [op]})
	    eq(False, a["success"], "%r: success" % (t,))
	    eq("bad_request", a["reason"], "%r: reason" % (t,))
	eq(before, listing(), "timers unchanged")
	for ttl in (2**62, "9223372036854775s", "3153600001s", -1, 1e308):
	    a = api("transaction", {"kv": [{"op": "put", "ns": "nums", "key": "t", "value": 1, "ttl": ttl}]})
	    eq(False, a["success"], "ttl %r: success" % (ttl,))
	    eq("bad_request", a["reason"], "ttl %r: reason" % (ttl,))
	check(not os.path.exists(MNT + "/kv/nums/t"), "no key t")
	EOF
	logged "due at 9223372036854775807 ms: outside 0..253402300799999"
'

test_expect_success ATTR 'setfattr user.queen.ttl past 100 years: EINVAL, no expiry set' '
	printf v >"$MNT/kv/nums/v" &&
	test_must_fail setfattr -n user.queen.ttl -v 999999999999 "$MNT/kv/nums/v" &&
	test_must_fail setfattr -n user.queen.ttl -v 99999999999999999999 "$MNT/kv/nums/v" &&
	test_must_fail setfattr -n user.queen.ttl -v -5 "$MNT/kv/nums/v" &&
	test_must_fail getfattr -n user.queen.ttl "$MNT/kv/nums/v" &&
	logged "user.queen.ttl: ttl outside 0..3153600000 s (100 years)" &&
	setfattr -n user.queen.ttl -v 3153600000 "$MNT/kv/nums/v" &&
	test_is 3153600000 "$(getfattr --only-values -n user.queen.ttl "$MNT/kv/nums/v")" ttl
'

test_expect_success PYTHON 'config: numbers past 64 bits, negative, floats and overflowing units are EINVAL' '
	cp "$Q/config" before &&
	for v in 9999999999999999999 18446744073709551616 -1 -0 1e400 1.5 0x10 \
	    99999999999999999d 9223372036854775807 3153600001 36500001d 5m5 \
	    "" "5 m" 1e3; do
		sysc write "$Q/config" "lease_time = $v
" >actual &&
		test_is write:EINVAL "$(cat actual)" "lease_time = $v" || return 1
	done &&
	logged "lease_time: '"'"'9999999999999999999'"'"' is not a number of seconds from 1 to 3153600000; nothing will be applied (EINVAL)" &&
	test_is write:EINVAL "$(sysc write "$Q/config" "max_message_bytes = 99999999999G
")" max_message_bytes &&
	test_is write:EINVAL "$(sysc write "$Q/config" "wait = 86401
")" wait &&
	diff -u before "$Q/config" &&
	echo "lease_time = 36500d" >"$Q/config" &&
	test_is 3153600000 "$(stat_of "$Q/config" lease_time)" lease_time
'

test_expect_success PYTHON 'seek: offsets past 18 digits, signs and dates past 9999 are EINVAL' '
	G="$Q/groups/g" &&
	mkdir "$G" &&
	echo "batch = 1" >"$G/config" &&
	cat "$G/stats" >before &&
	for p in 9999999999999999999 -1 +1 1e3 10000-01-01T00:00:00Z \
	    2024-13-01T00:00:00Z 2024-01-01T25:00:00Z "default -5" \
	    "default 99999999999999999999"; do
		test_is close:EINVAL "$(sysc write "$G/seek" "$p")" "seek $p" &&
		test_is write:EINVAL "$(sysc write "$G/seek" "$p
")" "seek $p, a whole line" ||
		return 1
	done &&
	logged "close queues/n/groups/g/seek: cannot parse position; nothing applied (EINVAL)" &&
	logged "write queues/n/groups/g/seek: cannot parse position; nothing will be applied (EINVAL)" &&
	cat "$G/stats" >after &&
	diff -u before after &&
	test_is ok "$(sysc write "$G/seek" 999999999999999999)" "18 digits" &&
	test_is ok "$(sysc write "$G/seek" 0000-01-01T00:00:00Z)" "year 0" &&
	test_is ok "$(sysc write "$G/seek" 9999-12-31T23:59:59.999Z)" "year 9999"
'

test_done
