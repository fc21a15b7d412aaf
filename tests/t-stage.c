/*
 * t-stage.c - fs/stage.c's journal without a mount: what a previous run
 * left staged is published at the next start, and only that.  Each run
 * is a child process (its own journal, its own start time) that stages
 * and exits without a word, as a kill -9 would; the parent then replays
 * the spool into a real store the way main() does at start.  The bytes
 * and what is published go through stubs of fs/pending.c and
 * fs/ops_push.c, so that a case can put an unlink (or a refusal) exactly
 * where another thread's would fall.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../fs/fs.h"
#include "tap.h"

pthread_mutex_t fs_lock;

static const char *snap_bytes;
static size_t snap_len; /* 0: strlen(snap_bytes) */
/* run inside stage_save's snapshot: where another thread could come in */
static void (*snap_hook)(struct pending *p);

const char *
errname(int err)
{
	(void)err;
	return "E";
}

char *
pend_snapshot(struct pending *p, size_t *len, unsigned *gen)
{
	size_t n = snap_len ? snap_len : strlen(snap_bytes);
	char *b = malloc(n + 1);

	memcpy(b, snap_bytes, n + 1);
	if (snap_hook)
		snap_hook(p);
	*len = n;
	*gen = 0;
	return b;
}

void
pend_unsnap(struct pending *p, char *b, size_t len, unsigned gen)
{
	(void)p;
	(void)len;
	(void)gen;
	free(b);
}

/* what the replay published, "name=bytes;" each */
static char published[4096];
/* the next refuse_n publishes of refuse_name fail with EBUSY; the first
 * to fail keeps `late` as another release's failed publish would, while
 * the tick's retry runs */
static const char *refuse_name;
static int refuse_n;
static struct pending *late;

int
push_pending(struct queen *q, struct pending *p, const char *txid,
    const char *buf, size_t len, bool excl, bool confirmed, char **notify,
    bool *dup)
{
	size_t at = strlen(published);

	(void)q;
	(void)p;
	(void)excl;
	/* a replay publishes what a close() confirmed */
	if (!confirmed)
		return -EINVAL;
	*notify = NULL;
	*dup = false;
	if (refuse_name && strcmp(txid, refuse_name) == 0 && refuse_n > 0) {
		refuse_n--;
		if (late) {
			struct pending *l = late;

			late = NULL;
			stage_keep(l);
		}
		return -EBUSY;
	}
	snprintf(published + at, sizeof(published) - at, "%s=%.*s;", txid,
	    (int)len, buf);
	return 0;
}

/* what stage_keep told the table, "name=the bytes at fd, off;" each */
static char kept_seen[4096];
/* what the replay told the table it settled, "name;" each */
static char settled[4096];

void
pend_kept(struct pending *p)
{
	(void)p;
}

void
pend_kept_at(struct pending *p, int fd, off_t off, size_t len)
{
	size_t at = strlen(kept_seen);
	char b[64];
	ssize_t n = len < sizeof(b) ? pread(fd, b, len, off) : -1;

	snprintf(kept_seen + at, sizeof(kept_seen) - at, "%s=%.*s;", p->name,
	    n < 0 ? 0 : (int)n, b);
}

void
pend_unkept(struct pending *p)
{
	(void)p;
}

void
pend_kept_done(struct pending *p)
{
	size_t at = strlen(settled);

	snprintf(settled + at, sizeof(settled) - at, "%s;", p->name);
}

/* the pushes the replay counted (the engine's counter) */
static unsigned counted;

void
engine_count_push(bool dup)
{
	(void)dup;
	counted++;
}

static char spool[400];

/* a child's attempts, held to its end (no leak for valgrind to see);
 * not static, so that the stores are not optimized away */
struct pending *t_stage_made[8];
static int nmade;

static struct pending *
attempt(const char *name)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (!p || nmade == 8)
		_exit(99);
	t_stage_made[nmade++] = p;
	p->what = PW_PUSH;
	p->queue = strdup("q");
	p->name = strdup(name);
	return p;
}

/* what op_unlink does to an attempt another thread is closing */
static void
unlink_now(struct pending *p)
{
	pthread_mutex_lock(&fs_lock);
	p->dead = true;
	pthread_mutex_unlock(&fs_lock);
	stage_remove(p);
}

/*
 * A run of the daemon started at ms that ends without a word; its exit
 * status is what sys/stats would have said was staged (99: a step failed).
 */
static int
run(int64_t ms, void (*body)(void))
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		uint64_t staged, syncs;

		fs.started = ms;
		if (stage_open(spool, true) < 0)
			_exit(99);
		body();
		stage_counts(&staged, &syncs);
		_exit((int)staged);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* close() of an attempt while an unlink of its name comes in */
static void
body_unlinked(void)
{
	struct pending *p = attempt("gone");

	snap_bytes = "unlinked";
	snap_hook = unlink_now;
	stage_save(p);
	snap_hook = NULL;
}

