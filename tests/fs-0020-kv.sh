#!/bin/sh
# fs-0020-kv: KV state through kv/<ns>/<key> (docs/design.md#mount-kv): read = get,
# write + close = put, O_CREAT|O_EXCL = putIfAbsent (EEXIST), rm = delete,
# ls = the live keys, user.queen.ttl expiry, mkdir/rmdir of a namespace,
# EINVAL for bad names, and one KV seen the same through the mount and
# through api/transaction.
. "$(dirname "$0")/lib.sh"
mount_queenfs
cp "$TEST_DIRECTORY/qapi_base.py" "$TRASH/" || exit 1
KV="$MNT/kv"

# txn JSON: run one api/transaction, print the answer (close must be 0)
txn () {
	python3 - "$MNT" "$1" <<\PYEOF
import sys
from qapi_base import call_raw
out, c = call_raw("transaction", sys.argv[2].encode(), mnt=sys.argv[1])
print(out.decode())
sys.exit(c != "ok")
PYEOF
}

# jget 'python expression over j' < answer: print it (e.g. j["results"][0]["value"])
jget () {
	python3 -c 'import json, sys; j = json.load(sys.stdin); print(json.dumps(eval(sys.argv[1])))' "$1"
}

test_expect_success 'write + close is a put; cat is a get; ls lists the key' '
	printf v1 >"$KV/cfg/color" &&
	printf v1 >expect &&
	test_cmp expect "$KV/cfg/color" &&
	ls "$KV/cfg" >actual &&
	echo color >expect &&
	test_cmp expect actual &&
	ls "$KV" >actual &&
	echo cfg >expect &&
	test_cmp expect actual &&
	test_is 2 "$(stat -c %s "$KV/cfg/color")" size
'

test_expect_success 'the same key through api/transaction: found, version 1, the bytes' '
	txn "{\"kv\":[{\"op\":\"get\",\"ns\":\"cfg\",\"key\":\"color\"}]}" >ans &&
	test_is true "$(jget "j[\"success\"]" <ans)" success &&
	test_is true "$(jget "j[\"results\"][0][\"found\"]" <ans)" found &&
	test_is 1 "$(jget "j[\"results\"][0][\"version\"]" <ans)" version &&
	test_is "\"base64\"" "$(jget "j[\"results\"][0][\"encoding\"]" <ans)" encoding &&
	test_is "\"djE=\"" "$(jget "j[\"results\"][0][\"value\"]" <ans)" value
'

test_expect_success 'a second write replaces the whole value (shorter too)' '
	printf "a longer value" >"$KV/cfg/color" &&
	printf v3 >"$KV/cfg/color" &&
	printf v3 >expect &&
	test_cmp expect "$KV/cfg/color" &&
	test_is 2 "$(stat -c %s "$KV/cfg/color")" size &&
	txn "{\"kv\":[{\"op\":\"get\",\"ns\":\"cfg\",\"key\":\"color\"}]}" >ans &&
	test_is 3 "$(jget "j[\"results\"][0][\"version\"]" <ans)" version
'

test_expect_success 'binary values round-trip byte for byte (cp)' '
	head -c 70000 /dev/urandom >blob &&
	printf "\000\377\000" >>blob &&
	cp blob "$KV/cfg/blob" &&
	test_cmp blob "$KV/cfg/blob"
'

test_expect_success 'O_CREAT|O_EXCL of a present key: EEXIST, the value is unchanged' '
	echo open:EEXIST >expect &&
	sysc create_excl "$KV/cfg/color" clobber >actual &&
	test_cmp expect actual &&
	printf v3 >expect &&
	test_cmp expect "$KV/cfg/color"
'

test_expect_success 'O_CREAT|O_EXCL of an absent key puts it (putIfAbsent)' '
	echo ok >expect &&
	sysc create_excl "$KV/cfg/fresh" n1 >actual &&
	test_cmp expect actual &&
	printf n1 >expect &&
	test_cmp expect "$KV/cfg/fresh"
'

