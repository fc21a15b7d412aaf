/*
 * args.c - the daemon's command line, also in the fstab form mount.fuse3
 * uses (`queenfs SOURCE MOUNTPOINT -o db=PATH,...`): our options kept in
 * struct opts (fs.h), FUSE's passed on in fuse_o.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

void
usage(FILE *f)
{
	fputs("usage: queenfs [options] [SOURCE] MOUNTPOINT\n"
	    "       queenfs --listen HOST:PORT [options] [MOUNTPOINT]\n"
	    "  -f                 stay in the foreground (log to stderr)\n"
	    "  -d                 debug: every FUSE request on stderr "
	    "(implies -f)\n"
	    "  --db PATH          the SQLite store (default: "
	    "$XDG_DATA_HOME/queenfs/queen.db,\n"
	    "                     else ~/.local/share/queenfs/queen.db)\n"
	    "  --db postgresql://[USER@]HOST[:PORT]/DB"
	    "[?options=-csearch_path%3DSCHEMA]\n"
	    "                     a PostgreSQL store that several mounts may "
	    "share\n"
	    "                     (PG* variables and ~/.pgpass apply)\n"
	    "  --sync full|normal|off\n"
	    "                     full (default): a close or rename returns "
	    "after fsync\n"
	    "  --log FILE|stderr|syslog\n"
	    "                     where the log goes (default: stderr with -f,\n"
	    "                     else syslog; without a /dev/log socket, the\n"
	    "                     file queenfs.log beside the store, and\n"
	    "                     stderr says so)\n"
	    "  --log-level error|warn|info|debug   (default: info)\n"
	    "  -o OPT[,OPT...]    FUSE mount options (allow_other, "
	    "default_permissions, ...),\n"
	    "                     and db=PATH, sync=MODE, log=, log_level=,\n"
	    "                     listen=, http_token_file=, http_insecure as "
	    "in /etc/fstab;\n"
	    "                     allow_other always comes with "
	    "default_permissions\n"
	    "                     (added if missing: the modes shown are "
	    "enforced)\n"
	    "  --listen HOST:PORT serve Queen's HTTP API there (repeatable);\n"
	    "                     the mountpoint is then optional "
	    "(docs/http.md)\n"
	    "  --http-token-file FILE  bearer tokens, one a line; a "
	    "non-loopback\n"
	    "                     --listen needs it or --http-insecure\n"
	    "  --http-insecure    serve a non-loopback address with no token\n"
	    "  -h, --help         print this help\n"
	    "  -V, --version      print the version\n"
	    "\n"
	    "Every refused call is logged with its reason (see --log).\n"
	    "Config keys of queues and groups: cat MOUNTPOINT/queues/Q/config; "
	    "each\n"
	    "is described in queenfs(8) and docs/config.md.\n"
	    "Unmount: fusermount3 -u MOUNTPOINT (also after a crash).\n", f);
}

/* Split one -o list: ours are kept, fstab-only ones dropped, the rest to FUSE. */
static int
add_o(struct opts *o, char *list)
{
	static const char *const drop[] = { "defaults", "auto", "noauto",
		"nofail", "user", "users", "nouser", "_netdev", NULL };
	char *save = NULL;

	for (char *t = strtok_r(list, ",", &save); t;
	    t = strtok_r(NULL, ",", &save)) {
		bool skip = strncmp(t, "x-", 2) == 0 || strncmp(t, "comment=", 8) == 0;
		for (int i = 0; drop[i]; i++)
			skip = skip || strcmp(t, drop[i]) == 0;
		if (strncmp(t, "db=", 3) == 0)
			o->db = t + 3;
		else if (strncmp(t, "listen=", 7) == 0) {
			if (o->http.n == HTTP_MAX_LISTEN)
				return -1;
			o->http.listen[o->http.n++] = t + 7;
		} else if (strncmp(t, "http_token_file=", 16) == 0)
			o->http.token_file = t + 16;
		else if (strcmp(t, "http_insecure") == 0)
			o->http.insecure = true;
		else if (strncmp(t, "sync=", 5) == 0)
			o->sync = t + 5;
		else if (strncmp(t, "log=", 4) == 0)
			o->log = t + 4;
		else if (strncmp(t, "log_level=", 10) == 0)
			o->log_level = t + 10;
		else if (!skip) {
			size_t at = strlen(o->fuse_o);
			if (at + strlen(t) + 2 >= sizeof(o->fuse_o))
				return -1;
			snprintf(o->fuse_o + at, sizeof(o->fuse_o) - at, "%s%s",
			    at ? "," : "", t);
		}
	}
	return 0;
}

