#!/bin/sh
# fs-0033-permissions: with `-o allow_other,default_permissions` each queue,
# group and KV namespace has an owner and a mode (mkdir sets them, chmod
# and chown change them) and the kernel enforces them (docs/design.md#durability).  Runs as root and acts as two
# throwaway uids through setpriv: a user without rights cannot push, pop,
# ack, read payloads or the log, change config, seek, or read or write KV;
# chown or chmod gives those rights at once (also below the queue, where
# the kernel had cached the old attributes); a queue a user makes is
# theirs; groups inherit their queue's owner until given their own; the
# api/ files are the mount owner's only.
. "$(dirname "$0")/lib.sh"

U1=4242
U2=4243
mount_as_users $U1 -o allow_other,default_permissions

# owner PATH: "uid:gid mode" as the kernel reports it
owner () {
	stat -c '%u:%g %a' "$1"
}

# api_pop QUEUE GROUP: one pop through api/ (the mount owner's), which
# makes the group if it does not exist, with no owner of its own
api_pop () {
	python3 - "$MNT/api/pop" "$1" "$2" <<-\EOF
	import json, os, sys
	fd = os.open(sys.argv[1], os.O_RDWR)
	os.write(fd, json.dumps({"queue": sys.argv[2],
	    "consumerGroup": sys.argv[3], "batch": 1}).encode())
	a = json.loads(os.read(fd, 65536))
	os.close(fd)
	assert a.get("messages"), a
	EOF
}

Q="$MNT/queues/private"
KV="$MNT/kv"

test_expect_success 'setup: root makes a 0700 queue and a 0700 KV namespace' '
	mkdir -m 0700 "$Q" &&
	test_is "0:0 700" "$(owner "$Q")" "queue owner" &&
	printf "wait = 1\n" >"$Q/config" &&
	printf one >"$Q/m1" && printf two >"$Q/m2" &&
	L=$(pop) &&
	test_is "m1" "${L##*/}" "root pops m1" &&
	chmod 0700 "$KV/secret" &&
	printf v >"$KV/secret/k" &&
	test_is "0:0 700" "$(owner "$KV/secret")" "namespace owner" &&
	test_is "0:0 600" "$(owner "$Q/config")" "config inside" &&
	test_is "0:0 400" "$(owner "$Q/next")" "next inside" &&
	test_is "0:0 700" "$(owner "$Q/ack")" "ack/ inside"
'

test_expect_success 'queues/ and kv/ are 1777: anyone makes, only owners remove' '
	test_is "0:0 1777" "$(owner "$MNT/queues")" queues/ &&
	test_is "0:0 1777" "$(owner "$KV")" kv/ &&
	mkdir "$MNT/queues/rootq" &&
	echo rmdir:EPERM >expect &&
	usysc $U1 rmdir "$MNT/queues/rootq" >actual &&
	test_cmp expect actual &&
	test -d "$MNT/queues/rootq"
'

test_expect_success 'another user cannot push (EACCES), and nothing lands' '
	echo open:EACCES >expect &&
	usysc $U1 create "$Q/x" hi >actual &&
	test_cmp expect actual &&
	usysc $U1 create "$Q/partitions/default/y" hi >actual &&
	test_cmp expect actual &&
	usysc $U1 create "$Q/partitions/other/z" hi >actual &&
	test_cmp expect actual &&
	test_is 2 "$(stat_of "$Q/stats" messages)" messages
'

test_expect_success 'another user cannot pop: next is EACCES, no lease taken' '
	echo open:EACCES >expect &&
	usysc $U1 read "$Q/next" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$Q/stats" leases)" leases
'

test_expect_success 'another user cannot read leased payloads, the log or stats' '
	echo open:EACCES >expect &&
	usysc $U1 read "$Q/$L" >actual &&
	test_cmp expect actual &&
	usysc $U1 read "$Q/partitions/default/m2" >actual &&
	test_cmp expect actual &&
	usysc $U1 read "$Q/stats" >actual &&
	test_cmp expect actual &&
	test_must_fail as_user $U1 ls "$Q" &&
	test_must_fail as_user $U1 ls "$Q/partitions/default"
