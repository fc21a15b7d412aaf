/*
 * node.c - the inode table and the mount's fixed namespace.  Inode numbers
 * are allocated, never derived; a node lives while the kernel holds lookups
 * on it, a child or an open handle names it.  The fixed part of the tree is
 * data (the Dirtab tables below); what lies in the store is resolved by the
 * ops files through the engine.  Knows nothing of the engine itself.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fs.h"

#define NBUCKET 4096

pthread_mutex_t fs_lock;

static struct node *by_ino[NBUCKET];
static struct node *by_name[NBUCKET];
static fuse_ino_t next_ino = FUSE_ROOT_ID + 1;
static struct node root;

struct dirtab {
	const char *name;
	enum kind kind;
	const char *status;
};

static const struct dirtab root_tab[] = {
	{ "README", K_README, NULL },
	{ "queues", K_QUEUES, NULL },
	{ "kv", K_KV, NULL },
	{ "sys", K_SYS, NULL },
	{ "api", K_API, NULL },
	{ NULL, 0, NULL },
};

static const struct dirtab api_tab[] = {
	{ "push", K_API_FILE, NULL },
	{ "pop", K_API_FILE, NULL },
	{ "ack", K_API_FILE, NULL },
	{ "transaction", K_API_FILE, NULL },
	{ "renew", K_API_FILE, NULL },
	{ NULL, 0, NULL },
};

static const struct dirtab sys_tab[] = {
	{ "stats", K_SYS_STATS, NULL },
	{ "queues", K_SYS_QUEUES, NULL },
	{ "metrics", K_SYS_METRICS, NULL },
	{ "version", K_SYS_VERSION, NULL },
	{ "health", K_SYS_HEALTH, NULL },
	{ NULL, 0, NULL },
};

/*
 * The queue dir and a group dir share their first entries: a group dir
 * ends where the entries only a queue dir has begin (QUEUE_ONLY_FIRST).
 */
#define QUEUE_ONLY_FIRST "partitions"
static const struct dirtab queue_tab[] = {
	{ "config", K_CONFIG, NULL },
	{ "stats", K_STATS, NULL },
	{ "next", K_NEXT, NULL },
	{ "seek", K_SEEK, NULL },
	{ "leased", K_LEASED, NULL },
	{ "ack", K_SINK, "completed" },
	{ "failed", K_SINK, "failed" },
	{ "retry", K_SINK, "retry" },
	{ "dlq", K_DLQ, "dlq" },
	{ QUEUE_ONLY_FIRST, K_PARTS, NULL },
	{ "groups", K_GROUPS, NULL },
	{ "timers", K_TIMERS, NULL },
	{ NULL, 0, NULL },
};

static const struct dirtab *
tab_of(enum kind dir, size_t *n)
{
	const struct dirtab *t;

	switch (dir) {
	case K_ROOT:
		t = root_tab;
		break;
	case K_SYS:
		t = sys_tab;
		break;
	case K_API:
		t = api_tab;
		break;
	case K_QUEUE:
	case K_GROUP:
		t = queue_tab;
		break;
	default:
		*n = 0;
		return NULL;
	}
	for (*n = 0; t[*n].name; (*n)++)
		if (dir == K_GROUP && !strcmp(t[*n].name, QUEUE_ONLY_FIRST))
			break;
	return t;
}

enum kind
node_static(enum kind dir, const char *name, const char **status)
{
	size_t n;
	const struct dirtab *t = tab_of(dir, &n);

	for (size_t i = 0; i < n; i++) {
		if (strcmp(t[i].name, name) == 0) {
			if (status)
				*status = t[i].status;
			return t[i].kind;
		}
	}
	return 0;
}

/*
 * next resolves by name but is not listed: a read of it changes the
 * store, and programs that walk a tree read every file they list.
 */
static bool
unlisted(enum kind k)
{
	return k == K_NEXT;
}

/* The i-th listed name of dir, or NULL past the last. */
const char *
node_static_at(enum kind dir, size_t i, enum kind *k)
{
	size_t n;
	const struct dirtab *t = tab_of(dir, &n);

	for (size_t j = 0; j < n; j++) {
		if (unlisted(t[j].kind))
			continue;
		if (i-- == 0) {
			*k = t[j].kind;
			return t[j].name;
		}
	}
	return NULL;
}

bool
node_is_reserved(const char *name)
{
	return node_static(K_QUEUE, name, NULL) != 0;
}

bool
node_staging_name(const char *name)
{
	return name[0] == '.' && name[1] != '\0' && queen_name_valid(name + 1);
}

bool
node_is_dir(enum kind k)
{
	switch (k) {
	case K_ROOT: case K_QUEUES: case K_QUEUE: case K_LEASED: case K_LEASE:
	case K_SINK: case K_DLQ: case K_DLQ_PART: case K_PARTS: case K_PART:
	case K_GROUPS: case K_GROUP: case K_TIMERS: case K_KV: case K_KV_NS:
	case K_SYS: case K_API:
		return true;
	default:
		return false;
	}
}

bool
node_dynamic(enum kind k)
{
	return !node_is_dir(k) && k != K_README && k != K_SYS_VERSION;
}

