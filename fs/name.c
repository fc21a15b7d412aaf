/*
 * name.c - transactionIds as file names.  An id that is a valid name is
 * its own file name; any other id (a '/', a leading '.', a byte outside
 * [A-Za-z0-9._:@=+-]) appears with each such byte written %XX (two
 * upper-case hex digits).  '%' is never a name byte, so the encoding is
 * reversible and a plain name never needs decoding.  Pure functions.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"

static bool
plain(unsigned char c, size_t at)
{
	if (c == '.' && at == 0)
		return false;
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c && strchr("._:@=+-", c));
}

int
txid_to_name(const char *txid, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	if (!txid[0])
		return -EINVAL;
	for (size_t i = 0; txid[i]; i++) {
		unsigned char c = (unsigned char)txid[i];
		size_t need = plain(c, i) ? 1 : 3;

		if (o + need + 1 > len || o + need > NAME_MAX_BYTES)
			return -ENAMETOOLONG;
		if (plain(c, i)) {
			out[o++] = (char)c;
			continue;
		}
		out[o++] = '%';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 15];
	}
	out[o] = '\0';
	return o > NAME_MAX_BYTES ? -ENAMETOOLONG : 0;
}

static int
unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
name_to_txid(const char *name, char *out, size_t len)
{
	char again[NAME_MAX_BYTES + 1];
	size_t o = 0;

	for (size_t i = 0; name[i]; i++) {
		if (o + 1 >= len)
			return -EINVAL;
		if (name[i] != '%') {
			if (!plain((unsigned char)name[i], i))
				return -EINVAL;
			out[o++] = name[i];
			continue;
		}
		if (unhex(name[i + 1]) < 0 || unhex(name[i + 2]) < 0)
			return -EINVAL;
		out[o++] = (char)(unhex(name[i + 1]) << 4 | unhex(name[i + 2]));
		i += 2;
	}
	out[o] = '\0';
	/* one spelling per id: "%41" is not another name for "A" */
	if (o == 0 || memchr(out, '\0', o) ||
	    txid_to_name(out, again, sizeof(again)) != 0 ||
	    strcmp(again, name) != 0)
		return -EINVAL;
	return 0;
}

bool
name_is_msg(const char *name)
{
	char tx[QUEEN_TXID_MAX + 1];

	return name_to_txid(name, tx, sizeof(tx)) == 0;
}

/* A set of names for one pass over a list; the names are not copied. */
int
nameset_init(struct nameset *s, size_t n)
{
	size_t cap = 16;

	while (cap < 2 * n)
		cap *= 2;
	if (!(s->slot = calloc(cap, sizeof(*s->slot))))
		return -ENOMEM;
	s->mask = cap - 1;
	return 0;
}

/* Adds name; false if it was in already.  Room for the n of init. */
bool
nameset_add(struct nameset *s, const char *name)
{
	uint64_t h = 14695981039346656037u; /* FNV-1a */
	size_t i;

	for (const char *c = name; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211u;
	for (i = h & s->mask; s->slot[i]; i = (i + 1) & s->mask)
		if (strcmp(s->slot[i], name) == 0)
			return false;
	s->slot[i] = name;
	return true;
}

void
nameset_free(struct nameset *s)
{
	free(s->slot);
	s->slot = NULL;
}
