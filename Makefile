# queenfs - one non-recursive Makefile.  Objects go under build/ (or
# build/asan/ for the sanitizer build); nothing is written elsewhere.
#   make            libqueen.a, queenfs, the test programs and examples
#   make test       everything under prove (unit tests, then mount tests)
#   make asan       the same tests on an ASan+UBSan build (asan-pg:
#                   check-pg on it)
#   make check-pg   the unit tests, the multi-mount tests and the mount
#                   tests on a private PostgreSQL cluster
#   make bench      benchmarks (not part of test)
-include config.mak

CC ?= cc
O ?= build

# PostgreSQL is optional: PG=auto (the default) builds the backend when
# pkg-config finds libpq, PG=no leaves it out (a postgresql:// --db then
# fails with "built without PostgreSQL support": core/nopg/pg_none.c),
# PG=yes insists on it.
PG ?= auto
PG_ASKED := $(PG)
HAVE_PQ := $(shell pkg-config --exists libpq && echo yes)
ifeq ($(PG),auto)
override PG := $(if $(HAVE_PQ),yes,no)
endif
ifeq ($(PG),yes)
ifneq ($(HAVE_PQ),yes)
$(error PG=yes, but pkg-config finds no libpq: apt-get install libpq-dev (or build with PG=no))
endif
endif

# Each package probed on its own, so a missing one is named (with the
# Debian package that has it) instead of surfacing as a missing header.
# Targets that install the packages first (test, run, asan, ...) or need
# none skip the probe; the make they start probes.
PKG_fuse3 = libfuse3-dev
PKG_sqlite3 = libsqlite3-dev
PKG_libxxhash = libxxhash-dev
PKG_jansson = libjansson-dev
PKG_libpq = libpq-dev
PKG_libmicrohttpd = libmicrohttpd-dev
CORE_PKGS = sqlite3 libxxhash jansson $(if $(filter yes,$(PG)),libpq)
# the daemon alone links the HTTP front end's library
PKGS = fuse3 libmicrohttpd $(CORE_PKGS)
NO_PROBE = test run asan tsan tsan-pg bench fuzz deps deps-run deps-ci clean \
	format format-check \
	check-layers
ifneq ($(filter-out $(NO_PROBE),$(or $(MAKECMDGOALS),all)),)
$(foreach p,$(PKGS),$(if $(shell pkg-config --exists $(p) && echo y),,\
    $(error pkg-config finds no $(p): apt-get install $(PKG_$(p)), or run make deps as root)))
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))
CORE_LIBS := $(shell pkg-config --libs $(CORE_PKGS))
endif

WARN = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN += -Werror
endif
OPT ?= -O2 -g
CFLAGS_ALL = -std=c11 -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -pthread -Icore \
	$(OPT) $(WARN) $(PKG_CFLAGS) $(EXTRA_CFLAGS) -MMD -MP
LDFLAGS_ALL = -pthread $(EXTRA_LDFLAGS)