'

test_expect_success 'another user cannot ack (rename EACCES); the lease stays' '
	echo rename:EACCES >expect &&
	usysc $U1 rename "$Q/$L" "$Q/ack/m1" >actual &&
	test_cmp expect actual &&
	usysc $U1 rename "$Q/partitions/default/m1" "$Q/ack/m1" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$Q/stats" leases)" leases &&
	test_is 2 "$(stat_of "$Q/stats" depth)" depth
'

test_expect_success 'another user cannot change config, seek, or chmod/chown' '
	echo open:EACCES >expect &&
	usysc $U1 write "$Q/config" "wait = 7" >actual &&
	test_cmp expect actual &&
	usysc $U1 write "$Q/groups/g/config" "batch = 7" >actual &&
	test_cmp expect actual &&
	usysc $U1 write "$Q/groups/g/seek" "start" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$Q/config" wait)" wait &&
	test_must_fail as_user $U1 chmod 0777 "$Q" &&
	test_must_fail as_user $U1 chown $U1 "$Q" &&
	test_is "0:0 700" "$(owner "$Q")" "queue owner"
'

test_expect_success 'another user cannot read, write, create or remove KV keys' '
	echo open:EACCES >expect &&
	usysc $U1 read "$KV/secret/k" >actual &&
	test_cmp expect actual &&
	usysc $U1 write "$KV/secret/k" stolen >actual &&
	test_cmp expect actual &&
	usysc $U1 create "$KV/secret/k2" new >actual &&
	test_cmp expect actual &&
	echo unlink:EACCES >expect &&
	usysc $U1 unlink "$KV/secret/k" >actual &&
	test_cmp expect actual &&
	test_must_fail as_user $U1 ls "$KV/secret" &&
	printf v >expect &&
	test_cmp expect "$KV/secret/k" &&
	test_path_is_missing "$KV/secret/k2"
'

test_expect_success 'the api/ files are the mount owner'"'"'s only (0600 root)' '
	for f in push pop ack transaction renew; do
		test_is "0:0 600" "$(owner "$MNT/api/$f")" "api/$f" || return 1
	done &&
	echo open:EACCES >expect &&
	usysc $U1 read "$MNT/api/pop" >actual &&
	test_cmp expect actual &&
	usysc $U1 write "$MNT/api/push" "{\"items\":[{\"queue\":\"private\",\"payload\":\"x\"}]}" >actual &&
	test_cmp expect actual &&
	test_is 2 "$(stat_of "$Q/stats" messages)" messages
'

test_expect_success 'after chown to the user, each of those works at once' '
	test_is "0:0 700" "$(owner "$Q/ack")" "ack/ before" &&
	test_is "0:0 700" "$(owner "$Q/leased")" "leased/ before" &&
	chown $U1:$U1 "$Q" &&
	test_is "$U1:$U1 700" "$(owner "$Q")" "queue owner" &&
	test_is "$U1:$U1 700" "$(owner "$Q/leased")" "leased/ follows" &&
	test_is "$U1:$U1 700" "$(owner "$Q/ack")" "ack/ follows" &&
	printf "ok\none" >expect &&
	usysc $U1 read "$Q/$L" >actual &&
	test_cmp expect actual &&
	echo ok >expect &&
	usysc $U1 rename "$Q/$L" "$Q/ack/m1" >actual &&
	test_cmp expect actual &&
	usysc $U1 create "$Q/m3" three >actual &&
	test_cmp expect actual &&
	usysc $U1 write "$Q/config" "batch = 2" >actual &&
	test_cmp expect actual &&
	test_is 2 "$(stat_of "$Q/config" batch)" batch &&
	usysc $U1 read "$Q/next" >actual &&
	head -n 1 actual >status &&
	test_cmp expect status &&
	sed 1d actual >lines &&
	test_line_count = 2 lines &&
	usysc $U1 rename "$Q/$(sed -n 2p lines)" "$Q/ack/m3" >actual &&
	test_cmp expect actual &&
	test_is 0 "$(stat_of "$Q/stats" depth)" depth &&
	usysc $U1 read "$Q/partitions/default/m2" >actual &&
	printf "ok\ntwo" >expect &&
	test_cmp expect actual
