/*
 * db_log.c - the SQLite backend's log: message rows, the txns rows of
 * their transactionId hashes, the young hashes folded into the hashes
 * table, and the Bloom filter in front of it (docs/engine.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"

/* ---- messages and hash rows ---- */

/* The index key: the digest's first 8 bytes as a signed integer. */
static int64_t
h64(const struct hash128 *h)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | h->b[i];
	return v ? (int64_t)v : 1;     /* never 0: schema 2's "not folded" */
}

/* ---- the hash filter: see struct store, hfilter.c, docs/engine.md ---- */

/*
 * The page cache gives up what the filter takes, down to half: the
 * filter stands in for the cache's pages of hashes, which were there for
 * the lookups it now answers, and the daemon's memory stays as it was.
 */
static void
cache_fit(struct store *s)
{
	size_t f = hfilt_bytes(&s->flt) + hfilt_bytes(&s->fnew);
	int kib = CACHE_KIB - (int)(f / 1024);
	char q[64];

	if (kib < CACHE_KIB / 2)
		kib = CACHE_KIB / 2;
	if (kib == s->cache_kib)
		return;
	snprintf(q, sizeof(q), "PRAGMA cache_size = -%d", kib);
	if (sqlite3_exec(s->db, q, NULL, NULL, NULL) == SQLITE_OK)
		s->cache_kib = kib;
}

static void
filter_add(struct store *s, int64_t h)
{
	if (s->flt.w)
		hfilt_add(&s->flt, h);
	if (s->fbuild) {
		hfilt_add(&s->fnew, h);
		s->fdebt += FILTER_DEBT;
	}
	s->live++;
}

/*
 * Start a new filter, sized for twice as many h as there are now: the
 * pairs in memory go in at once, hashes a slice at a time.  The old one
 * goes first, so there is never more than one: until the new one is
 * built every lookup asks the index.  With more h than three quarters
 * of the largest filter there is none until purges bring them under
 * half: nearer its size, it would fill again before the next was built.
 */
static int
filter_start(struct store *s)
{
	uint64_t live = s->live < 0 ? 0 : (uint64_t)s->live;
	uint64_t cap = 2 * live;
	const struct ytab *t[2] = { &s->act, &s->frz };
	size_t i;
	int k, rc;

	hfilt_free(&s->flt);
	if (live >= s->fmax / 4 * 3) {
		cache_fit(s);
		return 0;
	}
	if (cap < FILTER_MIN)
		cap = FILTER_MIN;
	if (cap > s->fmax)
		cap = s->fmax;
	if ((rc = hfilt_init(&s->fnew, cap)) != 0)
		return rc;
	for (k = 0; k < 2; k++)
		for (i = 0; i < t[k]->cap; i++)
			if (t[k]->e[i].id)
				hfilt_add(&s->fnew, t[k]->e[i].h);
	cache_fit(s);
	s->fbuild = true;
	s->fcur_h = s->fcur_id = INT64_MIN;
	s->fdebt = s->fscanned = 0;
	return 0;
}

/* scan up to max rows of hashes into fnew; at the end it replaces flt */
int
filter_step(struct store *s, int64_t max)
{
	sqlite3_stmt *st;
	int64_t n = 0;
	int rc;

	STMT(s, ST_HASH_SCAN, st);
	sqlite3_bind_int64(st, 1, s->fcur_h);
	sqlite3_bind_int64(st, 2, s->fcur_id);
	sqlite3_bind_int64(st, 3, max);
	while ((rc = row(s, st)) == 1) {
		s->fcur_h = sqlite3_column_int64(st, 0);
		s->fcur_id = sqlite3_column_int64(st, 1);
		hfilt_add(&s->fnew, s->fcur_h);
		n++;
	}
	s->fscanned += n;
	if (rc < 0)
		return rc;
	s->fdebt = 0;
	if (n < max) {
		/* counted again: the rows seen, and the pairs in memory (those
		 * of frz already folded twice) */
		s->live = s->fscanned + (int64_t)(s->act.n + s->frz.n);
		s->flt = s->fnew;
		memset(&s->fnew, 0, sizeof(s->fnew));
		s->fbuild = false;
		s->fbuilds++;
		if (s->live >= (int64_t)(s->fmax / 4 * 3))
			hfilt_free(&s->flt);    /* too many after all */
		cache_fit(s);
	}
	return 0;
}

