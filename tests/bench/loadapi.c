/*
 * loadapi.c - the batch modes of the load generator, through the mount's
 * JSON files: apipush (1000-item api/push requests) and apipop (api/pop
 * with batch 1000, every payload parsed, then one ack of the span's last
 * message, by a rename of its leased file or, failing that, api/ack).
 * opt.dir is the mount's root here; opt.queue names the queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

#define BATCH 1000
#define CHUNK (64 * 1024)   /* one FUSE READ each: see call() */

/*
 * Write req to MOUNT/api/<ep> and return its answer, NUL-terminated, in
 * a buffer to free (its length in *lenp), or NULL.
 */
static char *
call_raw(const char *ep, const char *req, size_t len, size_t *lenp)
{
	char path[4096];
	size_t cap = 1 << 20, n = 0;
	char *buf = malloc(cap);
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "%s/api/%s", opt.dir, ep);
	if (!buf)
		return NULL;
	if ((fd = open(path, O_RDWR)) < 0) {
		fail("open", path, errno);
		free(buf);
		return NULL;
	}
	if (write(fd, req, len) != (ssize_t)len) {
		fail("write", path, errno);
		close(fd);
		free(buf);
		return NULL;
	}
	/*
	 * The answer starts at byte 0 whatever position the write left; a
	 * file that cannot seek (a stream) fails this harmlessly.  Reads go
	 * in CHUNKs below max_read: the kernel splits a bigger direct-I/O
	 * read into READs sent at once, and queenfs serves api/ answers in
	 * arrival order, not by offset.
	 */
	lseek(fd, 0, SEEK_SET);
	while ((r = read(fd, buf + n, CHUNK < cap - n - 1 ? CHUNK :
	    cap - n - 1)) > 0) {
		n += r;
		if (n + 1 == cap) {
			char *b = realloc(buf, cap *= 2);

			if (!b)
				break;
			buf = b;
		}
	}
	if (r < 0)
		fail("read", path, errno);
	if (close(fd) != 0)
		fail("close", path, errno);
	buf[n] = 0;
	if (r != 0) {   /* an error, or no room for the rest */
		free(buf);
		return NULL;
	}
	*lenp = n;
	return buf;
}

/* write req to MOUNT/api/<ep> and return its parsed answer, or NULL */
static json_t *
call(const char *ep, const char *req, size_t len)
{
	json_error_t err;
	json_t *ans;
	size_t n;
	char *buf = call_raw(ep, req, len, &n);

	if (!buf)
		return NULL;
	if (!(ans = json_loadb(buf, n, 0, &err)))
		fprintf(stderr, "load: api/%s answered no JSON (%s): %.200s\n",
		    ep, err.text, buf);
	free(buf);
	return ans;
}

/*
 * -x: an api/push answer checked without a parser: an array holding
 * "status":"queued" once per item.  What the daemon can do when the
 * client's JSON costs nothing; jansson's parse of the 1000 results costs
 * the client about as much as the daemon's whole work.
 */
static bool
push_scan(const char *ep, const char *req, size_t len)
{
	static const char q[] = "\"status\":\"queued\"";
	size_t n;
	int k = 0;
	char *buf = call_raw(ep, req, len, &n), *p;

	if (!buf)
		return false;
	for (p = buf; (p = strstr(p, q)) != NULL; p += sizeof(q) - 1)
		k++;
	if (n < 2 || buf[0] != '[' || buf[n - 1] != ']' || k != BATCH) {
		fprintf(stderr, "load: api/push answered (%d queued) %.300s\n",
		    k, buf);
		free(buf);
		return false;
	}
	free(buf);
	return true;
}

static _Atomic long pushed, nthreads;
static volatile size_t payload_bytes;   /* keeps the payload walk */

