/*
 * t-group.c - consumer groups: independent cursors, subscription modes
 * (all, new, since), seek by offset/time/start/end, group delete, and how
 * a group's config inherits from its queue.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qtest.h"
#include "tap.h"

#define Q "feed"

static int
group_count_cb(void *arg, const struct queen_group_info *gi)
{
	(void)gi;
	(*(int *)arg)++;
	return 0;
}

static void
test_two_groups(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "group-two");
	struct queen_batch *b = NULL;
	struct queen_ack_result r;
	struct queen_group_info gi;
	int n = 0;

	pushn(q, Q, NULL, "m", 4);
	is_int(queen_group_ensure(q, Q, "g1"), 0, "two: ensure g1");
	is_int(queen_group_ensure(q, Q, "g1"), 0, "two: ensure is idempotent");
	is_int(queen_group_ensure(q, Q, "g2"), 0, "two: ensure g2");
	is_int(queen_group_ensure(q, "nosuch", "g"), -ENOENT,
	    "two: ensure on a missing queue is -ENOENT");
	is_int(queen_group_ensure(q, Q, "bad/name"), -EINVAL,
	    "two: ensure with a bad name is -EINVAL");
	queen_group_list(q, Q, group_count_cb, &n);
	ok(n >= 2, "two: list shows both groups (%d)", n);
	is_int(queen_group_get(q, Q, "g1", &gi), 0, "two: get g1");
	is_str(gi.name, "g1", "two: get name");
	is_int(gi.mode, QUEEN_SUB_ALL, "two: default subscription is all");
	is_int(gi.created_at, f.now, "two: created_at");
	is_int(queen_group_get(q, Q, "zz", &gi), -ENOENT,
	    "two: get of a missing group is -ENOENT");

	if (pop1(q, Q, NULL, "g1", 3, &b) == 0) {
		ack1(q, Q, NULL, "g1", "m3", "completed", b->lease_id, &r);
		queen_batch_free(b);
	}
	is_int(committed(q, Q, "g1", NULL), 3, "two: g1 at 3");
	is_int(pop_first(q, Q, NULL, "g2", 1, NULL, NULL), 1,
	    "two: g2 still starts at 1");
	is_int(committed(q, Q, "g2", NULL), 0, "two: g2 cursor untouched");
	ack1(q, Q, NULL, "g2", "m1", "failed", NULL, &r);
	is_int(committed(q, Q, "g1", NULL), 3,
	    "two: g2's failure does not touch g1");
	is_int(pop_first(q, Q, NULL, "g1", 1, NULL, NULL), 4,
	    "two: g1 continues at 4");
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), 1,
	    "two: queue mode is a third, independent cursor");
	fix_close(&f);
}

static void
test_subscription(void)
{
	struct fix f;
	struct queen *q;
	struct queen_group_info gi;
	int64_t t0;
	const char *k[2] = { "subscription", "batch" };
	const char *v[2] = { "new", "bogus" };

	q = fix_open(&f, "group-sub-all");
	pushn(q, Q, NULL, "m", 3);
	f.now += 60 * SEC;
	is_int(cfg(q, Q, "late", "subscription", "all"), 0,
	    "sub all: set (creates the group)");
	is_int(pop_first(q, Q, NULL, "late", 1, NULL, NULL), 1,
	    "sub all: a late group starts at the beginning");
	fix_close(&f);

	q = fix_open(&f, "group-sub-new");
	pushn(q, Q, NULL, "m", 3);
	f.now += 1 * SEC;
	is_int(cfg(q, Q, "fresh", "subscription", "new"), 0,
	    "sub new: set (creates the group)");
	queen_group_get(q, Q, "fresh", &gi);
	is_int(gi.mode, QUEEN_SUB_NEW, "sub new: mode reads new");
	is_int(pop_first(q, Q, NULL, "fresh", 10, NULL, NULL), -EAGAIN,
	    "sub new: nothing older than the group is delivered");
	f.now += 1 * SEC;
	push1(q, Q, NULL, "m4", "x");
	is_int(pop_first(q, Q, NULL, "fresh", 10, NULL, NULL), 4,
	    "sub new: only the message pushed after creation");
	is_int(push1(q, Q, "p2", "n1", "x"), 1, "sub new: push to a new "
	    "partition");
	is_int(pop_first(q, Q, "p2", "fresh", 10, NULL, NULL), 1,
	    "sub new: a partition created later is delivered from its "
	    "start");
	fix_close(&f);

	/* a resubscription to new, all in one millisecond of the clock:
	 * the tail at that moment, not the pushes older than a time */
	q = fix_open(&f, "group-sub-new-tie");
	push1(q, Q, NULL, "m1", "x");
	is_int(cfg(q, Q, "tie", "batch", "1"), 0,
	    "sub new tie: a config write creates the group (all)");
	push1(q, Q, NULL, "m2", "x");
	is_int(cfg(q, Q, "tie", "subscription", "new"), 0,
	    "sub new tie: resubscribe in the same millisecond");
	is_int(pop_first(q, Q, NULL, "tie", 10, NULL, NULL), -EAGAIN,
	    "sub new tie: nothing pushed before the resubscription");
	push1(q, Q, NULL, "m3", "x");
	is_int(pop_first(q, Q, NULL, "tie", 10, NULL, NULL), 3,
	    "sub new tie: the first message after it");
	fix_close(&f);

	/* t0 = 2023-11-14T22:13:20Z */
	q = fix_open(&f, "group-sub-since");
	t0 = f.now;
	push1(q, Q, NULL, "m1", "x");
	f.now = t0 + 60 * SEC;
	push1(q, Q, NULL, "m2", "x");
	f.now = t0 + 120 * SEC;
	push1(q, Q, NULL, "m3", "x");
	is_int(cfg(q, Q, "s", "subscription", "since 2023-11-14T22:14:20Z"),
	    0, "sub since: set");
	is_int(queen_group_get(q, Q, "s", &gi), 0, "sub since: group exists");
	is_int(gi.mode, QUEEN_SUB_SINCE, "sub since: mode");
	is_int(gi.since, t0 + 60 * SEC, "sub since: time parsed");
	is_int(pop_first(q, Q, NULL, "s", 10, NULL, NULL), 2,
	    "sub since: first message pushed at/after the time");
	is_int(cfg(q, Q, "s5", "subscription",
	    "since 2023-11-14T23:14:20+01:00"), 0, "sub since: with an offset");
	queen_group_get(q, Q, "s5", &gi);
	is_int(gi.since, t0 + 60 * SEC, "sub since: offset applied");
	/* a time with milliseconds reads back with them, and writing back
	 * what was read changes nothing */
	{
		char buf[2048];
		ssize_t len;

		is_int(cfg(q, Q, "s6", "subscription",
			   "since 2023-11-14T22:14:20.079Z"),
		    0, "sub since: ms set");
		len = queen_config_format(q, Q, "s6", buf, sizeof(buf));
		ok(len > 0 &&
			strstr(buf,
			    "subscription = since "
			    "2023-11-14T22:14:20.079Z\n") != NULL,
		    "sub since: reads back to the millisecond");
		queen_group_get(q, Q, "s6", &gi);
		is_int(gi.since, t0 + 60 * SEC + 79, "sub since: ms kept");
	}
	is_int(cfg(q, Q, "s2", "subscription", "since yesterday"), -EINVAL,
	    "sub since: a bad time is -EINVAL");
	is_int(cfg(q, Q, "s3", "subscription", "some"), -EINVAL,
	    "sub: an unknown mode is -EINVAL");
	is_int(queen_config_set(q, Q, "s4", k, v, 2), -EINVAL,
	    "sub: a bad pair fails the whole call");
	is_int(queen_group_get(q, Q, "s4", &gi), -ENOENT,
	    "sub: ... and creates no group");
	fix_close(&f);
}

