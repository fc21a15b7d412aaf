/*
 * kv.c - KV state: namespaces of keys with versions and optional expiry.
 * Expired keys read as absent at once and are swept by queen_maintain.
 * Transactions reach the same operations through txn.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static int
check_names(struct queen *q, const char *ns, const char *key)
{
	if (!queen_name_valid(ns))
		return queen_err(q, -EINVAL, "invalid namespace '%.64s'",
		    ns ? ns : "");
	if (key && !queen_name_valid(key))
		return queen_err(q, -EINVAL, "invalid key '%.64s'", key);
	return 0;
}

int
queen_kv_get(struct queen *q, const char *ns, const char *key,
    struct queen_kv_value **out)
{
	int rc;

	*out = NULL;
	if ((rc = check_names(q, ns, key)) != 0)
		return rc;
	return q->ops->kv_get(q->st, ns, key, queen_now(q), out);
}

static int
kv_put_locked(struct queen *q, const char *ns, const char *key,
    const void *data, size_t len, int64_t ttl_ms, bool if_absent)
{
	struct queen_kv_value *v;
	int64_t now = queen_now(q);
	int rc;

	if ((rc = check_names(q, ns, key)) != 0)
		return rc;
	if (ttl_ms < 0 || ttl_ms > QUEEN_SECONDS_MAX * 1000)
		return queen_err(q, -EINVAL, "ttl outside 0..%lld s (100 years)",
		    QUEEN_SECONDS_MAX);
	if (if_absent) {
		rc = q->ops->kv_get(q->st, ns, key, now, &v);
		free(v);
		if (rc == 0)
			return queen_err(q, -EEXIST, "key %s/%s exists", ns,
			    key);
		if (rc != -ENOENT)
			return rc;
	}
	return q->ops->kv_put(q->st, ns, key, data, len,
	    ttl_ms ? clamp_add(now, ttl_ms) : 0, now);
}

int
queen_kv_put(struct queen *q, const char *ns, const char *key,
    const void *data, size_t len, int64_t ttl_ms, bool if_absent)
{
	int rc;

	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = kv_put_locked(q, ns, key, data, len, ttl_ms, if_absent);
	return tx_end(q, rc);
}

int
queen_kv_delete(struct queen *q, const char *ns, const char *key)
{
	int rc;

	if ((rc = check_names(q, ns, key)) != 0)
		return rc;
	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = q->ops->kv_delete(q->st, ns, key, queen_now(q));
	if (rc == -ENOENT)
		queen_err(q, rc, "no key %s/%s", ns, key);
	return tx_end(q, rc);
}

int
queen_kv_set_ttl(struct queen *q, const char *ns, const char *key,
    int64_t ttl_ms)
{
	int64_t now = queen_now(q);
	int rc;

	if ((rc = check_names(q, ns, key)) != 0)
		return rc;
	if (ttl_ms < 0 || ttl_ms > QUEEN_SECONDS_MAX * 1000)
		return queen_err(q, -EINVAL, "ttl outside 0..%lld s (100 years)",
		    QUEEN_SECONDS_MAX);
	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = q->ops->kv_set_expiry(q->st, ns, key,
	    ttl_ms ? clamp_add(now, ttl_ms) : 0, now);
	return tx_end(q, rc);
}

int
queen_kv_list(struct queen *q, const char *ns, queen_kv_cb cb, void *arg)
{
	int rc;

	if ((rc = check_names(q, ns, NULL)) != 0)
		return rc;
	return q->ops->kv_list(q->st, ns, queen_now(q), cb, arg);
}

int
queen_kv_ns_list(struct queen *q, queen_name_cb cb, void *arg)
{
	return q->ops->ns_list(q->st, queen_now(q), cb, arg);
}

int
queen_kv_ns_create(struct queen *q, const char *ns,
    const struct queen_owner *own)
{
	static const struct queen_owner def = { 0, 0, 0755 };
	struct queen_owner o;
	int rc;

	if ((rc = check_names(q, ns, NULL)) != 0)
		return rc;
	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = q->ops->ns_get(q->st, ns, &o);
	if (rc == 0)
		rc = queen_err(q, -EEXIST, "namespace '%s' exists", ns);
	else if (rc == -ENOENT)
		rc = q->ops->ns_put(q->st, ns, own ? own : &def, queen_now(q));
	return tx_end(q, rc);
}

struct anykey {
	int n;
};

static int
any_key(void *arg, const char *key, const struct queen_kv_value *v)
{
	((struct anykey *)arg)->n++;
	return 1;
}

int
queen_kv_ns_delete(struct queen *q, const char *ns)
{
	struct anykey a = { 0 };
	int rc;

	if ((rc = check_names(q, ns, NULL)) != 0)
		return rc;
	if ((rc = tx_begin(q)) != 0)
		return rc;
	rc = q->ops->kv_list(q->st, ns, queen_now(q), any_key, &a);
	if (rc >= 0 && a.n)
		rc = queen_err(q, -ENOTEMPTY, "namespace '%s' holds keys", ns);
	else if (rc >= 0 && (rc = q->ops->ns_delete(q->st, ns)) == -ENOENT)
		rc = 0;  /* a namespace of keys alone: nothing recorded */
	return tx_end(q, rc);
}

int
queen_kv_ns_get(struct queen *q, const char *ns, struct queen_owner *own)
{
	static const struct queen_owner def = { 0, 0, 0755 };
	struct anykey a = { 0 };
	int rc;

	if ((rc = check_names(q, ns, NULL)) != 0)
		return rc;
	rc = q->ops->ns_get(q->st, ns, own);
	if (rc != -ENOENT)
		return rc;
	/* a namespace made by a put alone belongs to root */
	rc = q->ops->kv_list(q->st, ns, queen_now(q), any_key, &a);
	if (rc < 0)
		return rc;
	if (!a.n)
		return -ENOENT;
	*own = def;
	return 0;
}

int
queen_kv_ns_set_owner(struct queen *q, const char *ns,
    const struct queen_owner *own)
{
	struct queen_owner o = *own;
	int rc;

	if ((rc = check_names(q, ns, NULL)) != 0)
		return rc;
	if ((rc = tx_begin(q)) != 0)
		return rc;
	o.mode &= 07777;
	rc = q->ops->ns_put(q->st, ns, &o, queen_now(q));
	return tx_end(q, rc);
}
