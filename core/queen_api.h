/*
 * queen_api.h - the JSON front end of the engine (core/api/): one call
 * per request body, in the wire shapes of docs/design.md, for the
 * mount's api/ files and for any network front end put beside them.
 */
#ifndef QUEEN_API_H
#define QUEEN_API_H

#include "queen.h"

/*
 * queen_api - the JSON front end shared by the mount's api/ files (and any
 * later network front end): endpoint is "push", "pop", "ack",
 * "transaction" or "renew"; req is the request body.  *resp (malloc'd,
 * NUL-terminated) is the JSON answer (docs/design.md#mount-api); malformed
 * input answers a JSON error with reason bad_request or too_large.
 * Returns 0 when the call as a whole succeeded, -EIO when it failed (the
 * answer says why), -EBUSY when the store refused it for a passing reason
 * (a deadlock, a lock timeout, a transaction's "reserved": nothing of it
 * was kept, and running it again may succeed), or -ENOMEM / -EINVAL
 * (unknown endpoint).
 */
/* a push, an ack or a transaction: a call of it refused with -EBUSY kept
 * nothing and may run again whole */
bool queen_api_redoable(const char *endpoint);
int queen_api(struct queen *q, const char *endpoint, const char *req,
    size_t len, char **resp);

/*
 * queen_api_ex - queen_api for a caller that can wait: an api/pop with
 * "wait" > 0 that finds nothing returns -EAGAIN with *resp NULL and fills
 * *wait (how long, and which queue and group to watch); the caller asks
 * again when something may have arrived, and answers an empty pop itself
 * when the time is up.  Core never waits.
 */
struct queen_api_wait {
	int64_t wait_ms;
	char queue[QUEEN_NAME_MAX + 1];
	char group[QUEEN_NAME_MAX + 1];   /* "": queue mode */
};
int queen_api_ex(struct queen *q, const char *endpoint, const char *req,
    size_t len, char **resp, struct queen_api_wait *wait);
#define QUEEN_API_EMPTY_POP "{\"success\":true,\"leaseId\":null,\"messages\":[]}"

/*
 * queen_http - the same front end under Queen's HTTP routes (/api/v1/...,
 * /health, /metrics; docs/http.md): method, path (percent-decoded), query
 * arguments and body in; ans->status and ans->body (malloc'd JSON, or
 * text when ans->text; NULL for 204) out, ans->wrote when the store may
 * have changed.  A pop with wait=true that finds nothing returns -EAGAIN
 * and fills *wait, as queen_api_ex does.  Returns 0 (the status says how
 * it went), -EAGAIN, or -ENOMEM.  Free ans->body.
 */
struct queen_http_arg {
	const char *key, *value;
};
struct queen_http_req {
	const char *method, *path;
	const struct queen_http_arg *args;
	size_t nargs;
	const char *body;
	size_t len;
	const char *version;      /* for /health */
	int64_t uptime_s;         /* for /metrics */
	uint64_t requests;
};
struct queen_http_answer {
	int status;
	char *body;
	bool text;
	bool wrote;
	/* the store refused the call for a passing reason (a deadlock, a
	 * lock timeout): a 500, or a transaction's 200 refusal "reserved";
	 * nothing of it was kept, and running it again may succeed */
	bool busy;
	char note[192]; /* for the log: a bad number replaced by its default */
};
int queen_http(struct queen *q, const struct queen_http_req *r,
    struct queen_http_answer *ans, struct queen_api_wait *wait);
/* a push, an ack or a transaction: a call of it the store refused with
 * ans.busy may run again */
bool queen_http_redoable(const char *method, const char *path);

#define QUEEN_API_MAX_BODY (64u << 20)

#endif