/* the flush of another dup's close(), while this one's stages */
static int early;

static void
flush_now(struct pending *p)
{
	pthread_mutex_lock(&fs_lock);
	early = !stage_needed(p);
	pthread_mutex_unlock(&fs_lock);
}

/*
 * Two dups of one open file closed together: the second close's flush
 * comes while the first stages the bytes.  Answering it 0 at once would
 * confirm bytes no sync covers yet (nor may, if the first then fails).
 */
static void
body_dups(void)
{
	struct pending *p = attempt("dups");

	p->dirty = true;
	p->len = 4;
	snap_bytes = "dups";
	snap_hook = flush_now;
	stage_save(p);
	snap_hook = NULL;
	if (early)
		_exit(7);
}

/* stage.c's record head and checksum, to forge one */
struct rec {
	uint32_t magic, len;
	uint64_t id;
	uint32_t kind, pad;
	uint64_t sum;
};

static uint64_t
fnv(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (len--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* stage.c's header of a push of name to queue q, and its length */
static size_t
head_of(const char *queue, const char *name, char *out, size_t cap)
{
	return (size_t)snprintf(out, cap, "QFSSTAGE1%c0%c0%c0%c0%c%s%c%c%s%c",
	    0, 0, 0, 0, 0, queue, 0, 0, name, 0);
}

/*
 * A close confirmed, the next close of a dup refused (a full disk: here
 * RLIMIT_FSIZE at the end of the journal's records, so that no byte can
 * be appended).
 * A refusal ends the attempt: nothing of it may be published.
 */
static void
body_refused(void)
{
	struct pending *p = attempt("refused");
	struct rlimit was, lim;
	char hd[256];
	int rc;

	snap_bytes = "first";
	if (stage_save(p) < 0)
		_exit(99);
	if (getrlimit(RLIMIT_FSIZE, &was) < 0)
		_exit(99);
	signal(SIGXFSZ, SIG_IGN);
	lim = was;
	/* the end of that record: the file itself is allocated further */
	lim.rlim_cur = (rlim_t)(sizeof(struct rec) +
	    head_of("q", "refused", hd, sizeof(hd)) + strlen("first"));
	if (setrlimit(RLIMIT_FSIZE, &lim) < 0)
		_exit(99);
	snap_bytes = "first second";
	if ((rc = stage_save(p)) == 0)
		_exit(98);
	/* push_refuse */
	pthread_mutex_lock(&fs_lock);
	p->dead = true;
	p->refused = rc;
	pthread_mutex_unlock(&fs_lock);
	stage_remove(p);
	setrlimit(RLIMIT_FSIZE, &was);
}

static char big_bytes[4096];

/*
 * A close's append cut short (a full disk: RLIMIT_FSIZE here) leaves the
 * bytes it did write past the journal's end; the next, shorter record
 * overwrites only their start.  What follows it must not be taken for a
 * record at the next start: here the payload carries one, for a queue
 * its writer may not even write to.
 */
static void
body_torn(void)
{
	struct pending *big = attempt("x"), *small = attempt("b");
	char hd[256], fake[256], *at;
	size_t hlen = head_of("q", "b", hd, sizeof(hd)), flen;
	struct rec r = { 0x314a5351u, 0, 77777, 1, 0, 0 };
	struct rlimit was, lim;

	/* the forged record sits where the small one's record will end */
	flen = head_of("victim", "evil", fake, sizeof(fake));
	memcpy(fake + flen, "pwned", 5);
	flen += 5;
	r.len = (uint32_t)flen;
	r.sum = fnv(fake, flen);
	memset(big_bytes, 'z', sizeof(big_bytes) - 1);
	at = big_bytes + 2; /* the small one's payload: 2 bytes */
	memcpy(at, &r, sizeof(r));
	memcpy(at + sizeof(r), fake, flen);
	/* the append is cut right after the forged record */
	if (getrlimit(RLIMIT_FSIZE, &was) < 0)
		_exit(99);
	signal(SIGXFSZ, SIG_IGN);
	lim = was;
	lim.rlim_cur = (rlim_t)(sizeof(struct rec) + hlen + 2 + sizeof(r) +
	    flen);
	if (setrlimit(RLIMIT_FSIZE, &lim) < 0)
		_exit(99);
	snap_len = sizeof(big_bytes) - 1;
	snap_bytes = big_bytes;
	if (stage_save(big) == 0)
		_exit(98);
	pthread_mutex_lock(&fs_lock);
	big->dead = true;
	pthread_mutex_unlock(&fs_lock);
	stage_remove(big);
	setrlimit(RLIMIT_FSIZE, &was);
	snap_len = 0;
	snap_bytes = "ok";
	if (stage_save(small) < 0)
		_exit(99);
}

/* a close confirmed, then the process holding it open was killed */
static void
body_held(void)
{
	struct pending *p = attempt("held");

	snap_bytes = "confirmed";
	if (stage_save(p) < 0)
		_exit(99);
}

/* an attempt of this run staged with bytes, its publish failed */
static struct pending *
staged(const char *name, const char *bytes)
{
	struct pending *p = attempt(name);

	snap_bytes = bytes;
	ok(stage_save(p) == 0, "%s staged", name);
	return p;
}

/*
 * This run's publishes that failed (a lock timeout: EBUSY) are tried
 * again at the tick in the order they failed.  One that fails again
 * keeps its place, and those behind it into its partition are not
 * asked (each would wait out its own lock timeout) and keep theirs,
 * ahead of a publish that failed while the retry ran; another queue's
 * goes on.
 */
static void
kept_retry(struct queen *q)
{
	struct pending *a = staged("ka", "A"), *b = staged("kb", "B");
	struct pending *c = staged("kc", "C"), *d = staged("kd", "D");
	struct pending *r = attempt("kr");
	uint64_t left, syncs;

	free(r->queue);
	r->queue = strdup("r");
	snap_bytes = "R";
	ok(stage_save(r) == 0, "kr staged, into another queue");
	published[0] = '\0';
	stage_keep(a);
	stage_keep(b);
	stage_keep(c);
	stage_keep(r);
	is_str(kept_seen, "ka=A;kb=B;kc=C;kr=R;",
	    "each kept attempt's name is told where its payload is");
	settled[0] = '\0';
	refuse_name = "kb";
	refuse_n = 1;
	late = d;
	stage_replay(q);
	is_str(published, "ka=A;kr=R;",
	    "the retry publishes the first, fails the second again, does not "
	    "ask for the third (its partition's), and publishes the other "
	    "queue's");
	is_str(settled, "ka;kr;",
	    "the table hears of those published, and only of those");
	stage_counts(&left, &syncs);
	is_int((int)left, 3, "three are still staged");
	published[0] = '\0';
	stage_replay(q);
	is_str(published, "kb=B;kc=C;kd=D;",
	    "the next tick publishes the "
	    "rest in the order they failed, the one kept meanwhile last");
	is_str(settled, "ka;kr;kb;kc;kd;", "then of the rest, in that order");
	stage_counts(&left, &syncs);
	is_int((int)left, 0, "nothing is left staged");
	published[0] = '\0';
	stage_replay(q);
	is_str(published, "", "a tick with nothing kept publishes nothing");
	refuse_name = NULL;
}

int
main(void)
{
	pthread_mutexattr_t a;
	const char *tmp = getenv("TMPDIR");
	char dir[300], path[sizeof(spool) + 16];
	struct stat st;
	struct fix f;
	struct queen *q;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&fs_lock, &a);
	plan_lazy();
	/* the runs fork before the store opens: a child has no copy of it */
	snprintf(dir, sizeof(dir), "%s/t-stage-XXXXXX",
	    tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(spool, sizeof(spool), "%s/spool", dir);

	is_int(run(1000, body_unlinked), 0,
	    "an unlink during the close leaves nothing staged");
	is_int(run(2000, body_held), 1, "a confirmed close is staged");
	snprintf(path, sizeof(path), "%s/2000-1.j", spool);
	ok(stat(path, &st) == 0 && st.st_size >= (off_t)64 << 10,
	    "the journal is allocated ahead of its records, so the replays "
	    "below read up to a zero tail");
	is_int(run(4000, body_dups), 1,
	    "a flush while another close stages the bytes stages them too");
	is_int(run(5000, body_torn), 1, "a torn append, then a record");
	is_int(run(3000, body_refused), 0,
	    "a refused attempt is not staged, though no done fits");

	/* the next start */
	q = fix_open(&f, "stage");
	fs.started = 9000;
	ok(stage_open(spool, true) == 0, "stage_open");
	stage_replay(q);
	ok(strstr(published, "held=confirmed;") != NULL,
	    "the confirmed close is published at the restart");
	ok(strstr(published, "gone=") == NULL,
	    "the attempt unlinked during its close is not");
	ok(strstr(published, "evil=") == NULL,
	    "what a torn append left past the next record is not a record");
	ok(strstr(published, "refused=") == NULL,
	    "the attempt refused at a full disk is not");
	{
		unsigned n = 0;

		for (const char *c = published; *c; c++)
			n += *c == ';';
		is_int((int)counted, (int)n,
		    "each push the replay made is counted once");
	}
	diag("published: %s", published);
	kept_retry(q);

	fix_close(&f);
	/* this run's journal stays while it runs (a daemon's is replayed
	 * and removed at its next start) */
	snprintf(path, sizeof(path), "%s/9000-1.j", spool);
	unlink(path);
	/* the replay removed every journal it published all of */
	if (rmdir(spool) == 0 && rmdir(dir) == 0)
		return done_testing();
	diag("left %s", dir);
	return done_testing();
}
