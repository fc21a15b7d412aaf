/*
 * bsload.c - a beanstalkd client for `make bench` (raw protocol over TCP to
 * 127.0.0.1, TCP_NODELAY): N connections put 200-byte jobs for D seconds
 * (push), or loop put + reserve-with-timeout 0 + delete (cycle).  Usage:
 * bsload PORT push|cycle CONNS SECONDS; prints "OPS_PER_S COUNT SECONDS".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net.h"

static int cycle;
static char tube[32];

static int
expect(struct conn *c, const char *prefix, char *line, size_t cap)
{
	if (net_line(c, line, cap) < 0)
		return -1;
	if (strncmp(line, prefix, strlen(prefix)) != 0) {
		fprintf(stderr, "bsload: want %s, got '%s'\n", prefix, line);
		return -1;
	}
	return 0;
}

static int
put(struct conn *c, const char *cmd, size_t len)
{
	char line[256];

	if (net_send(c, cmd, len) != 0)
		return -1;
	return expect(c, "INSERTED", line, sizeof(line));
}

/* reserve one job (retrying a TIMED_OUT a while), then delete it */
static int
take(struct conn *c)
{
	char line[256], cmd[64];
	unsigned long id, n;
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		if (net_send(c, "reserve-with-timeout 0\r\n", 24) != 0 ||
		    net_line(c, line, sizeof(line)) < 0)
			return -1;
		if (sscanf(line, "RESERVED %lu %lu", &id, &n) == 2)
			break;
		if (strcmp(line, "TIMED_OUT") != 0) {
			fprintf(stderr, "bsload: reserve: '%s'\n", line);
			return -1;
		}
	}
	if (tries == 1000 || net_skip(c, n + 2) != 0)
		return -1;
	snprintf(cmd, sizeof(cmd), "delete %lu\r\n", id);
	if (net_send(c, cmd, strlen(cmd)) != 0)
		return -1;
	return expect(c, "DELETED", line, sizeof(line));
}

static void *
worker(void *arg)
{
	struct net_job *j = arg;
	struct conn *c = malloc(sizeof(*c));
	char cmd[512], line[256];
	size_t len;

	if (!c || net_open(c, j->port) != 0) {
		j->failed = 1;
		free(c);
		return NULL;
	}
	snprintf(cmd, sizeof(cmd), "use %s\r\nwatch %s\r\nignore default\r\n",
	    tube, tube);
	if (net_send(c, cmd, strlen(cmd)) != 0 ||
	    expect(c, "USING", line, sizeof(line)) != 0 ||
	    expect(c, "WATCHING", line, sizeof(line)) != 0 ||
	    expect(c, "WATCHING", line, sizeof(line)) != 0) {
		j->failed = 1;
		goto out;
	}
	len = (size_t)snprintf(cmd, sizeof(cmd), "put 0 0 60 200\r\n");
	memset(cmd + len, 'x', 200);
	memcpy(cmd + len + 200, "\r\n", 2);
	len += 202;
	while (net_now() < j->end) {
		if (put(c, cmd, len) != 0 || (cycle && take(c) != 0)) {
			j->failed = 1;
			break;
		}
		j->count++;
	}
out:
	close(c->fd);
	free(c);
	return NULL;
}

int
main(int argc, char **argv)
{
	if (argc != 5) {
		fputs("usage: bsload PORT push|cycle CONNS SECONDS\n", stderr);
		return 2;
	}
	net_port = atoi(argv[1]);
	cycle = !strcmp(argv[2], "cycle");
	snprintf(tube, sizeof(tube), "t%d", (int)getpid());
	net_run(worker, atoi(argv[3]), atof(argv[4]), "bsload");
	return 0;
}
