/*
 * pg_pipe.c - the PostgreSQL connection's pipeline (libpq pipeline mode):
 * statements are sent without waiting, and one Sync collects every answer
 * sent before it, so a round trip carries all the writes queued since the
 * last one.  Which statements may go unanswered is db_pg.c's choice; what
 * a statement means is not known here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "pg_store.h"

/* The connection is lost or out of step: forget what was sent. */
static int
lost(struct store *s)
{
	int rc = pg_fail(s, NULL);

	pg_broken(s);
	s->npend = 0;
	pg_append_drop(s);
	return rc ? rc : -EIO;
}

int
pipe_start(struct store *s)
{
	s->npend = 0;
	if (PQpipelineStatus(s->c) == PQ_PIPELINE_OFF &&
	    !PQenterPipelineMode(s->c))
		return lost(s);
	return 0;
}

/*
 * A write sent earlier failed after its call had been told it succeeded:
 * nothing of the transaction may be kept.  A refusal the caller could act
 * on keeps its errno (EBUSY: retry); anything else is an I/O error.
 */
static int
poison(struct store *s, int rc)
{
	switch (rc) {
	case -EBUSY:
	case -ENOSPC:
	case -ENOMEM:
	case -EROFS:
	case -EACCES:
		break;
	default:
		rc = -EIO;
	}
	if (s->in_tx && !s->poisoned) {
		s->poisoned = true;
		s->poison_rc = rc;
	}
	return rc;
}

/* Whether some row of r is over PG_BUF_KEEP (libpq read it whole). */
static bool
big_row(const PGresult *r)
{
	int i, k, n = PQntuples(r), nf = PQnfields(r);

	if (PQresultMemorySize(r) <= PG_BUF_KEEP)
		return false;
	for (i = 0; i < n; i++) {
		size_t row = 0;

		for (k = 0; k < nf; k++)
			row += (size_t)PQgetlength(r, i, k);
		if (row > PG_BUF_KEEP)
			return true;
	}
	return false;
}

/*
 * Whether a statement's parameters are over PG_BUF_KEEP: its bytes
 * (a_bytes); its texts are numbers and names, of a bounded size.
 */
static bool
big_args(const struct args *a)
{
	size_t n = 0;
	int i;

	for (i = 0; a && i < a->n; i++)
		if (a->fmt[i])
			n += (size_t)a->len[i];
	return n > PG_BUF_KEEP;
}

/*
 * Send a Sync and read the answers of everything sent: one round trip.
 * want: hand back the last statement's result (NULL with *rc on its
 * failure, or when an earlier one failed).
 */
static PGresult *
drain(struct store *s, bool want, int *rc)
{
	PGresult *r, *keep = NULL;
	int i, n = s->npend, bad = -1;

	*rc = 0;
	if (!PQpipelineSync(s->c)) {
		*rc = lost(s);
		return NULL;
	}
	atomic_fetch_add(&s->round_trips, 1);
	s->npend = 0;
	for (i = 0; i < n; i++) {
		const struct pend *e = &s->pend[i];
		ExecStatusType st;

		if (!(r = PQgetResult(s->c))) {
			PQclear(keep);
			*rc = lost(s);
			return NULL;
		}
		st = PQresultStatus(r);
		if (st == PGRES_TUPLES_OK && big_row(r))
			s->bloated = true;
		/* a row for each announcement it made */
		if (e->id == ST_CUR_WAKE && !e->prepare &&
		    st == PGRES_TUPLES_OK)
			s->announced += (uint64_t)PQntuples(r);
		if (st == PGRES_FATAL_ERROR && bad < 0) {
			*rc = pg_fail(s, r);
			bad = i;
			/* a push's partition changed since it was read */
			if (e->id == ST_PART_CLAIM && !e->prepare)
				pg_claim_lost(s);
		}
		/* a Parse skipped or refused left nothing prepared */
		if (e->prepare && st != PGRES_COMMAND_OK)
			s->prepared[e->id] = false;
		if (want && i == n - 1 && bad < 0)
			keep = r;
		else
			PQclear(r);
		/* each statement's answers end with a NULL */
		while ((r = PQgetResult(s->c)) != NULL)
			PQclear(r);
	}
	r = PQgetResult(s->c);
	if (!r || PQresultStatus(r) != PGRES_PIPELINE_SYNC) {
		PQclear(r);
		PQclear(keep);
		*rc = lost(s);
		return NULL;
	}
	PQclear(r);
	if (bad >= 0 && (bad < n - 1 || !want))
		*rc = poison(s, *rc);
	pg_recycle(s);
	return keep;
}

/* Queue one statement (a text when id is ST__N), preparing it first. */
static int
send(struct store *s, enum stmt id, const char *text, const struct args *a)
{
	bool keep;
	int ok, rc;

	/* buffered appends go first; a rollback drops them (all were made
	 * after the last savepoint, which sent them) */
	if (s->ab.n > 0 && id != ST_MSG_APPEND_MANY) {
		if (id == ST__N && strncmp(text, "ROLLBACK", 8) == 0)
			pg_append_drop(s);
		else if ((rc = pg_append_flush(s)) != 0)
			return rc;
	}
	/* a read, a savepoint or its release changes no row; a rollback
	 * to one gives up the locks taken since */
	if (id != ST__N)
		keep = pg_stmt_reads(id);
	else
		keep = strncmp(text, "SAVEPOINT ", 10) == 0 ||
		    strncmp(text, "RELEASE ", 8) == 0;
	if (!keep)
		s->ahead.valid = false;
	if (s->npend + 2 > PEND_MAX) {
		PQclear(drain(s, false, &rc));
		if (rc != 0)
			return rc;
	}
	if (id != ST__N && !s->prepared[id]) {
		if (!PQsendPrepare(s->c, pg_stmt_name(id), pg_stmt_sql(id), 0,
			NULL))
			return lost(s);
		s->pend[s->npend++] = (struct pend){ id, true, NULL };
		s->prepared[id] = true;
	}
	if (id == ST__N)
		ok = PQsendQueryParams(s->c, text, 0, NULL, NULL, NULL, NULL,
		    0);
	else
		ok = PQsendQueryPrepared(s->c, pg_stmt_name(id), a ? a->n : 0,
		    a ? a->v : NULL, a ? a->len : NULL, a ? a->fmt : NULL, 1);
	if (!ok)
		return lost(s);
	if (big_args(a))
		s->bloated = true;
	s->pend[s->npend++] = (struct pend){ id, false, text };
	return 0;
}

PGresult *
pipe_wait(struct store *s, enum stmt id, const char *text, const struct args *a,
    int *rc)
{
	if ((*rc = send(s, id, text, a)) != 0)
		return NULL;
	return drain(s, true, rc);
}

int
pipe_defer(struct store *s, enum stmt id, const char *text,
    const struct args *a)
{
	int rc;

	if (!s->in_tx) {
		PQclear(pipe_wait(s, id, text, a, &rc));
		return rc;
	}
	return send(s, id, text, a);
}
