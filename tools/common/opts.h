/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The perf tools' command lines: each tool describes its options in a
 * table, and one parser (getopt_long underneath, so abbreviations and
 * getopt's own complaints are as before) fills them in and prints the
 * options part of the usage text.
 */
#ifndef TOOLS_OPTS_H
#define TOOLS_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define OPT_STR_(x)	#x
#define OPT_STR(x)	OPT_STR_(x)	/* a number macro in a help string */

enum opt_kind {
	OPT_SET,		/* no argument: the bool at off becomes true */
	OPT_STRING,		/* the const char * at off points at the argument */
	OPT_UINT,		/* the unsigned int at off, a whole number in [min, max] */
	OPT_CALL,		/* call(): what the tool's own rules say */
};

struct opt;
/* 0 to go on; anything else stops the parse and is returned. arg is NULL
 * for an option without one. */
typedef int opt_call_fn(void *dest, const struct opt *o, const char *arg);

struct opt {
	int key;		/* the short flag, or above 255 for a long one only */
	const char *name;	/* the long flag */
	enum opt_kind kind;
	bool has_arg;		/* OPT_CALL's: does it take an argument */
	size_t off;		/* where it goes in the tool's struct */
	unsigned long min, max;	/* OPT_UINT's range (also for OPT_CALL's use) */
	opt_call_fn *call;
	const char *what;	/* the value's name in complaints, for OPT_CALL's use */
	const char *metavar;	/* the help's "--name=<metavar>"; NULL: "--name" */
	const char *help;
};

struct opt_table {
	const char *prog;	/* for OPT_UINT's complaint */
	const struct opt *opts;
	size_t n;
	/* the help's layout: text at column help_col, at least help_gap
	 * spaces after the flags; help_sorted: by flag letter (a A b B ...,
	 * long ones last), else in table order */
	int help_col, help_gap;
	bool help_sorted;
};

/* OPT_UNKNOWN when getopt refused an option (it said why). */
#define OPT_UNKNOWN	(-1000)

/* Parse argv[1..]: 0, with *first_arg the index of the first operand, or
 * the first non-zero a callback returned, or OPT_UNKNOWN, or -EINVAL for a
 * bad OPT_UINT (said why). */
int opt_parse(const struct opt_table *t, void *dest, int argc, char **argv, int *first_arg);
/* The options' lines of the usage text. */
void opt_usage(const struct opt_table *t, FILE *f);
/* OPT_UINT's rule for a callback: a whole unsigned number (any base
 * strtoul takes) within o's range, else "PROG: invalid value ..." and
 * -EINVAL. */
int opt_uint(const struct opt_table *t, const struct opt *o, const char *arg, unsigned int *out);
/* "-k" or "--name", as the complaints name an option. */
const char *opt_label(const struct opt *o, char buf[64]);

#endif