/* after a commit: a filter too full of h, or none while there could be */
void
filter_check(struct store *s)
{
	if (s->fbuild)
		return;
	if (s->flt.w ? s->flt.n > hfilt_cap(&s->flt) :
	    s->live < (int64_t)(s->fmax / 2))
		filter_start(s);        /* -ENOMEM: the next commit tries again */
}

/* at open: how many h there are (counted no further than a filter
 * would take), and the whole filter */
int
filter_open(struct store *s)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_HASH_COUNT, st);
	sqlite3_bind_int64(st, 1, (int64_t)(s->fmax / 4 * 3));
	if ((rc = one_int(s, st, &s->live)) != 0)
		return rc;
	s->live += (int64_t)s->act.n;
	if ((rc = filter_start(s)) != 0 || !s->fbuild)
		return rc;
	return filter_step(s, INT64_MAX);
}

/* queen_h64(hash) in SQL, for the schema's step to version 3 */
void
sql_h64(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
	struct hash128 h;

	(void)argc;
	if (sqlite3_value_bytes(argv[0]) != 16) {
		sqlite3_result_error(cx, "queen_h64: not a 16-byte hash", -1);
		return;
	}
	memcpy(h.b, sqlite3_value_blob(argv[0]), 16);
	sqlite3_result_int64(cx, h64(&h));
}

int
s_msg_append(struct store *s, int64_t pid, int64_t off, int64_t at,
    const char *txid, const char *trace, const void *payload, size_t len,
    const struct hash128 *h)
{
	int64_t key = PB(pid) + off, hv = h64(h);
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_MSG_APPEND, st);
	sqlite3_bind_int64(st, 1, key);
	sqlite3_bind_int64(st, 2, at);
	sqlite3_bind_text(st, 3, txid, -1, SQLITE_STATIC);
	if (trace)
		sqlite3_bind_text(st, 4, trace, -1, SQLITE_STATIC);
	sqlite3_bind_blob64(st, 5, len ? payload : "", len, SQLITE_STATIC);
	if ((rc = run(s, st)) != 0)
		return rc;
	STMT(s, ST_TXN_APPEND, st);
	sqlite3_bind_int64(st, 1, key);
	sqlite3_bind_blob(st, 2, h->b, 16, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, at);
	sqlite3_bind_int64(st, 4, hv);
	if ((rc = run(s, st)) != 0)
		return rc;
	STMT(s, ST_YOUNG_PUT, st);
	sqlite3_bind_int64(st, 1, key);
	sqlite3_bind_int64(st, 2, hv);
	if ((rc = run(s, st)) != 0)
		return rc;
	s->debt += 2;
	filter_add(s, hv);
	return ytab_put(&s->act, hv, key);
}

/* ---- young hashes: see struct store, young.c, docs/engine.md ---- */


static size_t
fold_min(const struct store *s)
{
	size_t m = s->fold_max / 64;

	return m < 1 ? 1 : m > FOLD_MIN ? FOLD_MIN : m;
}

/*
 * In the transaction just begun: when act is full and no fold is under
 * way, act becomes frz; then fold as many of frz's hashes as the debt
 * allows (none below fold_min, all when act has grown twice as big),
 * walking its slots in order, so in nearly ascending h: each slice
 * writes a run of neighbouring pages of hashes, and no txns row.  A pair
 * goes in only if its txns row holds it: one whose push was rolled back
 * or purged, or whose id now holds another push, changes nothing.  The
 * slice that ends frz drops young's rows up to frz_seq, all of frz's.
 */
