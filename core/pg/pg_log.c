/*
 * pg_log.c - the PostgreSQL backend's log: message rows and the txns
 * rows of their transactionId hashes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "pg_store.h"

/* ---- prefetched hashes ---- */

static void
put32(unsigned char **p, uint32_t v)
{
	(*p)[0] = (unsigned char)(v >> 24);
	(*p)[1] = (unsigned char)(v >> 16);
	(*p)[2] = (unsigned char)(v >> 8);
	(*p)[3] = (unsigned char)v;
	*p += 4;
}

static bool
empty(const struct hash128 *h)
{
	static const struct hash128 z;

	return memcmp(h, &z, sizeof(z)) == 0;
}

static size_t
slot(const struct hash128 *h, size_t cap)
{
	uint64_t v;

	memcpy(&v, h->b, sizeof(v));
	return (size_t)(v & (cap - 1));
}

static bool
pf_has(const struct store *s, const struct hash128 *h)
{
	size_t i;

	for (i = slot(h, s->pf.cap);; i = (i + 1) & (s->pf.cap - 1)) {
		if (memcmp(&s->pf.set[i], h, sizeof(*h)) == 0)
			return true;
		if (empty(&s->pf.set[i]))
			return false;
	}
}

/* Note h as present; past half full the set is given up (nothing known). */
static void
pf_put(struct store *s, const struct hash128 *h)
{
	size_t i;

	if (s->pf.n + 1 > s->pf.cap / 2) {
		pg_prefetch_end(s);
		return;
	}
	for (i = slot(h, s->pf.cap);; i = (i + 1) & (s->pf.cap - 1)) {
		if (memcmp(&s->pf.set[i], h, sizeof(*h)) == 0)
			return;
		if (empty(&s->pf.set[i]))
			break;
	}
	s->pf.set[i] = *h;
	s->pf.n++;
}

void
pg_prefetch_end(struct store *s)
{
	s->pf.pid = 0;
}

/* Known absent: prefetched for pid from lo or below, and not found. */
static bool
pf_absent(const struct store *s, int64_t pid, const struct hash128 *h,
    int64_t lo)
{
	return s->pf.pid != 0 && s->pf.pid == pid && lo >= s->pf.lo &&
	    !empty(h) && !pf_has(s, h);
}

/*
 * One statement for the n hashes: those of them in pid from lo up.  The
 * call holds the partition's row lock (appends take it first), so until
 * the call ends only its own appends add hash rows, and pg_msg_append
 * notes them.  The hashes go as one binary bytea[].
 */
/* The n hashes as one binary bytea[] (*len bytes), to free; NULL: ENOMEM. */
unsigned char *
pg_hash_array(const struct hash128 *h, size_t n, size_t *len)
{
	unsigned char *arr, *p;
	size_t i;

	*len = 20 + 20 * n;
	if (!(arr = malloc(*len)))
		return NULL;
	p = arr;
	put32(&p, 1);  /* dimensions */
	put32(&p, 0);  /* no NULLs */
	put32(&p, 17); /* of bytea */
	put32(&p, (uint32_t)n);
	put32(&p, 1); /* lower bound */
	for (i = 0; i < n; i++) {
		put32(&p, 16);
		memcpy(p, h[i].b, 16);
		p += 16;
	}
	return arr;
}

static int
lowest_cmp(const void *a, const void *b)
{
	return memcmp(&((const struct lowest *)a)->h,
	    &((const struct lowest *)b)->h, sizeof(struct hash128));
}

/*
 * The lowest rows of n hashes in [lo, hi] of pid, in one statement, kept
 * (s->ahead.lw, sorted by hash) for the txn_find calls of an ack of many
 * that follow; a hash not found there is not in the range.
 */
/*
 * Run statement id (lo key, hi key, the n hashes as bytea[]) over pid's
 * [lo, hi], clamped to the offsets there are; NULL with *rc 0 when the
 * range or n leaves nothing to ask (n below min), or *rc the error.
 */