test_expect_success 'rm deletes: gone from cat and ls; a second rm is ENOENT' '
	rm "$KV/cfg/fresh" &&
	echo open:ENOENT >expect &&
	sysc read "$KV/cfg/fresh" >actual &&
	test_cmp expect actual &&
	ls "$KV/cfg" >actual &&
	printf "%s\n" blob color >expect &&
	test_cmp expect actual &&
	echo unlink:ENOENT >expect &&
	sysc unlink "$KV/cfg/fresh" >actual &&
	test_cmp expect actual &&
	txn "{\"kv\":[{\"op\":\"get\",\"ns\":\"cfg\",\"key\":\"fresh\"}]}" >ans &&
	test_is false "$(jget "j[\"results\"][0][\"found\"]" <ans)" found
'

test_expect_success 'ls lists exactly the live keys of its namespace, sorted' '
	for k in zeta alpha mid gone; do
		printf "%s" $k >"$KV/list/$k" || return 1
	done &&
	rm "$KV/list/gone" &&
	ls "$KV/list" >actual &&
	printf "%s\n" alpha mid zeta >expect &&
	test_cmp expect actual &&
	ls "$KV" >actual &&
	printf "%s\n" cfg list >expect &&
	test_cmp expect actual
'

test_expect_success ATTR 'user.queen.ttl: keys expire; ls and cat show them gone' '
	printf t1 >"$KV/ttl/t1" && printf t3 >"$KV/ttl/t3" &&
	setfattr -n user.queen.ttl -v 4 "$KV/ttl/t1" &&
	ttl=$(getfattr --only-values -n user.queen.ttl "$KV/ttl/t1") &&
	test "$ttl" -ge 2 && test "$ttl" -le 4 &&
	python3 - "$KV/ttl/t2" <<\PYEOF &&
import os, sys
# the TTL set on the open file, before close, goes with the put
fd = os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
os.write(fd, b"t2")
os.setxattr(sys.argv[1], "user.queen.ttl", b"4")
os.close(fd)
PYEOF
	printf t2 >expect &&
	test_cmp expect "$KV/ttl/t2" &&
	ls "$KV/ttl" >actual &&
	printf "%s\n" t1 t2 t3 >expect &&
	test_cmp expect actual &&
	sleep 5 &&
	ls "$KV/ttl" >actual &&
	echo t3 >expect &&
	test_cmp expect actual &&
	echo open:ENOENT >expect &&
	sysc read "$KV/ttl/t1" >actual &&
	test_cmp expect actual &&
	sysc read "$KV/ttl/t2" >actual &&
	test_cmp expect actual &&
	printf t3 >expect &&
	test_cmp expect "$KV/ttl/t3"
'

test_expect_success 'an expired key is absent for putIfAbsent too' '
	echo ok >expect &&
	sysc create_excl "$KV/ttl/t1" again >actual &&
	test_cmp expect actual &&
	printf again >expect &&
	test_cmp expect "$KV/ttl/t1"
'

test_expect_success ATTR 'user.queen.ttl 0 removes the expiry; a bad, negative or huge value is EINVAL' '
	setfattr -n user.queen.ttl -v 100 "$KV/ttl/t3" &&
	test_is 100 "$(getfattr --only-values -n user.queen.ttl "$KV/ttl/t3")" ttl &&
	setfattr -n user.queen.ttl -v 0 "$KV/ttl/t3" &&
	test_must_fail getfattr --only-values -n user.queen.ttl "$KV/ttl/t3" &&
	n0=$(grep -c "user.queen.ttl of kv/ttl/t3: not a whole number" "$DAEMON_LOG" || :) &&
	for v in abc -1 1.5 "" 9999999999999 -9223372036854775808; do
		echo setxattr:EINVAL >expect &&
		sysc setxattr "$KV/ttl/t3" user.queen.ttl "$v" >actual &&
		test_cmp expect actual || return 1
	done &&
	test_is $((n0 + 6)) "$(grep -c "user.queen.ttl of kv/ttl/t3: not a whole number" "$DAEMON_LOG")" \
	    "each refusal logged" &&
	test_must_fail getfattr --only-values -n user.queen.ttl "$KV/ttl/t3" &&
	printf t3 >expect &&
	test_cmp expect "$KV/ttl/t3"
'

