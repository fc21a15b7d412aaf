/*
 * inval.c - telling the kernel to forget names it no longer needs.  A
 * pushed file or an acknowledged message would otherwise keep its dentry,
 * and so its node, for as long as the kernel likes.  The notice is sent a
 * little later from a thread of its own: the kernel takes the directory's
 * lock for it, which a request in flight on that directory may hold.
 *
 * That wait is uninterruptible: were the daemon killed while this thread
 * waits on a lock whose holder waits on the daemon, the process could not
 * finish dying and its clients would hang instead of seeing ENOTCONN.  So
 * names are only handed back once the mount holds more than INVAL_NODES
 * nodes; below that the kernel keeps them (a pushed file's node costs a
 * couple of hundred bytes once its buffer is gone), above it memory wins.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fs.h"

#define INVAL_DELAY_MS 1000
#define INVAL_SLACK_MS 100  /* names due this soon go with the ones due now */
#define INVAL_MAX 65536   /* past this, names are left to the kernel */
#define INVAL_NODES 20000 /* below this many nodes, nothing is sent */

struct inval {
	struct inval *next;
	fuse_ino_t dir;
	int64_t due;
	char name[];
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	struct inval *head, *tail;
	size_t n;
	bool running, stop;
} I = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void *
inval_main(void *arg)
{
	struct inval *v;

	(void)arg;
	pthread_mutex_lock(&I.lock);
	while (!I.stop) {
		int64_t now = fs_now();

		v = I.head;
		if (!v) {
			pthread_cond_wait(&I.cond, &I.lock);
			continue;
		}
		/* a push a moment apart must not wake the thread each time */
		if (v->due > now + INVAL_SLACK_MS) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (v->due - now) / 1000;
			ts.tv_nsec += ((v->due - now) % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&I.cond, &I.lock, &ts);
			continue;
		}
		I.head = v->next;
		if (!I.head)
			I.tail = NULL;
		I.n--;
		pthread_mutex_unlock(&I.lock);
		/* ENOENT: the kernel had already forgotten it */
		fuse_lowlevel_notify_inval_entry(fs.se, v->dir, v->name,
		    strlen(v->name));
		free(v);
		pthread_mutex_lock(&I.lock);
	}
	while ((v = I.head)) {
		I.head = v->next;
		free(v);
	}
	I.tail = NULL;
	I.n = 0;
	pthread_mutex_unlock(&I.lock);
	return NULL;
}

int
inval_start(void)
{
	int rc;

	I.stop = false;
	if ((rc = pthread_create(&I.thread, NULL, inval_main, NULL)) != 0)
		return -rc;
	I.running = true;
	return 0;
}

/*
 * The thread is not joined: it may be inside the kernel waiting for a
 * directory lock that a request nobody will now answer holds.  It sees
 * the flag, frees what is queued and ends; the process ends anyway.
 */
void
inval_stop(void)
{
	if (!I.running)
		return;
	pthread_mutex_lock(&I.lock);
	I.stop = true;
	I.running = false;
	pthread_cond_signal(&I.cond);
	pthread_mutex_unlock(&I.lock);
	pthread_detach(I.thread);
}

void
inval_later(fuse_ino_t dir, const char *name)
{
	size_t len = strlen(name) + 1;
	struct inval *v;
	bool few;

	pthread_mutex_lock(&fs_lock);
	few = fs_nodes < INVAL_NODES;
	pthread_mutex_unlock(&fs_lock);
	if (few || !dir || !(v = malloc(sizeof(*v) + len)))
		return;
	v->next = NULL;
	v->dir = dir;
	v->due = fs_now() + INVAL_DELAY_MS;
	memcpy(v->name, name, len);
	pthread_mutex_lock(&I.lock);
	if (!I.running || I.n >= INVAL_MAX) {
		pthread_mutex_unlock(&I.lock);
		free(v);
		return;
	}
	/* names come in the order they fall due: the thread, if it waits
	 * for an earlier one, need not hear of this one */
	if (I.tail) {
		I.tail->next = v;
	} else {
		I.head = v;
		pthread_cond_signal(&I.cond);
	}
	I.tail = v;
	I.n++;
	pthread_mutex_unlock(&I.lock);
}