static PGresult *
exec_hashes(struct store *s, enum stmt id, int64_t pid, const struct hash128 *h,
    size_t n, size_t min, int64_t lo, int64_t hi, int *rc)
{
	struct args a = { 0 };
	unsigned char *arr;
	size_t len;
	PGresult *r;

	*rc = 0;
	if (lo < 1)
		lo = 1;
	if (hi > MAX_OFFSET)
		hi = MAX_OFFSET;
	if (n < min || n > 65536 || lo > hi)
		return NULL;
	if (!(arr = pg_hash_array(h, n, &len))) {
		*rc = -ENOMEM;
		return NULL;
	}
	a_int(&a, PB(pid) + lo);
	a_int(&a, PB(pid) + hi);
	a_bytes(&a, arr, len);
	r = exec(s, id, &a, rc);
	free(arr);
	return r;
}

int
pg_txn_find_many(struct store *s, int64_t pid, const struct hash128 *h,
    size_t n, int64_t lo, int64_t hi)
{
	size_t i, k;
	PGresult *r;
	int rc;

	if (!(r = exec_hashes(s, ST_TXN_FIND_MANY, pid, h, n, 2, lo, hi, &rc)))
		return rc;
	k = (size_t)PQntuples(r);
	if (k > s->ahead.lw.cap) {
		struct lowest *v = realloc(s->ahead.lw.v, k * sizeof(*v));

		if (!v) {
			PQclear(r);
			return 0; /* asked one by one, then */
		}
		s->ahead.lw.v = v;
		s->ahead.lw.cap = k;
	}
	for (i = 0, n = 0; i < k; i++) {
		if (PQgetlength(r, (int)i, 0) != 16)
			continue;
		memcpy(s->ahead.lw.v[n].h.b, PQgetvalue(r, (int)i, 0), 16);
		s->ahead.lw.v[n].off = col_int(r, (int)i, 1) - PB(pid);
		s->ahead.lw.v[n].at = col_int(r, (int)i, 2);
		n++;
	}
	PQclear(r);
	qsort(s->ahead.lw.v, n, sizeof(*s->ahead.lw.v), lowest_cmp);
	ahead_keep(s);
	s->ahead.lw.on = true;
	s->ahead.lw.pid = pid;
	s->ahead.lw.lo = lo;
	s->ahead.lw.hi = hi;
	s->ahead.lw.n = n;
	return 0;
}

/*
 * The highest row of each of n hashes in [lo, hi] of pid, in one
 * statement: off[i] its offset, or 0.  A hash may come more than once.
 */
int
pg_txn_newest_many(struct store *s, int64_t pid, const struct hash128 *h,
    size_t n, int64_t lo, int64_t hi, int64_t *off)
{
	size_t i, k;
	PGresult *r;
	int rc;

	memset(off, 0, n * sizeof(*off));
	if (!(r = exec_hashes(s, ST_TXN_NEWEST_MANY, pid, h, n, 1, lo, hi,
		  &rc)))
		return rc;
	k = (size_t)PQntuples(r);
	for (size_t j = 0; j < k; j++) {
		const char *hv = PQgetvalue(r, (int)j, 0);
		int64_t o = col_int(r, (int)j, 1) - PB(pid);

		if (PQgetlength(r, (int)j, 0) != 16)
			continue;
		for (i = 0; i < n; i++)
			if (memcmp(h[i].b, hv, 16) == 0)
				off[i] = o;
	}
	PQclear(r);
	return 0;
}

