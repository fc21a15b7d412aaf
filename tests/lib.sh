# lib.sh - the harness of the mount tests (tests/fs-NNNN-topic.sh), in the
# style of git's test-lib: TAP output, `test_expect_success 'title' 'body'`
# cases run in this shell, a plan printed by test_done, and one mounted
# queenfs per script on a fresh temp dir.  Every process a test starts is
# stopped by its pid and the mount is gone on exit, even after a failure;
# a failing script keeps its temp dir (database, daemon log) for inspection.
#
# Usage:
#	. "$(dirname "$0")/lib.sh"
#	mount_queenfs
#	test_expect_success 'push' 'echo hi >"$MNT/queues/q/m"'
#	test_done
#
# Environment: QUEENFS_BUILD (the build dir holding queenfs; default the
# repo's build/), QUEENFS_TEST_VERBOSE=1 (show every case's output),
# QUEENFS_TEST_TIMEOUT (seconds a script may run before its watchdog ends
# it; default 150), QUEEN_TEST_PG (a libpq URI of a scratch PostgreSQL
# database, exported by tests/pg.sh: see pg_uri, mount_queenfs_on and
# mount_extra for several daemons on one store), QUEENFS_TEST_STORE=pg
# (mount_queenfs on a fresh schema of QUEEN_TEST_PG, not a file).

TEST_DIRECTORY=$(cd "$(dirname "$0")" && pwd)
: "${QUEENFS_BUILD:=$TEST_DIRECTORY/../build}"
QUEENFS_BUILD=$(cd "$QUEENFS_BUILD" 2>/dev/null && pwd || echo "$QUEENFS_BUILD")
QUEENFS="$QUEENFS_BUILD/queenfs"
: "${QUEENFS_TEST_TIMEOUT:=150}"
export LC_ALL=C

test_count=0
test_failures=0
test_done_=false
TRASH=
MNT=
DB=
DAEMON_LOG=
DAEMON_PID=
DAEMON_ARGS=
WATCHDOG_PID=
BG_PIDS=

say () {
	printf '%s\n' "$*"
}

diag () {
	printf '%s\n' "$*" | sed 's/^/# /'
}

# --- prerequisites --------------------------------------------------------

test_prereqs_=" "
test_set_prereq () {
	test_prereqs_="$test_prereqs_$1 "
}
test_have_prereq () {
	case "$test_prereqs_" in *" $1 "*) return 0 ;; esac
	return 1
}
# python3 once resolved (a pyenv shim costs ~0.3 s per start)
# Start a background Python as `"$PYTHON3" ... &` (a function run in the
# background is a subshell, and $! would not be Python's pid).
PYTHON3=python3
if command -v python3 >/dev/null 2>&1; then
	PYTHON3=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
	if test -x "$PYTHON3"; then
		python3 () {
			"$PYTHON3" "$@"
		}
	else
		PYTHON3=python3
	fi
	test_set_prereq PYTHON
fi
command -v rsync >/dev/null 2>&1 && test_set_prereq RSYNC
command -v getfattr >/dev/null 2>&1 && command -v setfattr >/dev/null 2>&1 &&
	test_set_prereq ATTR
command -v tar >/dev/null 2>&1 && test_set_prereq TAR

# skip_all REASON: the whole script is skipped (a `1..0 # SKIP` plan).
skip_all () {
	say "1..0 # SKIP $*"
	test_done_=true
	exit 0
}

fuse_usable () {
	test -c /dev/fuse || { fuse_reason="no /dev/fuse"; return 1; }
	command -v fusermount3 >/dev/null 2>&1 ||
		{ fuse_reason="no fusermount3"; return 1; }
	if test "$(id -u)" != 0; then
		test -r /dev/fuse && test -w /dev/fuse ||
			{ fuse_reason="/dev/fuse not usable by $(id -un)"; return 1; }
		test -u "$(command -v fusermount3)" ||
			{ fuse_reason="fusermount3 is not setuid and we are not root"; return 1; }
	fi
	return 0
}

# --- the TAP side ---------------------------------------------------------

test_ok_ () {
	test_count=$((test_count + 1))
	say "ok $test_count - $1"
}