static bool
has_o(const char *list, const char *opt)
{
	size_t n = strlen(opt);

	for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
		if (strncmp(p, opt, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
	return false;
}

/*
 * Under allow_other the modes the mount shows must hold, and only the
 * kernel can check most of them (open, create, rename, unlink, xattrs):
 * without default_permissions it checks none.  Add it rather than mount
 * a tree whose modes lie.
 */
static int
enforce_modes(struct opts *o)
{
	size_t at = strlen(o->fuse_o);

	if (!has_o(o->fuse_o, "allow_other") ||
	    has_o(o->fuse_o, "default_permissions"))
		return 0;
	if (at + sizeof(",default_permissions") > sizeof(o->fuse_o))
		return -1;
	strcat(o->fuse_o, ",default_permissions");
	return 1;
}

int
parse_args(int argc, char **argv, struct opts *o)
{
	const char *pos[2];
	int npos = 0;

	for (int i = 1; i < argc; i++) {
		char *a = argv[i];
		if (strcmp(a, "-f") == 0) {
			o->foreground = true;
		} else if (strcmp(a, "-d") == 0) {
			o->debug = o->foreground = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		} else if (strcmp(a, "-V") == 0 || strcmp(a, "--version") == 0) {
			puts(QUEENFS_VERSION);
			exit(0);
		} else if (strcmp(a, "--db") == 0 && i + 1 < argc) {
			o->db = argv[++i];
		} else if (strncmp(a, "--db=", 5) == 0) {
			o->db = a + 5;
		} else if (strcmp(a, "--sync") == 0 && i + 1 < argc) {
			o->sync = argv[++i];
		} else if (strncmp(a, "--sync=", 7) == 0) {
			o->sync = a + 7;
		} else if (strcmp(a, "--log") == 0 && i + 1 < argc) {
			o->log = argv[++i];
		} else if (strncmp(a, "--log=", 6) == 0) {
			o->log = a + 6;
		} else if (strcmp(a, "--log-level") == 0 && i + 1 < argc) {
			o->log_level = argv[++i];
		} else if (strncmp(a, "--log-level=", 12) == 0) {
			o->log_level = a + 12;
		} else if (strcmp(a, "--listen") == 0 && i + 1 < argc) {
			if (o->http.n == HTTP_MAX_LISTEN)
				return -1;
			o->http.listen[o->http.n++] = argv[++i];
		} else if (strncmp(a, "--listen=", 9) == 0) {
			if (o->http.n == HTTP_MAX_LISTEN)
				return -1;
			o->http.listen[o->http.n++] = a + 9;
		} else if (strcmp(a, "--http-token-file") == 0 && i + 1 < argc) {
			o->http.token_file = argv[++i];
		} else if (strcmp(a, "--http-insecure") == 0) {
			o->http.insecure = true;
		} else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
			if (add_o(o, argv[++i]) < 0)
				return -1;
		} else if (strncmp(a, "-o", 2) == 0 && a[2]) {
			if (add_o(o, a + 2) < 0)
				return -1;
		} else if (a[0] == '-' || npos == 2) {
			fprintf(stderr, "queenfs: unknown argument %s\n", a);
			return -1;
		} else {
			pos[npos++] = a;
		}
	}
	if (npos == 0 && o->http.n == 0) {
		fputs("queenfs: no mountpoint\n", stderr);
		return -1;
	}
	o->mountpoint = npos ? pos[npos - 1] : NULL;
	if ((o->added_dp = enforce_modes(o)) < 0)
		return -1;
	return 0;
}
