/*
 * fuzz-numbers.c - libFuzzer target for every parser of numbers a user
 * can reach: config values, seek positions, RFC 3339 times and the JSON
 * numbers of api/ requests.  The first byte picks the parser (and the key
 * or field), the rest is the number's text.  Built with the overflow
 * sanitizers, a wrap anywhere aborts; beyond that, an accepted value must
 * lie inside its documented limits (README "Limits on numbers").
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/queen.h"
#include "../../fs/ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define YEAR0_MS (-62167219200000LL)  /* 0000-01-01T00:00:00Z */
#define QQ "fq"

static struct queen *q;
static char lease[QUEEN_ID_LEN + 1];

static void
setup(void)
{
	static char dir[] = "/tmp/queen-fuzz-numbers-XXXXXX";
	struct queen_options o = { 0 };
	char path[64];

	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/q.db", dir);
	o.path = path;
	o.sync = QUEEN_SYNC_OFF;
	if (queen_open(&o, &q) != 0 || queen_queue_create(q, QQ, NULL) != 0)
		abort();
}

/* A live lease for renew requests (one message, pushed and popped). */
static void
take_lease(void)
{
	char *resp = NULL;
	json_t *j, *l;
	const char *push = "{\"items\": [{\"queue\": \"" QQ "\", "
	    "\"payload\": 1}]}";
	const char *pop = "{\"queue\": \"" QQ "\", \"batch\": 1}";

	queen_api(q, "push", push, strlen(push), &resp);
	free(resp);
	resp = NULL;
	queen_api(q, "pop", pop, strlen(pop), &resp);
	lease[0] = '\0';
	if (resp && (j = json_loads(resp, 0, NULL))) {
		l = json_object_get(j, "leaseId");
		if (json_is_string(l))
			snprintf(lease, sizeof(lease), "%s",
			    json_string_value(l));
		json_decref(j);
	}
	free(resp);
}

static void
config_value(uint8_t pick, const char *v)
{
	static const struct {
		const char *key;
		int64_t min, max;
	} keys[] = {
		{ "lease_time", 1, QUEEN_SECONDS_MAX },
		{ "wait", 0, QUEEN_WAIT_MAX },
		{ "batch", 1, 100000 },
		{ "delay", 0, QUEEN_SECONDS_MAX },
		{ "timer_delay", 0, QUEEN_SECONDS_MAX },
		{ "retention", 0, QUEEN_SECONDS_MAX },
		{ "max_message_bytes", 1, 1LL << 30 },
		{ "retry_limit", 0, 1000000 },
	};
	size_t i = pick % (sizeof(keys) / sizeof(keys[0]));
	const char *k = keys[i].key;
	int64_t got = 0;

	if (queen_config_set(q, QQ, NULL, &k, &v, 1) != 0)
		return;
	if (queen_config_get(q, QQ, NULL, k, &got) != 0 ||
	    got < keys[i].min || got > keys[i].max)
		__builtin_trap();
}

static void
time_value(const char *s, size_t len)
{
	int64_t ms, again;
	char buf[64];

	if (queen_time_parse(s, len, &ms) != 0)
		return;
	/* four-digit years, offsets of less than a day */
	if (ms < YEAR0_MS - 86400000 || ms > QUEEN_TIME_MAX_MS + 86400000)
		__builtin_trap();
	queen_time_format(ms, buf, sizeof(buf));
	if (ms >= YEAR0_MS && ms <= QUEEN_TIME_MAX_MS &&
	    (queen_time_parse(buf, strlen(buf), &again) != 0 || again != ms))
		__builtin_trap();
}

static void
seek_value(const char *s, size_t len)
{
	struct ctl_seek sk;

	if (ctl_seek_parse(s, len, &sk) != 0)
		return;
	if (sk.kind == CTL_POS_OFFSET && sk.value < 0)
		__builtin_trap();
	queen_seek(q, QQ, "g", sk.partition[0] ? sk.partition : NULL,
	    (enum queen_pos_kind)sk.kind, sk.value);
}

/* One api/ request with the fuzzed text where a number goes. */
static void
json_number(uint8_t pick, const char *num)
{
	static const struct {
		const char *ep, *fmt;
	} t[] = {
		{ "pop", "{\"queue\": \"" QQ "\", \"wait\": %s}" },
		{ "pop", "{\"queue\": \"" QQ "\", \"batch\": %s}" },
		{ "renew", "{\"leaseId\": \"%2$s\", \"seconds\": %1$s}" },
		{ "transaction", "{\"kv\": [{\"op\": \"incr\", \"ns\": \"n\", "
		    "\"key\": \"k\", \"by\": %s}]}" },
		{ "transaction", "{\"kv\": [{\"op\": \"put\", \"ns\": \"n\", "
		    "\"key\": \"t\", \"value\": 1, \"ttl\": %s}]}" },
		{ "transaction", "{\"timers\": [{\"op\": \"schedule\", \"queue\": "
		    "\"" QQ "\", \"key\": \"t\", \"payload\": 1, \"dueAt\": %s}]}" },
		{ "transaction", "{\"timers\": [{\"op\": \"schedule\", \"queue\": "
		    "\"" QQ "\", \"key\": \"t\", \"payload\": 1, \"delay\": %s}]}" },
		{ "push", "{\"items\": [{\"queue\": \"" QQ "\", \"payload\": %s}]}" },
	};
	size_t i = pick % (sizeof(t) / sizeof(t[0]));
	char body[8192], *resp = NULL;
	json_t *j, *e;
	int n;

	n = snprintf(body, sizeof(body), t[i].fmt, num, lease);
	if (n < 0 || (size_t)n >= sizeof(body))
		return;
	queen_api(q, t[i].ep, body, (size_t)n, &resp);
	if (!resp)
		return;
	if (!(j = json_loads(resp, 0, NULL)))
		__builtin_trap();
	/* a renew that succeeds answers a time inside the limits */
	e = json_object_get(j, "expiresAt");
	if (e && (!json_is_integer(e) || json_integer_value(e) < 0 ||
	    json_integer_value(e) > QUEEN_TIME_MAX_MS))
		__builtin_trap();
	json_decref(j);
	free(resp);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (!q) {
		setup();
		take_lease();
	}
	if (size < 1 || size > 4096 || !(s = malloc(size)))
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (data[0] >> 4 & 3) {
	case 0:
		if (!memchr(data + 1, '\0', size - 1))
			config_value(data[0], s);
		break;
	case 1:
		time_value(s, size - 1);
		break;
	case 2:
		seek_value(s, size - 1);
		break;
	default:
		if (!memchr(data + 1, '\0', size - 1))
			json_number(data[0], s);
		break;
	}
	free(s);
	return 0;
}
