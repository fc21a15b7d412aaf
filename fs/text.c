/*
 * text.c - the contents of generated files (README, config, stats, the
 * sys/ files), rendered inside a job when the file is opened.
 * Every number comes from core or from the engine's counters; this file
 * only lays them out.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

/* the text as the reader sees it, one source line per line of it */
/* clang-format off */
static const char readme[] =
"queenfs - a message queue used through files\n"
"\n"
"  queues/<q>/            mkdir creates a queue, rmdir deletes an empty one\n"
"    config               `key = value` lines; a write sets the keys it names\n"
"    stats                depth, cursors, lag, leases, DLQ size\n"
"    <name>               create + write + close = push (name = transactionId)\n"
"    .<name>...           staging file: not pushed until renamed to a plain name\n"
"    partitions/<p>/      the log of partition p; create a file here to push to p\n"
"    next                 read = pop: `leased/<lease>/<txid>` lines (not listed:\n"
"                         tree walkers never pop; open it by name)\n"
"    leased/<lease>/      the leased messages (payload; user.queen.* xattrs)\n"
"    ack/ failed/ retry/ dlq/   rename a leased message into one to ack it\n"
"    seek                 write `start`, `end`, an offset, a time, or `<p> <pos>`\n"
"                         (reads as empty)\n"
"    groups/<g>/          a consumer group (mkdir makes it, rmdir deletes it):\n"
"                         config stats next seek leased/ ack/ ...\n"
"    timers/<key>         payload pushed into the queue at the file's mtime\n"
"  kv/<ns>/<key>          KV state: read = get, write + close = put, rm = delete\n"
"  api/push pop ack transaction renew\n"
"                         open read-write, write one JSON request, read the answer\n"
"  sys/                   stats, metrics (Prometheus), version, health\n"
"\n"
"Examples\n"
"  mkdir queues/jobs\n"
"  echo '{\"id\": 1}' > queues/jobs/order-1          # push\n"
"  m=$(cat queues/jobs/next)                          # pop: leased/L/order-1\n"
"  cat queues/jobs/$m                                 # the payload\n"
"  mv queues/jobs/$m queues/jobs/ack/                 # completed\n"
"  setfattr -n user.queen.error -v 'bad input' queues/jobs/$m\n"
"  mv queues/jobs/$m queues/jobs/failed/              # failed, retried later\n"
"  echo 'lease_time = 60' > queues/jobs/config\n"
"  mkdir queues/jobs/groups/audit                     # a consumer group\n"
"  m=$(cat queues/jobs/groups/audit/next)             # its own cursor\n"
"  echo start > queues/jobs/groups/audit/seek         # replay for group audit\n"
"\n"
"rename(2) answers: 0 done, ESTALE lease gone, EALREADY already committed,\n"
"ENOENT unknown transaction, EINVAL not an ack, EIO storage failure.\n";
/* clang-format on */

size_t
text_readme_len(void)
{
	return sizeof(readme) - 1;
}

int
text_readme(char **out, size_t *len)
{
	*len = sizeof(readme) - 1;
	*out = strdup(readme);
	return *out ? 0 : -ENOMEM;
}

int
text_config(struct queen *q, struct node *n, char **out, size_t *len)
{
	size_t cap = 4096;
	ssize_t need;
	char *b = NULL, *nb;

	for (;;) {
		if (!(nb = realloc(b, cap))) {
			free(b);
			return -ENOMEM;
		}
		b = nb;
		need = queen_config_format(q, n->queue, n->group, b, cap);
		if (need < 0) {
			free(b);
			return (int)need;
		}
		if ((size_t)need < cap)
			break;
		cap = (size_t)need + 1;
	}
	*out = b;
	*len = strlen(b);
	return 0;
}

static int
close_text(FILE *f, char **t, size_t *len, int rc)
{
	if (fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0) {
		free(*t);
		*t = NULL;
		*len = 0;
	}
	return rc < 0 ? rc : 0;
}