static unsigned
hash_ino(fuse_ino_t ino)
{
	return (unsigned)(ino * 2654435761u) % NBUCKET;
}

static unsigned
hash_name(fuse_ino_t parent, const char *name)
{
	uint64_t h = 1469598103934665603ull ^ parent;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return (unsigned)(h % NBUCKET);
}

void
node_init(void)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&fs_lock, &a);
	pthread_mutexattr_destroy(&a);
	root.ino = FUSE_ROOT_ID;
	root.kind = K_ROOT;
	root.nlookup = 1;
	root.name = (char *)"";
	by_ino[hash_ino(root.ino)] = &root;
}

struct node *
node_get(fuse_ino_t ino)
{
	struct node *n;

	pthread_mutex_lock(&fs_lock);
	for (n = by_ino[hash_ino(ino)]; n && n->ino != ino; n = n->ino_next)
		;
	pthread_mutex_unlock(&fs_lock);
	return n;
}

static struct node *
find_child(struct node *parent, const char *name)
{
	struct node *n = by_name[hash_name(parent->ino, name)];

	for (; n; n = n->name_next)
		if (n->parent == parent && strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

static void
unlink_name(struct node *n)
{
	struct node **pp = &by_name[hash_name(n->parent->ino, n->name)];

	if (!n->hashed)
		return;
	for (; *pp; pp = &(*pp)->name_next) {
		if (*pp == n) {
			*pp = n->name_next;
			break;
		}
	}
	n->hashed = false;
}

static void
link_name(struct node *n)
{
	unsigned h = hash_name(n->parent->ino, n->name);

	n->name_next = by_name[h];
	by_name[h] = n;
	n->hashed = true;
}

/* Nodes alive now (fs_lock); inval.c asks the kernel to let go past a bound. */
size_t fs_nodes;

static void
node_free(struct node *n)
{
	struct node **pp = &by_ino[hash_ino(n->ino)];

	fs_nodes--;
	unlink_name(n);
	for (; *pp; pp = &(*pp)->ino_next) {
		if (*pp == n) {
			*pp = n->ino_next;
			break;
		}
	}
	if (n->pend)
		pend_put(n->pend);
	free(n->name);
	/* what is the parent's is the parent's (see node_child) */
	if (n->queue != n->parent->queue)
		free(n->queue);
	if (n->group != n->parent->group)
		free(n->group);
	if (n->part != n->parent->part)
		free(n->part);
	if (n->lease != n->parent->lease)
		free(n->lease);
	free(n);
}

/* Free n, then its parents, while nothing holds them.  fs_lock held. */
static void
maybe_free(struct node *n)
{
	while (n != &root && n->nlookup == 0 && n->nchild == 0 &&
	    n->nopen == 0) {
		struct node *p = n->parent;
		node_free(n);
		p->nchild--;
		n = p;
	}
}

struct node *
node_child(struct node *parent, const char *name, enum kind k)
{
	struct node *n;

	pthread_mutex_lock(&fs_lock);
	n = find_child(parent, name);
	if (n && n->kind == k) {
		n->nlookup++;
		pthread_mutex_unlock(&fs_lock);
		return n;
	}
	if (n)
		unlink_name(n);
	n = calloc(1, sizeof(*n));
	if (!n || !(n->name = strdup(name))) {
		free(n);
		pthread_mutex_unlock(&fs_lock);
		return NULL;
	}
	n->ino = next_ino++;
	fs_nodes++;
	n->kind = k;
	n->parent = parent;
	n->nlookup = 1;
	/*
	 * The context is the parent's own strings, shared: a parent lives
	 * as long as it has children, and neither ever changes.  Only the
	 * slot this node names is its own copy.
	 */
	n->queue = parent->queue;
	n->group = parent->group;
	n->part = parent->part;
	n->lease = parent->lease;
	switch (k) {
	case K_QUEUE:
	case K_KV_NS:   /* a namespace travels in the queue slot */
		n->queue = strdup(name);
		break;
	case K_GROUP:
		n->group = strdup(name);
		break;
	case K_PART:
	case K_DLQ_PART:
		n->part = strdup(name);
		break;
	case K_LEASE:
		n->lease = strdup(name);
		break;
	default:
		break;
	}
	node_static(parent->kind, name, &n->status);
	parent->nchild++;
	n->ino_next = by_ino[hash_ino(n->ino)];
	by_ino[hash_ino(n->ino)] = n;
	link_name(n);
	pthread_mutex_unlock(&fs_lock);
	return n;
}

void
node_forget(struct node *n, uint64_t nlookup)
{
	pthread_mutex_lock(&fs_lock);
	n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
	maybe_free(n);
	pthread_mutex_unlock(&fs_lock);
}

void
node_open(struct node *n)
{
	pthread_mutex_lock(&fs_lock);
	n->nopen++;
	pthread_mutex_unlock(&fs_lock);
}

void
node_close(struct node *n)
{
	pthread_mutex_lock(&fs_lock);
	n->nopen--;
	maybe_free(n);
	pthread_mutex_unlock(&fs_lock);
}

void
node_unhash(struct node *parent, const char *name)
{
	struct node *n;

	pthread_mutex_lock(&fs_lock);
	n = find_child(parent, name);
	if (n)
		unlink_name(n);
	pthread_mutex_unlock(&fs_lock);
}

void
node_move(struct node *parent, const char *name, const char *newname)
{
	struct node *n;
	char *s = strdup(newname);

	if (!s)
		return;
	pthread_mutex_lock(&fs_lock);
	if ((n = find_child(parent, name)) != NULL) {
		node_unhash(parent, newname);
		unlink_name(n);
		free(n->name);
		n->name = s;
		s = NULL;
		link_name(n);
	}
	pthread_mutex_unlock(&fs_lock);
	free(s);
}

/* The node's path from the mount root, for log lines. */
size_t
node_path(struct node *n, char *buf, size_t len)
{
	size_t at;

	if (len == 0)
		return 0;
	pthread_mutex_lock(&fs_lock);
	if (!n || n == &root) {
		buf[0] = '\0';
		at = 0;
	} else {
		at = node_path(n->parent, buf, len);
		at += (size_t)snprintf(buf + at, at < len ? len - at : 0,
		    "%s%s", at ? "/" : "", n->name);
		if (at >= len)
			at = len - 1;
	}
	pthread_mutex_unlock(&fs_lock);
	return at;
}

/* The nearest node that carries an owner (queue, group, namespace). */
struct node *
node_owner_of(struct node *n)
{
	for (; n; n = n->parent)
		if (n->has_own)
			return n;
	return NULL;
}

/*
 * After a chmod or chown of o: the kernel caches the attributes of what
 * lies below o for a second, and with default_permissions it checks
 * access against them; make it ask again for every node that takes its
 * owner from o.  Notices go out with fs_lock dropped (the kernel may send
 * a FORGET back while we wait).
 */
void
node_inval_heirs(struct node *o)
{
	fuse_ino_t *inos = NULL, *ni;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&fs_lock);
	for (unsigned b = 0; b < NBUCKET; b++) {
		for (struct node *x = by_ino[b]; x; x = x->ino_next) {
			if (x == o || node_owner_of(x) != o)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				if (!(ni = realloc(inos, cap * sizeof(*inos))))
					goto out;
				inos = ni;
			}
			inos[n++] = x->ino;
		}
	}
out:
	pthread_mutex_unlock(&fs_lock);
	for (size_t i = 0; i < n; i++)
		fuse_lowlevel_notify_inval_inode(fs.se, inos[i], -1, 0);
	free(inos);
}

