/*
 * t-ctl.c - the mount's pure parsers without a mount: config lines, seek
 * positions, RFC 3339 times, and the file-name encoding of transactionIds.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../fs/ctl.h"
#include "tap.h"

/* fs/name.c, declared here to keep FUSE headers out of the test */
int txid_to_name(const char *txid, char *out, size_t len);
int name_to_txid(const char *name, char *out, size_t len);

static int
cfg(const char *text, struct ctl_config *c, int *bad)
{
	return ctl_config_parse(text, strlen(text), c, bad);
}

static void
test_config(void)
{
	static struct ctl_config c;
	char big[CTL_TEXT_MAX + 2];
	int bad = 0;

	is_int(cfg("lease_time = 60\n", &c, &bad), 0, "config: one line");
	is_int((int64_t)c.n, 1, "config: one pair");
	is_str(c.keys[0], "lease_time", "config: key");
	is_str(c.values[0], "60", "config: value");
	is_int(cfg("# a comment\n\n  batch=5  \r\nwait = 1", &c, &bad), 0,
	    "config: comments, blanks, CRLF, no final newline");
	is_int((int64_t)c.n, 2, "config: two pairs");
	is_str(c.values[0], "5", "config: value trimmed");
	is_str(c.keys[1], "wait", "config: last line without newline");
	is_int(cfg("subscription = since 2026-01-01T00:00:00Z\n", &c, &bad),
	    0, "config: a value with an inner space");
	is_str(c.values[0], "since 2026-01-01T00:00:00Z",
	    "config: inner space kept");
	is_int(cfg("a = 1\nnot a pair\n", &c, &bad), -EINVAL,
	    "config: a line without = is refused");
	is_int(bad, 2, "config: the bad line's number");
	is_int((int64_t)c.n, 0, "config: nothing half-parsed");
	is_int(cfg("Key = 1\n", &c, &bad), -EINVAL,
	    "config: keys are lower case");
	is_int(cfg("k =\n", &c, &bad), -EINVAL, "config: empty value");
	is_int(cfg(" = v\n", &c, &bad), -EINVAL, "config: empty key");
	is_int(ctl_config_parse("k = a\0b", 7, &c, &bad), -EINVAL,
	    "config: a NUL byte is refused");
	memset(big, 'x', sizeof(big));
	big[0] = 'k';
	big[1] = '=';
	is_int(ctl_config_parse(big, sizeof(big), &c, &bad), -E2BIG,
	    "config: past CTL_TEXT_MAX bytes");
}

static int
seek(const char *text, struct ctl_seek *s)
{
	return ctl_seek_parse(text, strlen(text), s);
}

static void
test_seek(void)
{
	struct ctl_seek s;

	is_int(seek("42\n", &s), 0, "seek: an offset");
	ok(s.kind == CTL_POS_OFFSET && s.value == 42 && !s.partition[0],
	    "seek: offset 42, all partitions");
	is_int(seek("start", &s), 0, "seek: start");
	is_int(s.kind, CTL_POS_START, "seek: start kind");
	is_int(seek("  end  \n", &s), 0, "seek: end with blanks");
	is_int(s.kind, CTL_POS_END, "seek: end kind");
	is_int(seek("p1 7", &s), 0, "seek: one partition");
	is_str(s.partition, "p1", "seek: its name");
	is_int(s.value, 7, "seek: its offset");
	is_int(seek("2026-11-30T10:00:00Z", &s), 0, "seek: a time");
	ok(s.kind == CTL_POS_TIME && s.value == 1796032800000LL,
	    "seek: the time in ms");
	is_int(seek("-5", &s), -EINVAL, "seek: a negative offset");
	is_int(seek("12abc", &s), -EINVAL, "seek: junk after digits");
	is_int(seek("", &s), -EINVAL, "seek: empty");
	is_int(seek("a b c", &s), -EINVAL, "seek: three words");
}

static void
test_time(void)
{
	int64_t ms = 0;
	char buf[64];

	is_int(ctl_time_parse("1970-01-01T00:00:00Z", 20, &ms), 0,
	    "time: the epoch");
	is_int(ms, 0, "time: is 0");
	is_int(ctl_time_parse("2026-11-30T10:00:00.5+01:00", 27, &ms), 0,
	    "time: fraction and offset");
	is_int(ms, 1796029200500LL, "time: offset applied");
	is_int(ctl_time_parse("2026-02-29T00:00:00Z", 20, &ms), -EINVAL,
	    "time: no 29 February in 2026");
	is_int(ctl_time_parse("2024-02-29T00:00:00Z", 20, &ms), 0,
	    "time: 29 February 2024");
	is_int(ctl_time_parse("2026-11-30T10:00:00", 19, &ms), -EINVAL,
	    "time: a zone is required");
	is_int(ctl_time_parse("2026-11-30T25:00:00Z", 20, &ms), -EINVAL,
	    "time: hour 25");
	ctl_time_format(1796032800123LL, buf, sizeof(buf));
	is_str(buf, "2026-11-30T10:00:00.123Z", "time: formatted back");
}

static void
test_names(void)
{
	char nm[300], tx[1100], longid[200];

	is_int(txid_to_name("order-1", nm, sizeof(nm)), 0, "name: plain id");
	is_str(nm, "order-1", "name: is its own name");
	is_int(txid_to_name("a/b c", nm, sizeof(nm)), 0, "name: slash, space");
	is_str(nm, "a%2Fb%20c", "name: %%XX for each");
	is_int(txid_to_name(".x", nm, sizeof(nm)), 0, "name: leading dot");
	is_str(nm, "%2Ex", "name: the dot encoded");
	is_int(txid_to_name("50%", nm, sizeof(nm)), 0, "name: a percent");
	is_str(nm, "50%25", "name: encoded too");
	is_int(name_to_txid("a%2Fb%20c", tx, sizeof(tx)), 0, "name: decode");
	is_str(tx, "a/b c", "name: round trip");
	is_int(name_to_txid("%41", tx, sizeof(tx)), -EINVAL,
	    "name: one spelling per id (%%41 is not A)");
	is_int(name_to_txid("a%2f", tx, sizeof(tx)), -EINVAL,
	    "name: lower-case hex is not the spelling");
	is_int(name_to_txid("a%2", tx, sizeof(tx)), -EINVAL,
	    "name: a cut escape");
	is_int(name_to_txid("%00", tx, sizeof(tx)), -EINVAL,
	    "name: no NUL inside an id");
	is_int(name_to_txid(".x", tx, sizeof(tx)), -EINVAL,
	    "name: a dot-file is not a message name");
	memset(longid, '/', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	is_int(txid_to_name(longid, nm, sizeof(nm)), -ENAMETOOLONG,
	    "name: an id too long to encode in 255 bytes");
}

int
main(void)
{
	plan_lazy();
	test_config();
	test_seek();
	test_time();
	test_names();
	return done_testing();
}
