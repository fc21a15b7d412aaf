#!/bin/sh
# fs-0052-permission-matrix: every operation that changes the store, done
# by a non-root owner of a 0755 queue (it works) and by another user who
# may only read it (it fails with the errno the kernel would give, and
# nothing changes): push, pop through next and groups/<g>/next (also with
# auto_ack), the ack/failed/retry/dlq renames, seek, config writes, group
# creation by mkdir, setfattr user.queen.error, touch to renew, timers, KV, mkdir
# and rmdir, the api/ files.  A leased file's payload cannot be written by
# anyone (EPERM).  sys/metrics and sys/stats show each reader only the
# queues it may read.  -o allow_other alone mounts with
# default_permissions added (and says so in the log).
. "$(dirname "$0")/lib.sh"

U1=4252
U2=4253
mount_as_users $U1 -o allow_other,default_permissions

# upop UID DIR: pop DIR/next as UID; sets LINE to the leased path
upop () {
	usysc "$1" read "$2/next" >pop.out &&
	test "$(head -n 1 pop.out)" = ok &&
	LINE=$(sed -n 2p pop.out) &&
	test -n "$LINE"
}

# expect_as UID WANT OP ARGS...: sysc OP as UID answers WANT
expect_as () {
	ea_uid_=$1
	echo "$2" >expect
	shift 2
	usysc "$ea_uid_" "$@" >actual &&
	test_cmp expect actual
}

Q="$MNT/queues/own"
NS="$MNT/kv/ownns"

# the state a refused operation must leave as it was
state () {
	cat "$Q/stats" "$Q/config"
	ls "$Q/groups" "$Q/timers"
	ls -R "$Q/leased" "$Q/dlq"
	for l in $(ls "$Q/leased"); do
		getfattr --absolute-names -n user.queen.lease_expires_at \
		    --only-values "$Q/leased/$l/"* 2>/dev/null
		echo
	done
	ls "$NS"
	cat "$NS/k1"
}

test_expect_success 'setup: uid 1 makes a 0755 queue and namespace, pushes, pops' '
	as_user $U1 mkdir -m 0755 "$Q" &&
	chmod 0755 "$NS" && chown $U1:$U1 "$NS" &&
	expect_as $U1 ok write "$Q/config" "wait = 1" &&
	for i in 1 2 3 4 5 6 7 8; do
		expect_as $U1 ok create "$Q/m$i" "payload $i" || return 1
	done &&
	expect_as $U1 ok create "$Q/timers/t1" tick &&
	as_user $U1 touch -d "+2 hours" "$Q/timers/t1" &&
	expect_as $U1 ok create "$NS/k1" v1 &&
	upop $U1 "$Q" && L1=$LINE &&
	test_is "$U1:$U1 644" "$(stat -c %u:%g\ %a "$Q/$L1")" "leased file mode" &&
	state >before
'

# read_as UID PATH WANT: PATH reads as WANT for UID
read_as () {
	printf "ok\n%s" "$3" >expect &&
	usysc "$1" read "$2" >actual &&
	test_cmp expect actual
}

test_expect_success 'the other user may read what the 0755 queue shows' '
	read_as $U2 "$Q/$L1" "payload 1" &&
	read_as $U2 "$Q/partitions/default/m2" "payload 2" &&
	as_user $U2 cat "$Q/stats" >/dev/null &&
	as_user $U2 ls "$Q" "$Q/leased" >/dev/null
'

test_expect_success 'the other user cannot push (EACCES)' '
	expect_as $U2 open:EACCES create "$Q/x" hi &&
	expect_as $U2 open:EACCES create "$Q/partitions/p9/x" hi &&
	state >after && test_cmp before after
'

test_expect_success 'the other user cannot pop through next (EACCES), and the log says why' '
	expect_as $U2 open:EACCES read "$Q/next" &&
	expect_as $U2 open:EACCES read_nonblock "$Q/next" &&
	grep -q "open queues/own/next: uid $U2 may not write the queue" "$DAEMON_LOG" &&
	state >after && test_cmp before after
'

test_expect_success 'nor with auto_ack on (the cursor stays)' '
	expect_as $U1 ok write "$Q/config" "auto_ack = on" &&
	state >before &&
	expect_as $U2 open:EACCES read "$Q/next" &&
	state >after && test_cmp before after &&
	expect_as $U1 ok write "$Q/config" "auto_ack = off" &&
	state >before
'

test_expect_success 'the other user cannot pop a group, nor make one by popping' '
	as_user $U1 mkdir "$Q/groups/g0" &&
	state >before &&
	expect_as $U2 open:EACCES read "$Q/groups/g0/next" &&
	expect_as $U2 open:ENOENT read "$Q/groups/gnew/next" &&
	ls "$Q/groups" >groups &&
	! grep -qx gnew groups &&
	state >after && test_cmp before after
'