test_failure_ () {
	test_count=$((test_count + 1))
	test_failures=$((test_failures + 1))
	say "not ok $test_count - $1"
	shift
	printf '%s\n' "$*" | sed -e 's/^/#	/'
}

# The body runs in this shell (variables it sets are seen by later cases),
# from $TRASH, with its output in $TRASH/case.out (shown on failure).
test_run_ () {
	cd "$TRASH" || return 1
	if test -n "$QUEENFS_TEST_VERBOSE"; then
		eval "$1"
	else
		eval "$1" >"$TRASH/case.out" 2>&1 </dev/null
	fi
	test_eval_ret_=$?
	cd "$TRASH" || return 1
	return $test_eval_ret_
}

# The daemon must outlive every case; if it died, the case failed, and the
# next case gets a fresh daemon on the same database.
test_check_daemon_ () {
	test_check_extras_ || return 1
	test -z "$DAEMON_PID" && return 0
	kill -0 "$DAEMON_PID" 2>/dev/null && return 0
	diag "the daemon (pid $DAEMON_PID) died during this case; its log ends:"
	tail -n 15 "$DAEMON_LOG" 2>/dev/null | sed -e 's/^/#   /'
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
	start_daemon_ || diag "restart after the crash failed"
	return 1
}

# test_expect_success [PREREQ] 'title' 'body'
test_expect_success () {
	if test $# = 3; then
		test_prereq_=$1
		shift
	else
		test_prereq_=
	fi
	test $# = 2 || { say "bug in the test script: test_expect_success needs 2 or 3 arguments"; exit 1; }
	if test -n "$test_prereq_" && ! test_have_prereq "$test_prereq_"; then
		test_count=$((test_count + 1))
		say "ok $test_count # skip $1 (missing $test_prereq_)"
		return 0
	fi
	if test_run_ "$2" && test_check_daemon_; then
		test_ok_ "$1"
	else
		test_failure_ "$1" "$2"
		test -f "$TRASH/case.out" && sed -e 's/^/# > /' "$TRASH/case.out"
		test -n "$DAEMON_LOG" && test -s "$DAEMON_LOG" && {
			diag "daemon log (last 5 lines):"
			tail -n 5 "$DAEMON_LOG" | sed -e 's/^/#   /'
		}
	fi
	rm -f "$TRASH/case.out"
	return 0
}

# Second users (fs-0033, fs-0052): mount_as_users UID [MOUNT OPTS...]
# skips without root or setpriv, mounts with the options given (the tests
# pass -o allow_other,default_permissions), lets other uids reach the
# mount, and finds a python3 that UID may run (UPY).  as_user UID CMD runs
# CMD as UID (and gid UID), no supplementary groups; usysc UID OP ARGS is
# sysc run as UID.
as_user () {
	au_uid_=$1
	shift
	setpriv --reuid "$au_uid_" --regid "$au_uid_" --clear-groups -- "$@"
}

mount_as_users () {
	mu_uid_=$1
	shift
	test "$(id -u)" = 0 ||
		skip_all "needs root: it acts as other uids with setpriv"
	command -v setpriv >/dev/null 2>&1 ||
		skip_all "no setpriv (util-linux): cannot act as a second user"
	mount_queenfs "$@"
	# the mount lies under the 0700 temp dir; the other uids must reach it
	chmod 0711 "$TRASH"
	# a Python the other uids may run (a pyenv under /root is not one)
	UPY=
	for p in "$PYTHON3" /usr/bin/python3 /usr/local/bin/python3; do
		if as_user "$mu_uid_" "$p" -c "" >/dev/null 2>&1; then
			UPY=$p
			break
		fi
	done
	test -n "$UPY" || {
		stop_daemon_ >/dev/null
		skip_all "no python3 that uid $mu_uid_ can run"
	}
}

usysc () {
	(
		us_uid_=$1
		shift
		python3 () {
			as_user "$us_uid_" "$UPY" "$@"
		}
		sysc "$@"
	)
}