/* Make room in s->pf for n hashes, emptied. */
static int
pf_reset(struct store *s, size_t n, int64_t pid, int64_t lo)
{
	size_t cap;

	for (cap = 16; cap < 4 * n; cap *= 2)
		;
	if (cap > s->pf.cap) {
		struct hash128 *v = realloc(s->pf.set, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->pf.set = v;
		s->pf.cap = cap;
	}
	memset(s->pf.set, 0, s->pf.cap * sizeof(*s->pf.set));
	s->pf.n = 0;
	s->pf.pid = pid;
	s->pf.lo = lo < 1 ? 1 : lo;
	s->pf.asked = 0;
	return 0;
}

/* what a prefetch of these n hashes was: see pg_prefetch_ahead */
static uint64_t
asked_digest(const struct hash128 *h, size_t n)
{
	return XXH3_64bits(h, n * sizeof(*h)) | 1;
}

int
pg_txn_prefetch(struct store *s, int64_t pid, const struct hash128 *h, size_t n,
    int64_t lo)
{
	struct args a = { 0 };
	unsigned char *arr;
	size_t i, len;
	PGresult *r;
	int rc;

	/* asked already, along with the partition's row (push_ahead) */
	if (s->pf.pid != 0 && s->pf.pid == pid &&
	    s->pf.lo == (lo < 1 ? 1 : lo) &&
	    s->pf.asked == asked_digest(h, n)) {
		s->pf.asked = 0;
		return 0;
	}
	pg_prefetch_end(s);
	if (!s->in_tx || n == 0 || n > PG_PREFETCH_MAX)
		return 0;
	if (!(arr = pg_hash_array(h, n, &len)))
		return -ENOMEM;
	if (lo < 1)
		lo = 1;
	a_int(&a, PB(pid) + lo);
	a_int(&a, PB(pid) + MAX_OFFSET);
	a_bytes(&a, arr, len);
	r = exec(s, ST_TXN_PREFETCH, &a, &rc);
	free(arr);
	if (!r)
		return rc;
	if ((rc = pf_reset(s, n, pid, lo)) != 0) {
		PQclear(r);
		return rc;
	}
	for (i = 0; i < (size_t)PQntuples(r) && s->pf.pid; i++) {
		struct hash128 g;

		if (PQgetlength(r, (int)i, 0) != 16)
			continue;
		memcpy(g.b, PQgetvalue(r, (int)i, 0), 16);
		pf_put(s, &g);
	}
	PQclear(r);
	return 0;
}

static uint32_t
get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/*
 * The answer of a prefetch of the n hashes h in pid from lo up that
 * went along with the partition's locked read (push_ahead): found, the
 * binary bytea[] of those present (len bytes; NULL: none).  Kept as
 * txn_prefetch's would be, for the txn_prefetch of the same hashes
 * that follows, which then asks nothing.  A malformed array keeps
 * nothing (that txn_prefetch asks again).
 */
int
pg_prefetch_ahead(struct store *s, int64_t pid, int64_t lo,
    const struct hash128 *h, size_t n, const unsigned char *found, size_t len)
{
	size_t i, k, at;
	int rc;

	pg_prefetch_end(s);
	if ((rc = pf_reset(s, n, pid, lo)) != 0)
		return rc;
	if (found) {
		/* dimensions, NULLs, element type, then a size and lower
		 * bound a dimension: one of bytea */
		if (len < 20 || get32(found) != 1 || get32(found + 12) > n) {
			pg_prefetch_end(s);
			return 0;
		}
		k = get32(found + 12);
		for (i = 0, at = 20; i < k && s->pf.pid; i++, at += 20) {
			struct hash128 g;

			if (at + 20 > len || get32(found + at) != 16) {
				pg_prefetch_end(s);
				return 0;
			}
			memcpy(g.b, found + at + 4, 16);
			pf_put(s, &g);
		}
	}
	if (s->pf.pid)
		s->pf.asked = asked_digest(h, n);
	return 0;
}

/* ---- messages and hash rows ---- */

/*
 * Appends inside a transaction are buffered (s->ab) and go out as one
 * statement of arrays, ahead of whatever the transaction sends next
 * (pg_pipe.c's send); a rollback drops them.  A run of pushes to one
 * partition then costs the server one statement, not two a message.
 * A message over AB_ONE_MAX (payload and traceId) goes as two statements
 * of its own (after the buffered ones, which send() puts first), from
 * the caller's bytes.
 */
/* each column's buffer: the array's header, then its elements */
#define AB_HEAD 20

static int
ab_put(struct store *s, int k, const void *data, size_t len, bool null)
{
	size_t need = s->ab.len[k] + 4 + (null ? 0 : len);
	unsigned char *p;

	if (len > INT32_MAX)
		return -EFBIG;
	if (AB_HEAD + need > s->ab.cap[k]) {
		size_t cap = s->ab.cap[k] ? s->ab.cap[k] : 4096;

		while (cap < AB_HEAD + need)
			cap *= 2;
		if (!(p = realloc(s->ab.b[k], cap)))
			return -ENOMEM;
		s->ab.b[k] = p;
		s->ab.cap[k] = cap;
	}
	p = s->ab.b[k] + AB_HEAD + s->ab.len[k];
	put32(&p, null ? UINT32_MAX : (uint32_t)len);
	if (!null && len)
		memcpy(p, data, len);
	s->ab.len[k] = need;
	s->ab.nulls[k] |= null;
	return 0;
}

static int
ab_int(struct store *s, int k, int64_t v)
{
	unsigned char b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)v >> (56 - 8 * i));
	return ab_put(s, k, b, 8, false);
}

