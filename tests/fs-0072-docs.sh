#!/bin/sh
# fs-0072-docs: the documents stay true.  Every key `cat config` shows (of
# a queue and of a group) is in docs/config.md with the default it shows,
# and the tables list no key the mount does not; the README's first queue
# runs as written on a fresh mount; the man page renders without warnings;
# the README stays a front door (at most 250 lines); `queenfs --help` names
# the PostgreSQL store, the logs and the config keys; `make install
# DESTDIR=...` installs the daemon, the man page and the unit (and the
# mount helper's link for another PREFIX).
. "$(dirname "$0")/lib.sh"
mount_queenfs

ROOT=$(cd "$TEST_DIRECTORY/.." && pwd)
command -v man >/dev/null 2>&1 && test_set_prereq MAN
command -v groff >/dev/null 2>&1 && test_set_prereq GROFF
command -v make >/dev/null 2>&1 && test_set_prereq MAKE

# doc_table HEADING: "key default" for each row of the table under the
# docs/config.md section whose title starts with HEADING; the default is
# the first `...` of the column headed "default".
doc_table () {
	awk -v want="$1" '
	/^## / { on = index($0, "## " want) == 1; col = 0; next }
	!on || !/^\|/ { next }
	!col { for (i = 2; i <= NF; i++) { h = $i; gsub(/ /, "", h)
		if (h == "default") col = i }; next }
	/^\|---/ { next }
	{ k = $2; d = $col
	  if (!match(k, /`[^`]+`/)) next
	  k = substr(k, RSTART + 1, RLENGTH - 2)
	  if (match(d, /`[^`]+`/)) d = substr(d, RSTART + 1, RLENGTH - 2)
	  else d = "?"
	  print k, d }' FS='|' "$ROOT/docs/config.md"
}

# shown CONFIG-FILE: "key default" per line of a config the mount shows
shown () {
	sed -n 's/^\([a-z_]*\) = \(.*\)$/\1 \2/p' "$1"
}

test_expect_success 'setup: a fresh queue and group' '
	q_init docs &&
	cat "$Q/config" >queue.conf &&
	mkdir "$Q/groups/g" &&
	cat "$Q/groups/g/config" >group.conf &&
	test -s queue.conf && test -s group.conf
'

test_expect_success 'docs/config.md lists every queue key with its default' '
	doc_table "Queue keys" | sort >doc &&
	shown queue.conf | sort >mount &&
	test_line_count -ge 15 mount &&
	test_cmp mount doc
'

test_expect_success 'docs/config.md lists every group key with its default' '
	doc_table "Group keys" | sort >doc &&
	shown group.conf | sort >mount &&
	test_line_count -ge 4 mount &&
	test_cmp mount doc
'

test_expect_success 'the README says where every config key is described' '
	grep -q "docs/config.md" "$ROOT/README.md" &&
	grep -q "config.md" "$ROOT/docs/queenfs.8"
'

# The fenced block after "## A first queue", with the mount's path for
# /tmp/queenfs; it must be six lines and run as it stands.
test_expect_success "the README's first queue runs as written" '
	awk "/^## A first queue/ { on = 1; next }
	    on && /^\`\`\`/ { if (in_) exit; in_ = 1; next }
	    in_" "$ROOT/README.md" >block &&
	test_line_count = 6 block &&
	grep -q "^cd /tmp/queenfs\$" block &&
	sed "s|/tmp/queenfs|$MNT|" block >first.sh &&
	(sh -e first.sh) >out 2>err &&
	test_must_fail test -s err &&
	printf "%s\n" "{\"id\": 1}" >expect &&
	test_cmp expect out &&
	grep -qx "depth = 0" "$MNT/queues/orders/stats" &&
	grep -qx "messages = 1" "$MNT/queues/orders/stats"
'

test_expect_success 'README.md is a front door: at most 250 lines' '
	wc -l <"$ROOT/README.md" >n &&
	test "$(cat n)" -le 250
'

test_expect_success MAN 'man -l renders docs/queenfs.8 without warnings' '
	MANWIDTH=80 man --warnings -l "$ROOT/docs/queenfs.8" >page 2>err &&
	test_line_count = 0 err &&
	grep -q "^NAME" page && grep -q "^SYNOPSIS" page &&
	grep -q "fusermount3 -u" page &&
	grep -q "postgresql://" page
'

test_expect_success GROFF 'groff -man -ww finds nothing to warn about' '
	groff -man -Tutf8 -ww "$ROOT/docs/queenfs.8" >/dev/null 2>err &&
	test_line_count = 0 err
'

test_expect_success 'queenfs --help names the PostgreSQL store, the logs and the keys' '
	"$QUEENFS" --help >help &&
	grep -q -- "--db postgresql://" help &&
	grep -q "syslog" help && grep -q "stderr" help &&
	grep -q "queenfs(8)" help && grep -q "config" help &&
	grep -q "fusermount3 -u" help
'

# make install of the build under test (-o all: it is built already, with
# whatever flags the suite runs under, and must not be remade here)
test_expect_success MAKE 'make install DESTDIR=... installs daemon, man page and unit' '
	d=$TRASH/inst &&
	make -s -C "$ROOT" -o all O="$QUEENFS_BUILD" install DESTDIR="$d" >make.out 2>&1 &&
	test -x "$d/usr/local/bin/queenfs" &&
	"$d/usr/local/bin/queenfs" --version >v &&
	test -s v &&
	test_cmp "$ROOT/docs/queenfs.8" "$d/usr/local/share/man/man8/queenfs.8" &&
	u="$d/usr/local/lib/systemd/system/queenfs@.service" &&
	grep -q "^ExecStart=/usr/local/bin/queenfs -f " "$u" &&
	test_path_is_missing "$d/usr/sbin/queenfs"
'

test_expect_success MAKE 'another PREFIX: the unit names it and mount.fuse3 gets a link' '
	d=$TRASH/inst2 &&
	make -s -C "$ROOT" -o all O="$QUEENFS_BUILD" install DESTDIR="$d" \
	    PREFIX=/opt/queenfs >make.out 2>&1 &&
	test -x "$d/opt/queenfs/bin/queenfs" &&
	test -f "$d/opt/queenfs/share/man/man8/queenfs.8" &&
	grep -q "^ExecStart=/opt/queenfs/bin/queenfs -f " \
	    "$d/opt/queenfs/lib/systemd/system/queenfs@.service" &&
	test "$(readlink "$d/usr/sbin/queenfs")" = /opt/queenfs/bin/queenfs
'

test_done