# A known breakage, as git's test_expect_failure: TAP's TODO, so that a
# bug is written down (and its case run) without failing the suite; when
# it passes, prove reports the TODO as passed.
test_expect_failure () {
	test $# = 2 || { say "bug in the test script: test_expect_failure needs 2 arguments"; exit 1; }
	test_count=$((test_count + 1))
	if test_run_ "$2" && test_check_daemon_; then
		say "ok $test_count - $1 # TODO known breakage vanished"
	else
		say "not ok $test_count - $1 # TODO known breakage"
		test -f "$TRASH/case.out" && sed -e 's/^/# > /' "$TRASH/case.out"
	fi
	rm -f "$TRASH/case.out"
	return 0
}

test_done () {
	for n_ in $EXTRA_MOUNTS; do
		extra_pid_ "$n_"
		test -n "$ep_" || continue
		if stop_extra_ "$n_" >"$TRASH/stop.out" 2>&1; then
			test_ok_ "daemon $n_ exits 0 at unmount, no sanitizer report"
		else
			test_failure_ "daemon $n_ exits 0 at unmount, no sanitizer report" \
				"$(cat "$TRASH/stop.out")"
		fi
	done
	if test -n "$DAEMON_PID"; then
		if stop_daemon_ >"$TRASH/stop.out" 2>&1; then
			test_ok_ "the daemon exits 0 at unmount, no sanitizer report"
		else
			test_failure_ "the daemon exits 0 at unmount, no sanitizer report" \
				"$(cat "$TRASH/stop.out")"
			grep -A 12 -e "ERROR: .*Sanitizer" -e "runtime error:" \
			    "$DAEMON_LOG" | head -n 40 | sed -e 's/^/#   /'
		fi
	fi
	test_done_=true
	say "1..$test_count"
	if test "$test_failures" -gt 0; then
		diag "failed $test_failures among $test_count test(s)"
		exit 1
	fi
	exit 0
}

# --- assertions for case bodies -------------------------------------------

# test_cmp EXPECTED ACTUAL: the files are equal (byte for byte).
test_cmp () {
	cmp -s "$1" "$2" && return 0
	echo "test_cmp: $1 and $2 differ:"
	if LC_ALL=C grep -q '[^[:print:][:space:]]' "$1" "$2" 2>/dev/null; then
		cmp "$1" "$2"
	else
		diff -u "$1" "$2"
	fi
	return 1
}

# test_line_count OP N FILE
test_line_count () {
	n_=$(wc -l <"$3")
	test "$n_" "$1" "$2" && return 0
	echo "test_line_count: $3 has $n_ lines, want $1 $2:"
	cat "$3"
	return 1
}

# test_must_fail CMD...: CMD runs and fails (not by a signal).
test_must_fail () {
	"$@"
	r_=$?
	if test $r_ = 0; then
		echo "test_must_fail: command succeeded: $*"
		return 1
	elif test $r_ -gt 128 && test $r_ -le 192; then
		echo "test_must_fail: died of a signal ($r_): $*"
		return 1
	fi
	return 0
}

# test_path_is_missing PATH
test_path_is_missing () {
	test -e "$1" || test -L "$1" || return 0
	echo "test_path_is_missing: $1 exists:"
	ls -ld "$1"
	return 1
}

# test_is WANT GOT [what]: two strings are equal.
test_is () {
	test "x$1" = "x$2" && return 0
	echo "test_is: ${3:-value}: want '$1', got '$2'"
	return 1
}

# stat_of FILE KEY: the value of `KEY = value` in a stats or config file.
stat_of () {
	sed -n "s/^$2 = //p" "$1"
}

# random_below N: a random number in 0..N-1 (N at most 65536).
random_below () {
	od -An -N2 -tu2 /dev/urandom | awk -v n="$1" '{ print $1 % n }'
}

# sleep_ms MS: sleep that many milliseconds.
sleep_ms () {
	sleep "$(awk -v m="$1" 'BEGIN { print m / 1000 }')"
}

# wait_until SECONDS 'shell condition': poll every 0.1 s.
wait_until () {
	wu_n_=$(($1 * 10))
	while test $wu_n_ -gt 0; do
		eval "$2" && return 0
		sleep 0.1
		wu_n_=$((wu_n_ - 1))
	done
	echo "wait_until: '$2' still false after $1 s"
	return 1
}

