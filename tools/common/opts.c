// SPDX-License-Identifier: GPL-2.0-only
/*
 * The perf tools' table-driven option parser (opts.h).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

const char *opt_label(const struct opt *o, char buf[64])
{
	if (o->key < 256)
		snprintf(buf, 64, "-%c", o->key);
	else
		snprintf(buf, 64, "--%s", o->name);
	return buf;
}

int opt_uint(const struct opt_table *t, const struct opt *o, const char *arg, unsigned int *out)
{
	unsigned long v;
	char label[64];
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 0);
	if (!*arg || *end || errno || arg[0] == '-' || v < o->min || v > o->max) {
		fprintf(stderr, "%s: invalid value '%s' for %s (%lu..%lu)\n", t->prog, arg,
			opt_label(o, label), o->min, o->max);
		return -EINVAL;
	}
	*out = (unsigned int)v;
	return 0;
}

static bool takes_arg(const struct opt *o)
{
	return o->kind == OPT_STRING || o->kind == OPT_UINT || (o->kind == OPT_CALL && o->has_arg);
}

int opt_parse(const struct opt_table *t, void *dest, int argc, char **argv, int *first_arg)
{
	struct option longopts[t->n + 1];
	char shortopts[2 * t->n + 1], *s = shortopts;
	size_t i;
	int c;

	for (i = 0; i < t->n; i++) {
		const struct opt *o = &t->opts[i];

		longopts[i] = (struct option){ .name = o->name, .has_arg = takes_arg(o), .val = o->key };
		if (o->key < 256) {
			*s++ = (char)o->key;
			if (takes_arg(o))
				*s++ = ':';
		}
	}
	longopts[t->n] = (struct option){ 0 };
	*s = '\0';

	optind = 1;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct opt *o = NULL;
		char *at;
		int ret = 0;

		for (i = 0; i < t->n && !o; i++)
			if (t->opts[i].key == c)
				o = &t->opts[i];
		if (!o)
			return OPT_UNKNOWN;	/* getopt said why */
		at = (char *)dest + o->off;
		switch (o->kind) {
		case OPT_SET:
			*(bool *)at = true;
			break;
		case OPT_STRING:
			*(const char **)at = optarg;
			break;
		case OPT_UINT:
			ret = opt_uint(t, o, optarg, (unsigned int *)at);
			break;
		case OPT_CALL:
			ret = o->call(dest, o, o->has_arg ? optarg : NULL);
			break;
		}
		if (ret)
			return ret;
	}
	*first_arg = optind;
	return 0;
}

/* The help's order with help_sorted: a A b B ... z Z, long ones last. */
static int help_rank(const struct opt *o)
{
	if (o->key >= 256)
		return 1000;
	return 2 * tolower(o->key) + !!isupper(o->key);
}

static void usage_line(const struct opt_table *t, const struct opt *o, FILE *f)
{
	char flags[128];
	int len, gap;

	len = snprintf(flags, sizeof(flags), "  %s%c%s --%s%s%s%s", o->key < 256 ? "-" : " ",
		       o->key < 256 ? o->key : ' ', o->key < 256 ? "," : " ", o->name,
		       o->metavar ? "=<" : "", o->metavar ? o->metavar : "", o->metavar ? ">" : "");
	gap = t->help_col - len;
	if (gap < t->help_gap)
		gap = t->help_gap;
	fprintf(f, "%s%*s%s\n", flags, gap, "", o->help);
}

static int by_rank(const void *a, const void *b)
{
	const struct opt *x = *(const struct opt *const *)a, *y = *(const struct opt *const *)b;
	int rx = help_rank(x), ry = help_rank(y);

	/* equal ranks (long ones only) keep the table's order */
	return rx != ry ? rx - ry : (x > y) - (x < y);
}

void opt_usage(const struct opt_table *t, FILE *f)
{
	const struct opt *order[t->n];
	size_t i;

	for (i = 0; i < t->n; i++)
		order[i] = &t->opts[i];
	if (t->help_sorted)
		qsort(order, t->n, sizeof(order[0]), by_rank);
	for (i = 0; i < t->n; i++)
		usage_line(t, order[i], f);
}