void
pg_append_drop(struct store *s)
{
	int k;

	for (k = 0; k < AB_COLS; k++) {
		s->ab.len[k] = 0;
		s->ab.nulls[k] = false;
	}
	s->ab.n = 0;
}

/*
 * Send the buffered appends, if any, as one statement (not waited for):
 * libpq copies the arrays into its own buffer, and a buffer grown past
 * AB_KEEP by a big run is given back rather than kept for the next.
 */
int
pg_append_flush(struct store *s)
{
	static const uint32_t oid[AB_COLS] = { 20, 20, 17, 17, 17, 17 };
	struct args a = { 0 };
	unsigned char *p;
	int k, n = s->ab.n, rc;

	if (n == 0)
		return 0;
	for (k = 0; k < AB_COLS; k++) {
		p = s->ab.b[k];
		put32(&p, 1); /* dimensions */
		put32(&p, s->ab.nulls[k]);
		put32(&p, oid[k]);
		put32(&p, (uint32_t)n);
		put32(&p, 1); /* lower bound */
		a_bytes(&a, s->ab.b[k], AB_HEAD + s->ab.len[k]);
	}
	s->ab.n = 0; /* send() must not flush them again */
	rc = pipe_defer(s, ST_MSG_APPEND_MANY, NULL, &a);
	pg_append_drop(s);
	for (k = 0; k < AB_COLS; k++) {
		if (s->ab.cap[k] > AB_KEEP) {
			free(s->ab.b[k]);
			s->ab.b[k] = NULL;
			s->ab.cap[k] = 0;
		}
	}
	return rc;
}

int
pg_msg_append(struct store *s, int64_t pid, int64_t off, int64_t at,
    const char *txid, const char *trace, const void *payload, size_t len,
    const struct hash128 *h)
{
	struct args a = { 0 }, b = { 0 };
	size_t tl = trace ? strlen(trace) : 0;
	int rc;

	/* a traceId has no bound of its own: it counts as payload */
	if (s->in_tx && len <= AB_ONE_MAX && tl <= AB_ONE_MAX - len) {
		size_t was[AB_COLS];
		bool nul[AB_COLS];

		memcpy(was, s->ab.len, sizeof(was));
		memcpy(nul, s->ab.nulls, sizeof(nul));
		if ((rc = ab_int(s, 0, PB(pid) + off)) != 0 ||
		    (rc = ab_int(s, 1, at)) != 0 ||
		    (rc = ab_put(s, 2, txid, strlen(txid), false)) != 0 ||
		    (rc = ab_put(s, 3, trace, tl, !trace)) != 0 ||
		    (rc = ab_put(s, 4, payload, len, false)) != 0 ||
		    (rc = ab_put(s, 5, h->b, 16, false)) != 0) {
			/* no half row */
			memcpy(s->ab.len, was, sizeof(was));
			memcpy(s->ab.nulls, nul, sizeof(nul));
			return rc;
		}
		s->ab.n++;
		/* a write, though nothing went out yet: what was read
		 * ahead may no longer be what the store holds */
		s->ahead.valid = false;
		if (s->pf.pid == pid)
			pf_put(s, h);
		if (s->ab.n >= AB_ROWS ||
		    s->ab.len[3] + s->ab.len[4] >= AB_BYTES)
			return pg_append_flush(s);
		return 0;
	}
	a_int(&a, PB(pid) + off);
	a_int(&a, at);
	a_str(&a, txid);
	a_str(&a, trace);
	a_bytes(&a, payload, len);
	if ((rc = pg_run(s, ST_MSG_APPEND, &a, NULL)) != 0)
		return rc;
	if (s->pf.pid == pid)
		pf_put(s, h);
	a_int(&b, PB(pid) + off);
	a_bytes(&b, h->b, 16);
	a_int(&b, at);
	return pg_run(s, ST_TXN_APPEND, &b, NULL);
}