test_expect_success ATTR 'an attribute queenfs does not keep: ENOTSUP, logged' '
	echo setxattr:ENOTSUP >expect &&
	sysc setxattr "$KV/ttl/t3" user.queen.bogus 1 >actual &&
	test_cmp expect actual &&
	grep -q "setxattr user.queen.bogus on kv/ttl/t3: not an attribute it keeps (ENOTSUP)" "$DAEMON_LOG" &&
	printf t3 >expect &&
	test_cmp expect "$KV/ttl/t3"
'

test_expect_success 'a namespace exists for any name (mkdir -p); chmod records it, ls kv lists it, rmdir drops it' '
	mkdir -p "$KV/made" &&
	test -d "$KV/made" &&
	ls "$KV" >actual &&
	printf "%s\n" cfg list ttl >expect &&
	test_cmp expect actual &&
	chmod 0750 "$KV/made" &&
	test_is 750 "$(stat -c %a "$KV/made")" mode &&
	ls "$KV" >actual &&
	printf "%s\n" cfg list made ttl >expect &&
	test_cmp expect actual &&
	ls -A "$KV/made" >actual &&
	test_line_count = 0 actual &&
	echo ok >expect &&
	sysc rmdir "$KV/made" >actual &&
	test_cmp expect actual &&
	ls "$KV" >actual &&
	printf "%s\n" cfg list ttl >expect &&
	test_cmp expect actual
'

test_expect_success 'mkdir of an existing namespace: EEXIST' '
	echo mkdir:EEXIST >expect &&
	sysc mkdir "$KV/cfg" >actual &&
	test_cmp expect actual &&
	ls "$KV/cfg" >actual &&
	printf "%s\n" blob color >expect &&
	test_cmp expect actual
'

# Every name is a namespace, so mkdir -m cannot set a mode (the README
# says chmod): mkdir -m 0700 is EEXIST, mkdir -p -m 0700 leaves the mode.
test_expect_success 'mkdir -m of a namespace sets no mode; chmod does' '
	test_must_fail mkdir -m 0700 "$KV/secret" 2>err &&
	grep -q "File exists" err &&
	mkdir -p -m 0700 "$KV/secret" &&
	test_is 755 "$(stat -c %a "$KV/secret")" "mode after mkdir -p -m" &&
	chmod 0700 "$KV/secret" &&
	test_is 700 "$(stat -c %a "$KV/secret")" "mode after chmod" &&
	rmdir "$KV/secret"
'

test_expect_success 'rmdir of a namespace holding keys: ENOTEMPTY, the keys stay' '
	echo rmdir:ENOTEMPTY >expect &&
	sysc rmdir "$KV/list" >actual &&
	test_cmp expect actual &&
	ls "$KV/list" >actual &&
	printf "%s\n" alpha mid zeta >expect &&
	test_cmp expect actual &&
	printf alpha >expect &&
	test_cmp expect "$KV/list/alpha"
'

test_expect_success 'a namespace made by puts alone leaves ls kv with its last key' '
	rm "$KV/list/alpha" "$KV/list/mid" "$KV/list/zeta" &&
	ls "$KV" >actual &&
	! grep -x list actual &&
	grep -x cfg actual
'

test_expect_success 'bad key and namespace names: EINVAL, nothing written' '
	long=$(printf "%0256d" 0) &&
	for n in "a b" "a*b" "caf$(printf "\303\251")" ".hidden" "a\\b" "$long"; do
		sysc create "$KV/cfg/$n" x >actual &&
		grep -q -x -e open:EINVAL -e open:ENAMETOOLONG actual &&
		sysc mkdir "$KV/$n" >actual &&
		grep -q -x -e mkdir:EINVAL -e mkdir:ENAMETOOLONG actual &&
		sysc create "$KV/$n/k" x >actual &&
		grep -q -x -e "open:E[A-Z]*" actual || { echo "name: $n"; cat actual; return 1; }
	done &&
	ls "$KV/cfg" >actual &&
	printf "%s\n" blob color >expect &&
	test_cmp expect actual &&
	ls -A "$KV" >actual &&
	printf "%s\n" cfg ttl >expect &&
	test_cmp expect actual
