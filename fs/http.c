/*
 * http.c - Queen's HTTP API served with libmicrohttpd: listening sockets,
 * bearer tokens, body limits, and the hand-over of each request to the
 * engine thread as a job (so group commit covers HTTP and FUSE alike).
 * The routes and JSON are core's (queen_http); a long-polling pop parks
 * as an engine waiter while its connection is suspended, holding no
 * thread, and a watcher frees the waiter of a client that went away.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fs.h"

#define MAX_ARGS 32
#define MAX_TOKENS 64
#define WATCH_MS 200

/* who answers a request handed to the engine (hreq.state) */
enum {
	HR_SUBMITTING, /* engine_submit runs: its caller answers */
	HR_SUSPENDING, /* the caller suspends the connection */
	HR_SUSPENDED,  /* the reply resumes it */
	HR_ANSWERED,   /* reply ran before the connection was suspended */
};

struct hreq {
	struct job *job;         /* in flight, or NULL */
	atomic_int state;
	struct MHD_Connection *conn;
	char *body;
	size_t len, cap;
	bool big, started, done, authed;
	atomic_bool gone;        /* the client closed while we waited */
	int fd;
	uint64_t waiter_id;
	struct hreq *wnext;      /* parked: the watcher's list */
	bool watched;
	/* the request, copied for the engine thread */
	char method[8];
	char path[2048];
	struct queen_http_arg args[MAX_ARGS];
	size_t nargs;
	struct queen_http_answer ans;
	int rc;
};

struct http_job {
	struct job j;
	struct hreq *r;
};

static struct {
	struct MHD_Daemon *d[HTTP_MAX_LISTEN];
	int nd;
	char *tokens[MAX_TOKENS];
	size_t ntokens;
	atomic_int inflight;
	atomic_bool stopping;
	atomic_ullong requests;
	atomic_ullong next_id;
	pthread_mutex_t mu;      /* the watch list */
	struct hreq *watch;
	pthread_t watcher;
	bool watcher_on, watcher_stop;
} H = { .mu = PTHREAD_MUTEX_INITIALIZER };

static bool
token_ok(const char *given)
{
	size_t gl = given ? strlen(given) : 0;
	unsigned ok = 0;

	if (!given)
		return false;
	/* every token is compared in full, whatever matched */
	for (size_t i = 0; i < H.ntokens; i++) {
		const char *t = H.tokens[i];
		size_t tl = strlen(t);
		unsigned diff = (unsigned)(tl ^ gl);

		for (size_t k = 0; k < tl; k++)
			diff |= (unsigned char)t[k] ^
			    (unsigned char)(k < gl ? given[k] : 0);
		ok |= diff == 0;
	}
	return ok != 0;
}

static void
watch_add(struct hreq *r)
{
	pthread_mutex_lock(&H.mu);
	if (!r->watched) {
		r->wnext = H.watch;
		H.watch = r;
		r->watched = true;
	}
	pthread_mutex_unlock(&H.mu);
}

static void
watch_drop(struct hreq *r)
{
	pthread_mutex_lock(&H.mu);
	for (struct hreq **pp = &H.watch; *pp; pp = &(*pp)->wnext) {
		if (*pp == r) {
			*pp = r->wnext;
			break;
		}
	}
	r->watched = false;
	pthread_mutex_unlock(&H.mu);
}

/* A suspended connection is not watched by MHD: look at its socket. */
static void *
watcher_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = { 0, WATCH_MS * 1000000L };

		nanosleep(&ts, NULL);
		pthread_mutex_lock(&H.mu);
		if (H.watcher_stop) {
			pthread_mutex_unlock(&H.mu);
			return NULL;
		}
		for (struct hreq *r = H.watch; r; r = r->wnext) {
			char c;
			ssize_t n = recv(r->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

			if (n == 0 || (n < 0 && errno != EAGAIN &&
			    errno != EWOULDBLOCK && errno != EINTR)) {
				atomic_store(&r->gone, true);
				engine_interrupt(r->waiter_id);
			}
		}
		pthread_mutex_unlock(&H.mu);
	}
}

/* A refusal says why in the log as at the mount (not a 404: an unknown
 * route or name is no mistake of the store's). */
static void
answer_log(const struct hreq *r)
{
	if (r->ans.status >= 500)
		fs_log("http: %s %.200s: %d %.200s", r->method, r->path,
		    r->ans.status, r->ans.body ? r->ans.body : "");
	else if (r->ans.status >= 400 && r->ans.status != 404)
		fs_logl(FSL_INFO, "http: %s %.200s: %d %.200s", r->method,
		    r->path, r->ans.status, r->ans.body ? r->ans.body : "");
	if (r->ans.note[0])
		fs_logl(FSL_INFO, "http: %s %.200s: %s", r->method, r->path,
		    r->ans.note);
}