static void
test_seek(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "group-seek");
	struct queen_batch *b = NULL;
	struct queen_lease_info li;
	int64_t t0 = f.now;

	push1(q, Q, NULL, "m1", "x");
	f.now = t0 + 10 * SEC;
	push1(q, Q, NULL, "m2", "x");
	f.now = t0 + 20 * SEC;
	push1(q, Q, NULL, "m3", "x");
	push1(q, Q, NULL, "m4", "x");
	push1(q, Q, "p2", "x1", "x");
	queen_group_ensure(q, Q, "g");

	is_int(queen_seek(q, Q, "g", "default", QUEEN_POS_OFFSET, 3), 0,
	    "seek: offset 3");
	is_int(committed(q, Q, "g", NULL), 2,
	    "seek: offset is the next to deliver (committed 2)");
	is_int(pop_first(q, Q, "default", "g", 1, NULL, NULL), 3,
	    "seek: offset 3 delivers 3");

	/* The pop above holds a lease: seek releases it. */
	if (pop1(q, Q, "p2", "g", 1, &b) != 0)
		b = NULL;
	is_int(lease_count(q, Q, "g"), 2, "seek: two leases before");
	is_int(queen_seek(q, Q, "g", "default", QUEEN_POS_START, 0), 0,
	    "seek: start");
	is_int(lease_count(q, Q, "g"), 1,
	    "seek: released the lease on that partition only");
	if (b)
		is_int(queen_lease_get(q, b->lease_id, &li), 0,
		    "seek: other partition's lease still live");
	is_int(pop_first(q, Q, "default", "g", 1, NULL, NULL), 1,
	    "seek: start delivers 1");

	is_int(queen_seek(q, Q, "g", "default", QUEEN_POS_TIME,
	    t0 + 5 * SEC), 0, "seek: time");
	is_int(pop_first(q, Q, "default", "g", 1, NULL, NULL), 2,
	    "seek: time delivers the first message pushed at/after it");
	is_int(queen_seek(q, Q, "g", "default", QUEEN_POS_TIME,
	    t0 + 20 * SEC), 0, "seek: time equal to a push");
	is_int(pop_first(q, Q, "default", "g", 1, NULL, NULL), 3,
	    "seek: time is inclusive (at/after)");

	is_int(queen_seek(q, Q, "g", "default", QUEEN_POS_END, 0), 0,
	    "seek: end");
	is_int(committed(q, Q, "g", NULL), 4, "seek: end commits the tail");
	is_int(pop_first(q, Q, "default", "g", 1, NULL, NULL), -EAGAIN,
	    "seek: end: nothing to deliver");
	push1(q, Q, NULL, "m5", "x");
	is_int(pop_first(q, Q, "default", "g", 1, NULL, NULL), 5,
	    "seek: end: a new push is delivered");

	is_int(queen_seek(q, Q, "g", "default", QUEEN_POS_TIME,
	    t0 + 3600 * SEC), 0, "seek: a time after every message");
	is_int(pop_first(q, Q, "default", "g", 1, NULL, NULL), -EAGAIN,
	    "seek: time after the tail delivers nothing");
	is_int(queen_seek(q, Q, "g", "default", QUEEN_POS_OFFSET, 6), 0,
	    "seek: offset tail + 1");
	is_int(committed(q, Q, "g", NULL), 5, "seek: tail + 1 commits 5");
	is_int(queen_seek(q, Q, "g", NULL, QUEEN_POS_START, 0), 0,
	    "seek: all partitions");
	is_int(lease_count(q, Q, "g"), 0, "seek: all partitions' leases "
	    "released");
	is_int(committed(q, Q, "g", "p2"), 0, "seek: p2 at start");
	is_int(committed(q, Q, "g", "default"), 0, "seek: default at start");
	is_int(queen_seek(q, Q, "g", "default", QUEEN_POS_OFFSET, -1),
	    -EINVAL, "seek: negative offset is -EINVAL");
	is_int(queen_seek(q, Q, "g", "nosuch", QUEEN_POS_START, 0), -ENOENT,
	    "seek: missing partition is -ENOENT");
	is_int(queen_seek(q, "nosuch", "g", NULL, QUEEN_POS_START, 0), -ENOENT,
	    "seek: missing queue is -ENOENT");
	queen_batch_free(b);
	fix_close(&f);
}

