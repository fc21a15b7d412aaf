/*
 * net.c - TCP plumbing for the peers' clients: connect to 127.0.0.1 (no
 * other host is ever used), read lines and byte counts through one
 * buffer, and run N connection threads for a while, printing
 * "OPS_PER_S COUNT SECONDS".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net.h"

int net_port;

double
net_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int
net_open(struct conn *c, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int one = 1;

	c->off = c->len = 0;
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((c->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -errno;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;

		close(c->fd);
		return -e;
	}
	return 0;
}

int
net_send(struct conn *c, const void *p, size_t n)
{
	const char *s = p;
	ssize_t w;

	while (n > 0) {
		if ((w = write(c->fd, s, n)) <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
fill(struct conn *c)
{
	ssize_t r;

	if (c->off > 0) {
		memmove(c->buf, c->buf + c->off, c->len - c->off);
		c->len -= c->off;
		c->off = 0;
	}
	if (c->len == sizeof(c->buf))
		return -1;
	r = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (r <= 0)
		return -1;
	c->len += (size_t)r;
	return 0;
}

/* one line without its CRLF into out; its length, or -1 */
ssize_t
net_line(struct conn *c, char *out, size_t cap)
{
	char *nl;
	size_t n;

	while (!(nl = memchr(c->buf + c->off, '\n', c->len - c->off)))
		if (fill(c) != 0)
			return -1;
	n = (size_t)(nl - (c->buf + c->off));
	if (n > 0 && nl[-1] == '\r')
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(out, c->buf + c->off, n);
	out[n] = 0;
	c->off = (size_t)(nl - c->buf) + 1;
	return (ssize_t)n;
}

int
net_skip(struct conn *c, size_t n)
{
	while (c->len - c->off < n) {
		n -= c->len - c->off;
		c->off = c->len;
		if (fill(c) != 0)
			return -1;
	}
	c->off += n;
	return 0;
}

void
net_run(void *(*fn)(void *), int conns, double dur, const char *what)
{
	struct net_job *j = calloc(conns, sizeof(*j));
	pthread_t *th = calloc(conns, sizeof(*th));
	double t0 = net_now(), t1;
	long total = 0;
	int i, failed = 0;

	if (!j || !th)
		exit(1);
	for (i = 0; i < conns; i++) {
		j[i].id = i;
		j[i].port = net_port;
		j[i].end = t0 + dur;
		pthread_create(&th[i], NULL, fn, &j[i]);
	}
	for (i = 0; i < conns; i++) {
		pthread_join(th[i], NULL);
		total += j[i].count;
		failed += j[i].failed;
	}
	t1 = net_now();
	if (failed)
		fprintf(stderr, "%s: %d connection(s) failed\n", what, failed);
	if (total == 0)
		exit(1);
	printf("%.1f %ld %.3f\n", total / (t1 - t0), total, t1 - t0);
	free(j);
	free(th);
}