ifeq ($(PG),yes)
PG_SRC = $(wildcard core/pg/*.c)
TAP_PG = $(O)/tests/tap_pg.o
else
PG_SRC = core/nopg/pg_none.c
TAP_PG = $(O)/tests/tap_nopg.o
endif
CORE_SRC = $(wildcard core/*.c core/sqlite/*.c core/api/*.c) $(PG_SRC)
FS_SRC = $(filter-out fs/main.c,$(wildcard fs/*.c))
# t-pgmulti talks to the server with libpq itself
UNIT_SRC = $(filter-out $(if $(filter yes,$(PG)),,tests/t-pgmulti.c),\
	$(wildcard tests/t-*.c))
EX_SRC = $(wildcard examples/*.c)

CORE_OBJ = $(CORE_SRC:%.c=$(O)/%.o)
FS_OBJ = $(FS_SRC:%.c=$(O)/%.o)
UNIT_BIN = $(UNIT_SRC:tests/%.c=$(O)/tests/%)
EX_BIN = $(EX_SRC:examples/%.c=$(O)/examples/%)
LIB = $(O)/libqueen.a
DAEMON = $(O)/queenfs

all: $(LIB) $(DAEMON) $(UNIT_BIN) $(EX_BIN)

$(O)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<

$(LIB): $(CORE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(DAEMON): $(O)/fs/main.o $(FS_OBJ) $(LIB)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(PKG_LIBS)

$(O)/tests/t-ctl: $(O)/fs/ctl.o $(O)/fs/name.o
$(O)/tests/t-lease: $(O)/fs/pending.o $(O)/fs/lease.o $(O)/fs/log.o $(O)/fs/state.o \
    $(O)/fs/msg.o $(O)/fs/name.o
$(O)/tests/t-stage: $(O)/fs/stage.o $(O)/fs/log.o $(O)/fs/state.o
$(O)/tests/t-%: $(O)/tests/t-%.o $(O)/tests/tap.o $(TAP_PG) $(LIB)
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter-out $(LIB),$^) $(LIB) $(CORE_LIBS)

$(O)/examples/%: $(O)/examples/%.o
	$(CC) $(LDFLAGS_ALL) -o $@ $^

# `make test` and `make run` first make sure the Debian packages are
# there (installing them as root), then build in a fresh make so that
# pkg-config sees them.
test: deps
	$(MAKE) check

run: deps-run
	$(MAKE) all
	@sh fs/unstale-mount.sh $(MNT)
	@mkdir -p $(MNT)
	@echo "queenfs: mounting on $(MNT) (database: $(DB)); Ctrl-C unmounts"
	$(DAEMON) -f $(if $(DB),--db $(DB)) $(MNT)

MNT ?= /tmp/queenfs
DB ?=

# The units run first; the mount tests need the daemon and /dev/fuse.
check: all
	QUEENFS_BUILD=$(abspath $(O)) prove -j2 $(PROVE_FLAGS) $(UNIT_BIN) $(wildcard tests/fs-*.sh)

check-unit: all
	prove $(UNIT_BIN)

check-fs: all
	QUEENFS_BUILD=$(abspath $(O)) prove $(wildcard tests/fs-*.sh)

# The unit tests again on PostgreSQL, then the mount tests of several
# daemons on one database (fs-004x and fs-0063 skip themselves without
# QUEEN_TEST_PG), then every other mount test with its mount on a schema
# of the cluster (PG_STORE_TESTS, QUEENFS_TEST_STORE=pg; a case that
# reads the SQLite file itself skips): a private cluster in a temp dir,
# stopped by its pid when they end (tests/pg.sh).  fs-0061 starts its
# own daemons on files of its own.
PG_FS_TESTS = tests/fs-0040-pg-multi.sh tests/fs-0041-pg-crash.sh \
    tests/fs-0042-pg-round-trips.sh tests/fs-0043-pg-failover.sh \
    tests/fs-0044-pg-wake.sh tests/fs-0063-http-pg.sh \
    tests/fs-0077-pg-apipush-crash.sh tests/fs-0078-pg-publish-hold.sh \
    tests/fs-0079-pg-deadlock.sh
PG_STORE_TESTS = $(filter-out $(PG_FS_TESTS) tests/fs-0061-http-serve.sh, \
    $(wildcard tests/fs-*.sh))
# Each mount script on a PostgreSQL store makes a round trip of what is a
# file access on SQLite, two scripts at a time: its watchdog allows four
# times the usual (a bound on a hang, not a speed test).
PG_STORE_TIMEOUT = $$(( $${QUEENFS_TEST_TIMEOUT:-150} * 4 ))
check-pg: all
	QUEENFS_BUILD=$(abspath $(O)) tests/pg.sh sh -c '\
	    prove $(PROVE_FLAGS) $(UNIT_BIN) $(PG_FS_TESTS) && \
	    QUEENFS_TEST_STORE=pg QUEENFS_TEST_TIMEOUT=$(PG_STORE_TIMEOUT) \
	    prove -j2 $(PROVE_FLAGS) $(PG_STORE_TESTS)'

# undefined already holds the two overflow checks on gcc and clang; they
# are named so that no compiler's default drops them: a signed overflow or
# an out-of-range double to integer in any number parser aborts the test.
SANITIZE = address,undefined,signed-integer-overflow,float-cast-overflow
asan: deps
	$(MAKE) O=build/asan OPT="-O1 -g -fno-omit-frame-pointer" \
	    EXTRA_CFLAGS="-fsanitize=$(SANITIZE) -fno-sanitize-recover=all" \
	    EXTRA_LDFLAGS="-fsanitize=$(SANITIZE)" check

# check-pg on that build: the PostgreSQL backend's paths, through the
# engine's tests and through the mount, under the sanitizers.  The
# watchdog of a mount test (lib.sh) allows twice its usual time.
asan-pg: deps
	QUEENFS_TEST_TIMEOUT=300 $(MAKE) O=build/asan \
	    OPT="-O1 -g -fno-omit-frame-pointer" \
	    EXTRA_CFLAGS="-fsanitize=$(SANITIZE) -fno-sanitize-recover=all" \
	    EXTRA_LDFLAGS="-fsanitize=$(SANITIZE)" check-pg

# Every unit test binary under valgrind memcheck: an invalid access, a use
# of uninitialised memory or a definite/possible leak fails that test
# (status 1, the report on stderr); prove sums them up.
VALGRIND = valgrind -q --error-exitcode=1 --leak-check=full \
	--errors-for-leak-kinds=definite,possible --track-origins=yes
check-valgrind: all
	prove -j2 $(PROVE_FLAGS) --exec '$(VALGRIND)' $(UNIT_BIN)

# ThreadSanitizer: libqueen and the daemon built with -fsanitize=thread in
# build/tsan/, then the stress run (tests/fs-0034-stress.sh) against that
# daemon.  The first report ends the daemon (halt_on_error, status 66) and
# the script fails on a dead daemon or a report in its log.
TSAN_STRESS_SECONDS ?= 15
tsan: deps
	$(MAKE) O=build/tsan OPT="-O1 -g -fno-omit-frame-pointer" \
	    EXTRA_CFLAGS="-fsanitize=thread" EXTRA_LDFLAGS="-fsanitize=thread" \
	    build/tsan/libqueen.a build/tsan/queenfs
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 $(TSAN_OPTIONS)" \
	QUEENFS_BUILD=$(abspath build/tsan) \
	QUEENFS_STRESS_SECONDS=$(TSAN_STRESS_SECONDS) \
	    prove -v $(PROVE_FLAGS) tests/fs-0034-stress.sh

# The same daemon on PostgreSQL (a private cluster, tests/pg.sh): the
# mount tests of several daemons, where FUSE and HTTP threads run jobs
# beside the engine thread that reads the LISTEN channel.
tsan-pg: deps
	$(MAKE) O=build/tsan OPT="-O1 -g -fno-omit-frame-pointer" \
	    EXTRA_CFLAGS="-fsanitize=thread" EXTRA_LDFLAGS="-fsanitize=thread" \
	    build/tsan/libqueen.a build/tsan/queenfs
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 $(TSAN_OPTIONS)" \
	QUEENFS_BUILD=$(abspath build/tsan) \
	    tests/pg.sh prove $(PROVE_FLAGS) $(PG_FS_TESTS)

# The load test alone, longer: STRESS_SECONDS of 8 producers and 8
# consumers over 100 partitions (tests/fs-0034-stress.sh).
STRESS_SECONDS ?= 60
stress: all
	QUEENFS_BUILD=$(abspath $(O)) QUEENFS_STRESS_SECONDS=$(STRESS_SECONDS) \
	    prove -v $(PROVE_FLAGS) tests/fs-0034-stress.sh

# Who may include whom (docs/HACKING.md, "Architecture"): core/ never
# FUSE; the engine (core/*.c) reaches the backends only through core.h's
# store_ops seam, never their private headers or libraries; no backend
# includes another's; core/api/ never fs/; fs/ never SQLite, xxHash or
# libpq, nor core/'s private headers (only core/queen.h).
check-layers:
	@! grep -n '#include.*fuse' $$(find core -name '*.[ch]')
	@! grep -n '#include.*\(sqlite3\|libpq\|"db\.h"\|"store\.h"\|"pg\.h"\|"pg_store\.h"\|sqlite/\|pg/\|api/\)' core/*.c core/*.h
	@! grep -n '#include.*\(libpq\|"pg\.h"\|"pg_store\.h"\|pg/\)' core/sqlite/*
	@! grep -n '#include.*\(sqlite3\|"db\.h"\|"store\.h"\|sqlite/\)' core/pg/* core/nopg/*
	@! grep -n '#include.*\(fs/\|"fs\.h"\|sqlite3\|libpq\|"db\.h"\|"store\.h"\|"pg\.h"\)' core/api/*
	@! grep -n '#include.*\(sqlite3\|xxhash\|libpq\|core\.h\|"db\.h"\|"pg\.h"\|store\.h\|sqlite/\|pg/\)' fs/*.c fs/*.h
	@echo layers ok

# Static analysis: gcc -fanalyzer over every file of core/ and fs/ (one
# log per file under $(O)/analyze/; any warning not listed below fails),
# then cppcheck with the checked-in .cppcheck-suppress (one reason per
# line).  `make -j analyze` runs the files in parallel.
ANALYZE_CC ?= gcc
ANALYZE_CFLAGS = -std=c11 -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -pthread -Icore \
	-O1 -g -fanalyzer -fdiagnostics-plain-output $(PKG_CFLAGS)
ANALYZE_LOG = $(patsubst %.c,$(O)/analyze/%.log,$(CORE_SRC) $(FS_SRC) fs/main.c)
# -fanalyzer findings judged false positives, as file:function:option.
# Each is GCC 12's analyzer losing a heap pointer once it is stored
# through a pointer it cannot see the origin of (a callback's void *arg,
# an array slot at a computed index, a node reached through a hash
# chain) and then calling it leaked at the next statement; reduced to a
# 10-line case that has no leak at all.  Checked by hand:
#   msg.c dlq_cb/copy_payload: stored into *df->mi, freed by msginfo_release
#   ops_dir.c add (and add_txid, list_with_pending, inlined), take_kept
#     (inlined in partdir_run):
#     h->dents and its names, freed by handle_put
#   pending.c dent_add: (*d)[*n].name, freed by its callers with d
#   node.c node_move: becomes n->name (s is then NULL), freed by node_free
#   note.c note_set: becomes n->error, freed by note_free/note_take
#   ops_file.c open_run, ops_api.c api_reply: h->text = strdup(..), freed
#     by handle_put
#   ops_push.c push_pending (reached from push_run_many's loop over the
#     jobs of a run): *notify is that job's j->notify, freed by job_free
# And one where it forgets a loop already ran:
#   api_txn.c tx_operations: the second loop's op_name cannot answer NULL,
#     since the first loop returned on every NULL for the same items
FANALYZER_SUPPRESS = \
	fs/msg.c:dlq_cb:-Wanalyzer-malloc-leak \
	fs/msg.c:copy_payload:-Wanalyzer-malloc-leak \
	fs/ops_dir.c:add:-Wanalyzer-malloc-leak \
	fs/ops_dir.c:add_txid:-Wanalyzer-malloc-leak \
	fs/ops_dir.c:list_with_pending:-Wanalyzer-malloc-leak \
	fs/ops_dir.c:partdir_run:-Wanalyzer-malloc-leak \
	fs/pending.c:dent_add:-Wanalyzer-malloc-leak \
	fs/node.c:node_move:-Wanalyzer-malloc-leak \
	fs/note.c:note_set:-Wanalyzer-malloc-leak \
	fs/ops_file.c:open_run:-Wanalyzer-malloc-leak \
	fs/ops_api.c:api_reply:-Wanalyzer-malloc-leak \
	fs/ops_push.c:push_pending:-Wanalyzer-malloc-leak \
	core/api/api_txn.c:tx_operations:-Wanalyzer-null-argument

$(O)/analyze/%.log: %.c
	@mkdir -p $(dir $@)
	LC_ALL=C $(ANALYZE_CC) $(ANALYZE_CFLAGS) -c -o /dev/null $< >$@.tmp 2>&1 || \
	    { cat $@.tmp; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@

analyze: $(ANALYZE_LOG)
	@cat $(ANALYZE_LOG) | awk -v keep="$(FANALYZER_SUPPRESS)" ' \
	    BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) ok[k[i]] = 1 } \
	    /In function / { fn = $$0; sub(/.*In function ./, "", fn); sub(/.:$$/, "", fn) } \
	    / warning: / { split($$0, p, ":"); o = $$0; sub(/.*\[/, "", o); sub(/\].*/, "", o); \
	        sub(/^\.\//, "", p[1]); \
	        if (!((p[1] ":" fn ":" o) in ok)) { print; bad++ } } \
	    END { if (bad) { print bad " -fanalyzer finding(s); see $(O)/analyze/"; exit 1 } }'
	@echo "gcc -fanalyzer: no findings outside FANALYZER_SUPPRESS"
	cppcheck --quiet --error-exitcode=1 \
	    --enable=warning,portability,performance \
	    --inline-suppr --suppressions-list=.cppcheck-suppress \
	    -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -Icore core fs