'

test_expect_success 'after chown of the namespace the user reads and writes KV' '
	chown $U1:$U1 "$KV/secret" &&
	printf "ok\nv" >expect &&
	usysc $U1 read "$KV/secret/k" >actual &&
	test_cmp expect actual &&
	echo ok >expect &&
	usysc $U1 write "$KV/secret/k" w >actual &&
	test_cmp expect actual &&
	usysc $U1 create "$KV/secret/k2" new >actual &&
	test_cmp expect actual &&
	printf w >expect &&
	test_cmp expect "$KV/secret/k" &&
	printf new >expect &&
	test_cmp expect "$KV/secret/k2"
'

test_expect_success 'chmod 0777 opens a root queue to everyone' '
	O="$MNT/queues/open" &&
	mkdir -m 0700 "$O" &&
	printf "wait = 1\n" >"$O/config" &&
	echo open:EACCES >expect &&
	usysc $U2 create "$O/a" x >actual &&
	test_cmp expect actual &&
	test_is "0:0 700" "$(owner "$O/ack")" "ack/ before" &&
	chmod 0777 "$O" &&
	test_is "0:0 777" "$(owner "$O/ack")" "ack/ follows" &&
	echo ok >expect &&
	usysc $U2 create "$O/a" x >actual &&
	test_cmp expect actual &&
	usysc $U2 read "$O/next" >actual &&
	head -n 1 actual >status &&
	test_cmp expect status &&
	usysc $U2 rename "$O/$(sed -n 2p actual)" "$O/ack/a" >actual &&
	test_cmp expect actual &&
	test_is 0 "$(stat_of "$O/stats" depth)" depth
'

test_expect_success 'a queue the user makes is theirs; others may not write it' '
	M="$MNT/queues/mine" &&
	as_user $U1 mkdir -m 0755 "$M" &&
	test_is "$U1:$U1 755" "$(owner "$M")" "mkdir owner" &&
	echo ok >expect &&
	usysc $U1 write "$M/config" "wait = 1" >actual &&
	test_cmp expect actual &&
	usysc $U1 create "$M/b" x >actual &&
	test_cmp expect actual &&
	echo open:EACCES >expect &&
	usysc $U2 create "$M/c" x >actual &&
	test_cmp expect actual &&
	usysc $U2 write "$M/config" "wait = 9" >actual &&
	test_cmp expect actual &&
	usysc $U1 read "$M/next" >actual &&
	head -n 1 actual >status &&
	echo ok >expect &&
	test_cmp expect status &&
	ML=$(sed -n 2p actual) &&
	echo rename:EACCES >expect &&
	usysc $U2 rename "$M/$ML" "$M/ack/b" >actual &&
	test_cmp expect actual &&
	echo rmdir:EPERM >expect &&
	usysc $U2 rmdir "$M" >actual &&
	test_cmp expect actual &&
	echo ok >expect &&
	usysc $U1 rename "$M/$ML" "$M/ack/b" >actual &&
	test_cmp expect actual &&
	test_is 1 "$(stat_of "$M/stats" messages)" messages
'

test_expect_success 'the owner may chmod their queue; root still may do anything' '
	as_user $U1 chmod 0700 "$M" &&
	test_is "$U1:$U1 700" "$(owner "$M")" "after chmod" &&
	test_must_fail as_user $U2 ls "$M" &&
	echo open:EACCES >expect &&
	usysc $U2 read "$M/stats" >actual &&
	test_cmp expect actual &&
	printf y >"$M/d" &&
	test_is 2 "$(stat_of "$M/stats" messages)" messages