test_expect_success 'the other user cannot make a group by config, seek or mkdir' '
	expect_as $U2 open:EACCES write "$Q/groups/g0/config" "batch = 2" &&
	expect_as $U2 open:EACCES write "$Q/groups/g0/seek" "start" &&
	expect_as $U2 open:ENOENT write "$Q/groups/gx/config" "batch = 2" &&
	expect_as $U2 open:ENOENT write "$Q/groups/gx/seek" "start" &&
	expect_as $U2 mkdir:EACCES mkdir "$Q/groups/gy" &&
	expect_as $U2 open:EACCES write "$Q/config" "lease_time = 9" &&
	expect_as $U2 open:EACCES write "$Q/seek" "end" &&
	state >after && test_cmp before after
'

test_expect_success 'the other user cannot ack, fail, retry or dead-letter (EACCES)' '
	for s in ack failed retry dlq; do
		expect_as $U2 rename:EACCES rename "$Q/$L1" "$Q/$s/${L1##*/}" ||
		    return 1
	done &&
	expect_as $U2 rename:EACCES rename "$Q/partitions/default/m1" "$Q/ack/m1" &&
	expect_as $U2 rename:EACCES rename "$Q/${L1%/*}" "$Q/ack/" &&
	state >after && test_cmp before after
'

test_expect_success 'the other user cannot set the error, touch to renew, or write the lease' '
	expect_as $U2 setxattr:EACCES setxattr "$Q/$L1" user.queen.error nope &&
	test_must_fail as_user $U2 touch "$Q/$L1" &&
	test_must_fail as_user $U2 touch "$Q/${L1%/*}" &&
	expect_as $U2 open:EACCES write "$Q/$L1" scribble &&
	state >after && test_cmp before after
'

test_expect_success 'the other user cannot create or cancel timers, put or delete KV' '
	expect_as $U2 open:EACCES create "$Q/timers/t2" x &&
	expect_as $U2 unlink:EACCES unlink "$Q/timers/t1" &&
	test_must_fail as_user $U2 touch -d "+1 hour" "$Q/timers/t1" &&
	expect_as $U2 open:EACCES create "$NS/k2" x &&
	expect_as $U2 open:EACCES write "$NS/k1" x &&
	expect_as $U2 unlink:EACCES unlink "$NS/k1" &&
	expect_as $U2 rmdir:EPERM rmdir "$Q" &&
	expect_as $U2 rmdir:EPERM rmdir "$NS" &&
	state >after && test_cmp before after
'

test_expect_success 'the api/ files are the mount owner'"'"'s: EACCES to both users' '
	for u in $U1 $U2; do
		expect_as $u open:EACCES read "$MNT/api/pop" &&
		expect_as $u open:EACCES write "$MNT/api/push" "{}" || return 1
	done &&
	state >after && test_cmp before after
'

test_expect_success 'nobody writes a leased payload: open EPERM, truncate EPERM' '
	expect_as $U1 open:EPERM write "$Q/$L1" scribble &&
	test_must_fail as_user $U1 truncate -s 0 "$Q/$L1" &&
	test_must_fail truncate -s 0 "$Q/$L1" &&
	grep -q "a leased message.s payload cannot change (EPERM)" "$DAEMON_LOG" &&
	read_as $U1 "$Q/$L1" "payload 1" &&
	state >after && test_cmp before after
'

test_expect_success 'the owner sets user.queen.error and acks failed: the DLQ keeps it' '
	expect_as $U1 ok write "$Q/config" "retry_limit = 0" &&
	expect_as $U1 ok setxattr "$Q/$L1" user.queen.error "bad input" &&
	expect_as $U1 ok rename "$Q/$L1" "$Q/failed/${L1##*/}" &&
	test_is 1 "$(stat_of "$Q/stats" dlq)" dlq &&
	getfattr --absolute-names -n user.queen.error --only-values \
	    "$Q/dlq/default/m1" >err &&
	test_is "bad input" "$(cat err)" "dead letter error"
'

test_expect_success 'a reader may not requeue or purge a dead letter: EACCES' '
	state >before &&
	expect_as $U2 rename:EACCES rename "$Q/dlq/default/m1" "$Q/m1" &&
	expect_as $U2 unlink:EACCES unlink "$Q/dlq/default/m1" &&
	state >after && test_cmp before after
'

test_expect_success 'the owner renews by touch, acks, retries and dead-letters' '
	upop $U1 "$Q" && L=$LINE &&
	e1=$(getfattr --absolute-names -n user.queen.lease_expires_at --only-values "$Q/$L") &&
	expect_as $U1 ok write "$Q/config" "lease_time = 600" &&
	as_user $U1 touch "$Q/${L%/*}" &&
	e2=$(getfattr --absolute-names -n user.queen.lease_expires_at --only-values "$Q/$L") &&
	test "$e1" != "$e2" &&
	expect_as $U1 ok rename "$Q/$L" "$Q/retry/${L##*/}" &&
	upop $U1 "$Q" && L=$LINE && test_is m2 "${L##*/}" "redelivered" &&
	expect_as $U1 ok rename "$Q/$L" "$Q/ack/m2" &&
	upop $U1 "$Q" && L=$LINE &&
	expect_as $U1 ok rename "$Q/$L" "$Q/dlq/${L##*/}" &&
	test_is 2 "$(stat_of "$Q/stats" dlq)" dlq