static void
put_time(FILE *f, const char *key, int64_t ms)
{
	char b[40];

	if (ms <= 0) {
		fprintf(f, "%s = -\n", key);
		return;
	}
	ctl_time_format(ms, b, sizeof(b));
	fprintf(f, "%s = %s\n", key, b);
}

static int
cursor_cb(void *arg, const struct queen_cursor_info *ci)
{
	FILE *f = arg;
	char b[40] = "-";

	if (ci->leased)
		ctl_time_format(ci->lease_expires_at, b, sizeof(b));
	fprintf(f, "partition %s: committed = %lld, tail = %lld, lag = %lld, "
	    "leased_until = %s, retry_count = %lld\n", ci->partition,
	    (long long)ci->committed, (long long)ci->tail, (long long)ci->lag,
	    b, (long long)ci->retry_count);
	return 0;
}

int
text_stats(struct queen *q, struct node *n, char **out, size_t *len)
{
	struct queen_stats s;
	FILE *f;
	int rc;

	if ((rc = queen_stats_get(q, n->queue, n->group, &s)) < 0)
		return rc;
	if (!(f = open_memstream(out, len)))
		return -ENOMEM;
	fprintf(f, "queue = %s\ngroup = %s\n", n->queue,
	    n->group ? n->group : QUEEN_QUEUE_MODE);
	fprintf(f, "partitions = %lld\nmessages = %lld\npushed = %lld\n"
	    "depth = %lld\nleases = %lld\nleased_messages = %lld\n"
	    "dlq = %lld\nduplicates = %lld\ngroups = %lld\n",
	    (long long)s.partitions, (long long)s.messages,
	    (long long)s.pushed, (long long)s.depth, (long long)s.leases,
	    (long long)s.leased_msgs, (long long)s.dlq,
	    (long long)s.duplicates, (long long)s.groups);
	put_time(f, "oldest_waiting", s.oldest_waiting);
	rc = queen_cursor_list(q, n->queue, n->group, cursor_cb, f);
	return close_text(f, out, len, rc);
}

struct sum {
	struct queen *q;
	struct cred *c;
	FILE *f;
	struct queen_stats total;
	int64_t queues;
	const char *queue;  /* metrics: the queue whose groups are listed */
};

/* A queue's (or group's) figures are for those who may list and enter it. */
static bool
may_see(struct cred *c, const struct queen_owner *o)
{
	return cred_may(c, o->uid, o->gid, o->mode, 4 | 1);
}

static int
sum_cb(void *arg, const struct queen_queue_info *qi)
{
	struct sum *s = arg;
	struct queen_stats st;

	if (!may_see(s->c, &qi->owner))
		return 0;
	if (queen_stats_get(s->q, qi->name, NULL, &st) < 0)
		return 0;
	s->queues++;
	s->total.partitions += st.partitions;
	s->total.messages += st.messages;
	s->total.pushed += st.pushed;
	s->total.depth += st.depth;
	s->total.leases += st.leases;
	s->total.dlq += st.dlq;
	s->total.duplicates += st.duplicates;
	s->total.groups += st.groups;
	return 0;
}

