/*
 * consumer.c - a queenfs consumer in plain system calls: open and read
 * `next` (one open is one pop; the lease is taken by the first read), open
 * and read each leased payload, then rename(2) it into ack/ or failed/.
 * No library beyond libc: the mount is the whole API.  The "work" prints
 * each payload's transactionId, size and a checksum; an empty payload
 * fails, with the reason attached as user.queen.error first.
 *
 * usage: consumer QUEUE_DIR [--drain]    (built as build/examples/consumer)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#define LINES_MAX 65536

static volatile sig_atomic_t stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Reads all of fd into buf (at most cap - 1 bytes, NUL-terminated). */
static ssize_t
read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	while (len < cap - 1) {
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR && !stop)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

/* The work: 0 done, -1 failed with *why set.  Here: a checksum. */
static int
process(const char *txid, const char *payload, size_t len, const char **why)
{
	unsigned sum = 0;

	if (len == 0) {
		*why = "empty payload";
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		sum = (sum * 31 + (unsigned char)payload[i]) & 0xffff;
	printf("%s: %zu bytes, sum %04x\n", txid, len, sum);
	fflush(stdout);
	return 0;
}

/*
 * Renames QDIR/REL into QDIR/TARGET/<txid>; reports the mount's answer:
 * 0 done, 1 refused (the batch stops there), -1 an error to give up on.
 */
static int
settle(const char *qdir, const char *rel, const char *target)
{
	char src[PATH_MAX], dst[PATH_MAX];
	const char *txid = strrchr(rel, '/');

	txid = txid ? txid + 1 : rel;
	snprintf(src, sizeof(src), "%s/%s", qdir, rel);
	snprintf(dst, sizeof(dst), "%s/%s/%s", qdir, target, txid);
	if (rename(src, dst) == 0)
		return 0;
	switch (errno) {
	case ESTALE:
		fprintf(stderr, "%s: lease expired or taken over; redelivered\n",
		    rel);
		break;
	case EALREADY:
		fprintf(stderr, "%s: already committed\n", rel);
		break;
	case ENOENT:
		fprintf(stderr, "%s: no longer known to the queue\n", rel);
		break;
	default:
		fprintf(stderr, "%s -> %s/: %s\n", rel, target, strerror(errno));
		return -1;
	}
	return 1;
}

/*
 * Handles one leased/<lease>/<txid> line: 0 acked, 1 failed or refused
 * (the rest of the batch redelivers: stop it), -1 give up.
 */
static int
one(const char *qdir, const char *rel)
{
	static char payload[1 << 20];
	char path[PATH_MAX];
	const char *why = NULL, *txid = strrchr(rel, '/');
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", qdir, rel);
	if ((fd = open(path, O_RDONLY)) < 0) {
		fprintf(stderr, "%s: %s\n", rel, strerror(errno));
		return 1;
	}
	len = read_all(fd, payload, sizeof(payload));
	close(fd);
	if (len < 0) {
		why = strerror(errno);
	} else if (process(txid ? txid + 1 : rel, payload, (size_t)len,
	    &why) == 0) {
		return settle(qdir, rel, "ack");
	}
	if (setxattr(path, "user.queen.error", why, strlen(why), 0) < 0)
		fprintf(stderr, "%s: user.queen.error: %s\n", rel,
		    strerror(errno));
	return settle(qdir, rel, "failed") < 0 ? -1 : 1;
}

int
main(int argc, char **argv)
{
	static char lines[LINES_MAX];
	struct sigaction sa;
	char next[PATH_MAX], *save, *rel;
	int drain, fd;
	ssize_t n;

	if (argc < 2) {
		fprintf(stderr, "usage: %s QUEUE_DIR [--drain]\n", argv[0]);
		return 2;
	}
	drain = argc > 2 && strcmp(argv[2], "--drain") == 0;
	/* No SA_RESTART: Ctrl-C ends a waiting read of next with EINTR. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	snprintf(next, sizeof(next), "%s/next", argv[1]);
	while (!stop) {
		if ((fd = open(next, O_RDONLY)) < 0) {
			perror(next);
			return 1;
		}
		n = read_all(fd, lines, sizeof(lines));
		close(fd);
		if (n < 0) {
			if (errno == EINTR)
				break;
			if (errno == ENODATA || errno == EAGAIN) {
				if (drain)
					return 0;
				continue;
			}
			perror(next);
			return 1;
		}
		/* the batch stops at the first failure: the rest redelivers */
		for (rel = strtok_r(lines, "\n", &save); rel;
		    rel = strtok_r(NULL, "\n", &save)) {
			int rc = one(argv[1], rel);

			if (rc < 0)
				return 1;
			if (rc > 0)
				break;
		}
	}
	return stop ? 130 : 0;
}
