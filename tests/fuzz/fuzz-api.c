/*
 * fuzz-api.c - libFuzzer target for the JSON front end: the first byte
 * picks the endpoint, the rest is the request body, run against one
 * store in a temp dir.  Any answer is fine; a crash, a leak or an answer
 * that is not JSON is not.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/queen.h"
#include "../../core/queen_api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct queen *q;

static void
setup(void)
{
	static char dir[] = "/tmp/queen-fuzz-XXXXXX";
	struct queen_options o = { 0 };
	char path[64];

	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/q.db", dir);
	o.path = path;
	o.sync = QUEEN_SYNC_OFF;
	if (queen_open(&o, &q) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const ep[] = { "push", "pop", "ack", "transaction",
	    "renew" };
	json_error_t e;
	json_t *j;
	char *resp = NULL;

	if (!q)
		setup();
	if (size < 1)
		return 0;
	queen_api(q, ep[data[0] % 5], (const char *)data + 1, size - 1, &resp);
	if (!resp)
		__builtin_trap();
	j = json_loads(resp, 0, &e);
	if (!j)
		__builtin_trap();
	json_decref(j);
	free(resp);
	return 0;
}
