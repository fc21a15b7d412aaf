/*
 * fuzz-ctl.c - libFuzzer target for the control-file parsers (config and
 * seek lines, RFC 3339 times).  They must never crash, read out of bounds
 * or loop, whatever bytes a writer sends.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../../fs/ctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ctl_config cfg;
	struct ctl_seek sk;
	int64_t ms;
	int bad = 0;
	size_t i;

	if (ctl_config_parse((const char *)data, size, &cfg, &bad) == 0) {
		for (i = 0; i < cfg.n; i++) {
			if (!cfg.keys[i] || !cfg.values[i] ||
			    strlen(cfg.keys[i]) == 0)
				__builtin_trap();
		}
	}
	ctl_seek_parse((const char *)data, size, &sk);
	if (ctl_time_parse((const char *)data, size, &ms) == 0) {
		char buf[64];

		ctl_time_format(ms, buf, sizeof(buf));
	}
	return 0;
}
