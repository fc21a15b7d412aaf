/*
 * t-lease.c - the mount's memory of the lease ids it handed out
 * (fs/lease.c), without a mount: the last 4096 resolve, older ones are
 * forgotten, and acks through one hide what they took.  Many times round
 * the ring, so that a slot reused without leaving its old chain would
 * show (a lookup that never ends: the alarm fails the test).
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

/* fs/lease.c, declared here to keep FUSE headers out of the test */
void lease_seen(const char *id, int64_t first);
int64_t lease_first(const char *id);
void lease_acked(const char *id, const char *txid);
bool lease_known(const char *id, const char *txid);
pthread_mutex_t fs_lock = PTHREAD_MUTEX_INITIALIZER;
/* fs/pending.c drops records through fs/stage.c; nothing is staged here */
struct stage_ref;
struct pending;
void stage_forget(struct stage_ref *ref);
void stage_remove(struct pending *p);
void
stage_forget(struct stage_ref *ref)
{
	(void)ref;
}
void
stage_remove(struct pending *p)
{
	(void)p;
}

#define RING 4096
#define IDS (6 * RING + 123)

/* Ids like UUIDv7s of one second: a long shared prefix. */
static void
id_of(int n, char out[40])
{
	snprintf(out, 40, "0193a1b2-c3d4-7%03x-8%03x-%012x", n >> 12 & 0xfff,
	    n & 0xfff, (unsigned)n * 2654435761u);
}

static void
on_alarm(int sig)
{
	static const char msg[] = "not ok - a lease lookup did not end\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to say */
	}
	_exit(1);
}

static void
test_ring(void)
{
	char id[40], old[40], edge[40];
	int wrong_old = 0, wrong_edge = 0, wrong_new = 0;

	for (int n = 0; n < IDS; n++) {
		id_of(n, id);
		lease_seen(id, 0);
		lease_seen(id, 0);   /* a second sighting takes no slot */
		if (!lease_known(id, NULL))
			wrong_new++;
		if (n >= RING) {
			id_of(n - RING, old);
			id_of(n - RING + 1, edge);
			wrong_old += lease_known(old, NULL);
			wrong_edge += !lease_known(edge, NULL);
		}
	}
	is_int(wrong_new, 0, "ring: every id is known once seen");
	is_int(wrong_edge, 0, "ring: the last %d ids stay known", RING);
	is_int(wrong_old, 0, "ring: the id %d sightings back is forgotten",
	    RING);
	id_of(IDS, id);
	ok(!lease_known(id, NULL), "ring: an id never seen is unknown");
	ok(!lease_known("", NULL), "ring: the empty id is unknown");
}

static void
test_acked(void)
{
	char id[40];

	id_of(IDS + 1, id);
	lease_seen(id, 0);
	lease_acked(id, "m1");
	ok(!lease_known(id, "m1"), "acked: a message acked through it hides");
	ok(lease_known(id, "m2"), "acked: its other messages still resolve");
	ok(lease_known(id, NULL), "acked: the lease itself still resolves");
	lease_acked(id, NULL);
	ok(!lease_known(id, NULL), "acked whole: the lease hides");
	id_of(IDS + 2, id);
	lease_acked(id, NULL);
	ok(!lease_known(id, NULL), "acked: an unseen id stays unknown");
}

static void
test_first(void)
{
	char id[40];

	id_of(IDS + 3, id);
	ok(lease_first(id) == 0, "first: unknown for an unseen id");
	lease_seen(id, 7);
	ok(lease_first(id) == 7, "first: the first offset handed out");
	lease_seen(id, 9);
	ok(lease_first(id) == 7, "first: a later sighting (a listing after "
	    "an ack) does not raise it");
	id_of(IDS + 4, id);
	lease_seen(id, 0);
	lease_seen(id, 12);
	ok(lease_first(id) == 12, "first: learnt at a later sighting");
}

int
main(void)
{
	signal(SIGALRM, on_alarm);
	alarm(20);
	plan_lazy();
	test_ring();
	test_acked();
	test_first();
	return done_testing();
}
