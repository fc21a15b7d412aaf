/*
 * http_int.h - private to the HTTP routes' files (api_http.c, http_msg.c,
 * http_admin.c, http_status.c, http_trace.c): the state of one request,
 * the helpers api_http.c keeps for all routes, and the routes its router
 * calls.
 */
#ifndef HTTP_INT_H
#define HTTP_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core.h"
#include "queen_api.h"

#define QUEUE_MODE "__QUEUE_MODE__"
#define HTTP_DEFAULT "Default"
/* the most partitions one pop claims (partitions=N) */
#define HTTP_POP_MAX_PARTITIONS 64

struct hctx {
	struct queen *q;
	const struct queen_http_req *r;
	struct queen_http_answer *ans;
	struct queen_api_wait *wait;
	const char *seg[8];
	size_t nseg;
	char pathbuf[2048];
};

/* api_http.c: answering, refusing, the query string, names and values */
void answer_json(struct hctx *h, int status, json_t *o);
int refuse(struct hctx *h, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int refuse_rc(struct hctx *h, int rc);
const char *http_arg(struct hctx *h, const char *key);
int64_t arg_int(struct hctx *h, const char *key, int64_t dflt,
    int64_t min, int64_t max);
bool arg_true(struct hctx *h, const char *key);
const char *part_in(const char *p);
const char *part_out(const char *p);
const char *group_in(const char *g);
json_t *time_json(int64_t ms);
json_t *body_object(struct hctx *h);
int opt_string(struct hctx *h, json_t *o, const char *k, const char **out);
bool name_ok(struct hctx *h, const char *what, const char *name);
json_t *payload_data(const void *p, size_t n);

/* http_msg.c */
int do_configure(struct hctx *h, json_t *b);
int do_queue_delete(struct hctx *h, const char *queue);
int do_push(struct hctx *h, json_t *b);
int do_pop(struct hctx *h, const char *queue, const char *partition);
int do_ack(struct hctx *h, json_t *b, bool batch);
int do_transaction(struct hctx *h, json_t *b);
int do_extend(struct hctx *h, const char *lease, json_t *b);

/* http_admin.c */
int do_dlq(struct hctx *h);
int do_group_delete(struct hctx *h, const char *group, const char *queue);
int do_seek(struct hctx *h, const char *group, const char *queue, json_t *b);
int do_subscription(struct hctx *h, const char *group, json_t *b);
int do_maintenance(struct hctx *h, json_t *b, bool pop);
int do_health(struct hctx *h);
int do_queues(struct hctx *h, bool metrics);
int do_queue_detail(struct hctx *h, const char *queue);
int do_overview(struct hctx *h);
int do_prometheus(struct hctx *h);
int do_groups(struct hctx *h, const char *only, bool lagging);

/* http_status.c */
int do_status(struct hctx *h);
int do_status_queues(struct hctx *h);
int do_status_queue(struct hctx *h, const char *queue);
int do_messages(struct hctx *h);
int do_message(struct hctx *h, const char *partition_id, const char *txid);

/* http_trace.c */
int do_trace_add(struct hctx *h, json_t *b);
int do_trace_message(struct hctx *h, const char *pid, const char *txid);
int do_trace_by_name(struct hctx *h, const char *name);
int do_trace_names(struct hctx *h);

#endif
