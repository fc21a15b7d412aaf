#!/bin/sh
# fs-0075-groups-mkdir: `mkdir queues/<q>/groups/<g>` makes a consumer
# group and `ls groups/` lists the groups that exist (docs/design.md#groups).
# A name that is no group does not resolve (ENOENT), so walkers and typos
# make nothing; mkdir of an existing group is EEXIST, of a bad name EINVAL
# or ENAMETOOLONG with the reason in the daemon's log; rmdir deletes a
# group (ENOTEMPTY while it holds a live lease).  As root the mount lets
# other uids in (default_permissions): who may not write the queue may not
# make a group there (EACCES) and nothing is made.
. "$(dirname "$0")/lib.sh"

U1=4272
U2=4273
if test "$(id -u)" = 0 && command -v setpriv >/dev/null 2>&1; then
	mount_as_users $U1 -o allow_other,default_permissions
	test_set_prereq USERS
else
	mount_queenfs
fi

# logged TEXT: the daemon's log has a line holding TEXT
logged () {
	grep -F -q -- "$1" "$DAEMON_LOG" && return 0
	echo "the daemon log has no line with: $1"
	tail -n 5 "$DAEMON_LOG"
	return 1
}

# state: what a refused or read-only operation must leave as it was
state () {
	ls -A "$Q/groups"
	cat "$Q/stats"
	for g in $(ls "$Q/groups"); do
		cat "$Q/groups/$g/stats" "$Q/groups/$g/config"
	done
	grep -E '^(groups|pops|leases) = ' "$MNT/sys/stats"
}

test_expect_success 'setup: a queue with m1..m3 and no group' '
	q_init gm &&
	echo "wait = 1" >"$Q/config" &&
	for i in 1 2 3; do printf "m%s" $i >"$Q/m$i" || return 1; done &&
	ls -A "$Q/groups" >actual &&
	test_line_count = 0 actual &&
	test_is 0 "$(stat_of "$Q/stats" groups)" groups
'

test_expect_success 'mkdir groups/<g> makes the group; ls groups lists it' '
	echo ok >expect &&
	sysc mkdir "$Q/groups/g1" >actual &&
	test_cmp expect actual &&
	ls "$Q/groups" >actual &&
	echo g1 >expect &&
	test_cmp expect actual &&
	test -d "$Q/groups/g1" &&
	test_is 1 "$(stat_of "$Q/stats" groups)" groups &&
	grep -q "^group = g1$" "$Q/groups/g1/stats" &&
	grep -q "^subscription = all$" "$Q/groups/g1/config"
'

test_expect_success 'the new group reads from the oldest message' '
	LINE=$(pop "$Q/groups/g1") &&
	test_is m1 "${LINE##*/}" txid &&
	mv "$Q/groups/g1/$LINE" "$Q/groups/g1/ack/" &&
	grep -q "^partition default: committed = 1," "$Q/groups/g1/stats"
'

test_expect_success 'mkdir of a group that exists is EEXIST and changes nothing; mkdir -p is fine' '
	state >before &&
	echo mkdir:EEXIST >expect &&
	sysc mkdir "$Q/groups/g1" >actual &&
	test_cmp expect actual &&
	mkdir -p "$Q/groups/g1" &&
	state >after &&
	test_cmp before after
'

test_expect_success 'bad names: EINVAL or ENAMETOOLONG, the reason logged, nothing made' '
	state >before &&
	for n in "bad name" ".hidden" "a/b" "__QUEUE_MODE__" "caf$(printf "\303\251")"; do
		echo mkdir:EINVAL >expect &&
		sysc mkdir "$Q/groups/$n" >actual &&
		echo "mkdir \"$n\": $(cat actual)" &&
		case $n in
		a/b) echo mkdir:ENOENT >expect ;;
		esac &&
		test_cmp expect actual || return 1
	done &&
	logged "mkdir queues/gm/groups/bad name: invalid name: use 1-255 bytes" &&
	logged "mkdir queues/gm/groups/__QUEUE_MODE__: invalid name" &&
	long=$(printf "%0256d" 0) &&
	echo mkdir:ENAMETOOLONG >expect &&
	sysc mkdir "$Q/groups/$long" >actual &&
	test_cmp expect actual &&
	logged "queues/gm/groups/00000000000000000000000000000000...: a name is at most 255 bytes (ENAMETOOLONG)" &&
	ok255=$(printf "%0255d" 0) &&
	mkdir "$Q/groups/$ok255" &&
	rmdir "$Q/groups/$ok255" &&
	state >after &&
	test_cmp before after
'

