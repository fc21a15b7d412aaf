/*
 * name.c - transactionIds as file names.  An id that is a valid name is
 * its own file name; any other id (a '/', a leading '.', a byte outside
 * [A-Za-z0-9._:@=+-]) appears with each such byte written %XX (two
 * upper-case hex digits).  '%' is never a name byte, so the encoding is
 * reversible and a plain name never needs decoding.  Pure functions.
 */
#include <errno.h>
#include <stdbool.h>
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