static void
test_delete(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "group-delete");
	struct queen_batch *b = NULL;
	struct queen_lease_info li;
	struct queen_ack_result r;
	struct queen_group_info gi;

	pushn(q, Q, NULL, "m", 3);
	if (pop1(q, Q, NULL, "g", 1, &b) == 0) {
		ack1(q, Q, NULL, "g", "m1", "dlq", b->lease_id, &r);
		queen_batch_free(b);
		b = NULL;
	}
	pop1(q, Q, NULL, "g", 1, &b);
	is_int(dlq_count(q, Q, "g", NULL), 1, "delete: one dead letter");
	is_int(queen_group_delete(q, Q, "g"), -ENOTEMPTY,
	    "delete: refused while a lease is live");
	is_int(queen_group_get(q, Q, "g", &gi), 0, "delete: still there");
	if (b)
		ack1(q, Q, NULL, "g", b->msgs[0].txid, NULL, b->lease_id, &r);
	is_int(queen_group_delete(q, Q, "g"), 0, "delete: ok");
	is_int(queen_group_get(q, Q, "g", &gi), -ENOENT, "delete: gone");
	if (b)
		is_int(queen_lease_get(q, b->lease_id, &li), -ESTALE,
		    "delete: its lease is gone");
	is_int(lease_count(q, Q, "g"), 0, "delete: no leases listed");
	is_int(dlq_count(q, Q, "g", NULL), 1, "delete: its DLQ entries stay");
	is_int(queen_group_delete(q, Q, "g"), -ENOENT,
	    "delete: twice is -ENOENT");
	is_int(pop_first(q, Q, NULL, "g", 1, NULL, NULL), 1,
	    "delete: a re-created group starts over");
	queen_batch_free(b);
	fix_close(&f);
}