# track_pid PID: stopped (TERM, then KILL) at exit if still running.
# In a case body start the process as `{ cmd & } && pid=$! && track_pid
# $pid &&`: a bare `cmd & ... &&` would put the rest of the chain in the
# background too.
track_pid () {
	BG_PIDS="$BG_PIDS $1"
}

# stop_pid PID: TERM, up to 3 s, KILL; reaps it.
stop_pid () {
	kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }
	kill -TERM "$1" 2>/dev/null
	sp_n_=30
	while kill -0 "$1" 2>/dev/null && test $sp_n_ -gt 0; do
		sleep 0.1
		sp_n_=$((sp_n_ - 1))
	done
	kill -0 "$1" 2>/dev/null && kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

# sysc OP ARGS...: run one system call sequence in Python and print `ok`
# or `STEP:ERRNO` (e.g. `close:EFBIG`, `rename:ESTALE`), so that a case can
# compare the exact errno and where it surfaced.
#   rename SRC DST | unlink PATH | mkdir PATH | rmdir PATH
#   create PATH [DATA]          O_CREAT|O_WRONLY|O_TRUNC, write, close
#   create_excl PATH [DATA]     the same with O_EXCL
#   write PATH DATA             O_WRONLY|O_TRUNC of an existing file
#   read PATH                   open, read; prints the bytes read after `ok`
#   read_nonblock PATH          the same with O_NONBLOCK
#   setxattr PATH NAME VALUE | getxattr PATH NAME
# With SYSC_MS=1 a last line `ms=N` tells how long the calls took.
sysc () {
	python3 - "$@" <<-\PYEOF
	import errno, os, sys, time
	op, a = sys.argv[1], sys.argv[2:]
	step = op
	t0 = time.monotonic()
	def ms():
	    if os.environ.get("SYSC_MS"):
	        print("ms=%d" % ((time.monotonic() - t0) * 1000))
	def done(extra=b""):
	    sys.stdout.write("ok\n")
	    sys.stdout.flush()
	    if extra:
	        sys.stdout.buffer.write(extra)
	        sys.stdout.flush()
	    ms()
	try:
	    if op == "rename":
	        os.rename(a[0], a[1]); done()
	    elif op == "unlink":
	        os.unlink(a[0]); done()
	    elif op == "mkdir":
	        os.mkdir(a[0]); done()
	    elif op == "rmdir":
	        os.rmdir(a[0]); done()
	    elif op in ("create", "create_excl", "write"):
	        fl = os.O_WRONLY | os.O_TRUNC
	        if op != "write":
	            fl |= os.O_CREAT
	        if op == "create_excl":
	            fl |= os.O_EXCL
	        step = "open"
	        fd = os.open(a[0], fl, 0o644)
	        data = a[1].encode() if len(a) > 1 else b""
	        step = "write"
	        while data:
	            data = data[os.write(fd, data):]
	        step = "close"
	        os.close(fd); done()
	    elif op in ("read", "read_nonblock"):
	        fl = os.O_RDONLY | (os.O_NONBLOCK if op == "read_nonblock" else 0)
	        step = "open"
	        fd = os.open(a[0], fl)
	        step = "read"
	        out = b""
	        while True:
	            b = os.read(fd, 65536)
	            if not b:
	                break
	            out += b
	        step = "close"
	        os.close(fd); done(out)
	    elif op == "truncate":
	        os.truncate(a[0], int(a[1])); done()
	    elif op == "setxattr":
	        os.setxattr(a[0], a[1], a[2].encode()); done()
	    elif op == "getxattr":
	        v = os.getxattr(a[0], a[1]); done(v + b"\n")
	    else:
	        sys.exit("sysc: unknown op " + op)
	except OSError as e:
	    print("%s:%s" % (step, errno.errorcode.get(e.errno, str(e.errno))))
	    ms()
	PYEOF
}

# --- the mount ------------------------------------------------------------

is_mounted_at () {
	awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts
}

is_mounted () {
	is_mounted_at "$MNT"
}

