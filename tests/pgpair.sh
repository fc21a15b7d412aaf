# pgpair.sh - sourced by a test: a PostgreSQL primary and a synchronous
# streaming standby, each a private cluster listening only on a unix
# socket in its own temp dir (initdb, then pg_basebackup of the primary).
#
#	. "$TEST_DIRECTORY/pgpair.sh"
#	pgpair_have || skip_all "no PostgreSQL server binaries"
#	trap 'cleanup_ >&5; pgpair_stop' EXIT
#	pgpair_start || { test_failure_ "primary and standby" "$PGPAIR_WHY"; test_done; }
#
# Sets PGPAIR_P and PGPAIR_S, the socket dirs (libpq hosts) of the primary
# and the standby.  pgpair_crash_primary stops the primary in immediate
# mode (PGPAIR_SIGNAL=INT: a fast shutdown, as a planned switchover
# does); pgpair_promote promotes the standby.  pgpair_stop stops every
# postmaster still running by its pid and removes the dirs; the caller
# runs it on every exit.  The standby is synchronous (the primary's
# synchronous_standby_names names it): a COMMIT that returned is on both.
# The promoted standby has no standby of its own and no such setting, so
# its commits do not wait.

PGPAIR_DIR=
PGPAIR_P=
PGPAIR_S=
PGPAIR_PPID=
PGPAIR_SPID=
PGPAIR_WHY=

pgpair_have () {
	pp_bin_=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	if test -z "$pp_bin_" && command -v pg_config >/dev/null 2>&1; then
		pp_bin_=$(pg_config --bindir)
	fi
	test -n "$pp_bin_" && test -x "$pp_bin_/initdb" &&
	    test -x "$pp_bin_/pg_basebackup"
}