# libFuzzer (clang) over the parsers, FUZZ_SECONDS each; the corpus in
# tests/fuzz/corpus/ grows as it finds new paths.  Any crash file it
# leaves is a bug: add it to the corpus as a regression case.
FUZZ_SECONDS ?= 60
FUZZ_CC = clang -std=c11 -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -Icore -g -O1 \
	-fsanitize=fuzzer,$(SANITIZE) -fno-sanitize-recover=all $(PKG_CFLAGS)
fuzz: deps
	@mkdir -p build/fuzz
	$(FUZZ_CC) -o build/fuzz/fuzz-ctl tests/fuzz/fuzz-ctl.c fs/ctl.c \
	    core/rfc3339.c
	$(FUZZ_CC) -o build/fuzz/fuzz-api tests/fuzz/fuzz-api.c $(CORE_SRC) \
	    $(CORE_LIBS)
	build/fuzz/fuzz-ctl -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	    tests/fuzz/corpus/config tests/fuzz/corpus/seek
	$(FUZZ_CC) -o build/fuzz/fuzz-numbers tests/fuzz/fuzz-numbers.c \
	    fs/ctl.c core/*.c $(CORE_LIBS)
	build/fuzz/fuzz-api -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
	    tests/fuzz/corpus/api
	build/fuzz/fuzz-numbers -max_total_time=$(FUZZ_SECONDS) -max_len=256 \
	    tests/fuzz/corpus/numbers

# Benchmarks: queenfs beside nullfs, the engine alone, beanstalkd, Redis
# and dirq, in one run (tests/bench/run.sh; BENCH_SECONDS, BENCH_REPS).
bench: deps
	$(MAKE) all
	QUEENFS_BUILD=$(abspath $(O)) tests/bench/run.sh

# What building and running need (make run), what the tests need too
# (make test and the other test targets), and CI's own tools.
deps:
	@PG=$(PG_ASKED) .ci/deps test
deps-run:
	@PG=$(PG_ASKED) .ci/deps run
deps-ci:
	@PG=$(PG_ASKED) .ci/deps ci

# clang-format with the checked-in .clang-format.  The tree predates the
# file, so format-check judges only the lines changed since FORMAT_BASE,
# the last commit that touched .clang-format (git clang-format), and make
# format rewrites only those.
FORMAT_BASE ?= $(shell git rev-list -1 HEAD -- .clang-format)
format:
	git clang-format --style=file $(FORMAT_BASE) -- core fs tests examples
format-check:
	@out=$$(git clang-format --style=file --diff $(FORMAT_BASE) -- core fs tests examples); \
	case "$$out" in \
	""|*"no modified files to format"*|*"did not modify any files"*) echo "format ok";; \
	*) printf '%s\n' "$$out"; echo "format-check: run make format"; exit 1;; \
	esac

# The daemon, its man page and its systemd unit (the unit names the
# binary under PREFIX).  mount -t fuse.queenfs (and /etc/fstab) runs the
# daemon through mount.fuse3's /bin/sh, which finds it only on the shell's
# default PATH: for another PREFIX a link goes into MOUNT_LINK (empty: no
# link; docs/queenfs.8, NOTES).
PREFIX ?= /usr/local
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
MOUNT_LINK ?= /usr/sbin
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(UNITDIR)
	install -m 0755 $(DAEMON) $(DESTDIR)$(PREFIX)/bin/queenfs
	install -m 0644 docs/queenfs.8 $(DESTDIR)$(MANDIR)/man8/queenfs.8
	sed 's|/usr/local/bin/queenfs|$(PREFIX)/bin/queenfs|' \
	    'docs/queenfs@.service' >'$(DESTDIR)$(UNITDIR)/queenfs@.service'
	chmod 0644 '$(DESTDIR)$(UNITDIR)/queenfs@.service'
	@case "$(PREFIX)" in /usr|/usr/|/usr/local|/usr/local/) ;; *) \
	    if [ -n "$(MOUNT_LINK)" ]; then \
		echo "linking $(MOUNT_LINK)/queenfs for mount -t fuse.queenfs"; \
		install -d $(DESTDIR)$(MOUNT_LINK) && \
		ln -sf $(PREFIX)/bin/queenfs $(DESTDIR)$(MOUNT_LINK)/queenfs; \
	    else \
		echo "mount -t fuse.queenfs will not find $(PREFIX)/bin/queenfs" \
		    "(see queenfs(8), NOTES)"; \
	    fi ;; esac

clean:
	rm -rf build

.PHONY: deps-run deps-ci format format-check all test run bench check fuzz check-unit check-fs check-pg asan asan-pg tsan tsan-pg stress check-valgrind check-layers analyze deps install clean

# Nothing is an intermediate: a no-op make leaves the test objects and
# relinks nothing (make -q all answers 0 after a build).
.SECONDARY:

-include $(CORE_OBJ:.o=.d) $(FS_OBJ:.o=.d) $(O)/fs/main.d $(UNIT_SRC:tests/%.c=$(O)/tests/%.d) $(TAP_PG:.o=.d) $(O)/tests/tap.d