# Starts the daemon on $MNT and $DB; waits up to 10 s for the mount.
# MNT_ARG, when set, is how the command line spells $MNT.
start_daemon_ () {
	"$QUEENFS" -f --db "$DB" $DAEMON_ARGS "${MNT_ARG:-$MNT}" >>"$DAEMON_LOG" 2>&1 </dev/null 5>&- &
	DAEMON_PID=$!
	echo "$DAEMON_PID" >"$TRASH/daemon.pid"
	sd_n_=100
	while test $sd_n_ -gt 0; do
		if is_mounted; then
			# the mount is in the table before INIT is answered
			stat "$MNT/sys" >/dev/null 2>&1 && return 0
		elif ! kill -0 "$DAEMON_PID" 2>/dev/null; then
			wait "$DAEMON_PID" 2>/dev/null
			echo "queenfs exited before mounting (status $?)"
			DAEMON_PID=
			return 1
		fi
		sleep 0.1
		sd_n_=$((sd_n_ - 1))
	done
	echo "queenfs did not mount $MNT within 10 s"
	return 1
}

# Unmounts (lazily if busy), then stops the daemon by pid and reaps it.
# Fails when the daemon did not exit 0 by itself after the unmount (a
# crash, a sanitizer report, a hang) or reported a sanitizer error.
# reap_ MOUNTPOINT PID LOG WHAT: unmount, then wait up to 10 s for the
# daemon PID to exit (killed by pid if it does not), and fail unless it
# exited 0 and LOG holds no sanitizer report.  WHAT names it in messages.
reap_ () {
	rp_rc_=0
	if is_mounted_at "$1"; then
		fusermount3 -u "$1" 2>/dev/null || fusermount3 -uz "$1" 2>/dev/null ||
			{ echo "could not unmount $1"; rp_rc_=1; }
	fi
	if test -n "$2"; then
		rp_n_=100
		while kill -0 "$2" 2>/dev/null && test $rp_n_ -gt 0; do
			sleep 0.1
			rp_n_=$((rp_n_ - 1))
		done
		if kill -0 "$2" 2>/dev/null; then
			echo "$4 was still running 10 s after the unmount"
			stop_pid "$2"
			rp_rc_=1
		else
			wait "$2"
			rp_st_=$?
			if test $rp_st_ != 0; then
				echo "$4 exited with status $rp_st_ after the unmount"
				rp_rc_=1
			fi
		fi
	fi
	if grep -q -e "ERROR: AddressSanitizer" -e "ERROR: LeakSanitizer" \
	    -e "runtime error:" "$3" 2>/dev/null; then
		echo "sanitizer report in $3"
		rp_rc_=1
	fi
	return $rp_rc_
}

stop_daemon_ () {
	reap_ "$MNT" "$DAEMON_PID" "$DAEMON_LOG" "the daemon"
	sto_rc_=$?
	DAEMON_PID=
	echo >"$TRASH/daemon.pid"
	return $sto_rc_
}

# mount_queenfs [extra daemon args]: a fresh temp dir with the database,
# the daemon's log and the mountpoint; the daemon runs in the foreground
# in the background of this script.  Sets TRASH, MNT, DB, DAEMON_LOG,
# DAEMON_PID.  On failure the script ends with a failed case.
mount_queenfs () {
	fuse_usable || skip_all "$fuse_reason"
	test -x "$QUEENFS" || {
		test_failure_ "queenfs is built" "no executable $QUEENFS (run make)"
		test_done
	}
	TRASH=$(mktemp -d "${TMPDIR:-/tmp}/queenfs-test.XXXXXX") || exit 1
	# a daemon on PostgreSQL keeps its spool under XDG_DATA_HOME: here,
	# not in the user's home
	XDG_DATA_HOME="$TRASH/data"
	export XDG_DATA_HOME
	MNT="$TRASH/mnt"
	DB="${MOUNT_DB_:-$TRASH/queen.db}"
	# QUEENFS_TEST_STORE=pg: a test that leaves the store to this runs
	# on a schema of its own on QUEEN_TEST_PG's server instead (make
	# check-pg runs the permission tests so)
	if test -z "${MOUNT_DB_:-}" && test "${QUEENFS_TEST_STORE:-}" = pg; then
		test -n "${QUEEN_TEST_PG:-}" ||
			skip_all "QUEENFS_TEST_STORE=pg without QUEEN_TEST_PG (run under tests/pg.sh)"
		DB=$(pg_uri "t_$(basename "$TRASH" | tr 'A-Z' 'a-z' | tr -cd 'a-z0-9')")
	fi
	# SQLITE_STORE: a case that looks at the SQLite file itself
	case $DB in
	postgres://* | postgresql://*) ;;
	*) test_set_prereq SQLITE_STORE ;;
	esac
	DAEMON_LOG="$TRASH/daemon.log"
	DAEMON_ARGS="$*"
	mkdir "$MNT" || exit 1
	start_watchdog_
	if ! start_daemon_ >"$TRASH/mount.out"; then
		if test $test_count = 0 &&
		    grep -q -e 'Operation not permitted' -e 'fuse: device not found' \
		    -e 'Permission denied' "$DAEMON_LOG"; then
			skip_all "cannot mount FUSE here: $(head -n 1 "$DAEMON_LOG")"
		fi
		test_failure_ "mount queenfs on $MNT" "$(cat "$TRASH/mount.out")"
		sed -e 's/^/# log: /' "$DAEMON_LOG"
		test_done
	fi
}