int
fold(struct store *s)
{
	sqlite3_stmt *st;
	size_t i, n = 0;
	int64_t want;
	bool fast;
	int rc;

	if (!s->frz.e) {
		if (s->act.n < s->fold_max)
			return 0;
		STMT(s, ST_YOUNG_LAST, st);
		if ((rc = one_int(s, st, &s->frz_seq)) != 0)
			return rc;
		s->frz = s->act;
		memset(&s->act, 0, sizeof(s->act));
		s->frz_clean = s->act_dirt == s->dirt;
		s->act_dirt = s->frz_dirt = s->dirt;
		s->fold_at = s->fold_pend = 0;
		/* paid by the pushes from now on: what act's own pushes ran up
		 * would fold all of frz at once, the stall slices avoid */
		s->debt = 0;
	}
	want = s->act.n >= 2 * s->fold_max ? INT64_MAX : s->debt;
	if (want < (int64_t)fold_min(s))
		return 0;
	for (i = s->fold_pend; i < s->frz.cap && (int64_t)n < want; i++) {
		const struct yent *e = &s->frz.e[i];

		if (!e->id)
			continue;
		n++;
		fast = s->frz_clean && s->frz_dirt == s->dirt;
		STMT(s, fast ? ST_HASH_PUT : ST_HASH_FOLD, st);
		sqlite3_bind_int64(st, 1, e->id);
		sqlite3_bind_int64(st, 2, e->h);
		if ((rc = run(s, st)) != 0)
			return rc;
		s->fold_pend_rows += (uint64_t)sqlite3_changes(s->db);
		s->fold_pend_fast += fast;
	}
	while (i < s->frz.cap && !s->frz.e[i].id)
		i++;            /* so the commit after the last pair drops frz */
	s->fold_pend = i;
	if (i == s->frz.cap) {
		/* all of frz is in hashes: its stretch of the log goes */
		STMT(s, ST_YOUNG_DROP, st);
		sqlite3_bind_int64(st, 1, s->frz_seq);
		if ((rc = run(s, st)) != 0)
			return rc;
	}
	s->debt = (int64_t)n >= s->debt ? 0 : s->debt - (int64_t)n;
	return 0;
}

/* at open: the rows pushed and not folded, back into act */
int
young_load(struct store *s)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_YOUNG_LIST, st);
	while ((rc = row(s, st)) == 1) {
		if ((rc = ytab_put(&s->act, sqlite3_column_int64(st, 1),
		    sqlite3_column_int64(st, 0))) != 0) {
			sqlite3_reset(st);
			return rc;
		}
	}
	return rc;
}

int
s_msg_scan(struct store *s, int64_t pid, int64_t from, size_t max,
    bool payload, msg_row_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct msg_row m;
	int rc;

	STMT(s, payload ? ST_MSG_SCAN : ST_MSG_SCAN_META, st);
	sqlite3_bind_int64(st, 1, PB(pid) + (from < 0 ? 0 : from));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	sqlite3_bind_int64(st, 3, max > INT32_MAX ? INT32_MAX : (int64_t)max);
	while ((rc = row(s, st)) == 1) {
		m.offset = sqlite3_column_int64(st, 0) - PB(pid);
		m.created_at = sqlite3_column_int64(st, 1);
		m.txid = (const char *)sqlite3_column_text(st, 2);
		m.trace_id = (const char *)sqlite3_column_text(st, 3);
		if (payload) {
			m.payload = sqlite3_column_blob(st, 4);
			m.len = (size_t)sqlite3_column_bytes(st, 4);
		} else {
			m.payload = NULL;
			m.len = (size_t)sqlite3_column_int64(st, 4);
		}
		if ((rc = cb(arg, &m)) != 0)
			break;
	}
	sqlite3_reset(st);
	return rc;
}

int
s_msg_time(struct store *s, int64_t pid, int64_t off, int64_t *at)
{
	sqlite3_stmt *st;

	STMT(s, ST_MSG_TIME, st);
	sqlite3_bind_int64(st, 1, PB(pid) + off);
	return one_int(s, st, at);
}

int
s_msg_next(struct store *s, int64_t pid, int64_t after, int64_t *off,
    int64_t *at)
{
	sqlite3_stmt *st;
	int rc;

	STMT(s, ST_MSG_NEXT, st);
	sqlite3_bind_int64(st, 1, PB(pid) + (after < 0 ? 0 : after));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	rc = row(s, st);
	if (rc <= 0)
		return rc < 0 ? rc : -ENOENT;
	*off = sqlite3_column_int64(st, 0) - PB(pid);
	*at = sqlite3_column_int64(st, 1);
	sqlite3_reset(st);
	return 0;
}

