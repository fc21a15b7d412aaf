/*
 * api_int.h - private to the JSON front end's files (api.c, api_txn.c):
 * the state of one request and the decoders and encoders both use.
 */
#ifndef API_INT_H
#define API_INT_H

#include <jansson.h>
#include <stdbool.h>

#include "core.h"
#include "queen_api.h"

struct apictx {
	struct queen *q;
	char why[256];
	int reason;   /* QUEEN_TXN_BAD_REQUEST or _TOO_LARGE on refusal */
	struct queen_api_wait *wait;  /* a caller that can wait, or NULL */
	bool would_wait;
	char *text;   /* an answer written as text (jsonw.c), not as json_t */
};

/* api.c: a bad_request refusal with its reason; -EINVAL */
int bad(struct apictx *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int opt_str(struct apictx *a, json_t *o, const char *k, const char **out);
int opt_int(struct apictx *a, json_t *o, const char *k, int64_t *out);
int opt_duration(struct apictx *a, json_t *o, const char *k, int64_t *ms);
json_t *payload_json(const void *p, size_t n, json_t *msg);
int payload_bytes(struct apictx *a, json_t *item, const void **p, size_t *n,
    char **keep);
int push_item(struct apictx *a, json_t *o, const char *queue_default,
    struct queen_push_item *it, char **keep);
json_t *push_result_json(size_t i, const struct queen_push_item *it,
    const struct queen_push_result *r);
void free_pushes(struct queen_push_item *items, char **keeps, size_t n);
int ack_item(struct apictx *a, json_t *o, const char *group_default,
    struct queen_ack_item *it);
json_t *ack_result_json(size_t i, const char *txid,
    const struct queen_ack_result *r);
/* api_txn.c */
json_t *api_transaction(struct apictx *a, json_t *req, int *rc);

#endif