# A watchdog ends a hung script: it kills the daemon (so that blocked
# readers get ENOTCONN), drops the mount, then TERMs the script.
start_watchdog_ () {
	(
		# the sleep must not hold the script's stdout (prove waits for EOF)
		sleep "$QUEENFS_TEST_TIMEOUT" >/dev/null 2>&1 </dev/null 5>&- &
		wd_sleep_=$!
		trap 'kill $wd_sleep_ 2>/dev/null; exit 0' TERM
		wait $wd_sleep_
		echo "# watchdog: script still running after $QUEENFS_TEST_TIMEOUT s"
		p_=$(cat "$TRASH/daemon.pid" 2>/dev/null)
		test -n "$p_" && kill -KILL "$p_" 2>/dev/null
		fusermount3 -uz "$MNT" 2>/dev/null
		for f_ in "$TRASH"/.extra/*.pid; do
			test -f "$f_" || continue
			p_=$(cat "$f_" 2>/dev/null)
			test -n "$p_" && kill -KILL "$p_" 2>/dev/null
			n_=${f_##*/}
			fusermount3 -uz "$TRASH/${n_%.pid}" 2>/dev/null
		done
		sleep 2
		kill -TERM $$ 2>/dev/null
	) &
	WATCHDOG_PID=$!
}

# spool_dir: where the daemon stages pushes (fs/store.c): beside a SQLite
# file, or for a PostgreSQL store one per mountpoint under XDG_DATA_HOME
# (this script's own, so the only one there).
spool_dir () {
	if test_have_prereq SQLITE_STORE; then
		echo "$DB.spool"
	else
		echo "$XDG_DATA_HOME"/queenfs/spool-*
	fi
}

# remount: stop the daemon cleanly and start it again on the same database.
remount () {
	stop_daemon_
	rm_rc_=$?
	start_daemon_ && return $rm_rc_
}

# kill9_daemon: SIGKILL the daemon and reap it; the mount stays (ENOTCONN)
# until remount, which drops it with `fusermount3 -uz` first.
kill9_daemon () {
	test -n "$DAEMON_PID" || return 1
	kill -KILL "$DAEMON_PID"
	wait "$DAEMON_PID" 2>/dev/null
	DAEMON_PID=
	echo >"$TRASH/daemon.pid"
	return 0
}

cleanup_ () {
	cl_status_=$?
	set +e
	for p_ in $BG_PIDS; do
		stop_pid "$p_"
	done
	if test -n "$MNT"; then
		stop_daemon_ >/dev/null
		is_mounted && fusermount3 -uz "$MNT" 2>/dev/null
	fi
	for n_ in $EXTRA_MOUNTS; do
		stop_extra_ "$n_" >/dev/null
		is_mounted_at "$TRASH/$n_" && fusermount3 -uz "$TRASH/$n_" 2>/dev/null
	done
	if test -n "$WATCHDOG_PID"; then
		kill -TERM "$WATCHDOG_PID" 2>/dev/null
		wait "$WATCHDOG_PID" 2>/dev/null
	fi
	if test -n "$TRASH" && test -d "$TRASH"; then
		if test "$test_failures" = 0 && $test_done_; then
			rmdir "$MNT" 2>/dev/null
			rm -rf "$TRASH"
		else
			diag "kept $TRASH (database, daemon.log)"
		fi
	fi
	return $cl_status_
}

