/*
 * prefill.c - fill a store through the engine before its daemon mounts it,
 * in 1000-message transactions: the backlog and partition figures of
 * `make bench` use it when the mount has no api/push to do the same.
 * Usage: prefill DB QUEUE COUNT [PARTITIONS]; messages go round-robin
 * into partitions p0..pN-1 when PARTITIONS is given, else to "default".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/queen.h"

#define BATCH 1000

int
main(int argc, char **argv)
{
	static struct queen_push_item it[BATCH];
	static struct queen_push_result res[BATCH];
	static char txid[BATCH][32], part[BATCH][32];
	struct queen_options o = { 0 };
	struct queen *q;
	char payload[200];
	long count, parts, n = 0;
	int i, k, rc = 0;

	if (argc < 4) {
		fputs("usage: prefill DB QUEUE COUNT [PARTITIONS]\n", stderr);
		return 2;
	}
	count = atol(argv[3]);
	parts = argc > 4 ? atol(argv[4]) : 0;
	o.path = argv[1];
	o.sync = QUEEN_SYNC_OFF;   /* a crash only loses the prefill */
	if (queen_open(&o, &q) != 0) {
		fprintf(stderr, "prefill: cannot open %s\n", argv[1]);
		return 1;
	}
	memset(payload, 'x', sizeof(payload));
	while (n < count && rc == 0) {
		for (i = 0; i < BATCH && n + i < count; i++) {
			snprintf(txid[i], sizeof(txid[i]), "pre%ld", n + i);
			it[i].queue = argv[2];
			it[i].txid = txid[i];
			it[i].payload = payload;
			it[i].len = sizeof(payload);
			it[i].partition = NULL;
			if (parts > 0) {
				snprintf(part[i], sizeof(part[i]), "p%ld",
				    (n + i) % parts);
				it[i].partition = part[i];
			}
		}
		k = i;
		if ((rc = queen_push(q, it, k, false, res)) != 0)
			fprintf(stderr, "prefill: push: %s\n", queen_errmsg(q));
		n += k;
	}
	queen_close(q);
	return rc != 0;
}