static mode_t
file_mask(enum kind k)
{
	switch (k) {
	case K_CONFIG: case K_PENDING: case K_TIMER: case K_KV_KEY:
	/* a message name may be pushed again: an idempotent retry */
	case K_MSG:
	/* seek reads as empty, so that a copy of the tree does not fail */
	case K_SEEK:
		return 0666;
	/*
	 * Whoever may ack a leased message may attach its error text, and
	 * the kernel asks for write permission before a user.* setxattr.
	 * Its payload still cannot change: an open for write fails (EPERM).
	 */
	case K_LEASE_MSG:
		return 0666;
	/* the JSON files reach every queue: the mount's owner only */
	case K_API_FILE:
		return 0600;
	default:
		return 0444;
	}
}

void
node_attr(struct node *n, struct stat *st)
{
	struct node *o;
	mode_t perm = 0755;

	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	pthread_mutex_lock(&fs_lock);
	o = node_owner_of(n);
	st->st_uid = o ? o->own.uid : fs.uid;
	st->st_gid = o ? o->own.gid : fs.gid;
	if (o)
		perm = o->own.mode & 07777;
	switch (n->kind) {
	case K_QUEUES:
	case K_KV:
		perm = 01777;
		break;
	case K_ROOT:
		perm = 0755;
		break;
	case K_SYS:
		perm = 0555;
		break;
	default:
		break;
	}
	if (node_is_dir(n->kind)) {
		st->st_mode = S_IFDIR | perm;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | (perm & file_mask(n->kind));
		if (n->kind == K_README || (n->kind >= K_SYS_STATS &&
		    n->kind <= K_SYS_HEALTH))
			st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
	}
	st->st_size = n->size;
	if (n->pend)
		st->st_size = (off_t)n->pend->len;
	/* the fixed texts have their size (tar and rsync copy by it); the
	 * others are made at each read and show 0, as /proc's files do */
	if (n->kind == K_README)
		st->st_size = (off_t)text_readme_len();
	else if (n->kind == K_SYS_VERSION)
		st->st_size = (off_t)strlen(QUEENFS_VERSION "\n");
	{
		int64_t t = n->pend ? n->pend->mtime :
		    n->mtime ? n->mtime : fs.started;
		st->st_mtim.tv_sec = t / 1000;
		st->st_mtim.tv_nsec = (t % 1000) * 1000000;
		st->st_atim = st->st_ctim = st->st_mtim;
	}
	st->st_blksize = 4096;
	st->st_blocks = (st->st_size + 511) / 512;
	pthread_mutex_unlock(&fs_lock);
}