static void
test_config_inheritance(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "group-config");
	char buf[2048];
	ssize_t len;
	int64_t n = 0;

	pushn(q, Q, NULL, "m", 10);
	is_int(cfg(q, Q, NULL, "batch", "3"), 0, "inherit: queue batch 3");
	is_int(queen_group_ensure(q, Q, "g"), 0, "inherit: ensure g");
	is_int(cfgget(q, Q, "g", "batch"), 3, "inherit: g reads queue batch");
	is_int(cfgget(q, Q, "g", "lease_time"), 300,
	    "inherit: g reads queue lease_time");
	is_int(pop_first(q, Q, NULL, "g", 0, &n, NULL), 1, "inherit: pop g");
	is_int(n, 3, "inherit: g pops the queue's batch");
	is_int(cfg(q, Q, "g", "batch", "2"), 0, "inherit: g batch 2");
	is_int(cfgget(q, Q, "g", "batch"), 2, "inherit: g reads its own");
	is_int(cfgget(q, Q, NULL, "batch"), 3, "inherit: queue unchanged");
	is_int(pop_first(q, Q, NULL, "h", 0, &n, NULL), 1, "inherit: pop h");
	is_int(n, 3, "inherit: another group still uses the queue's batch");
	is_int(cfg(q, Q, NULL, "batch", "5"), 0, "inherit: queue batch 5");
	is_int(cfgget(q, Q, "g", "batch"), 2,
	    "inherit: g's own value wins over a later queue change");
	is_int(cfgget(q, Q, "h", "batch"), 5,
	    "inherit: h follows the queue");
	is_int(cfg(q, Q, "g", "wait", "7"), 0, "inherit: g wait");
	is_int(cfgget(q, Q, "g", "wait"), 7, "inherit: g wait reads 7");
	is_int(cfg(q, Q, "g", "auto_ack", "on"), 0, "inherit: g auto_ack");
	is_int(cfgget(q, Q, "g", "auto_ack"), 1, "inherit: g auto_ack 1");
	is_int(cfgget(q, Q, NULL, "auto_ack"), 0, "inherit: queue auto_ack 0");
	is_int(cfg(q, Q, "g", "lease_time", "60"), -EINVAL,
	    "inherit: a queue-only key on a group is -EINVAL");
	is_int(cfgget(q, Q, "g", "lease_time"), 300,
	    "inherit: lease_time unchanged");
	is_int(cfg(q, Q, NULL, "subscription", "new"), -EINVAL,
	    "inherit: subscription on a queue is -EINVAL");
	len = queen_config_format(q, Q, "g", buf, sizeof(buf));
	ok(len > 0 && (size_t)len < sizeof(buf), "inherit: format group");
	ok(strstr(buf, "batch = 2\n") != NULL, "inherit: format shows batch 2");
	ok(strstr(buf, "subscription = all\n") != NULL,
	    "inherit: format shows the subscription");
	fix_close(&f);
}