static void *
pusher(void *arg)
{
	const char *payload = arg;
	size_t cap = BATCH * 512, len;
	char *req = malloc(cap);
	int t = (int)nthreads++;
	long seq = 0;
	double end = now_s() + opt.dur;
	json_t *ans;

	while (req && now_s() < end && (!opt.count || pushed < opt.count)) {
		long base = pushed;
		int i;

		len = (size_t)snprintf(req, cap, "{\"items\":[");
		for (i = 0; i < BATCH; i++) {
			char part[64] = "";

			if (opt.partitions > 0)
				snprintf(part, sizeof(part),
				    "\"partition\":\"p%ld\",",
				    (base + i) % opt.partitions);
			len += (size_t)snprintf(req + len, cap - len,
			    "%s{\"queue\":\"%s\",%s\"transactionId\":"
			    "\"a%d-%d-%ld\",\"payload\":\"%.*s\"}",
			    i ? "," : "", opt.queue, part, (int)getpid(), t,
			    seq++, 180, payload);
		}
		len += (size_t)snprintf(req + len, cap - len, "]}");
		if (opt.scan) {
			if (!push_scan("push", req, len))
				break;
			pushed += BATCH;
			continue;
		}
		if (!(ans = call("push", req, len)))
			break;
		if (!json_is_array(ans) || json_array_size(ans) != BATCH) {
			char *s = json_dumps(ans, 0);

			fprintf(stderr, "load: api/push answered %.300s\n", s);
			free(s);
			json_decref(ans);
			break;
		}
		json_decref(ans);
		pushed += BATCH;
	}
	free(req);
	return NULL;
}

int
run_apipush(const char *payload, size_t len)
{
	pthread_t th[64];
	double t0 = now_s(), t1;
	int i, n = opt.threads < 64 ? opt.threads : 64;

	(void)len;
	for (i = 0; i < n; i++)
		pthread_create(&th[i], NULL, pusher, (void *)payload);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	t1 = now_s();
	if (pushed == 0)
		return 1;
	printf("%.1f %ld %.3f\n", pushed / (t1 - t0), (long)pushed, t1 - t0);
	return 0;
}

/* commit the span: rename the last message's leased file into ack/ */
static int
commit(json_t *last)
{
	const char *txid = json_string_value(json_object_get(last,
	    "transactionId"));
	const char *lease = json_string_value(json_object_get(last, "leaseId"));
	const char *puid = json_string_value(json_object_get(last,
	    "partitionId"));
	char from[4096], to[4096], *req;
	json_t *ans, *first, *body;
	int ok;

	if (!txid || !lease || !puid)
		return -EINVAL;
	snprintf(from, sizeof(from), "%s/queues/%s/leased/%s/%s", opt.dir,
	    opt.queue, lease, txid);
	snprintf(to, sizeof(to), "%s/queues/%s/ack/%s", opt.dir, opt.queue,
	    txid);
	if (rename(from, to) == 0)
		return 0;
	body = json_pack("{s:s, s:s, s:s}", "transactionId", txid, "leaseId",
	    lease, "partitionId", puid);
	req = json_dumps(body, JSON_COMPACT);
	json_decref(body);
	ans = req ? call("ack", req, strlen(req)) : NULL;
	free(req);
	first = json_is_array(ans) ? json_array_get(ans, 0) : ans;
	ok = json_is_true(json_object_get(first, "success"));
	json_decref(ans);
	return ok ? 0 : -EIO;
}

int
run_apipop(void)
{
	char path[4096], req[512];
	double t0, t1, end;
	size_t i, n;
	long got = 0;
	size_t bytes = 0;
	json_t *ans, *msgs;
	int rc;

	snprintf(path, sizeof(path), "%s/queues/%s/config", opt.dir,
	    opt.queue);
	if ((rc = put_file(path, "batch = 1000\n", 13, O_TRUNC)) != 0)
		fail("config write", path, -rc);
	snprintf(req, sizeof(req), "{\"queue\":\"%s\",\"batch\":%d}", opt.queue,
	    BATCH);
	t0 = now_s();
	end = t0 + opt.dur;
	while (now_s() < end) {
		if (!(ans = call("pop", req, strlen(req))))
			break;
		msgs = json_object_get(ans, "messages");
		n = json_array_size(msgs);
		if (!json_is_true(json_object_get(ans, "success")) || n == 0) {
			json_decref(ans);
			break;
		}
		for (i = 0; i < n; i++) {
			json_t *p = json_object_get(json_array_get(msgs, i),
			    "payload");

			bytes += json_is_string(p) ? json_string_length(p) : 1;
		}
		rc = commit(json_array_get(msgs, n - 1));
		json_decref(ans);
		if (rc != 0) {
			fprintf(stderr, "load: ack of a popped batch failed\n");
			break;
		}
		got += (long)n;
	}
	t1 = now_s();
	if (got == 0)
		return 1;
	printf("%.1f %ld %.3f\n", got / (t1 - t0), got, t1 - t0);
	payload_bytes = bytes;
	return 0;
}