static void
http_run(struct job *j, struct queen *q)
{
	struct hreq *r = ((struct http_job *)j)->r;
	struct queen_http_req req = {
		.method = r->method, .path = r->path, .args = r->args,
		.nargs = r->nargs, .body = r->body ? r->body : "",
		.len = r->big ? (size_t)QUEEN_API_MAX_BODY + 1 : r->len,
		.version = QUEENFS_VERSION,
		.uptime_s = (fs_now() - fs.started) / 1000,
		.requests = atomic_load(&H.requests),
	};
	struct queen_api_wait w;
	int rc;

	if (atomic_load(&r->gone)) {
		j->rc = -EINTR;  /* claim nothing for a client gone */
		return;
	}
	free(r->ans.body);
	rc = queen_http(q, &req, &r->ans, &w);
	if (rc == -EAGAIN) {
		if (j->deadline == 0) {
			j->deadline = fs_now() + w.wait_ms;
			if (!(j->wait_queue = strdup(w.queue)) ||
			    (w.group[0] &&
				!(j->wait_group = strdup(w.group)))) {
				j->rc = -ENOMEM;
				return;
			}
			watch_add(r);
		}
		j->due = queen_next_due(q, w.queue, w.group[0] ? w.group :
		    NULL);
		if (j->due <= queen_now(q))
			j->due = queen_now(q) + 1000;
		j->wait = true;
		return;
	}
	j->rc = rc;
	/* a push, an ack or a transaction the store refused for a passing
	 * reason runs again (the engine's redo), its answer made again; if
	 * it may not, the answer made here goes (http_reply) */
	if (rc == 0 && j->redo && r->ans.busy)
		j->rc = -EBUSY;
	if (r->ans.wrote && !j->notify)
		j->notify = strdup("");
	if (j->rc == -EBUSY && engine_will_redo(j))
		fs_logl(FSL_INFO, "http: %s %.200s: %d, to run again: %.200s",
		    r->method, r->path, r->ans.status,
		    r->ans.body ? r->ans.body : "");
	else if (j->rc == -EBUSY) /* an ack's or a transaction's 200 too */
		fs_log("http: %s %.200s: %d, the store stayed busy: %.200s",
		    r->method, r->path, r->ans.status,
		    r->ans.body ? r->ans.body : "");
	else
		answer_log(r);
}

static void
http_reply(struct job *j)
{
	struct hreq *r = ((struct http_job *)j)->r;

	int st = HR_SUBMITTING;

	watch_drop(r);      /* watched is the watcher's, under H.mu */
	/* no run again left: the last run's answer goes out (logged by
	 * http_run) */
	r->rc = j->rc == -EBUSY && r->ans.busy ? 0 : j->rc;
	r->done = true;
	/* answered on the submitter's own thread, or before it suspended:
	 * the submitter answers; else the connection waits to be resumed */
	if (atomic_compare_exchange_strong(&r->state, &st, HR_ANSWERED))
		return;
	st = HR_SUSPENDING;
	if (atomic_compare_exchange_strong(&r->state, &st, HR_ANSWERED))
		return;
	atomic_store(&r->state, HR_ANSWERED);
	MHD_resume_connection(r->conn);
}

static enum MHD_Result
queue_json(struct MHD_Connection *c, unsigned status, char *body, bool text)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (!body) {
		resp = MHD_create_response_from_buffer(0, "",
		    MHD_RESPMEM_PERSISTENT);
	} else {
		resp = MHD_create_response_from_buffer(strlen(body), body,
		    MHD_RESPMEM_MUST_FREE);
	}
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	if (body)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
		    text ? "text/plain; version=0.0.4; charset=utf-8" :
		    "application/json");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result
queue_error(struct MHD_Connection *c, unsigned status, const char *msg)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "{\"error\":\"%s\"}", msg);
	return queue_json(c, status, strdup(buf), false);
}

static enum MHD_Result
one_arg(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct hreq *r = cls;

	(void)kind;
	if (r->nargs == MAX_ARGS)
		return MHD_NO;
	r->args[r->nargs].key = strdup(key);
	r->args[r->nargs].value = strdup(value ? value : "");
	r->nargs++;
	return MHD_YES;
}

static enum MHD_Result finish_req(struct MHD_Connection *c, struct hreq *r);