static int
lag_cb(void *arg, const struct queen_cursor_info *ci)
{
	struct queen_cursor_info *out = arg;

	if (strcmp(ci->partition, "default") == 0)
		*out = *ci;
	return 0;
}

static void
test_cursor_info(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "group-cursor");
	struct queen_cursor_info ci;
	struct queen_stats st;
	struct queen_ack_result r;
	struct queen_batch *b = NULL;

	pushn(q, Q, NULL, "m", 5);
	queen_group_ensure(q, Q, "g");
	ack1(q, Q, NULL, "g", "m2", "completed", NULL, &r);
	pop1(q, Q, NULL, "g", 2, &b);
	memset(&ci, 0, sizeof(ci));
	is_int(queen_cursor_list(q, Q, "g", lag_cb, &ci), 0, "cursor: list");
	is_int(ci.committed, 2, "cursor: committed 2");
	is_int(ci.tail, 5, "cursor: tail 5");
	is_int(ci.lag, 3, "cursor: lag 3");
	ok(ci.leased, "cursor: leased");
	is_int(ci.lease_expires_at, b ? b->lease_expires_at : -1,
	    "cursor: lease expiry");
	memset(&st, 0, sizeof(st));
	queen_stats_get(q, Q, "g", &st);
	is_int(st.depth, 3, "cursor: group stats depth 3");
	is_int(st.leases, 1, "cursor: group stats leases 1");
	queen_stats_get(q, Q, NULL, &st);
	is_int(st.depth, 5, "cursor: queue-mode depth still 5");
	queen_batch_free(b);

	/* A "new" group keeps its start across a restart. */
	f.now += SEC;
	cfg(q, Q, "n", "subscription", "new");
	queen_close(f.q);
	f.q = NULL;
	q = fix_reopen(&f);
	f.now += SEC;
	is_int(pop_first(q, Q, NULL, "n", 10, NULL, NULL), -EAGAIN,
	    "cursor: 'new' group still sees nothing old after a restart");
	push1(q, Q, NULL, "m6", "x");
	is_int(pop_first(q, Q, NULL, "n", 10, NULL, NULL), 6,
	    "cursor: 'new' group gets the next push");
	fix_close(&f);
}

/* queen_group_create: mkdir's call; it refuses what exists, changes
 * nothing when it refuses, and gives the group its owner or none. */
