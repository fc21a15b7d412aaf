/*
 * http-load.c - a client of queenfs's HTTP API for `make bench`: N
 * keep-alive connections to 127.0.0.1 (TCP_NODELAY) for D seconds.
 *   push:   POST /api/v1/push with BATCH items of a 200-byte payload
 *   popack: GET /api/v1/pop/queue/Q?batch=BATCH, then POST /api/v1/ack/batch
 *           of what it took, until D seconds or the backlog runs out
 *           (fill it first with a push run on the same QUEUE)
 * Each connection has its own queue (QUEUE-<i>), so pops never meet a
 * lease.  Usage: http-load PORT push|popack CONNS SECONDS BATCH QUEUE;
 * prints "MSGS_PER_S COUNT SECONDS" (messages, not requests).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "net.h"

static int popack, batch;
static const char *queue;

/* one answer: the status, the body into *body (malloc'd, NUL-ended) */
static int
answer(struct conn *c, char **body, size_t *blen)
{
	char line[8192];
	long status = -1, clen = 0;
	size_t got = 0;
	ssize_t n;

	if (net_line(c, line, sizeof(line)) < 12)
		return -1;
	status = strtol(line + 9, NULL, 10);
	while ((n = net_line(c, line, sizeof(line))) > 0)
		if (!strncasecmp(line, "content-length:", 15))
			clen = strtol(line + 15, NULL, 10);
	if (n < 0 || clen < 0)
		return -1;
	if (!(*body = malloc((size_t)clen + 1)))
		return -1;
	while (got < (size_t)clen) {
		size_t have = c->len - c->off, take;

		if (have == 0) {
			ssize_t r = read(c->fd, c->buf, sizeof(c->buf));

			if (r <= 0) {
				free(*body);
				return -1;
			}
			c->off = 0;
			c->len = (size_t)r;
			continue;
		}
		take = have < (size_t)clen - got ? have : (size_t)clen - got;
		memcpy(*body + got, c->buf + c->off, take);
		c->off += take;
		got += take;
	}
	(*body)[got] = '\0';
	*blen = got;
	return (int)status;
}

static int
request(struct conn *c, const char *method, const char *path,
    const char *body, size_t len, char **resp, size_t *rlen)
{
	char head[512];
	int n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: b\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
	    method, path, len);

	if (net_send(c, head, (size_t)n) != 0 ||
	    (len && net_send(c, body, len) != 0))
		return -1;
	return answer(c, resp, rlen);
}

static char *
push_body(const char *q, int id, long *seq, int n, size_t *len)
{
	size_t cap = (size_t)n * 320 + 64, at = 0;
	char *b = malloc(cap);

	if (!b)
		exit(1);
	at += (size_t)snprintf(b, cap, "{\"items\":[");
	for (int i = 0; i < n; i++)
		at += (size_t)snprintf(b + at, cap - at, "%s{\"queue\":\"%s-%d\","
		    "\"transactionId\":\"t%d-%ld\",\"payload\":\"%0200d\"}",
		    i ? "," : "", q, id, id, (*seq)++, 0);
	at += (size_t)snprintf(b + at, cap - at, "]}");
	*len = at;
	return b;
}

/* the ack of a popped body: every transactionId, one partitionId, lease */
static char *
ack_body(const char *pop, size_t *len, int *count)
{
	const char *p = pop, *lease = strstr(pop, "\"leaseId\":\"");
	const char *part = strstr(pop, "\"partitionId\":\"");
	size_t cap = strlen(pop) + 64, at = 0;
	char *b = malloc(cap), l[64], pid[64];

	if (!b || !lease || !part)
		exit(1);
	sscanf(lease + 11, "%63[^\"]", l);
	sscanf(part + 15, "%63[^\"]", pid);
	at += (size_t)snprintf(b, cap, "{\"acknowledgments\":[");
	*count = 0;
	while ((p = strstr(p, "{\"id\":\""))) {
		const char *t = strstr(p, "\"transactionId\":\"");
		char txid[128];

		if (!t)
			break;
		sscanf(t + 17, "%127[^\"]", txid);
		at += (size_t)snprintf(b + at, cap - at, "%s{\"transactionId\":"
		    "\"%s\",\"partitionId\":\"%s\",\"status\":\"completed\","
		    "\"leaseId\":\"%s\"}", *count ? "," : "", txid, pid, l);
		(*count)++;
		p = t;
	}
	at += (size_t)snprintf(b + at, cap - at, "]}");
	*len = at;
	return b;
}

static void *
worker(void *arg)
{
	struct net_job *j = arg;
	struct conn *c = malloc(sizeof(*c));
	char path[256], *body, *resp;
	size_t len, rlen;
	long seq = 0;
	int st;

	if (!c || net_open(c, j->port) != 0) {
		j->failed = 1;
		free(c);
		return NULL;
	}
	snprintf(path, sizeof(path), "/api/v1/pop/queue/%s-%d?batch=%d"
	    "&wait=false", queue, j->id, batch);
	while (net_now() < j->end) {
		if (!popack) {
			body = push_body(queue, j->id, &seq, batch, &len);
			st = request(c, "POST", "/api/v1/push", body, len, &resp,
			    &rlen);
			free(body);
			if (st != 201)
				goto fail;
			free(resp);
			j->count += batch;
			continue;
		}
		st = request(c, "GET", path, NULL, 0, &resp, &rlen);
		if (st == 204) {
			free(resp);
			break;        /* the backlog ran out */
		}
		if (st != 200)
			goto fail;
		{
			int n;

			body = ack_body(resp, &len, &n);
			free(resp);
			st = request(c, "POST", "/api/v1/ack/batch", body, len,
			    &resp, &rlen);
			free(body);
			if (st != 200 || strstr(resp, "\"success\":false"))
				goto fail;
			free(resp);
			j->count += n;
		}
	}
	close(c->fd);
	free(c);
	return NULL;
fail:
	fprintf(stderr, "http-load: status %d\n", st);
	if (st > 0)
		free(resp);
	j->failed = 1;
	close(c->fd);
	free(c);
	return NULL;
}

int
main(int argc, char **argv)
{
	int conns;
	double dur;

	if (argc != 7) {
		fprintf(stderr, "usage: http-load PORT push|popack CONNS "
		    "SECONDS BATCH QUEUE\n");
		return 2;
	}
	net_port = atoi(argv[1]);
	popack = !strcmp(argv[2], "popack");
	conns = atoi(argv[3]);
	dur = atof(argv[4]);
	batch = atoi(argv[5]);
	queue = argv[6];
	if (conns < 1 || dur <= 0 || batch < 1)
		return 2;
	net_run(worker, conns, dur, "http-load");
	return 0;
}
