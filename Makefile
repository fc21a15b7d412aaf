# queenfs - one non-recursive Makefile.  Objects go under build/ (or
# build/asan/ for the sanitizer build); nothing is written elsewhere.
#   make            libqueen.a, queenfs, the test programs and examples
#   make test       everything under prove (unit tests, then mount tests)
#   make asan       the same tests on an ASan+UBSan build
#   make check-pg   the unit tests on a private PostgreSQL cluster
#   make bench      benchmarks (not part of test)
-include config.mak

CC ?= cc
O ?= build
PKGS = fuse3 sqlite3 libpq libxxhash jansson
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CORE_LIBS := $(shell pkg-config --libs sqlite3 libpq libxxhash jansson 2>/dev/null)

WARN = -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes \
	-Wmissing-prototypes -Wformat=2 -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN += -Werror
endif
OPT ?= -O2 -g
CFLAGS_ALL = -std=c11 -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -pthread \
	$(OPT) $(WARN) $(PKG_CFLAGS) $(EXTRA_CFLAGS) -MMD -MP
LDFLAGS_ALL = -pthread $(EXTRA_LDFLAGS)

CORE_SRC = $(wildcard core/*.c)
FS_SRC = $(filter-out fs/main.c,$(wildcard fs/*.c))
UNIT_SRC = $(wildcard tests/t-*.c)
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

$(O)/tests/t-ctl: $(O)/fs/ctl.o
$(O)/tests/t-%: $(O)/tests/t-%.o $(O)/tests/tap.o $(LIB)
	$(CC) $(LDFLAGS_ALL) -o $@ $(filter-out $(LIB),$^) $(LIB) $(CORE_LIBS)

$(O)/examples/%: $(O)/examples/%.o
	$(CC) $(LDFLAGS_ALL) -o $@ $^

# `make test` and `make run` first make sure the Debian packages are
# there (installing them as root), then build in a fresh make so that
# pkg-config sees them.
test: deps
	$(MAKE) check

run: deps
	$(MAKE) all
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

# The unit tests again on PostgreSQL: a private cluster in a temp dir,
# stopped by its pid when they end (tests/pg.sh).
check-pg: all
	tests/pg.sh prove $(PROVE_FLAGS) $(UNIT_BIN)

asan: deps
	$(MAKE) O=build/asan OPT="-O1 -g -fno-omit-frame-pointer" \
	    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all" \
	    EXTRA_LDFLAGS="-fsanitize=address,undefined" check

check-valgrind: all
	for t in $(UNIT_BIN); do valgrind -q --error-exitcode=1 --leak-check=full $$t >/dev/null || exit 1; done

check-layers:
	@! grep -n '#include.*fuse' core/*.c core/*.h
	@! grep -n '#include.*\(sqlite3\|xxhash\)' fs/*.c fs/*.h
	@echo layers ok

analyze:
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability \
	    --inline-suppr --suppressions-list=.cppcheck-suppress \
	    -D_XOPEN_SOURCE=700 core fs

# libFuzzer (clang) over the parsers, FUZZ_SECONDS each; the corpus in
# tests/fuzz/corpus/ grows as it finds new paths.  Any crash file it
# leaves is a bug: add it to the corpus as a regression case.
FUZZ_SECONDS ?= 60
FUZZ_CC = clang -std=c11 -D_XOPEN_SOURCE=700 -D_DEFAULT_SOURCE -g -O1 \
	-fsanitize=fuzzer,address,undefined $(PKG_CFLAGS)
fuzz: deps
	@mkdir -p build/fuzz
	$(FUZZ_CC) -o build/fuzz/fuzz-ctl tests/fuzz/fuzz-ctl.c fs/ctl.c
	$(FUZZ_CC) -o build/fuzz/fuzz-api tests/fuzz/fuzz-api.c core/*.c \
	    $(CORE_LIBS)
	build/fuzz/fuzz-ctl -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	    tests/fuzz/corpus/config tests/fuzz/corpus/seek
	build/fuzz/fuzz-api -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
	    tests/fuzz/corpus/api

# Benchmarks: queenfs beside nullfs, the engine alone, beanstalkd, Redis
# and dirq, in one run (tests/bench/run.sh; BENCH_SECONDS, BENCH_REPS).
bench: deps
	$(MAKE) all
	QUEENFS_BUILD=$(abspath $(O)) tests/bench/run.sh

deps:
	@.ci/deps

clean:
	rm -rf build

.PHONY: all test run bench check fuzz check-unit check-fs check-pg asan check-valgrind check-layers analyze deps clean

-include $(CORE_OBJ:.o=.d) $(FS_OBJ:.o=.d) $(O)/fs/main.d $(UNIT_SRC:tests/%.c=$(O)/tests/%.d)
