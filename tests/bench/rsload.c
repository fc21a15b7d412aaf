/*
 * rsload.c - a Redis streams client for `make bench` (raw RESP over TCP to
 * 127.0.0.1, TCP_NODELAY): N connections XADD 200-byte entries for D
 * seconds (push), or loop XADD + XREADGROUP COUNT 1 + XACK (cycle).
 * Usage: rsload PORT push|cycle CONNS SECONDS; prints
 * "OPS_PER_S COUNT SECONDS".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"

static int cycle;
static char key[32];

static int
command(struct conn *c, int argc, const char **argv, const size_t *len)
{
	char buf[1024];
	size_t n = 0;
	int i;

	n += (size_t)snprintf(buf, sizeof(buf), "*%d\r\n", argc);
	for (i = 0; i < argc; i++) {
		size_t l = len ? len[i] : strlen(argv[i]);

		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "$%zu\r\n", l);
		if (n + l + 2 > sizeof(buf))
			return -1;
		memcpy(buf + n, argv[i], l);
		memcpy(buf + n + l, "\r\n", 2);
		n += l + 2;
	}
	return net_send(c, buf, n);
}

/*
 * Read one reply, whatever its nesting; the first bulk string holding a
 * '-' (an entry id) goes to id.  Returns 0, 1 for a nil, -1 on an error.
 */
static int
reply(struct conn *c, char *id, size_t cap)
{
	char line[1024];
	long n, i;
	int rc = 0;

	if (net_line(c, line, sizeof(line)) < 0)
		return -1;
	switch (line[0]) {
	case '+':
	case ':':
		return 0;
	case '-':
		fprintf(stderr, "rsload: %s\n", line);
		return -1;
	case '$':
		n = atol(line + 1);
		if (n < 0)
			return 1;
		if (n < (long)sizeof(line) - 2) {
			if (net_line(c, line, sizeof(line)) < 0)
				return -1;
			if (id && !id[0] && strchr(line, '-') &&
			    strlen(line) < cap)
				memcpy(id, line, strlen(line) + 1);
			return 0;
		}
		return net_skip(c, (size_t)n + 2);
	case '*':
		n = atol(line + 1);
		if (n < 0)
			return 1;
		for (i = 0; i < n && rc >= 0; i++)
			rc = reply(c, id, cap);
		return rc < 0 ? -1 : 0;
	}
	fprintf(stderr, "rsload: bad reply '%s'\n", line);
	return -1;
}

static int
take(struct conn *c, const char *consumer)
{
	const char *rd[] = { "XREADGROUP", "GROUP", "g", consumer, "COUNT",
		"1", "STREAMS", key, ">" };
	char id[128];
	int tries, rc = 1;

	for (tries = 0; tries < 1000 && rc == 1; tries++) {
		id[0] = 0;
		if (command(c, 9, rd, NULL) != 0)
			return -1;
		rc = reply(c, id, sizeof(id));
		if (rc == 0 && !id[0])
			rc = 1;
	}
	if (rc != 0) {
		fprintf(stderr, "rsload: nothing to read\n");
		return -1;
	}
	{
		const char *ack[] = { "XACK", key, "g", id };

		if (command(c, 4, ack, NULL) != 0)
			return -1;
		return reply(c, NULL, 0);
	}
}

static void *
worker(void *arg)
{
	struct net_job *j = arg;
	struct conn *c = malloc(sizeof(*c));
	char body[200], consumer[32], id[128];
	const char *add[] = { "XADD", key, "*", "b", body };
	size_t len[] = { 4, strlen(key), 1, 1, sizeof(body) };

	if (!c || net_open(c, j->port) != 0) {
		j->failed = 1;
		free(c);
		return NULL;
	}
	memset(body, 'x', sizeof(body));
	snprintf(consumer, sizeof(consumer), "c%d", j->id);
	while (net_now() < j->end) {
		id[0] = 0;
		if (command(c, 5, add, len) != 0 ||
		    reply(c, id, sizeof(id)) != 0 ||
		    (cycle && take(c, consumer) != 0)) {
			j->failed = 1;
			break;
		}
		j->count++;
	}
	close(c->fd);
	free(c);
	return NULL;
}

int
main(int argc, char **argv)
{
	const char *mk[] = { "XGROUP", "CREATE", key, "g", "$", "MKSTREAM" };
	struct conn *c;

	if (argc != 5) {
		fputs("usage: rsload PORT push|cycle CONNS SECONDS\n", stderr);
		return 2;
	}
	net_port = atoi(argv[1]);
	cycle = !strcmp(argv[2], "cycle");
	snprintf(key, sizeof(key), "s%d", (int)getpid());
	c = malloc(sizeof(*c));
	if (!c || net_open(c, net_port) != 0 || command(c, 6, mk, NULL) != 0 ||
	    reply(c, NULL, 0) != 0) {
		fprintf(stderr, "rsload: no Redis on port %d\n", net_port);
		return 1;
	}
	close(c->fd);
	free(c);
	net_run(worker, atoi(argv[3]), atof(argv[4]), "rsload");
	return 0;
}