test_expect_success 'a group that does not exist: ENOENT for next, config, seek, stat, rmdir' '
	state >before &&
	echo open:ENOENT >expect &&
	sysc read_nonblock "$Q/groups/nog/next" >actual &&
	test_cmp expect actual &&
	sysc read "$Q/groups/nog/config" >actual &&
	test_cmp expect actual &&
	sysc write "$Q/groups/nog/config" "batch = 2" >actual &&
	test_cmp expect actual &&
	sysc write "$Q/groups/nog/seek" "start" >actual &&
	test_cmp expect actual &&
	test_must_fail stat "$Q/groups/nog" &&
	test_must_fail ls "$Q/groups/nog/leased" &&
	echo rmdir:ENOENT >expect &&
	sysc rmdir "$Q/groups/nog" >actual &&
	test_cmp expect actual &&
	echo rename:ENOENT >expect &&
	sysc rename "$Q/partitions/default/m2" "$Q/groups/nog/ack/m2" >actual &&
	test_cmp expect actual &&
	echo mkdir:ENOENT >expect &&
	sysc mkdir "$MNT/queues/nosuch/groups/g" >actual &&
	test_cmp expect actual &&
	state >after &&
	test_cmp before after
'

test_expect_success 'grep -r, find, ls -R, du, tar and Python os.walk over groups/ make nothing' '
	mkdir "$Q/groups/g2" &&
	state >before &&
	{ grep -r m "$Q/groups" >/dev/null 2>&1; :; } &&
	find "$Q/groups" >/dev/null &&
	find "$Q/groups" -type f -exec cat {} + >/dev/null 2>&1;
	ls -lRa "$Q/groups" >/dev/null &&
	du -a "$Q/groups" >/dev/null &&
	{ tar -C "$Q" -cf groups.tar groups 2>/dev/null; :; } &&
	python3 -c "
import os, sys
for d, dirs, files in os.walk(sys.argv[1]):
    for f in files:
        try:
            open(os.path.join(d, f), \"rb\").read()
        except OSError:
            pass
" "$Q/groups" &&
	for n in ghost g1x G1 g; do
		test_must_fail ls "$Q/groups/$n" >/dev/null 2>&1 || return 1
	done &&
	state >after &&
	test_cmp before after
'

test_expect_success 'rmdir of a group with a live lease is ENOTEMPTY; acked, it goes' '
	LINE=$(pop "$Q/groups/g2") &&
	test_is m1 "${LINE##*/}" txid &&
	echo rmdir:ENOTEMPTY >expect &&
	sysc rmdir "$Q/groups/g2" >actual &&
	test_cmp expect actual &&
	logged "group '"'"'g2'"'"' holds 1 live lease" &&
	test -d "$Q/groups/g2" &&
	mv "$Q/groups/g2/$LINE" "$Q/groups/g2/ack/" &&
	rmdir "$Q/groups/g2" &&
	ls "$Q/groups" >actual &&
	echo g1 >expect &&
	test_cmp expect actual &&
	test_must_fail ls "$Q/groups/g2"
'

test_expect_success 'a group made again by its name starts again from the oldest message' '
	mkdir "$Q/groups/g2" &&
	LINE=$(pop "$Q/groups/g2") &&
	test_is m1 "${LINE##*/}" txid &&
	mv "$Q/groups/g2/$LINE" "$Q/groups/g2/ack/"
'

test_expect_success 'mkdir -m sets the group mode; the group is its maker'"'"'s' '
	mkdir -m 0750 "$Q/groups/g3" &&
	test_is "$(id -u):$(id -g) 750" "$(stat -c "%u:%g %a" "$Q/groups/g3")" owner &&
	rmdir "$Q/groups/g3"
'

test_expect_success USERS 'a user who may not write the queue cannot make a group (EACCES)' '
	U="$MNT/queues/u1q" &&
	as_user $U1 mkdir -m 0755 "$U" &&
	printf x >"$U/x1" &&
	Q=$U &&
	state >before &&
	echo mkdir:EACCES >expect &&
	usysc $U2 mkdir "$U/groups/theirs" >actual &&
	test_cmp expect actual &&
	state >after &&
	test_cmp before after
'

test_expect_success USERS 'the queue owner makes a group, owns it; others may not remove it' '
	echo ok >expect &&
	usysc $U1 mkdir "$U/groups/mine" >actual &&
	test_cmp expect actual &&
	test_is "$U1:$U1" "$(stat -c "%u:%g" "$U/groups/mine")" owner &&
	ls "$U/groups" >actual &&
	echo mine >expect &&
	test_cmp expect actual &&
	echo rmdir:EACCES >expect &&
	usysc $U2 rmdir "$U/groups/mine" >actual &&
	test_cmp expect actual &&
	usysc $U1 read "$U/groups/mine/next" >actual &&
	test_is ok "$(head -n 1 actual)" "the owner pops" &&
	echo mkdir:EEXIST >expect &&
	usysc $U1 mkdir "$U/groups/mine" >actual &&
	test_cmp expect actual
'

test_expect_success 'groups made by mkdir survive a remount' '
	Q="$MNT/queues/gm" &&
	ls "$Q/groups" >before &&
	remount &&
	ls "$Q/groups" >after &&
	test_cmp before after &&
	printf "%s\n" g1 g2 >expect &&
	test_cmp expect after
'

test_done