int
s_msg_count(struct store *s, int64_t pid, int64_t above, int64_t *out)
{
	sqlite3_stmt *st;

	STMT(s, ST_MSG_COUNT, st);
	sqlite3_bind_int64(st, 1, PB(pid) + (above < 0 ? 0 : above));
	sqlite3_bind_int64(st, 2, PB(pid) + MAX_OFFSET);
	return one_int(s, st, out);
}

static int
purge_range(struct store *s, enum stmt id, int64_t pid, int64_t upto,
    int64_t limit, int64_t *deleted)
{
	sqlite3_stmt *st;
	int rc;

	*deleted = 0;   /* also when the statement cannot be prepared */
	STMT(s, id, st);
	sqlite3_bind_int64(st, 1, PB(pid));
	sqlite3_bind_int64(st, 2, PB(pid) + upto);
	sqlite3_bind_int64(st, 3, limit);
	rc = run(s, st);
	*deleted = rc == 0 ? sqlite3_changes(s->db) : 0;
	return rc;
}

int
s_msg_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted)
{
	return purge_range(s, ST_MSG_PURGE, pid, upto, limit, deleted);
}

struct yfind {
	struct store *s;
	const struct hash128 *h;
	bool highest;
	int64_t id, at;         /* the best so far; id 0: none */
};

/* a young pair: keep it if its row holds the hash and it is better */
static int
yfind_one(void *arg, int64_t id)
{
	struct yfind *f = arg;
	sqlite3_stmt *st;
	int rc;

	if (f->id && (f->highest ? id <= f->id : id >= f->id))
		return 0;
	STMT(f->s, ST_TXN_CHECK, st);
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_blob(st, 2, f->h->b, 16, SQLITE_STATIC);
	if ((rc = row(f->s, st)) < 0)
		return rc;
	if (rc == 1) {
		f->id = id;
		f->at = sqlite3_column_int64(st, 0);
		sqlite3_reset(st);
	}
	return 0;
}

int
s_txn_find(struct store *s, int64_t pid, const struct hash128 *h, int64_t lo,
    int64_t hi, bool highest, int64_t *off, int64_t *at)
{
	struct yfind f = { s, h, highest, 0, 0 };
	int64_t hv = h64(h);
	sqlite3_stmt *st;
	int rc;

	if (lo < 1)
		lo = 1;
	if (hi > MAX_OFFSET)
		hi = MAX_OFFSET;
	if (lo > hi)
		return -ENOENT;
	if (s->flt.w && !hfilt_has(&s->flt, hv)) {
		s->fskips++;
		return -ENOENT;
	}
	STMT(s, highest ? ST_TXN_FIND_HI : ST_TXN_FIND_LO, st);
	sqlite3_bind_blob(st, 1, h->b, 16, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, PB(pid) + lo);
	sqlite3_bind_int64(st, 3, PB(pid) + hi);
	sqlite3_bind_int64(st, 4, hv);
	rc = row(s, st);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		f.id = sqlite3_column_int64(st, 0);
		f.at = sqlite3_column_int64(st, 1);
		sqlite3_reset(st);
	}
	/* and the hashes not folded yet (frz's may be folded already) */
	if ((rc = ytab_find(&s->act, hv, PB(pid) + lo, PB(pid) + hi,
	    yfind_one, &f)) != 0 || (rc = ytab_find(&s->frz, hv,
	    PB(pid) + lo, PB(pid) + hi, yfind_one, &f)) != 0)
		return rc;
	if (!f.id)
		return -ENOENT;
	*off = f.id - PB(pid);
	if (at)
		*at = f.at;
	return 0;
}

int
s_txn_time(struct store *s, int64_t pid, int64_t off, int64_t *at)
{
	sqlite3_stmt *st;

	STMT(s, ST_TXN_TIME, st);
	sqlite3_bind_int64(st, 1, PB(pid) + off);
	return one_int(s, st, at);
}

int
s_txn_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted)
{
	int rc = purge_range(s, ST_TXN_PURGE, pid, upto, limit, deleted);

	s->live -= *deleted;
	s->dirt += *deleted > 0;
	return rc;
}