'

test_expect_success 'groups inherit their queue'"'"'s owner until given their own' '
	api_pop mine g &&
	test_is "$U1:$U1 700" "$(owner "$M/groups/g")" "inherited" &&
	test_is "$U1:$U1 600" "$(owner "$M/groups/g/config")" "inherited config" &&
	P="$MNT/queues/pub" &&
	mkdir -m 0755 "$P" &&
	printf "wait = 1\n" >"$P/config" &&
	printf p1 >"$P/p1" &&
	api_pop pub g3 &&
	mkdir "$P/groups/g2" &&
	test_is "0:0 755" "$(owner "$P/groups/g2")" "made by root" &&
	chmod 0700 "$P/groups/g2" &&
	test_is "0:0 700" "$(owner "$P/groups/g2")" "own mode" &&
	echo open:EACCES >expect &&
	usysc $U1 read "$P/groups/g2/next" >actual &&
	test_cmp expect actual &&
	chown $U1:$U1 "$P/groups/g2" &&
	test_is "$U1:$U1 700" "$(owner "$P/groups/g2")" "own owner" &&
	test_is "0:0 755" "$(owner "$P")" "the queue keeps its owner" &&
	test_is "0:0 755" "$(owner "$P/groups/g3")" "other groups keep inheriting" &&
	echo ok >expect &&
	usysc $U1 write "$P/groups/g2/config" "wait = 1" >actual &&
	test_cmp expect actual &&
	usysc $U1 read "$P/groups/g2/next" >actual &&
	head -n 1 actual >status &&
	test_cmp expect status &&
	usysc $U1 rename "$P/groups/g2/$(sed -n 2p actual)" "$P/groups/g2/ack/p1" >actual &&
	test_cmp expect actual &&
	echo open:EACCES >expect &&
	usysc $U1 create "$P/p2" x >actual &&
	test_cmp expect actual &&
	usysc $U1 write "$P/config" "wait = 3" >actual &&
	test_cmp expect actual
'

# gsysc UID GID OP ARGS: sysc as UID with GID as a supplementary group
gsysc () {
	(
		gs_uid_=$1
		gs_gid_=$2
		shift 2
		python3 () {
			setpriv --reuid "$gs_uid_" --regid "$gs_uid_" \
			    --groups "$gs_gid_" -- "$UPY" "$@"
		}
		sysc "$@"
	)
}

test_expect_success 'a supplementary group that may write the queue may pop' '
	G="$MNT/queues/grp" &&
	mkdir -m 0775 "$G" &&
	chown 0:5151 "$G" &&
	printf "wait = 1\n" >"$G/config" &&
	printf g1 >"$G/g1" &&
	echo open:EACCES >expect &&
	usysc $U2 read "$G/next" >actual &&
	test_cmp expect actual &&
	gsysc $U2 5152 read "$G/next" >actual &&
	test_cmp expect actual &&
	gsysc $U2 5151 read "$G/next" >actual &&
	test_is ok "$(head -n 1 actual)" "the pop of a member of 5151" &&
	test_is g1 "$(sed -n "2s|^leased/[^/]*/||p" actual)" popped
'

test_expect_success 'owners and modes survive a restart of the daemon' '
	remount &&
	test_is "$U1:$U1 700" "$(owner "$Q")" private &&
	test_is "$U1:$U1 700" "$(owner "$KV/secret")" secret &&
	test_is "$U1:$U1 700" "$(owner "$M")" mine &&
	test_is "0:0 777" "$(owner "$MNT/queues/open")" open &&
	test_is "$U1:$U1 700" "$(owner "$P/groups/g2")" group &&
	test_is "0:0 755" "$(owner "$P/groups/g3")" "inheriting group" &&
	echo open:EACCES >expect &&
	usysc $U2 create "$Q/late" x >actual &&
	test_cmp expect actual
'

test_done