int
text_sys_stats(struct queen *q, struct cred *who, char **out, size_t *len)
{
	struct sum s = { .q = q, .c = who };
	struct engine_counters c;
	uint64_t beside, in_writer, staged, stage_syncs, claims, claims_lost;
	struct queen_hash_stats hs;
	struct queen_event_counts ev;
	size_t nodes;
	FILE *f;
	int rc;

	rc = queen_queue_list(q, sum_cb, &s);
	queen_event_counts(q, &ev);
	engine_counters(&c);
	pthread_mutex_lock(&fs_lock);
	nodes = fs_nodes;
	pthread_mutex_unlock(&fs_lock);
	if (!(f = open_memstream(out, len)))
		return -ENOMEM;
	fprintf(f, "queues = %lld\npartitions = %lld\nmessages = %lld\n"
	    "pushed = %lld\ndepth = %lld\nleases = %lld\ndlq = %lld\n"
	    "duplicates = %lld\ngroups = %lld\n", (long long)s.queues,
	    (long long)s.total.partitions, (long long)s.total.messages,
	    (long long)s.total.pushed, (long long)s.total.depth,
	    (long long)s.total.leases, (long long)s.total.dlq,
	    (long long)s.total.duplicates, (long long)s.total.groups);
	queen_checkpoint_counts(q, &beside, &in_writer);
	queen_hash_stats(q, &hs);
	fprintf(f,
	    "pushes = %llu\nacks = %llu\npops = %llu\ncommits = %llu\n"
	    "commit_failures = %llu\nwaiting_readers = %llu\n"
	    "checkpoints = %llu\nwriter_checkpoints = %llu\n"
	    "hashes_held = %llu\nhashes_folded = %llu\n"
	    "hash_filter_bytes = %llu\nhash_filter_skips = %llu\n"
	    "hash_filter_builds = %llu\nhash_filter_building = %d\n"
	    "page_cache_kib = %llu\nrow_cache_hits = %llu\n"
	    "row_cache_misses = %llu\nnodes = %zu\nlookups = %llu\n"
	    "dlq_rows_read = %llu\npg_round_trips = %llu\nnotifies = %llu\n"
	    "notified = %llu\nlistening = %llu\nlistens = %llu\n"
	    "waiter_retries = %llu\npg_reader_round_trips = %llu\n",
	    (unsigned long long)c.pushes, (unsigned long long)c.acks,
	    (unsigned long long)c.pops, (unsigned long long)c.commits,
	    (unsigned long long)c.commit_failures,
	    (unsigned long long)c.waiters, (unsigned long long)beside,
	    (unsigned long long)in_writer, (unsigned long long)hs.held,
	    (unsigned long long)hs.folded, (unsigned long long)hs.filter_bytes,
	    (unsigned long long)hs.filter_skips,
	    (unsigned long long)hs.filter_builds, hs.filter_building,
	    (unsigned long long)hs.cache_kib, (unsigned long long)hs.row_hits,
	    (unsigned long long)hs.row_misses, nodes,
	    (unsigned long long)atomic_load(&fs_lookups),
	    (unsigned long long)queen_dlq_rows_read(q),
	    (unsigned long long)(queen_round_trips(q) +
		engine_reader_round_trips()),
	    (unsigned long long)ev.sent, (unsigned long long)ev.received,
	    (unsigned long long)ev.watching, (unsigned long long)ev.watches,
	    (unsigned long long)c.retries,
	    (unsigned long long)engine_reader_round_trips());
	stage_counts(&staged, &stage_syncs);
	queen_claims(q, &claims, &claims_lost);
	fprintf(f,
	    "staged = %llu\nstage_syncs = %llu\npublish_holds = %llu\n"
	    "publish_redos = %llu\npg_push_claims = %llu\n"
	    "pg_push_claims_lost = %llu\n",
	    (unsigned long long)staged, (unsigned long long)stage_syncs,
	    (unsigned long long)c.holds, (unsigned long long)c.redos,
	    (unsigned long long)claims, (unsigned long long)claims_lost);
	return close_text(f, out, len, rc < 0 ? rc : 0);
}

struct row {
	char queue[QUEEN_NAME_MAX + 1];
	char group[QUEEN_NAME_MAX + 1];
	struct queen_stats st;
};

struct rows {
	struct queen *q;
	struct cred *c;
	struct row *r;
	size_t n, cap;
	const char *queue;
	int rc;
};

static int
add_row(struct rows *rs, const char *queue, const char *group)
{
	struct row *r;

	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 16;
		if (!(r = realloc(rs->r, rs->cap * sizeof(*r))))
			return -ENOMEM;
		rs->r = r;
	}
	r = &rs->r[rs->n];
	snprintf(r->queue, sizeof(r->queue), "%s", queue);
	snprintf(r->group, sizeof(r->group), "%s",
	    group ? group : QUEEN_QUEUE_MODE);
	if (queen_stats_get(rs->q, queue, group, &r->st) == 0)
		rs->n++;
	return 0;
}