/*
 * The callbacks of pg_msg_scan over an answer that has the payloads
 * (has) or their lengths, msg_scan's columns from k, in row (or every
 * row: -1); without want a caller gets the lengths only.
 */
int
pg_scan_rows(struct store *s, PGresult *r, int row, int k, int64_t pid,
    bool has, bool want, msg_row_cb cb, void *arg)
{
	struct msg_row m;
	int rc = 0, i = row < 0 ? 0 : row;
	int n = row < 0 ? PQntuples(r) : row + 1;

	for (; rc == 0 && i < n; i++) {
		/* the row's 32-bit xid, placed in the epoch nearest the
		 * statement's oldest running one; an xid 2^31 older
		 * (frozen) lands ahead, so it is only ever thought younger */
		int64_t run = col_int(r, i, k + 6);
		int32_t d = (int32_t)(uint32_t)((uint64_t)col_int(r, i, k + 5) -
		    (uint64_t)run);

		if (run + d > s->read_xid)
			s->read_xid = run + d;
		m.offset = col_int(r, i, k) - PB(pid);
		m.created_at = col_int(r, i, k + 1);
		m.txid = col_str(r, i, k + 2);
		m.trace_id = col_str(r, i, k + 3);
		m.payload = has && want ? PQgetvalue(r, i, k + 4) : NULL;
		if (has)
			m.len = (size_t)PQgetlength(r, i, k + 4);
		else
			m.len = (size_t)col_int(r, i, k + 4);
		rc = cb(arg, &m);
	}
	return rc;
}

/*
 * Keep row's message of r (msg_scan's columns from k, the first at
 * offset from) for the next msg_scan of it: r is freed with the next
 * one kept, or, lent, stays its reader's, who forgets it before freeing
 * it (pg_keep_msg(s, NULL, ...)).
 */
void
pg_keep_msg(struct store *s, PGresult *r, bool lent, int row, int k,
    int64_t pid, int64_t from, bool payload)
{
	if (!s->ahead.ms.lent)
		PQclear(s->ahead.ms.r);
	s->ahead.ms.r = r;
	s->ahead.ms.lent = lent;
	s->ahead.ms.on = r != NULL;
	s->ahead.ms.row = row;
	s->ahead.ms.k = k;
	s->ahead.ms.pid = pid;
	s->ahead.ms.from = from;
	s->ahead.ms.payload = payload;
}

/*
 * One message read is kept (s->ahead.ms) for the read that follows it:
 * the kernel's lookup of a leased message's name, then its open and
 * read, each ask for it.  A message does not change; it may only go.
 */