# As root the clusters belong to the postgres user (initdb refuses root).
pgpair_owner_ () {
	if test "$(id -u)" = 0; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# pgpair_sql HOSTDIR SQL: one query, unaligned tuples only
pgpair_sql () {
	"$pp_bin_/psql" -X -q -A -t -h "$1" -U postgres -d postgres -c "$2"
}

# pgpair_pm_ DATADIR LOG SOCKDIR [-c ...]: start a postmaster (its pid in
# pm_pid_); it keeps none of the script's descriptors (fd 5 is TAP's)
pgpair_pm_ () {
	pm_data_=$1 pm_log_=$2 pm_sock_=$3
	shift 3
	pgpair_owner_ "$pp_bin_/pg_ctl" -D "$pm_data_" -l "$pm_log_" -w -t 60 \
	    -o "-k $pm_sock_ -c listen_addresses= -c fsync=off $*" \
	    start </dev/null >/dev/null 2>&1 5>&- || {
		PGPAIR_WHY="$pm_data_ did not start: $(tail -n 3 "$pm_log_")"
		return 1
	}
	pm_pid_=$(head -n 1 "$pm_data_/postmaster.pid")
}

# pgpair_wait_gone_ PID SECONDS: 0 once PID is gone
pgpair_wait_gone_ () {
	pw_n_=$(($2 * 10))
	while kill -0 "$1" 2>/dev/null && test $pw_n_ -gt 0; do
		sleep 0.1
		pw_n_=$((pw_n_ - 1))
	done
	! kill -0 "$1" 2>/dev/null
}

pgpair_start () {
	pgpair_have || { PGPAIR_WHY="no PostgreSQL server binaries"; return 1; }
	PGPAIR_DIR=$(mktemp -d "${TMPDIR:-/tmp}/queen-pgpair-XXXXXX") ||
		{ PGPAIR_WHY="mktemp"; return 1; }
	PGPAIR_P=$PGPAIR_DIR/p
	PGPAIR_S=$PGPAIR_DIR/s
	mkdir "$PGPAIR_P" "$PGPAIR_S" || return 1
	test "$(id -u)" = 0 &&
		chown postgres "$PGPAIR_DIR" "$PGPAIR_P" "$PGPAIR_S"
	# the socket dirs must be reachable by the tests, which may not be root
	chmod 0755 "$PGPAIR_DIR" "$PGPAIR_P" "$PGPAIR_S"
	pgpair_owner_ "$pp_bin_/initdb" -D "$PGPAIR_P/data" -U postgres -A trust \
	    --no-sync -E UTF8 --locale=C >"$PGPAIR_DIR/initdb.log" 2>&1 || {
		PGPAIR_WHY="initdb failed: $(tail -n 1 "$PGPAIR_DIR/initdb.log")"
		return 1
	}
	pgpair_pm_ "$PGPAIR_P/data" "$PGPAIR_P/server.log" "$PGPAIR_P" \
	    -c max_connections=50 || return 1
	PGPAIR_PPID=$pm_pid_
	pgpair_owner_ "$pp_bin_/pg_basebackup" -h "$PGPAIR_P" -U postgres \
	    -D "$PGPAIR_S/data" -R -X stream -c fast --no-sync \
	    >"$PGPAIR_DIR/basebackup.log" 2>&1 || {
		PGPAIR_WHY="pg_basebackup failed: $(tail -n 1 "$PGPAIR_DIR/basebackup.log")"
		return 1
	}
	# -R wrote primary_conninfo; this later line names the standby
	echo "primary_conninfo = 'host=$PGPAIR_P user=postgres application_name=standby1'" |
	    pgpair_owner_ tee -a "$PGPAIR_S/data/postgresql.auto.conf" >/dev/null
	pgpair_pm_ "$PGPAIR_S/data" "$PGPAIR_S/server.log" "$PGPAIR_S" \
	    -c max_connections=50 || return 1
	PGPAIR_SPID=$pm_pid_
	# set after the base backup, so that only the primary has it
	pgpair_sql "$PGPAIR_P" \
	    "ALTER SYSTEM SET synchronous_standby_names = 'standby1'" &&
	pgpair_sql "$PGPAIR_P" "SELECT pg_reload_conf()" >/dev/null ||
		{ PGPAIR_WHY="synchronous_standby_names"; return 1; }
	pp_n_=100
	while test "$(pgpair_sql "$PGPAIR_P" \
	    "SELECT sync_state FROM pg_stat_replication")" != sync; do
		pp_n_=$((pp_n_ - 1))
		test $pp_n_ -gt 0 ||
			{ PGPAIR_WHY="the standby never became synchronous"; return 1; }
		sleep 0.1
	done
	return 0
}

# pgpair_crash_primary: SIGQUIT to the postmaster (immediate shutdown: the
# backends exit at once, no checkpoint; or $PGPAIR_SIGNAL), then wait for
# it to be gone
pgpair_crash_primary () {
	kill -${PGPAIR_SIGNAL:-QUIT} "$PGPAIR_PPID" || return 1
	pgpair_wait_gone_ "$PGPAIR_PPID" 30 || {
		echo "the primary (pid $PGPAIR_PPID) did not stop"
		return 1
	}
	PGPAIR_PPID=
}

pgpair_promote () {
	pgpair_owner_ "$pp_bin_/pg_ctl" -D "$PGPAIR_S/data" -w -t 60 promote \
	    >/dev/null || { tail -n 5 "$PGPAIR_S/server.log"; return 1; }
	test "$(pgpair_sql "$PGPAIR_S" "SELECT pg_is_in_recovery()")" = f
}

# pgpair_stop: fast shutdown of whatever still runs, by pid; then rm
pgpair_stop () {
	# the pid files too: a postmaster whose start was cut short
	for pp_f_ in "$PGPAIR_S/data/postmaster.pid" "$PGPAIR_P/data/postmaster.pid"; do
		test -n "$PGPAIR_DIR" && test -f "$pp_f_" || continue
		pp_pid_=$(head -n 1 "$pp_f_")
		# a stale file (immediate shutdown) may name a reused pid
		tr '\0' ' ' <"/proc/$pp_pid_/cmdline" 2>/dev/null |
		    grep -q -e "-D $PGPAIR_DIR/" || continue
		case " $PGPAIR_SPID $PGPAIR_PPID " in
		*" $pp_pid_ "*) ;;
		*) PGPAIR_SPID="$PGPAIR_SPID $pp_pid_" ;;
		esac
	done
	for pp_pid_ in $PGPAIR_SPID $PGPAIR_PPID; do
		kill -INT "$pp_pid_" 2>/dev/null || continue
		pgpair_wait_gone_ "$pp_pid_" 10 || kill -KILL "$pp_pid_" 2>/dev/null
	done
	PGPAIR_SPID=
	PGPAIR_PPID=
	test -n "$PGPAIR_DIR" && rm -rf "$PGPAIR_DIR"
	PGPAIR_DIR=
}