'

test_expect_success 'api/transaction writes are what the mount shows (put, incr)' '
	txn "{\"kv\":[{\"op\":\"put\",\"ns\":\"cfg\",\"key\":\"doc\",\"value\":{\"a\":[1,2]}},{\"op\":\"incr\",\"ns\":\"cfg\",\"key\":\"n\",\"by\":5}]}" >ans &&
	test_is true "$(jget "j[\"success\"]" <ans)" success &&
	printf "{\"a\":[1,2]}" >expect &&
	test_cmp expect "$KV/cfg/doc" &&
	printf 5 >expect &&
	test_cmp expect "$KV/cfg/n" &&
	printf 41 >"$KV/cfg/n" &&
	txn "{\"kv\":[{\"op\":\"incr\",\"ns\":\"cfg\",\"key\":\"n\"}]}" >ans &&
	test_is 42 "$(jget "j[\"results\"][0][\"value\"]" <ans)" "incr of a value written by the mount" &&
	printf 42 >expect &&
	test_cmp expect "$KV/cfg/n"
'

test_expect_success 'KV state survives a restart of the daemon' '
	remount &&
	ls "$KV/cfg" >actual &&
	printf "%s\n" blob color doc n >expect &&
	test_cmp expect actual &&
	test_cmp blob "$KV/cfg/blob" &&
	printf v3 >expect &&
	test_cmp expect "$KV/cfg/color" &&
	printf t3 >expect &&
	test_cmp expect "$KV/ttl/t3"
'

# A key still open for writing is listed (its put is coming), and rm of
# it discards the put: nothing is stored, rm answers 0.  On the code
# before, ls did not list it and rm answered ENOENT.
test_expect_success 'a key being written: ls lists it, rm discards its put' '
	mkdir -p "$KV/wr" &&
	exec 6>"$KV/wr/k" &&
	echo v >&6 &&
	ls "$KV/wr" >actual &&
	echo k >expect &&
	test_cmp expect actual &&
	rm "$KV/wr/k" &&
	exec 6>&- &&
	ls "$KV/wr" >actual &&
	test_line_count = 0 actual &&
	test_path_is_missing "$KV/wr/k"
'

# An open without O_TRUNC starts an empty value, not the stored one: `>>`
# writes at the stored size, which would have published zeros and the
# new bytes (the code before did, and answered 0).  It is refused, and
# the value stays.
test_expect_success 'an append or a growing truncate of a stored value fails EINVAL' '
	mkdir -p "$KV/ap" &&
	echo line1 >"$KV/ap/k" &&
	n0=$(grep -c "write kv/ap/k at byte 6: an open without O_TRUNC" "$DAEMON_LOG" || :) &&
	test_must_fail sh -c "echo line2 >>\"$KV/ap/k\"" &&
	echo line1 >expect &&
	test_cmp expect "$KV/ap/k" &&
	test_is $((n0 + 1)) "$(grep -c "write kv/ap/k at byte 6: an open without O_TRUNC" "$DAEMON_LOG")" "logged" &&
	python3 -c "
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    os.pwrite(fd, b\"X\", 2)
    sys.exit(1)
except OSError as e:
    assert e.errno == 22, e
" "$KV/ap/k" &&
	test_cmp expect "$KV/ap/k" &&
	python3 -c "
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    os.ftruncate(fd, 3)
    sys.exit(1)
except OSError as e:
    assert e.errno == 22, e
fd = os.open(sys.argv[1], os.O_RDWR)
os.ftruncate(fd, 0)
os.write(fd, b\"line3\\n\")
os.close(fd)
" "$KV/ap/k" &&
	echo line3 >expect &&
	test_cmp expect "$KV/ap/k" &&
	grep -q "truncate ap/k to 3 bytes: an open without O_TRUNC starts an empty value" "$DAEMON_LOG" &&
	echo x >>"$KV/ap/new" &&
	echo x >expect &&
	test_cmp expect "$KV/ap/new" &&
	test_must_fail sh -c "echo y >>\"$KV/ap/new\"" 2>/dev/null &&
	test_cmp expect "$KV/ap/new"
'

test_done
