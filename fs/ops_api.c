/*
 * ops_api.c - the api/ files: open one read-write, write one JSON request,
 * read the JSON answer on the same descriptor.  The answer is read from
 * its first byte whatever the file position the writes left (reads keep
 * their own position).  The request runs at the first read, or at close
 * when nothing was read: then close() fails with EIO if the call as a
 * whole failed.  A descriptor opened read-only reads as empty and runs
 * nothing (tree walkers read every file).  The JSON itself is core's
 * (queen_api); this file only gathers bytes and hands them over.  A
 * request past API_MEM_MAX is kept in an unlinked file of the spool dir
 * (beside the store; $TMPDIR or /tmp with PostgreSQL) and handed to core
 * as a read-only mapping, so the daemon holds no heap copy of it; the
 * request goes as soon as it has run (one that may run again, once it is
 * answered: queen_api_redoable), and the heap is trimmed.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fs.h"

enum { API_IDLE, API_RUNNING, API_DONE };

struct api_job {
	struct job j;
	struct handle *h;
	size_t size;      /* read: how much was asked */
	bool flush;
};

static void
api_run(struct job *j, struct queen *q)
{
	struct api_job *aj = (struct api_job *)j;
	struct handle *h = aj->h;
	struct queen_api_wait w;
	char *resp = NULL;
	int rc;

	const char *body = h->req ? h->req : "";
	void *map = NULL;

	if (h->req_fd && !h->req_big && h->req_len) {
		map = mmap(NULL, h->req_len, PROT_READ, MAP_PRIVATE,
		    h->req_fd - 1, 0);
		if (map == MAP_FAILED) {
			fs_log("api/%s: mapping the spooled request: %s",
			    h->node->name, strerror(errno));
			j->rc = -ENOMEM;
			return;
		}
		body = map;
	}
	/* an oversize body is answered without being read */
	rc = queen_api_ex(q, h->node->name, body,
	    h->req_big ? (size_t)QUEEN_API_MAX_BODY + 1 : h->req_len, &resp,
	    aj->flush ? NULL : &w);
	if (map)
		munmap(map, h->req_len);
	if (rc != -EAGAIN && !j->redo) {
		/* the request has run: nothing reads it again (one that
		 * may run again goes at the answer: api_reply) */
		pthread_mutex_lock(&fs_lock);
		api_release(h);
		pthread_mutex_unlock(&fs_lock);
		malloc_trim(0);
	}
	if (rc == -EAGAIN) {
		/* a pop with "wait": park like a reader of next */
		if (j->deadline == 0) {
			j->deadline = fs_now() + w.wait_ms;
			if (!(j->wait_queue = strdup(w.queue)) ||
			    (w.group[0] &&
				!(j->wait_group = strdup(w.group)))) {
				j->rc = -ENOMEM;
				return;
			}
		}
		j->due = queen_next_due(q, w.queue, w.group[0] ? w.group :
		    NULL);
		if (j->due <= queen_now(q))
			j->due = queen_now(q) + 1000;
		j->wait = true;
		return;
	}
	if (rc == -ENOMEM && !resp) {
		j->rc = -ENOMEM;
		return;
	}
	pthread_mutex_lock(&fs_lock);
	free(h->text);
	h->text = resp;
	h->len = resp ? strlen(resp) : 0;
	h->api_rc = rc;
	pthread_mutex_unlock(&fs_lock);
	/* a push, an ack or a transaction the store refused for a passing
	 * reason runs again (the engine's redo); if it may not, the answer
	 * made here is read */
	if (rc == -EBUSY && j->redo)
		j->rc = -EBUSY;
	if (j->rc == -EBUSY && engine_will_redo(j)) {
		fs_logl(FSL_INFO,
		    "api/%s: the call failed, to run again: "
		    "%.200s",
		    h->node->name, resp ? resp : "");
	} else if (rc != 0) {
		fs_log("api/%s: the call failed: %.200s", h->node->name,
		    resp ? resp : "");
	}
	/* a push may have made something available: wake every waiter */
	if (!strcmp(h->node->name, "push") ||
	    !strcmp(h->node->name, "transaction") ||
	    !strcmp(h->node->name, "ack"))
		j->notify = strdup("");
}

