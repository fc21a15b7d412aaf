/*
 * rfc3339.c - times as text: RFC 3339 to milliseconds since the epoch and
 * back, for config values, seek positions and attributes.  The one copy
 * of calendar arithmetic in the tree.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "queen.h"

/* Read exactly n digits at *s into *v. */
static bool
digits(const char **s, const char *e, int n, int *v)
{
	int x = 0;

	if (e - *s < n)
		return false;
	for (int i = 0; i < n; i++) {
		char c = (*s)[i];
		if (c < '0' || c > '9')
			return false;
		x = x * 10 + (c - '0');
	}
	*s += n;
	*v = x;
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int
days_in_month(int y, int m)
{
	static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

int
queen_time_parse(const char *s, size_t len, int64_t *ms)
{
	const char *e = s + len;
	int y, mo, d, h, mi, sec, frac = 0, oh = 0, om = 0, sign = 0;

	if (!digits(&s, e, 4, &y) || s == e || *s++ != '-' ||
	    !digits(&s, e, 2, &mo) || s == e || *s++ != '-' ||
	    !digits(&s, e, 2, &d) || s == e ||
	    (*s != 'T' && *s != 't' && *s != ' '))
		return -EINVAL;
	s++;
	if (!digits(&s, e, 2, &h) || s == e || *s++ != ':' ||
	    !digits(&s, e, 2, &mi) || s == e || *s++ != ':' ||
	    !digits(&s, e, 2, &sec))
		return -EINVAL;
	if (s < e && *s == '.') {
		int n = 0;
		s++;
		while (s < e && *s >= '0' && *s <= '9') {
			if (n < 3)
				frac = frac * 10 + (*s - '0');
			n++;
			s++;
		}
		if (n == 0)
			return -EINVAL;
		for (; n < 3; n++)
			frac *= 10;
	}
	if (s == e)
		return -EINVAL;
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '-' ? -1 : 1;
		if (!digits(&s, e, 2, &oh) || s == e || *s++ != ':' ||
		    !digits(&s, e, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (s != e || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) ||
	    h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	*ms = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
	    sign * (oh * 3600 + om * 60)) * 1000) + frac;
	return 0;
}

void
queen_time_format(int64_t ms, char *buf, size_t len)
{
	int64_t secs = ms / 1000, days, z, era, doe, yoe, doy, mp, y;
	int m, d, rem, msec = (int)(ms % 1000);

	if (msec < 0) {
		msec += 1000;
		secs--;
	}
	days = secs / 86400;
	rem = (int)(secs % 86400);
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = (int)(doy - (153 * mp + 2) / 5 + 1);
	m = (int)(mp < 10 ? mp + 3 : mp - 9);
	y = yoe + era * 400 + (m <= 2);
	snprintf(buf, len, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    (long long)y, m, d, rem / 3600, rem / 60 % 60, rem % 60, msec);
}