static void
test_create(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "group-create");
	struct queen_owner own = { 4242, 4343, 0750 }, qown = { 7, 8, 0755 };
	struct queen_group_info gi;
	int n = 0;

	is_int(queen_queue_create(q, Q, &qown), 0, "create: the queue");
	pushn(q, Q, NULL, "m", 2);
	is_int(queen_group_create(q, Q, "g1", &own), 0, "create: g1");
	is_int(queen_group_get(q, Q, "g1", &gi), 0, "create: g1 exists");
	is_int((int)gi.owner.uid, 4242, "create: g1 has the uid given");
	is_int((int)gi.owner.gid, 4343, "create: g1 has the gid given");
	is_int((int)gi.owner.mode, 0750, "create: g1 has the mode given");
	is_int(committed(q, Q, "g1", NULL), 0, "create: g1 starts at 0");
	is_int(pop_first(q, Q, NULL, "g1", 1, NULL, NULL), 1,
	    "create: g1 reads the oldest message");
	is_int(queen_group_create(q, Q, "g1", NULL), -EEXIST,
	    "create: again is -EEXIST");
	ok(strstr(queen_errmsg(q), "exists") != NULL, "create: says why: %s",
	    queen_errmsg(q));
	is_int(queen_group_get(q, Q, "g1", &gi), 0, "create: g1 still there");
	is_int((int)gi.owner.uid, 4242, "create: the refusal kept the owner");
	is_int(queen_group_create(q, Q, "g2", NULL), 0, "create: g2, no owner");
	is_int(queen_group_get(q, Q, "g2", &gi), 0, "create: get g2");
	is_int((int)gi.owner.uid, 7, "create: g2 takes the queue's owner");
	is_int(queen_group_create(q, Q, "bad/name", NULL), -EINVAL,
	    "create: a bad name is -EINVAL");
	is_int(queen_group_create(q, Q, ".dot", NULL), -EINVAL,
	    "create: a dot name is -EINVAL");
	is_int(queen_group_create(q, Q, QUEEN_QUEUE_MODE, NULL), -EINVAL,
	    "create: the queue-mode name is -EINVAL");
	is_int(queen_group_create(q, "nosuch", "g", NULL), -ENOENT,
	    "create: a missing queue is -ENOENT");
	queen_group_list(q, Q, group_count_cb, &n);
	is_int(n, 2, "create: only g1 and g2 were made");
	fix_close(&f);
}

/*
 * queen_groups_explicit: while on, a pop, config write, seek or ack by
 * names of a missing group is -ENOENT and makes nothing (the queue's own
 * group still comes with the queue); off again, the first pop makes it.
 */
static void
test_explicit(void)
{
	struct fix f;
	struct queen *q = fix_open(&f, "group-explicit");
	struct queen_ack_result r;
	struct queen_group_info gi;
	struct queen_batch *b = NULL;
	const char *k = "batch", *v = "2";
	int n = 0;

	pushn(q, Q, NULL, "m", 2);
	ok(!queen_groups_explicit(q, true), "explicit: off by default");
	is_int(pop1(q, Q, NULL, "gx", 1, &b), -ENOENT,
	    "explicit: pop of a missing group");
	queen_batch_free(b);
	is_int(queen_config_set(q, Q, "gx", &k, &v, 1), -ENOENT,
	    "explicit: config write of a missing group");
	is_int(queen_seek(q, Q, "gx", NULL, QUEEN_POS_START, 0), -ENOENT,
	    "explicit: seek of a missing group");
	memset(&r, 0, sizeof(r));
	ack1(q, Q, NULL, "gx", "m1", "completed", NULL, &r);
	ok(!r.success && r.err == -ENOENT,
	    "explicit: ack by names of a missing group is -ENOENT");
	ok(strstr(r.error, "no group 'gx'") != NULL,
	    "explicit: which says the group is missing (%s)", r.error);
	is_int(queen_group_get(q, Q, "gx", &gi), -ENOENT,
	    "explicit: none of them made the group");
	queen_group_list(q, Q, group_count_cb, &n);
	is_int(n, 0, "explicit: no group listed");
	is_int(pop_first(q, Q, NULL, NULL, 1, NULL, NULL), 1,
	    "explicit: queue mode pops as before");
	is_int(queen_group_create(q, Q, "gy", NULL), 0,
	    "explicit: queen_group_create makes one");
	is_int(pop_first(q, Q, NULL, "gy", 1, NULL, NULL), 1,
	    "explicit: which pops");
	ok(queen_groups_explicit(q, false), "explicit: was on");
	is_int(pop_first(q, Q, NULL, "gx", 1, NULL, NULL), 1,
	    "explicit: off, a pop makes the group");
	is_int(queen_group_get(q, Q, "gx", &gi), 0, "explicit: gx made");
	fix_close(&f);
}

int
main(void)
{
	plan_lazy();
	test_two_groups();
	test_create();
	test_subscription();
	test_seek();
	test_delete();
	test_explicit();
	test_config_inheritance();
	test_cursor_info();
	return done_testing();
}
