/*
 * net.h - what the peers' clients (bsload.c, rsload.c) share: a TCP
 * connection to 127.0.0.1 with TCP_NODELAY and a buffered reader, the
 * clock, and the "rate count seconds" report of every load program.
 */
#ifndef NET_H
#define NET_H

#include <stddef.h>
#include <sys/types.h>

struct conn {
	int fd;
	size_t off, len;
	char buf[65536];
};

extern int net_port;     /* set by main before net_run */

double net_now(void);
int net_open(struct conn *c, int port);
int net_send(struct conn *c, const void *p, size_t n);
ssize_t net_line(struct conn *c, char *out, size_t cap);
int net_skip(struct conn *c, size_t n);
void net_run(void *(*fn)(void *), int conns, double dur, const char *what);

/* what net_run's threads see */
struct net_job {
	int id, port;
	double end;
	long count;
	int failed;
};

#endif