# --- several daemons on one store (PostgreSQL) -----------------------------
#
# The main daemon ($MNT, $DAEMON_PID) stays as above; more daemons on the
# same $DB each get a name, a mountpoint $TRASH/NAME and a log
# $TRASH/NAME.log, and are stopped by pid at exit (and by the watchdog).
# A file store is opened by one daemon at a time: these are for URIs.
#
#	test -n "$QUEEN_TEST_PG" || skip_all "no PostgreSQL (tests/pg.sh)"
#	mount_queenfs_on "$(pg_uri t0040)"
#	mount_extra b && echo hi >"$TRASH/b/queues/q/m"

EXTRA_MOUNTS=

# pg_uri SCHEMA: $QUEEN_TEST_PG with search_path set to SCHEMA (created by
# the first daemon that opens it); SCHEMA: lower case letters, digits, _.
pg_uri () {
	case "$QUEEN_TEST_PG" in
	*\?*) echo "$QUEEN_TEST_PG&options=-csearch_path%3D$1" ;;
	*) echo "$QUEEN_TEST_PG?options=-csearch_path%3D$1" ;;
	esac
}

# mount_queenfs_on DB [extra daemon args]: mount_queenfs on the store DB
# (a path or a URI) instead of a fresh file in the temp dir.
mount_queenfs_on () {
	MOUNT_DB_=$1
	shift
	mount_queenfs "$@"
}

# extra_pid_ NAME: sets ep_ to the pid of daemon NAME ("" if not running)
extra_pid_ () {
	ep_=$(cat "$TRASH/.extra/$1.pid" 2>/dev/null)
}

# start_extra_ NAME: (re)start daemon NAME with the args it was given
start_extra_ () {
	se_args_=$(cat "$TRASH/.extra/$1.args")
	"$QUEENFS" -f --db "$DB" $se_args_ "$TRASH/$1" \
	    >>"$TRASH/$1.log" 2>&1 </dev/null 5>&- &
	se_pid_=$!
	echo "$se_pid_" >"$TRASH/.extra/$1.pid"
	se_n_=100
	while test $se_n_ -gt 0; do
		if is_mounted_at "$TRASH/$1"; then
			stat "$TRASH/$1/sys" >/dev/null 2>&1 && return 0
		elif ! kill -0 "$se_pid_" 2>/dev/null; then
			wait "$se_pid_" 2>/dev/null
			echo "queenfs $1 exited before mounting (status $?); its log:"
			tail -n 5 "$TRASH/$1.log"
			: >"$TRASH/.extra/$1.pid"
			return 1
		fi
		sleep 0.1
		se_n_=$((se_n_ - 1))
	done
	echo "queenfs $1 did not mount $TRASH/$1 within 10 s"
	return 1
}

# mount_extra NAME [extra daemon args]: another daemon on $DB, mounted on
# $TRASH/NAME (after mount_queenfs_on).  Fails with a message.
mount_extra () {
	me_name_=$1
	shift
	case "$me_name_" in
	''|*[!a-z0-9_]*) echo "mount_extra: bad name '$me_name_'"; return 1 ;;
	esac
	mkdir -p "$TRASH/.extra" "$TRASH/$me_name_" || return 1
	printf '%s\n' "$*" >"$TRASH/.extra/$me_name_.args"
	case " $EXTRA_MOUNTS " in
	*" $me_name_ "*) ;;
	*) EXTRA_MOUNTS="$EXTRA_MOUNTS $me_name_" ;;
	esac
	start_extra_ "$me_name_"
}

# stop_extra_ NAME: unmount, wait for the daemon to exit 0 (as stop_daemon_)
stop_extra_ () {
	extra_pid_ "$1"
	reap_ "$TRASH/$1" "$ep_" "$TRASH/$1.log" "daemon $1"
	st_rc_=$?
	: >"$TRASH/.extra/$1.pid"
	return $st_rc_
}

# pid_exited_ PID: gone, or a zombie none of whose threads is left
pid_exited_ () {
	test -d "/proc/$1" || return 0
	grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null &&
	    test "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -le 1
}