int
pg_msg_scan(struct store *s, int64_t pid, int64_t from, size_t max,
    bool payload, msg_row_cb cb, void *arg)
{
	struct args a = { 0 };
	PGresult *r;
	bool small;
	int rc;

	if (max == 1 && ahead_ok(s) && s->ahead.ms.on &&
	    s->ahead.ms.pid == pid && s->ahead.ms.from == from &&
	    (s->ahead.ms.payload || !payload))
		return pg_scan_rows(s, s->ahead.ms.r, s->ahead.ms.row,
		    s->ahead.ms.k, pid, s->ahead.ms.payload, payload, cb, arg);
	a_int(&a, PB(pid) + (from < 0 ? 0 : from));
	a_int(&a, PB(pid) + MAX_OFFSET);
	a_int(&a, max > INT32_MAX ? INT32_MAX : (int64_t)max);
	r = exec(s, payload ? ST_MSG_SCAN : ST_MSG_SCAN_META, &a, &rc);
	if (!r)
		return rc;
	small = PQntuples(r) == 0 ||
	    (PQntuples(r) == 1 &&
		(!payload || PQgetlength(r, 0, 4) <= AHEAD_MSG_MAX));
	if (max == 1 && small) {
		ahead_keep(s);
		pg_keep_msg(s, r, false, 0, 0, pid, from, payload);
		return pg_scan_rows(s, r, -1, 0, pid, payload, payload, cb,
		    arg);
	}
	rc = pg_scan_rows(s, r, -1, 0, pid, payload, payload, cb, arg);
	PQclear(r);
	return rc;
}

int
pg_msg_time(struct store *s, int64_t pid, int64_t off, int64_t *at)
{
	struct args a = { 0 };

	a_int(&a, PB(pid) + off);
	return pg_one_int(s, ST_MSG_TIME, &a, at);
}

/* The first row's two integers; -ENOENT when there is none. */
static int
two_ints(struct store *s, enum stmt id, const struct args *a, int64_t *x,
    int64_t *y)
{
	int rc;
	PGresult *r = exec(s, id, a, &rc);

	if (!r)
		return rc;
	rc = PQntuples(r) ? 0 : -ENOENT;
	if (rc == 0) {
		*x = col_int(r, 0, 0);
		if (y)
			*y = col_int(r, 0, 1);
	}
	PQclear(r);
	return rc;
}

int
pg_msg_next(struct store *s, int64_t pid, int64_t after, int64_t *off,
    int64_t *at)
{
	struct args a = { 0 };
	int rc;

	if (ahead_ok(s) && s->ahead.mn.on && s->ahead.mn.pid == pid &&
	    s->ahead.mn.after == after) {
		/* read with the hash row of the message after which */
		if (!s->ahead.mn.off)
			return -ENOENT;
		*off = s->ahead.mn.off;
		if (at)
			*at = s->ahead.mn.at;
		return 0;
	}
	a_int(&a, PB(pid) + (after < 0 ? 0 : after));
	a_int(&a, PB(pid) + MAX_OFFSET);
	if ((rc = two_ints(s, ST_MSG_NEXT, &a, off, at)) == 0)
		*off -= PB(pid);
	return rc;
}

int
pg_msg_count(struct store *s, int64_t pid, int64_t above, int64_t *out)
{
	struct args a = { 0 };

	a_int(&a, PB(pid) + (above < 0 ? 0 : above));
	a_int(&a, PB(pid) + MAX_OFFSET);
	return pg_one_int(s, ST_MSG_COUNT, &a, out);
}

static int
purge_range(struct store *s, enum stmt id, int64_t pid, int64_t upto,
    int64_t limit, int64_t *deleted)
{
	struct args a = { 0 };

	a_int(&a, PB(pid));
	a_int(&a, PB(pid) + upto);
	a_int(&a, limit);
	return pg_run(s, id, &a, deleted);
}

int
pg_msg_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted)
{
	return purge_range(s, ST_MSG_PURGE, pid, upto, limit, deleted);
}

/*
 * The lowest hash row, and the message after it kept for the msg_next
 * that follows (an ack's cursor refresh asks for it next).
 */
static int
find_lo(struct store *s, int64_t pid, const struct args *a, int64_t *off,
    int64_t *at)
{
	PGresult *r;
	int rc;

	if (!(r = exec(s, ST_TXN_FIND_LO, a, &rc)))
		return rc;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return -ENOENT;
	}
	*off = col_int(r, 0, 0) - PB(pid);
	if (at)
		*at = col_int(r, 0, 1);
	ahead_keep(s);
	s->ahead.mn.on = true;
	s->ahead.mn.pid = pid;
	s->ahead.mn.after = *off;
	s->ahead.mn.off = PQgetisnull(r, 0, 2) ? 0 : col_int(r, 0, 2) - PB(pid);
	s->ahead.mn.at = col_int(r, 0, 3);
	PQclear(r);
	return 0;
}