static void
answer(fuse_req_t req, struct handle *h, size_t size)
{
	size_t at;

	pthread_mutex_lock(&fs_lock);
	at = h->api_pos;
	if (at > h->len)
		at = h->len;
	if (size > h->len - at)
		size = h->len - at;
	h->api_pos = at + size;
	pthread_mutex_unlock(&fs_lock);
	fuse_reply_buf(req, size ? h->text + at : NULL, size);
}

static void
api_reply(struct job *j)
{
	struct api_job *aj = (struct api_job *)j;
	struct handle *h = aj->h;

	pthread_mutex_lock(&fs_lock);
	h->api_state = API_DONE;
	if (j->redo)
		api_release(h);
	if (j->rc == -EBUSY && j->redo)
		j->rc = 0; /* no run again left: its answer says why */
	if (j->rc == -ENODATA) {
		/* the wait ran out: an empty pop is the answer */
		free(h->text);
		h->text = strdup(QUEEN_API_EMPTY_POP);
		h->len = h->text ? strlen(h->text) : 0;
		j->rc = h->text ? 0 : -ENOMEM;
	}
	if (j->rc < 0) {
		/* what the run answered was not committed (or not made):
		 * a later read must not find it */
		h->api_rc = j->rc;
		free(h->text);
		h->text = NULL;
		h->len = 0;
	}
	pthread_mutex_unlock(&fs_lock);
	if (j->redo)
		malloc_trim(0);
	if (aj->flush)
		fuse_reply_err(j->req, h->api_rc != 0 ? EIO : 0);
	else if (j->rc < 0)
		fuse_reply_err(j->req, -j->rc);
	else
		answer(j->req, h, aj->size);
	handle_put(h);
}

static void
api_submit(fuse_req_t req, struct handle *h, size_t size, bool flush)
{
	struct api_job *aj = job_new(sizeof(*aj), api_run, api_reply, req);

	if (!aj) {
		pthread_mutex_lock(&fs_lock);
		h->api_state = API_IDLE;
		pthread_mutex_unlock(&fs_lock);
		handle_put(h);
		fuse_reply_err(req, ENOMEM);
		return;
	}
	aj->j.write = true;
	/* a push, an ack or a transaction runs again after a deadlock or a
	 * lost claim (its request is kept until the answer): see api_run */
	aj->j.redo = queen_api_redoable(h->node->name);
	aj->h = h;
	aj->size = size;
	aj->flush = flush;
	engine_submit(&aj->j);
}

/* Takes over the caller's reference on h. */
void
api_read(fuse_req_t req, struct handle *h, size_t size, off_t off)
{
	int state;

	if (!h->writable) {
		/* opened only to read (a copy, a grep): no request, no call */
		fuse_reply_buf(req, NULL, 0);
		handle_put(h);
		return;
	}
	pthread_mutex_lock(&fs_lock);
	state = h->api_state;
	if (state == API_IDLE)
		h->api_state = API_RUNNING;
	pthread_mutex_unlock(&fs_lock);
	if (state == API_IDLE) {
		api_submit(req, h, size, false);
		return;
	}
	if (state == API_RUNNING)
		fuse_reply_err(req, EBUSY);  /* a second reader, mid-call */
	else
		answer(req, h, size);
	handle_put(h);
}

/* The request's memory and spool file.  fs_lock held, or h unshared. */
void
api_release(struct handle *h)
{
	free(h->req);
	h->req = NULL;
	h->req_cap = 0;
	if (h->req_fd)
		close(h->req_fd - 1);
	h->req_fd = 0;
}