/* The request's last call: hand it to the engine. */
static enum MHD_Result
submit(struct MHD_Connection *c, struct hreq *r, const char *url,
    const char *method)
{
	const union MHD_ConnectionInfo *ci;
	struct http_job *hj;
	enum MHD_Result ret;
	int st;

	snprintf(r->method, sizeof(r->method), "%s", method);
	if (strlen(url) >= sizeof(r->path))
		return queue_error(c, MHD_HTTP_URI_TOO_LONG,
		    "the path is over 2047 bytes");
	memcpy(r->path, url, strlen(url) + 1);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, one_arg, r);
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	r->fd = ci ? ci->connect_fd : -1;
	r->conn = c;
	atomic_fetch_add(&H.inflight, 1);
	if (atomic_load(&H.stopping)) {
		atomic_fetch_sub(&H.inflight, 1);
		return queue_error(c, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "the daemon is shutting down");
	}
	if (!(hj = job_new(sizeof(*hj), http_run, http_reply, NULL))) {
		atomic_fetch_sub(&H.inflight, 1);
		return queue_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
		    "out of memory");
	}
	hj->r = r;
	r->waiter_id = (1ULL << 63) | atomic_fetch_add(&H.next_id, 1);
	hj->j.waiter_id = r->waiter_id;
	/* reads of the store need no transaction; everything else may write
	 * (a pop takes a lease: lazy, as through the mount) */
	hj->j.write = strcmp(method, "GET") != 0 || strstr(url, "/pop/");
	hj->j.lazy = strcmp(method, "GET") == 0;
	/* a push, an ack or a transaction runs again after a deadlock or a
	 * lost claim, as a publish does: its answer is made again
	 * (http_run), and nothing of the try before was kept */
	hj->j.redo = queen_http_redoable(method, url);
	hj->j.evloop = true;
	/* answered at once when this thread ran it and it needs no sync:
	 * no suspend and resume, no wake-up of this thread by another */
	r->job = &hj->j;
	r->started = true;
	atomic_store(&r->state, HR_SUBMITTING);
	engine_submit(&hj->j);
	st = HR_SUBMITTING;
	if (!atomic_compare_exchange_strong(&r->state, &st, HR_SUSPENDING)) {
		ret = finish_req(c, r);
	} else {
		MHD_suspend_connection(c);
		st = HR_SUSPENDING;
		if (!atomic_compare_exchange_strong(&r->state, &st,
			HR_SUSPENDED))
			MHD_resume_connection(c); /* answered meanwhile */
		ret = MHD_YES;
	}
	atomic_fetch_sub(&H.inflight, 1);
	return ret;
}

static enum MHD_Result
finish_req(struct MHD_Connection *c, struct hreq *r)
{
	char *body = r->ans.body;

	r->ans.body = NULL;
	if (r->rc == -ENODATA) {
		free(body);
		return queue_json(c, MHD_HTTP_NO_CONTENT, NULL, false);
	}
	if (r->rc == -EINTR) {
		free(body);
		return queue_error(c, MHD_HTTP_SERVICE_UNAVAILABLE,
		    "the daemon is shutting down");
	}
	if (r->rc < 0) {
		free(body);
		return queue_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
		    r->rc == -ENOSPC ? "storage full" : "storage failed");
	}
	return queue_json(c, (unsigned)r->ans.status, body, r->ans.text);
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload,
    size_t *upload_size, void **con_cls)
{
	struct hreq *r = *con_cls;

	(void)cls;
	(void)version;
	if (!r) {
		const char *cl, *auth;

		if (!(r = calloc(1, sizeof(*r))))
			return MHD_NO;
		*con_cls = r;
		atomic_fetch_add(&H.requests, 1);
		auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_AUTHORIZATION);
		r->authed = H.ntokens == 0 || strcmp(url, "/health") == 0 ||
		    (auth && strncmp(auth, "Bearer ", 7) == 0 &&
		    token_ok(auth + 7));
		cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > QUEEN_API_MAX_BODY)
			r->big = true;
		return MHD_YES;
	}
	if (r->done)
		return finish_req(c, r);
	if (r->started)
		return MHD_YES;
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		if (r->big || !r->authed)
			return MHD_YES;      /* read and dropped */
		if (r->len + n > QUEEN_API_MAX_BODY) {
			r->big = true;
			return MHD_YES;
		}
		if (r->len + n + 1 > r->cap) {
			size_t cap = r->cap ? r->cap : 4096;
			char *nb;

			while (cap < r->len + n + 1)
				cap *= 2;
			if (!(nb = realloc(r->body, cap)))
				return MHD_NO;
			r->body = nb;
			r->cap = cap;
		}
		memcpy(r->body + r->len, upload, n);
		r->len += n;
		r->body[r->len] = '\0';
		return MHD_YES;
	}
	if (!r->authed)
		return queue_error(c, MHD_HTTP_UNAUTHORIZED,
		    "a valid bearer token is required");
	if (r->big) {
		fs_log("http: %s %.200s: body over %u bytes refused", method,
		    url, QUEEN_API_MAX_BODY);
		return queue_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
		    "the body is over 67108864 bytes");
	}
	return submit(c, r, url, method);
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct hreq *r = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (!r)
		return;
	watch_drop(r);
	for (size_t i = 0; i < r->nargs; i++) {
		free((char *)r->args[i].key);
		free((char *)r->args[i].value);
	}
	free(r->ans.body);
	free(r->body);
	free(r);
	*con_cls = NULL;
}