int
pg_txn_find(struct store *s, int64_t pid, const struct hash128 *h,
    int64_t lo, int64_t hi, bool highest, int64_t *off, int64_t *at)
{
	struct args a = { 0 };
	int rc;

	if (lo < 1)
		lo = 1;
	if (hi > MAX_OFFSET)
		hi = MAX_OFFSET;
	if (lo > hi || pf_absent(s, pid, h, lo))
		return -ENOENT;
	if (ahead_ok(s) && s->ahead.hdup && highest && s->ahead.p.id == pid &&
	    lo >= s->ahead.lo && hi == s->ahead.hi &&
	    memcmp(h->b, s->ahead.h.b, sizeof(h->b)) == 0) {
		/* read whole ahead of the push: the newest row up to hi */
		if (s->ahead.off < lo)
			return -ENOENT;
		*off = s->ahead.off;
		if (at)
			*at = s->ahead.at;
		return 0;
	}
	if (!highest && ahead_ok(s) && s->ahead.lw.on &&
	    s->ahead.lw.pid == pid && s->ahead.lw.lo == lo &&
	    s->ahead.lw.hi == hi) {
		struct lowest key = { .h = *h }, *f;

		f = bsearch(&key, s->ahead.lw.v, s->ahead.lw.n, sizeof(key),
		    lowest_cmp);
		if (!f)
			return -ENOENT;
		*off = f->off;
		if (at)
			*at = f->at;
		return 0;
	}
	if (ahead_ok(s) && s->ahead.tf.on && s->ahead.tf.pid == pid &&
	    s->ahead.tf.lo == lo && s->ahead.tf.hi == hi &&
	    s->ahead.tf.highest == highest && (!at || s->ahead.tf.has_at) &&
	    memcmp(h->b, s->ahead.tf.h.b, sizeof(h->b)) == 0) {
		*off = s->ahead.tf.off;
		if (at)
			*at = s->ahead.tf.at;
		return s->ahead.tf.rc;
	}
	a_bytes(&a, h->b, 16);
	a_int(&a, PB(pid) + lo);
	a_int(&a, PB(pid) + hi);
	if (highest) {
		rc = two_ints(s, ST_TXN_FIND_HI, &a, off, at);
		if (rc == 0)
			*off -= PB(pid);
	} else {
		a_int(&a, PB(pid) + MAX_OFFSET);
		rc = find_lo(s, pid, &a, off, at);
	}
	if (rc == 0 || rc == -ENOENT) {
		/* the lookup of a name is followed by its read */
		ahead_keep(s);
		pg_keep_find(s, pid, h, lo, hi, highest, rc, rc == 0 ? *off : 0,
		    at != NULL, rc == 0 && at ? *at : 0);
	}
	return rc;
}

/* Keep txn_find(pid, h, lo, hi, highest)'s answer for the next one. */
void
pg_keep_find(struct store *s, int64_t pid, const struct hash128 *h, int64_t lo,
    int64_t hi, bool highest, int rc, int64_t off, bool has_at, int64_t at)
{
	s->ahead.tf.on = true;
	s->ahead.tf.highest = highest;
	s->ahead.tf.h = *h;
	s->ahead.tf.pid = pid;
	s->ahead.tf.lo = lo;
	s->ahead.tf.hi = hi;
	s->ahead.tf.off = off;
	s->ahead.tf.has_at = has_at;
	s->ahead.tf.at = at;
	s->ahead.tf.rc = rc;
}

int
pg_txn_time(struct store *s, int64_t pid, int64_t off, int64_t *at)
{
	struct args a = { 0 };

	a_int(&a, PB(pid) + off);
	return pg_one_int(s, ST_TXN_TIME, &a, at);
}

int
pg_txn_purge(struct store *s, int64_t pid, int64_t upto, int64_t limit,
    int64_t *deleted)
{
	return purge_range(s, ST_TXN_PURGE, pid, upto, limit, deleted);
}