/* Move the request so far into an unlinked file of the spool dir. */
static int
spill(struct handle *h)
{
	char path[sizeof(fs.spool) + 32];
	int fd, err;

	snprintf(path, sizeof(path), "%s/.queenfs-api-XXXXXX", fs.spool);
	if ((fd = mkstemp(path)) >= 0) {
		unlink(path);
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	if (fd < 0) {
		err = errno;
		fs_log("api/%s: cannot spool a request of over %u bytes in "
		    "%s: %s", h->node->name, API_MEM_MAX, fs.spool,
		    strerror(err));
		return -err;
	}
	for (size_t at = 0; at < h->req_len;) {
		ssize_t w = pwrite(fd, h->req + at, h->req_len - at,
		    (off_t)at);
		if (w < 0) {
			err = errno;
			fs_log("api/%s: spooling the request: %s",
			    h->node->name, strerror(err));
			close(fd);
			return -err;
		}
		at += (size_t)w;
	}
	free(h->req);
	h->req = NULL;
	h->req_cap = 0;
	h->req_fd = fd + 1;
	return 0;
}

/* size bytes at off into the spool file; a gap before off reads as spaces */
static int
spool_write(struct handle *h, const char *buf, size_t size, off_t off)
{
	char blanks[512];
	int fd = h->req_fd - 1;

	memset(blanks, ' ', sizeof(blanks));

	while ((size_t)off > h->req_len) {
		size_t n = (size_t)off - h->req_len;
		ssize_t w = pwrite(fd, blanks, n < sizeof(blanks) ? n :
		    sizeof(blanks), (off_t)h->req_len);
		if (w < 0)
			goto fail;
		h->req_len += (size_t)w;
	}
	for (size_t at = 0; at < size;) {
		ssize_t w = pwrite(fd, buf + at, size - at, off + (off_t)at);
		if (w < 0)
			goto fail;
		at += (size_t)w;
	}
	if ((size_t)off + size > h->req_len)
		h->req_len = (size_t)off + size;
	return 0;
fail:
	fs_log("api/%s: spooling the request: %s", h->node->name,
	    strerror(errno));
	return -errno;
}

int
api_write(struct handle *h, const char *buf, size_t size, off_t off)
{
	size_t end;
	int rc = 0;

	if (off < 0)
		return -EINVAL;
	pthread_mutex_lock(&fs_lock);
	if (h->api_state != API_IDLE) {
		rc = -EBUSY;  /* one request per open */
		goto out;
	}
	end = (size_t)off + size;
	if (end > QUEEN_API_MAX_BODY) {
		h->req_big = true;  /* answered as too_large */
		api_release(h);
		goto out;
	}
	if (h->req_big)
		goto out;
	if (!h->req_fd && end > API_MEM_MAX && (rc = spill(h)) < 0)
		goto out;
	if (h->req_fd) {
		rc = spool_write(h, buf, size, off);
		goto out;
	}
	if (end > h->req_cap) {
		size_t cap = h->req_cap ? h->req_cap : 4096;
		char *nb;

		while (cap < end)
			cap *= 2;
		if (!(nb = realloc(h->req, cap))) {
			rc = -ENOMEM;
			goto out;
		}
		h->req = nb;
		h->req_cap = cap;
	}
	if ((size_t)off > h->req_len)
		memset(h->req + h->req_len, ' ', (size_t)off - h->req_len);
	memcpy(h->req + off, buf, size);
	if (end > h->req_len)
		h->req_len = end;
out:
	pthread_mutex_unlock(&fs_lock);
	return rc;
}

/* close: run a request nobody read the answer of, and say how it went. */
void
api_flush(fuse_req_t req, struct handle *h)
{
	int state;
	bool wrote;

	pthread_mutex_lock(&fs_lock);
	state = h->api_state;
	wrote = h->req_len > 0 || h->req_big;
	if (state == API_IDLE && wrote) {
		h->api_state = API_RUNNING;
		h->refs++;
	}
	pthread_mutex_unlock(&fs_lock);
	if (state == API_IDLE && wrote) {
		api_submit(req, h, 0, true);
		return;
	}
	/* whoever read the answer already knows how it went */
	fuse_reply_err(req, 0);
}