static void
mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	if (fs.debug)
		fs_log("http: %s", line);
}

static int
parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len,
    bool *loopback)
{
	char host[128];
	const char *colon = strrchr(s, ':');
	long port;
	char *end;

	if (!colon || colon == s || (size_t)(colon - s) >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

		host[strlen(host) - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
			return -EINVAL;
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*a6);
		*loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
	} else {
		struct sockaddr_in *a4 = (struct sockaddr_in *)ss;

		if (!strcmp(host, "localhost"))
			snprintf(host, sizeof(host), "127.0.0.1");
		if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
			return -EINVAL;
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*len = sizeof(*a4);
		*loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
	}
	return 0;
}

static int
read_tokens(const char *file)
{
	char line[1024];
	FILE *f = fopen(file, "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f) && H.ntokens < MAX_TOKENS) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (!(H.tokens[H.ntokens] = strdup(line))) {
			fclose(f);
			return -ENOMEM;
		}
		H.ntokens++;
	}
	fclose(f);
	return H.ntokens ? 0 : -ENODATA;
}

/* Before the fork: refuse a bad address or a missing token file early. */
int
http_check(const struct http_opts *o)
{
	struct sockaddr_storage ss;
	socklen_t len;
	bool lo;

	for (int i = 0; i < o->n; i++) {
		if (parse_addr(o->listen[i], &ss, &len, &lo) < 0) {
			fprintf(stderr, "queenfs: --listen %s: not HOST:PORT\n",
			    o->listen[i]);
			return -EINVAL;
		}
		if (!lo && !o->token_file && !o->insecure) {
			fprintf(stderr, "queenfs: --listen %s is not a loopback "
			    "address: give --http-token-file FILE or "
			    "--http-insecure\n", o->listen[i]);
			return -EACCES;
		}
	}
	if (o->token_file && access(o->token_file, R_OK) < 0) {
		fprintf(stderr, "queenfs: --http-token-file %s: %s\n",
		    o->token_file, strerror(errno));
		return -errno;
	}
	return 0;
}

int
http_start(const struct http_opts *o)
{
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD |
	    MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	int rc;

	if (o->token_file && (rc = read_tokens(o->token_file)) < 0) {
		fs_log("http: %s: %s", o->token_file, rc == -ENODATA ?
		    "no token in it" : strerror(-rc));
		return rc;
	}
	for (int i = 0; i < o->n; i++) {
		struct sockaddr_storage ss;
		socklen_t len;
		bool lo;

		if (parse_addr(o->listen[i], &ss, &len, &lo) < 0)
			return -EINVAL;
		H.d[H.nd] = MHD_start_daemon(flags |
		    (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0), 0, NULL,
		    NULL, on_request, NULL,
		    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
		    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)2,
		    MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_MAX_CONNS,
		    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_S,
		    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEM,
		    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)0,
		    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
		    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
		    MHD_OPTION_END);
		if (!H.d[H.nd]) {
			fs_log("http: cannot listen on %s", o->listen[i]);
			return -EADDRINUSE;
		}
		H.nd++;
		fs_log("http: serving Queen's API on http://%s (%s)",
		    o->listen[i], H.ntokens ? "bearer tokens required" :
		    lo ? "loopback, no token" :
		    "NO AUTHENTICATION (--http-insecure)");
	}
	if (pthread_create(&H.watcher, NULL, watcher_main, NULL) == 0)
		H.watcher_on = true;
	return 0;
}

/* Refuse new requests and wait until no submission is half-way. */
void
http_quiesce(void)
{
	struct timespec ts = { 0, 1000000 };

	atomic_store(&H.stopping, true);
	while (atomic_load(&H.inflight) > 0)
		nanosleep(&ts, NULL);
}

/* After engine_stop: every job has been answered and resumed. */
void
http_stop(void)
{
	if (H.watcher_on) {
		pthread_mutex_lock(&H.mu);
		H.watcher_stop = true;
		pthread_mutex_unlock(&H.mu);
		pthread_join(H.watcher, NULL);
		H.watcher_on = false;
	}
	for (int i = 0; i < H.nd; i++)
		MHD_stop_daemon(H.d[i]);
	H.nd = 0;
	for (size_t i = 0; i < H.ntokens; i++)
		free(H.tokens[i]);
	H.ntokens = 0;
}