# kill9_extra NAME: SIGKILL daemon NAME and reap it; its mount answers
# ENOTCONN until remount_extra.  A killed daemon can fail to exit: a
# thread of it blocked in the kernel (a name invalidation waiting for a
# directory lock that a request to the dead daemon holds) keeps /dev/fuse
# open, and its callers hang in D state.  After 5 s the connection is
# aborted through fusectl, as an operator would, and the case fails.
kill9_extra () {
	extra_pid_ "$1"
	test -n "$ep_" || return 1
	k9_conn_=$(awk -v m="$TRASH/$1" '$5 == m { split($3, d, ":"); print d[2] }' \
	    /proc/self/mountinfo)
	kill -KILL "$ep_"
	k9_n_=50
	while ! pid_exited_ "$ep_" && test $k9_n_ -gt 0; do
		sleep 0.1
		k9_n_=$((k9_n_ - 1))
	done
	k9_rc_=0
	if test $k9_n_ = 0; then
		echo "kill9_extra $1: pid $ep_ did not exit 5 s after SIGKILL:"
		for t_ in /proc/$ep_/task/*; do
			echo "  thread ${t_##*/}: $(cat "$t_/wchan" 2>/dev/null)"
		done
		if test -n "$k9_conn_" &&
		    test -w "/sys/fs/fuse/connections/$k9_conn_/abort"; then
			echo "  aborting FUSE connection $k9_conn_"
			echo 1 >"/sys/fs/fuse/connections/$k9_conn_/abort"
		else
			echo "  cannot abort FUSE connection '$k9_conn_' (fusectl)"
		fi
		k9_rc_=1
	fi
	wait "$ep_" 2>/dev/null
	: >"$TRASH/.extra/$1.pid"
	return $k9_rc_
}

# remount_extra NAME: stop daemon NAME (cleanly if it runs; after a kill -9
# the dead mount is dropped) and start it again on $DB.
remount_extra () {
	extra_pid_ "$1"
	re_rc_=0
	if test -n "$ep_"; then
		stop_extra_ "$1" || re_rc_=1
	fi
	is_mounted_at "$TRASH/$1" && fusermount3 -uz "$TRASH/$1" 2>/dev/null
	start_extra_ "$1" && return $re_rc_
}

# An extra daemon that died during a case (not by kill9_extra) fails it,
# and is started again for the next case.
test_check_extras_ () {
	tce_rc_=0
	for n_ in $EXTRA_MOUNTS; do
		extra_pid_ "$n_"
		test -z "$ep_" && continue
		kill -0 "$ep_" 2>/dev/null && continue
		diag "daemon $n_ (pid $ep_) died during this case; its log ends:"
		tail -n 15 "$TRASH/$n_.log" 2>/dev/null | sed -e 's/^/#   /'
		wait "$ep_" 2>/dev/null
		: >"$TRASH/.extra/$n_.pid"
		fusermount3 -uz "$TRASH/$n_" 2>/dev/null
		start_extra_ "$n_" >/dev/null || diag "restart of $n_ failed"
		tce_rc_=1
	done
	return $tce_rc_
}

# fd 5: the TAP stream, also while a case's output goes to case.out.
# A script whose reader is gone (prove killed first) stops at its next
# line of TAP, and cleans up: by default that write's SIGPIPE would kill
# it on the spot, its daemons running and its mounts left behind.  Its
# last words, to that pipe, then fail quietly.
exec 5>&1
trap 'trap "" PIPE; cleanup_ >&5' EXIT
trap 'trap "" PIPE; exit 141' PIPE
trap 'trap "" PIPE; diag "interrupted" >&5; exit 130' INT
trap 'trap "" PIPE; diag "terminated" >&5; exit 143' TERM

# q_init NAME: create queue NAME, set Q to its path.
q_init () {
	Q="$MNT/queues/$1"
	mkdir "$Q"
}

# q_config QUEUE-PATH 'key = value': set config keys and check it took.
q_config () {
	printf '%s\n' "$2" >"$1/config"
}

# pop [DIR]: read DIR/next (default $Q) once, with a 15 s guard.
pop () {
	timeout 15 cat "${1:-$Q}/next"
}