static int
row_group_cb(void *arg, const struct queen_group_info *gi)
{
	struct rows *rs = arg;

	if (strcmp(gi->name, QUEEN_QUEUE_MODE) == 0)
		return 0;
	if (gi->owner.mode != 0 && !may_see(rs->c, &gi->owner))
		return 0;
	return add_row(rs, rs->queue, gi->name);
}

static int
row_queue_cb(void *arg, const struct queen_queue_info *qi)
{
	struct rows *rs = arg;
	int rc;

	if (!may_see(rs->c, &qi->owner))
		return 0;
	if ((rc = add_row(rs, qi->name, NULL)) < 0)
		return rc;
	rs->queue = qi->name;
	return queen_group_list(rs->q, qi->name, row_group_cb, rs) < 0 ? 0 : 0;
}

static void
family(FILE *f, const struct rows *rs, const char *name, const char *help,
    size_t field)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *r = &rs->r[i];
		int64_t v = *(const int64_t *)((const char *)&r->st + field);
		if (field == offsetof(struct queen_stats, messages)) {
			if (strcmp(r->group, QUEEN_QUEUE_MODE) == 0)
				fprintf(f, "%s{queue=\"%s\"} %lld\n", name,
				    r->queue, (long long)v);
			continue;
		}
		fprintf(f, "%s{queue=\"%s\",group=\"%s\"} %lld\n", name,
		    r->queue, r->group, (long long)v);
	}
}

static void
counter(FILE *f, const char *name, const char *type, const char *help,
    unsigned long long v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name,
	    type, name, v);
}