'

test_expect_success 'the owner makes groups (mkdir), pops, seeks and configures them' '
	expect_as $U1 ok mkdir "$Q/groups/g1" &&
	expect_as $U1 mkdir:EEXIST mkdir "$Q/groups/g1" &&
	expect_as $U1 ok write "$Q/groups/g1/config" "wait = 1" &&
	upop $U1 "$Q/groups/g1" && test_is m1 "${LINE##*/}" "group starts at the start" &&
	expect_as $U1 ok rename "$Q/groups/g1/$LINE" "$Q/groups/g1/ack/m1" &&
	expect_as $U1 ok mkdir "$Q/groups/g2" &&
	upop $U1 "$Q/groups/g2" &&
	ls "$Q/groups" >groups &&
	grep -qx g2 groups &&
	expect_as $U1 ok write "$Q/groups/g1/seek" "start" &&
	expect_as $U1 ok write "$Q/groups/g1/config" "batch = 2"
'

test_expect_success 'the owner pops with auto_ack, makes and cancels timers, puts and deletes KV' '
	expect_as $U1 ok write "$Q/config" "auto_ack = on" &&
	d0=$(stat_of "$Q/stats" depth) &&
	upop $U1 "$Q" &&
	test_is $((d0 - 1)) "$(stat_of "$Q/stats" depth)" "auto-acked" &&
	expect_as $U1 ok write "$Q/config" "auto_ack = off" &&
	expect_as $U1 ok create "$Q/timers/t2" later &&
	as_user $U1 touch -d "+1 hour" "$Q/timers/t2" &&
	expect_as $U1 ok unlink "$Q/timers/t1" &&
	expect_as $U1 ok create "$NS/k2" two &&
	expect_as $U1 ok unlink "$NS/k1" &&
	ls "$NS" >keys && test_is k2 "$(cat keys)" keys &&
	ls "$Q/timers" >timers && test_is t2 "$(cat timers)" timers
'

test_expect_success 'a group given its own mode decides who pops it' '
	mkdir "$Q/groups/g3" &&
	chmod 0777 "$Q/groups/g3" &&
	upop $U2 "$Q/groups/g3" &&
	expect_as $U2 ok rename "$Q/groups/g3/$LINE" "$Q/groups/g3/ack/${LINE##*/}" &&
	expect_as $U2 open:EACCES read "$Q/next"
'

test_expect_success 'sys/metrics and sys/stats show each reader only the queues it may read' '
	mkdir -m 0700 "$MNT/queues/secret" &&
	printf s >"$MNT/queues/secret/s1" &&
	grep -q "queue=\"secret\"" "$MNT/sys/metrics" &&
	as_user $U2 cat "$MNT/sys/metrics" >m2 &&
	! grep -q "queue=\"secret\"" m2 &&
	grep -q "queue=\"own\"" m2 &&
	chmod 0700 "$Q" &&
	as_user $U2 cat "$MNT/sys/metrics" >m2 &&
	! grep -q "queue=\"own\"" m2 &&
	as_user $U1 cat "$MNT/sys/metrics" >m1 &&
	grep -q "queue=\"own\"" m1 &&
	! grep -q "queue=\"secret\"" m1 &&
	test_is 2 "$(stat_of "$MNT/sys/stats" queues)" "root counts both" &&
	as_user $U1 cat "$MNT/sys/stats" >s1 &&
	test_is 1 "$(stat_of s1 queues)" "uid 1 counts its own" &&
	as_user $U2 cat "$MNT/sys/stats" >s2 &&
	test_is 0 "$(stat_of s2 queues)" "uid 2 counts none" &&
	test_is 0 "$(stat_of s2 messages)" "nor their messages"
'

test_expect_success '-o allow_other alone mounts with default_permissions added' '
	DAEMON_ARGS="-o allow_other" &&
	remount &&
	grep -q "allow_other without default_permissions: added default_permissions" "$DAEMON_LOG" &&
	grep " $MNT " /proc/mounts | grep -q default_permissions &&
	expect_as $U2 open:EACCES read "$MNT/queues/secret/partitions/default/s1" &&
	expect_as $U2 open:EACCES create "$MNT/queues/secret/x" x &&
	test_must_fail as_user $U2 ls "$MNT/queues/secret"
'

test_expect_success 'queenfs --help says so' '
	"$QUEENFS" --help >help &&
	grep -q "default_permissions" help &&
	grep -q "allow_other always comes with" help
'

test_done
