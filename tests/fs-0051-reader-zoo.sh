#!/bin/sh
# fs-0051-reader-zoo: programs that walk a tree and read every file they
# find (grep -r, find -exec cat, cp -r, tar c, rsync -a, du, file, ls -lR,
# stat, wc -c, Python os.walk) never change the store (DESIGN.md, "Popping":
# browsing never consumes).  The mount holds several queues, groups, live
# leases, timers, KV keys and dead letters; after each walker the queues'
# and groups' stats and cursors, the lease list and each lease's expiry,
# the groups, timers, KV keys, dead letters and sys/stats are exactly as
# before: nothing leased, acked, renewed, created or executed.
. "$(dirname "$0")/lib.sh"
mount_queenfs

A="$MNT/queues/alpha"
B="$MNT/queues/beta"

# snapshot: everything a walker could change, in one file
snapshot () {
	for q in alpha beta; do
		d="$MNT/queues/$q"
		echo "== $q"
		cat "$d/stats" "$d/config"
		echo "-- groups"
		ls "$d/groups"
		for g in $(ls "$d/groups"); do
			echo "-- group $g"
			cat "$d/groups/$g/stats"
		done
		echo "-- leased"
		ls -R "$d/leased"
		for l in $(ls "$d/leased"); do
			getfattr --absolute-names -n user.queen.lease_expires_at \
			    --only-values "$d/leased/$l/"* 2>/dev/null
			echo
		done
		echo "-- timers"
		ls -l --time-style=+%s "$d/timers" | sed 1d
		echo "-- dlq"
		ls -R "$d/dlq"
	done
	echo "== kv"
	ls "$MNT/kv"
	for ns in $(ls "$MNT/kv"); do
		ls "$MNT/kv/$ns"
	done
	echo "== sys"
	grep -E '^(queues|partitions|messages|pushed|depth|leases|dlq|duplicates|groups|pushes|acks|pops) = ' "$MNT/sys/stats"
}

# unchanged: compare the store with the snapshot taken at setup
unchanged () {
	snapshot >after &&
	test_cmp before after
}

test_expect_success 'setup: queues, groups, leases, timers, KV and dead letters' '
	mkdir "$A" "$B" &&
	printf "wait = 1\nretry_limit = 0\n" >"$A/config" &&
	printf "wait = 1\nbatch = 2\nauto_ack = on\n" >"$B/config" &&
	for i in 1 2 3 4 5 6; do
		printf "alpha %s zzz\n" $i >"$A/a$i" &&
		printf "beta %s zzz\n" $i >"$B/b$i" || return 1
	done &&
	printf "p\n" >"$A/partitions/p2/x1" &&
	L=$(pop "$A") && test_is a1 "${L##*/}" "first pop" &&
	echo ok >expect &&
	sysc rename "$A/$L" "$A/failed/a1" >actual &&
	test_cmp expect actual &&
	L=$(pop "$A") && test_is a2 "${L##*/}" "second pop, held" &&
	mkdir "$A/groups/g1" "$A/groups/g2" &&
	printf "batch = 2\n" >"$A/groups/g1/config" &&
	G=$(pop "$A/groups/g1") &&
	printf "wait = 1\n" >"$A/groups/g2/config" &&
	printf "tick\n" >"$A/timers/t1" &&
	touch -d "+2 hours" "$A/timers/t1" &&
	printf "v1" >"$MNT/kv/ns1/k1" &&
	printf "v2" >"$MNT/kv/ns1/k2" &&
	test_is 1 "$(stat_of "$A/stats" dlq)" "a dead letter" &&
	test -n "$(ls "$A/leased")" &&
	ls "$A/groups" >groups &&
	grep -qx g1 groups && grep -qx g2 groups &&
	snapshot >before
'

test_expect_success 'next is not listed, yet resolves by name' '
	ls -a "$A" >actual &&
	! grep -qx next actual &&
	ls -a "$A/groups/g1" >actual &&
	! grep -qx next actual &&
	test -f "$A/next" &&
	test -f "$A/groups/g1/next" &&
	unchanged
'

test_expect_success 'grep -r over the mount consumes nothing' '
	grep -r zzz "$MNT" >out 2>err;
	grep -q "alpha 3 zzz" out &&
	! grep -q "/next" out &&
	unchanged
'

test_expect_success 'find -exec cat {} + over the mount consumes nothing' '
	find "$MNT" -type f -exec cat {} + >out &&
	grep -q "beta 6 zzz" out &&
	unchanged
'

test_expect_success 'cp -r out of the mount consumes nothing' '
	cp -r "$MNT" copy &&
	test -f copy/queues/alpha/config &&
	test_path_is_missing copy/queues/alpha/next &&
	unchanged
'

test_expect_success 'tar c of the mount consumes nothing' '
	tar cf mount.tar -C "$MNT" . &&
	tar tf mount.tar >list &&
	grep -q "queues/beta/partitions/default/b2" list &&
	! grep -q "/next$" list &&
	mkdir untar &&
	tar xf mount.tar -C untar ./README ./sys/version \
	    ./queues/beta/partitions/default/b2 &&
	test_cmp "$MNT/README" untar/README &&
	test_cmp "$MNT/sys/version" untar/sys/version &&
	test_cmp "$MNT/queues/beta/partitions/default/b2" \
	    untar/queues/beta/partitions/default/b2 &&
	unchanged
'

test_expect_success 'rsync -a out of the mount consumes nothing' '
	rsync -a "$MNT/" rs/ &&
	test -f rs/queues/beta/partitions/default/b4 &&
	unchanged
'

test_expect_success 'du -a, ls -lR and stat of every file consume nothing' '
	du -a "$MNT" >/dev/null &&
	ls -lR "$MNT" >/dev/null &&
	find "$MNT" -exec stat {} + >/dev/null &&
	unchanged
'

test_expect_success 'file and wc -c of every file consume nothing' '
	find "$MNT" -type f -exec file {} + >/dev/null &&
	find "$MNT" -type f -exec wc -c {} + >/dev/null &&
	unchanged
'

test_expect_success 'Python os.walk reading every file consumes nothing' '
	"$PYTHON3" - "$MNT" <<-\PYEOF &&
	import os, sys
	n = 0
	for d, dirs, files in os.walk(sys.argv[1]):
	    for f in files:
	        with open(os.path.join(d, f), "rb") as fh:
	            fh.read()
	        n += 1
	assert n > 20, n
	PYEOF
	unchanged
'

test_expect_success 'reading api/ files read-only runs nothing' '
	for f in push pop ack transaction renew; do
		cat "$MNT/api/$f" >out &&
		test_line_count = 0 out || return 1
	done &&
	unchanged
'

test_expect_success 'an atime-only touch of a lease renews nothing' '
	L=$(ls "$A/leased" | head -n 1) &&
	touch -a "$A/leased/$L" &&
	touch -a "$A/leased/$L/"* &&
	unchanged
'

test_expect_success 'next is still there for those who read it by name' '
	L=$(pop "$A") &&
	case "$L" in leased/*/a3|leased/*/x1) ;; *) false ;; esac &&
	test_is 2 "$(stat_of "$A/stats" leases)" "one more lease"
'

test_done