int
text_metrics(struct queen *q, struct cred *who, char **out, size_t *len)
{
	struct rows rs = { .q = q, .c = who };
	struct engine_counters c;
	uint64_t beside, in_writer, staged, stage_syncs, claims, claims_lost;
	struct queen_hash_stats hs;
	size_t nodes;
	FILE *f;
	int rc;

	engine_counters(&c);
	rc = queen_queue_list(q, row_queue_cb, &rs);
	if (!(f = open_memstream(out, len))) {
		free(rs.r);
		return -ENOMEM;
	}
	family(f, &rs, "queenfs_messages", "Messages retained.",
	    offsetof(struct queen_stats, messages));
	family(f, &rs, "queenfs_depth", "Messages past the group's cursors.",
	    offsetof(struct queen_stats, depth));
	family(f, &rs, "queenfs_leases", "Live leases.",
	    offsetof(struct queen_stats, leases));
	family(f, &rs, "queenfs_dlq", "Dead letters.",
	    offsetof(struct queen_stats, dlq));
	family(f, &rs, "queenfs_lag", "Messages the group has yet to read "
	    "(its depth).", offsetof(struct queen_stats, depth));
	family(f, &rs, "queenfs_oldest_waiting_ms", "Age in milliseconds of "
	    "the oldest message the group has yet to read (0: none).",
	    offsetof(struct queen_stats, oldest_age));
	free(rs.r);
	counter(f, "queenfs_pushes_total", "counter", "Pushes since start.",
	    c.pushes);
	counter(f, "queenfs_duplicates_total", "counter",
	    "Duplicate pushes since start.", c.duplicates);
	counter(f, "queenfs_acks_total", "counter", "Acks since start.",
	    c.acks);
	counter(f, "queenfs_pops_total", "counter", "Pops since start.",
	    c.pops);
	counter(f, "queenfs_commits_total", "counter",
	    "Group commits since start.", c.commits);
	counter(f, "queenfs_commit_requests_total", "counter",
	    "Requests carried by group commits (divide by commits for the "
	    "mean group size).", c.commit_jobs);
	counter(f, "queenfs_commit_size_max", "gauge",
	    "Most requests carried by one commit.", c.commit_max);
	counter(f, "queenfs_commit_failures_total", "counter",
	    "Failed commits.", c.commit_failures);
	counter(f, "queenfs_publish_redos_total", "counter",
	    "Writes (pushes, acks, transactions) run again at "
	    "once after a deadlock, a lock timeout or a serialization "
	    "failure rolled them back.",
	    c.redos);
	queen_claims(q, &claims, &claims_lost);
	counter(f, "queenfs_pg_push_claims_total", "counter",
	    "Pushes that read their partition unlocked and claimed it "
	    "with their writes.",
	    claims);
	counter(f, "queenfs_pg_push_claims_lost_total", "counter",
	    "Batches whose claim failed (another session had changed "
	    "the partition, or held it too long).",
	    claims_lost);
	stage_counts(&staged, &stage_syncs);
	counter(f, "queenfs_staged", "gauge",
	    "Pushes close() confirmed "
	    "that wait in the spool to be published.",
	    staged);
	counter(f, "queenfs_stage_syncs_total", "counter",
	    "fdatasyncs of "
	    "the spool (closes share them).",
	    stage_syncs);
	counter(f, "queenfs_waiting_readers", "gauge",
	    "Reads of next waiting for a message.", c.waiters);
	queen_checkpoint_counts(q, &beside, &in_writer);
	counter(f, "queenfs_checkpoints_total", "counter",
	    "Log checkpoints run beside the writer.", beside);
	counter(f, "queenfs_writer_checkpoints_total", "counter",
	    "Log checkpoints the writer ran itself (the log reached 4000 "
	    "pages).", in_writer);
	queen_hash_stats(q, &hs);
	counter(f, "queenfs_hashes_held", "gauge",
	    "Hashes of recent pushes held in memory until folded into the "
	    "hash index.", hs.held);
	counter(f, "queenfs_hashes_folded_total", "counter",
	    "Hash rows folded into the hash index.", hs.folded);
	counter(f, "queenfs_hash_filter_bytes", "gauge",
	    "Memory of the filter in front of the hash index.",
	    hs.filter_bytes);
	counter(f, "queenfs_hash_filter_skips_total", "counter",
	    "Hash lookups the filter answered without the index.",
	    hs.filter_skips);
	counter(f, "queenfs_hash_filter_builds_total", "counter",
	    "Hash filters built.", hs.filter_builds);
	counter(f, "queenfs_row_cache_hits_total", "counter",
	    "Queue, group and partition rows read from the store's copies.",
	    hs.row_hits);
	counter(f, "queenfs_row_cache_misses_total", "counter",
	    "Queue, group and partition rows read from SQLite.",
	    hs.row_misses);
	pthread_mutex_lock(&fs_lock);
	nodes = fs_nodes;
	pthread_mutex_unlock(&fs_lock);
	counter(f, "queenfs_nodes", "gauge",
	    "Names the mount holds for the kernel (past 20000 it hands "
	    "pushed ones back).", nodes);
	counter(f, "queenfs_lookups_total", "counter",
	    "Names the kernel asked the mount for (LOOKUP requests).",
	    atomic_load(&fs_lookups));
	counter(f, "queenfs_pg_round_trips_total", "counter",
	    "Times the daemon waited for its PostgreSQL server (0 on SQLite).",
	    queen_round_trips(q) + engine_reader_round_trips());
	counter(f, "queenfs_pg_reader_round_trips_total", "counter",
	    "The part of them made on the connection for lookups and reads.",
	    engine_reader_round_trips());
	return close_text(f, out, len, rc < 0 ? rc : 0);
}

int
text_health(struct queen *q, char **out, size_t *len)
{
	char why[512];
	FILE *f = open_memstream(out, len);

	if (!f)
		return -ENOMEM;
	if (queen_failed(q, why, sizeof(why)))
		fprintf(f, "failed: %s\n", why);
	else
		fputs("ok\n", f);
	return close_text(f, out, len, 0);
}
