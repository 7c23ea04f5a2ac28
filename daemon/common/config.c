// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdmad configuration parser, built on libinih.
 *
 * Debian's libinih is built with options we cannot change at compile time
 * (200-byte lines, multi-line values, ';'-only inline comments, no line
 * number in the handler, section names cut to 49 bytes), so every line goes
 * through our own ini_reader first: it counts lines, strips comments and
 * indentation, refuses over-long lines and tracks the current section
 * itself.  inih then only splits "key = value".
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef VRDMA_XDP_OBJECT_DEFAULT
#define VRDMA_XDP_OBJECT_DEFAULT "/usr/lib/vrdmad/vrdma_xdp.bpf.o"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/* Keys of [daemon] and [port]: the tables below have exactly these. */
#define DAEMON_KEYS 5
#define PORT_KEYS 9

/* Nobody writes a megabyte of config; stops /dev/zero and friends. */
#define CONF_FILE_MAX (1024 * 1024)

enum section {
	SEC_NONE,
	SEC_DAEMON,
	SEC_PORT,
	SEC_VM,
};

enum vm_key {
	VM_KEY_SOCKET,
	VM_KEY_GID,
	VM_KEY_MAC,
	VM_KEY_MAX_CQ,
	VM_KEY_MAX_QP,
	VM_KEY_MAX_MR,
	VM_KEY_MAX_MR_PAGES,
	VM_KEY_RING_MAX_CQ,
	VM_KEY_RING_MAX_QP,
	VM_KEY_SOCKET_OWNER,
	VM_KEY_SOCKET_GROUP,
	VM_KEY_SOCKET_MODE,
	VM_KEY_COUNT,
};

struct vm_state {
	unsigned int key_line[VM_KEY_COUNT];	/* 0 = not set yet */
};

struct parser;

struct key_desc {
	const char *name;
	int (*set)(struct parser *p, const char *value);
};

struct parser {
	struct vrdma_config *cfg;
	const char *name;		/* file name for messages */
	char *err;
	size_t errlen;
	int rc;				/* first error; parsing stops there */

	/* reader */
	const char *pos;
	const char *end;
	unsigned int line;
	bool key_line;			/* inih should call the handler */
	bool handled;			/* ...and it did */

	/* current section, as the reader saw it */
	enum section sec;
	unsigned int vm;		/* index into cfg->vms when SEC_VM */

	unsigned int daemon_line[DAEMON_KEYS];	/* where each key was set, 0 = not */
	unsigned int port_line[PORT_KEYS];
	struct vm_state *vm_state;	/* parallel to cfg->vms */
	unsigned int vms_cap;
};

static const char syntax_msg[] =
	"expected 'key = value', '[section]' or a comment";

static bool is_control_char(char c)
{
	return (unsigned char)c < 0x20 || c == 0x7f;
}

__attribute__((format(printf, 3, 4)))
static int perr(struct parser *p, unsigned int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->rc)
		return p->rc;	/* only the first error counts */
	p->rc = -EINVAL;
	if (!p->err || !p->errlen)
		return p->rc;

	if (line)
		n = snprintf(p->err, p->errlen, "%s:%u: ", p->name, line);
	else
		n = snprintf(p->err, p->errlen, "%s: ", p->name);
	if (n < 0 || (size_t)n >= p->errlen)
		return p->rc;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - n, fmt, ap);
	va_end(ap);
	/* Messages quote what was given (a line of the file, an add-vm key or
	 * value from the control socket): no control character of it reaches
	 * a log or a terminal, and the message stays one line. */
	for (; p->err[n]; n++)
		if (is_control_char(p->err[n]))
			p->err[n] = '?';
	return p->rc;
}

static int perr_nomem(struct parser *p)
{
	perr(p, 0, "out of memory");
	p->rc = -ENOMEM;
	return p->rc;
}

/* ---- value helpers ---- */

static int parse_uint(const char *s, unsigned long min, unsigned long max,
		      unsigned int *out)
{
	unsigned long v;
	char *end;

	/* strtoul would accept leading blanks, '+' and '-' */
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = (unsigned int)v;
	return 0;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static bool is_abs_path(const char *s)
{
	return s[0] == '/';
}

/* A path goes into the log, vrdmactl's tables and systemd's messages: one
 * with a newline or an escape sequence would forge a line there. */
static bool has_control_char(const char *s)
{
	for (; *s; s++)
		if (is_control_char(*s))
			return true;
	return false;
}

/* Like the kernel's dev_valid_name(). */
static bool ifname_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len >= IF_NAMESIZE)
		return false;
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || isspace((unsigned char)*s))
			return false;
	return true;
}

static bool vm_name_valid(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > VRDMA_CONF_NAME_MAX)
		return false;
	if (!isalnum((unsigned char)s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}

/* ---- [daemon] ---- */

/* Every integer key: one message. */
static int set_uint(struct parser *p, const char *key, unsigned long min, unsigned long max,
		    unsigned int *dst, const char *v)
{
	if (parse_uint(v, min, max, dst))
		return perr(p, p->line, "%s must be an integer from %lu to %lu", key, min, max);
	return 0;
}

static int set_workers(struct parser *p, const char *v)
{
	return set_uint(p, "workers", 1, VRDMA_CONF_MAX_WORKERS, &p->cfg->workers, v);
}

static int set_socket_path(struct parser *p, const char *key, char *dst,
			   size_t size, const char *v)
{
	if (!is_abs_path(v))
		return perr(p, p->line, "%s must be an absolute path", key);
	if (has_control_char(v))
		return perr(p, p->line, "%s must not contain control characters", key);
	if (strlen(v) >= size)
		return perr(p, p->line, "%s is too long (at most %zu bytes)",
			    key, size - 1);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int set_control_socket(struct parser *p, const char *v)
{
	return set_socket_path(p, "control_socket", p->cfg->control_socket,
			       sizeof(p->cfg->control_socket), v);
}

static int set_log_level(struct parser *p, const char *v)
{
	if (vrdma_log_level_parse(&p->cfg->log_level, v))
		return perr(p, p->line,
			    "log_level must be one of error, warning, info, debug");
	return 0;
}

static int set_idle_spin(struct parser *p, const char *v)
{
	return set_uint(p, "idle_spin_us", 0, 1000000, &p->cfg->idle_spin_us, v);
}

/* A CPU list as taskset -c and the kernel's cpulists write it: "2", "2,5",
 * "4-7", "0,2-3"; in order, none twice. */
static int set_worker_cpus(struct parser *p, const char *v)
{
	unsigned int n = 0, lo, hi, c, k;
	char item[32], *dash;
	const char *s = v;
	size_t len;

	do {
		len = strcspn(s, ",");
		if (!len || len >= sizeof(item))
			goto bad;
		memcpy(item, s, len);
		item[len] = '\0';
		dash = strchr(item, '-');
		if (dash)
			*dash = '\0';
		if (parse_uint(item, 0, VRDMA_CONF_MAX_CPU, &lo) ||
		    parse_uint(dash ? dash + 1 : item, lo, VRDMA_CONF_MAX_CPU, &hi))
			goto bad;
		for (c = lo; c <= hi; c++) {
			for (k = 0; k < n; k++)
				if (p->cfg->worker_cpus[k] == c)
					goto bad;
			if (n == VRDMA_CONF_MAX_WORKERS)
				goto bad;
			p->cfg->worker_cpus[n++] = (uint16_t)c;
		}
		s += len;
	} while (*s++ == ',');
	p->cfg->n_worker_cpus = n;
	p->cfg->worker_cpus_line = p->line;
	return 0;

bad:
	return perr(p, p->line,
		    "worker_cpus must list CPUs as 2,3 or 2-5: each from 0 to %d, none twice, at most %d",
		    VRDMA_CONF_MAX_CPU, VRDMA_CONF_MAX_WORKERS);
}

static const struct key_desc daemon_keys[] = {
	{ "workers", set_workers },
	{ "control_socket", set_control_socket },
	{ "log_level", set_log_level },
	{ "idle_spin_us", set_idle_spin },
	{ "worker_cpus", set_worker_cpus },
};

/* ---- [port] ---- */

static int set_interface(struct parser *p, const char *v)
{
	if (!ifname_valid(v))
		return perr(p, p->line,
			    "interface '%s' is not a valid interface name", v);
	memcpy(p->cfg->interface, v, strlen(v) + 1);
	return 0;
}

static int set_xdp_mode(struct parser *p, const char *v)
{
	if (vrdma_xdp_mode_parse(&p->cfg->xdp_mode, v))
		return perr(p, p->line,
			    "xdp_mode must be one of auto, native, skb");
	return 0;
}

static int set_zerocopy(struct parser *p, const char *v)
{
	if (vrdma_zerocopy_parse(&p->cfg->zerocopy, v))
		return perr(p, p->line, "zerocopy must be one of auto, on, off");
	return 0;
}

static int set_multi_buffer(struct parser *p, const char *v)
{
	if (vrdma_multi_buffer_parse(&p->cfg->multi_buffer, v))
		return perr(p, p->line, "multi_buffer must be one of auto, off");
	return 0;
}

static int set_queues(struct parser *p, const char *v)
{
	return set_uint(p, "queues", 0, VRDMA_CONF_MAX_WORKERS, &p->cfg->queues, v);
}

static int set_xdp_object(struct parser *p, const char *v)
{
	/* A line holds at most 199 bytes, so it always fits. */
	if (!is_abs_path(v) || strlen(v) >= sizeof(p->cfg->xdp_object))
		return perr(p, p->line, "xdp_object must be an absolute path");
	if (has_control_char(v))
		return perr(p, p->line, "xdp_object must not contain control characters");
	memcpy(p->cfg->xdp_object, v, strlen(v) + 1);
	return 0;
}

static int set_ecn(struct parser *p, const char *v)
{
	if (!strcmp(v, "on"))
		p->cfg->ecn = true;
	else if (!strcmp(v, "off"))
		p->cfg->ecn = false;
	else
		return perr(p, p->line, "ecn must be on or off");
	return 0;
}

static int set_cnp_interval(struct parser *p, const char *v)
{
	return set_uint(p, "cnp_interval_us", 1, VRDMA_CONF_MAX_CNP_INTERVAL_US,
			&p->cfg->cnp_interval_us, v);
}

static int set_tx_budget(struct parser *p, const char *v)
{
	return set_uint(p, "tx_budget", VRDMA_CONF_MIN_TX_BUDGET, VRDMA_CONF_MAX_TX_BUDGET,
			&p->cfg->tx_budget, v);
}

static const struct key_desc port_keys[] = {
	{ "interface", set_interface },
	{ "xdp_mode", set_xdp_mode },
	{ "zerocopy", set_zerocopy },
	{ "multi_buffer", set_multi_buffer },
	{ "queues", set_queues },
	{ "xdp_object", set_xdp_object },
	{ "ecn", set_ecn },
	{ "cnp_interval_us", set_cnp_interval },
	{ "tx_budget", set_tx_budget },
};

_Static_assert(ARRAY_SIZE(daemon_keys) == DAEMON_KEYS, "daemon_line has a slot per key");
_Static_assert(ARRAY_SIZE(port_keys) == PORT_KEYS, "port_line has a slot per key");

/* ---- [vm NAME] ---- */

static struct vrdma_vm_config *cur_vm(struct parser *p)
{
	return &p->cfg->vms[p->vm];
}

static int set_vm_socket(struct parser *p, const char *v)
{
	return set_socket_path(p, "socket", cur_vm(p)->socket,
			       sizeof(cur_vm(p)->socket), v);
}

/* Index of the vm that already has this GID, or -1. */
static int gid_owner(struct parser *p, const struct vrdma_gid *g)
{
	unsigned int i, j;

	for (i = 0; i < p->cfg->n_vms; i++) {
		const struct vrdma_vm_config *vm = &p->cfg->vms[i];

		for (j = 0; j < vm->n_gids; j++)
			if (!memcmp(vm->gids[j].raw, g->raw, sizeof(g->raw)))
				return (int)i;
	}
	return -1;
}

static int add_gid(struct parser *p, const char *item)
{
	struct vrdma_vm_config *vm = cur_vm(p);
	struct vrdma_gid g;
	const char *why;
	int owner;

	if (!*item)
		return perr(p, p->line, "gid list has an empty item");
	if (vrdma_gid_parse(&g, item))
		return perr(p, p->line,
			    "gid '%s' is not an IPv4 or IPv6 address", item);
	why = vrdma_gid_unusable(&g);
	if (why)
		return perr(p, p->line, "gid '%s' cannot be used: it is %s", item, why);
	owner = gid_owner(p, &g);
	if (owner >= 0)
		return perr(p, p->line,
			    "gid '%s' already belongs to vm %s (line %u)", item,
			    p->cfg->vms[owner].name,
			    p->vm_state[owner].key_line[VM_KEY_GID]);
	if (vm->n_gids >= VRDMA_CONF_MAX_GIDS)
		return perr(p, p->line, "too many gids for vm %s (at most %d)",
			    vm->name, VRDMA_CONF_MAX_GIDS);
	vm->gids[vm->n_gids++] = g;
	return 0;
}

/* A comma-separated list; the key may repeat, each adding to the list (a
 * line holds only about four IPv6 addresses). */
static int set_vm_gid(struct parser *p, const char *v)
{
	char *buf, *item, *next;
	int ret = 0;

	/* copied because we cut it up; add-vm values are not line-bounded */
	buf = strdup(v);
	if (!buf)
		return perr_nomem(p);
	for (item = buf; item; item = next) {
		next = strchr(item, ',');
		if (next)
			*next++ = '\0';
		ret = add_gid(p, trim(item));
		if (ret)
			break;
	}
	free(buf);
	return ret;
}

static int set_vm_mac(struct parser *p, const char *v)
{
	struct vrdma_vm_config *vm = cur_vm(p);
	static const uint8_t zero[6];
	uint8_t mac[6];

	if (vrdma_mac_parse(mac, v))
		return perr(p, p->line,
			    "mac '%s' is not a MAC address (like 52:54:00:12:34:56)",
			    v);
	if ((mac[0] & 1) || !memcmp(mac, zero, sizeof(mac)))
		return perr(p, p->line, "mac '%s' must be a unicast address", v);
	memcpy(vm->mac, mac, sizeof(mac));
	vm->has_mac = true;
	return 0;
}

static int set_vm_max_cq(struct parser *p, const char *v)
{
	return set_uint(p, "max_cq", 1, VRDMA_CONF_MAX_QUEUES, &cur_vm(p)->max_cq, v);
}

static int set_vm_max_qp(struct parser *p, const char *v)
{
	return set_uint(p, "max_qp", 1, VRDMA_CONF_MAX_QUEUES, &cur_vm(p)->max_qp, v);
}

static int set_vm_ring_max_cq(struct parser *p, const char *v)
{
	return set_uint(p, "ring_max_cq", 1, VRDMA_CONF_MAX_RING_QUEUES, &cur_vm(p)->ring_max_cq, v);
}

static int set_vm_ring_max_qp(struct parser *p, const char *v)
{
	return set_uint(p, "ring_max_qp", 1, VRDMA_CONF_MAX_RING_QUEUES, &cur_vm(p)->ring_max_qp, v);
}

static int set_vm_max_mr(struct parser *p, const char *v)
{
	return set_uint(p, "max_mr", 1, VRDMA_CONF_MAX_MR, &cur_vm(p)->max_mr, v);
}

static int set_vm_max_mr_pages(struct parser *p, const char *v)
{
	return set_uint(p, "max_mr_pages", 1, VRDMA_CONF_MAX_MR_PAGES, &cur_vm(p)->max_mr_pages,
			v);
}

/* A user or group: a name as useradd accepts it, or a number. Whether it
 * exists is checked when the socket is made (the daemon may start first). */
static int set_vm_account(struct parser *p, const char *key, char *dst, size_t size,
			  const char *v)
{
	const char *s;

	if (strlen(v) >= size)
		return perr(p, p->line, "%s is too long (at most %zu bytes)", key, size - 1);
	for (s = v; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return perr(p, p->line, "%s '%s' is not a user or group name", key, v);
	if (*v == '-')
		return perr(p, p->line, "%s '%s' is not a user or group name", key, v);
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

static int set_vm_owner(struct parser *p, const char *v)
{
	return set_vm_account(p, "socket_owner", cur_vm(p)->socket_owner,
			      sizeof(cur_vm(p)->socket_owner), v);
}

static int set_vm_group(struct parser *p, const char *v)
{
	return set_vm_account(p, "socket_group", cur_vm(p)->socket_group,
			      sizeof(cur_vm(p)->socket_group), v);
}

static int set_vm_mode(struct parser *p, const char *v)
{
	char *end;
	unsigned long m;

	errno = 0;
	m = strtoul(v, &end, 8);
	if (errno || *end || end == v || m > 0777 || !isdigit((unsigned char)*v))
		return perr(p, p->line, "socket_mode must be an octal mode like 0660");
	if ((m & 0600) != 0600)
		return perr(p, p->line, "socket_mode %s must let the owner read and write", v);
	cur_vm(p)->socket_mode = (unsigned int)m;
	return 0;
}

/* Indexed by enum vm_key. */
static const struct key_desc vm_keys[] = {
	{ "socket", set_vm_socket },
	{ "gid", set_vm_gid },
	{ "mac", set_vm_mac },
	{ "max_cq", set_vm_max_cq },
	{ "max_qp", set_vm_max_qp },
	{ "max_mr", set_vm_max_mr },
	{ "max_mr_pages", set_vm_max_mr_pages },
	{ "ring_max_cq", set_vm_ring_max_cq },
	{ "ring_max_qp", set_vm_ring_max_qp },
	{ "socket_owner", set_vm_owner },
	{ "socket_group", set_vm_group },
	{ "socket_mode", set_vm_mode },
};
_Static_assert(ARRAY_SIZE(vm_keys) == VM_KEY_COUNT, "key_line has a slot per key");

/* Indexed by enum section. */
static const struct section_desc {
	const char *name;
	const struct key_desc *keys;
	size_t n_keys;
} sections[] = {
	[SEC_DAEMON] = { "daemon", daemon_keys, ARRAY_SIZE(daemon_keys) },
	[SEC_PORT] = { "port", port_keys, ARRAY_SIZE(port_keys) },
	[SEC_VM] = { "vm", vm_keys, ARRAY_SIZE(vm_keys) },
};

/* The index of the key called name, or n. */
static size_t find_key(const struct key_desc *keys, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(keys[i].name, name))
			break;
	return i;
}

/* ---- sections (seen by the reader) ---- */

static int add_vm(struct parser *p, const char *name)
{
	struct vrdma_config *cfg = p->cfg;
	struct vrdma_vm_config *vm;
	unsigned int i;

	if (!vm_name_valid(name))
		return perr(p, p->line,
			    "vm name '%s' is invalid (1 to %d of A-Z a-z 0-9 _ . -, starting with a letter or digit)",
			    name, VRDMA_CONF_NAME_MAX);
	for (i = 0; i < cfg->n_vms; i++)
		if (!strcmp(cfg->vms[i].name, name))
			return perr(p, p->line,
				    "duplicate vm '%s' (first on line %u)",
				    name, cfg->vms[i].line);
	if (cfg->n_vms >= VRDMA_CONF_MAX_VMS)
		return perr(p, p->line, "too many vms (at most %d)",
			    VRDMA_CONF_MAX_VMS);

	if (cfg->n_vms == p->vms_cap) {
		unsigned int cap = p->vms_cap ? p->vms_cap * 2 : 8;
		struct vrdma_vm_config *vms;
		struct vm_state *st;

		vms = realloc(cfg->vms, cap * sizeof(*vms));
		if (!vms)
			return perr_nomem(p);
		cfg->vms = vms;
		st = realloc(p->vm_state, cap * sizeof(*st));
		if (!st)
			return perr_nomem(p);
		p->vm_state = st;
		p->vms_cap = cap;
	}

	vm = &cfg->vms[cfg->n_vms];
	memset(vm, 0, sizeof(*vm));
	memset(&p->vm_state[cfg->n_vms], 0, sizeof(p->vm_state[0]));
	memcpy(vm->name, name, strlen(name) + 1);
	snprintf(vm->socket, sizeof(vm->socket), "/run/vrdmad/%s.sock",
		 vm->name);
	vm->line = p->line;
	vm->max_cq = VRDMA_CONF_DEFAULT_QUEUES;
	vm->max_qp = VRDMA_CONF_DEFAULT_QUEUES;
	vm->max_mr = VRDMA_CONF_DEFAULT_MAX_MR;
	vm->max_mr_pages = VRDMA_CONF_DEFAULT_MAX_MR_PAGES;
	vm->ring_max_cq = VRDMA_CONF_DEFAULT_RING_QUEUES;
	vm->ring_max_qp = VRDMA_CONF_DEFAULT_RING_QUEUES;
	vm->socket_mode = 0600;
	p->vm = cfg->n_vms++;
	p->sec = SEC_VM;
	return 0;
}

/* line is a trimmed, comment-free line starting with '['. */
static int section_header(struct parser *p, const char *line)
{
	const char *close = strchr(line + 1, ']');
	char name[INI_MAX_LINE];

	if (!close)
		return perr(p, p->line, "section header needs a closing ']'");
	if (close[1])
		return perr(p, p->line, "unexpected text after ']'");
	snprintf(name, sizeof(name), "%.*s", (int)(close - line - 1), line + 1);

	if (!strcmp(name, "daemon")) {
		p->sec = SEC_DAEMON;
	} else if (!strcmp(name, "port")) {
		p->sec = SEC_PORT;
	} else if (!strncmp(name, "vm ", 3)) {
		return add_vm(p, name + 3);
	} else if (!strcmp(name, "vm")) {
		return perr(p, p->line,
			    "vm section needs a name, like '[vm NAME]'");
	} else {
		return perr(p, p->line, "unknown section '[%s]'", name);
	}
	return 0;
}

/* ---- inih glue ---- */

/* The handler was not called for a key line: inih found no '='. */
static bool check_unhandled(struct parser *p)
{
	if (p->key_line && !p->handled) {
		p->key_line = false;
		perr(p, p->line, "%s", syntax_msg);
		return true;
	}
	return false;
}

/* '#' or ';' at the start or after whitespace starts a comment. */
static void strip_comment(char *s)
{
	char *c;

	for (c = s; *c; c++) {
		if ((*c == '#' || *c == ';') &&
		    (c == s || isspace((unsigned char)c[-1]))) {
			*c = '\0';
			return;
		}
	}
}

static char *conf_reader(char *str, int num, void *stream)
{
	struct parser *p = stream;
	const char *start, *lend, *nl;
	size_t len;
	char *s;

	if (p->rc || check_unhandled(p) || p->pos >= p->end)
		return NULL;

	start = p->pos;
	nl = memchr(start, '\n', p->end - start);
	lend = nl ? nl : p->end;
	p->pos = nl ? nl + 1 : p->end;
	p->line++;
	p->key_line = false;
	p->handled = false;

	if (p->line == 1 && lend - start >= 3 &&
	    !memcmp(start, "\xef\xbb\xbf", 3))
		start += 3;
	if (lend > start && lend[-1] == '\r')
		lend--;
	len = lend - start;
	if (memchr(start, '\0', len)) {
		perr(p, p->line, "line contains a NUL byte");
		return NULL;
	}
	/* inih would hand the rest to us as a line of its own */
	if (num < 1 || len > (size_t)num - 1) {
		perr(p, p->line, "line too long (at most %d characters)",
		     num - 1);
		return NULL;
	}
	memcpy(str, start, len);
	str[len] = '\0';

	strip_comment(str);
	/* no leading blanks: inih would take the line as a continuation */
	s = trim(str);
	memmove(str, s, strlen(s) + 1);

	if (str[0] == '[') {
		if (section_header(p, str))
			return NULL;
	} else if (str[0]) {
		/* one syntax only: inih also takes "key: value" */
		if (str[strcspn(str, "=:")] == ':') {
			perr(p, p->line, "%s", syntax_msg);
			return NULL;
		}
		p->key_line = true;
	}
	return str;
}

static int conf_handler(void *user, const char *section, const char *key,
			const char *value)
{
	struct parser *p = user;
	const struct section_desc *sec;
	unsigned int *key_line;
	char label[sizeof("[vm ]") + VRDMA_CONF_NAME_MAX];
	size_t i;

	/* inih cuts section names to 49 bytes; the reader knows better */
	(void)section;
	p->handled = true;
	if (p->rc)
		return 0;
	if (!*key) {
		perr(p, p->line, "%s", syntax_msg);
		return 0;
	}

	if (p->sec == SEC_NONE) {
		perr(p, p->line, "key '%s' outside a section", key);
		return 0;
	}
	sec = &sections[p->sec];
	if (p->sec == SEC_VM) {
		key_line = p->vm_state[p->vm].key_line;
		snprintf(label, sizeof(label), "[vm %s]", cur_vm(p)->name);
	} else {
		key_line = p->sec == SEC_DAEMON ? p->daemon_line : p->port_line;
		snprintf(label, sizeof(label), "[%s]", sec->name);
	}
	i = find_key(sec->keys, sec->n_keys, key);
	if (i == sec->n_keys) {
		perr(p, p->line, "unknown key '%s' in %s", key, label);
		return 0;
	}
	if (key_line[i] && !(p->sec == SEC_VM && i == VM_KEY_GID)) {
		perr(p, p->line, "duplicate key '%s' (first set on line %u)",
		     key, key_line[i]);
		return 0;
	}
	if (!key_line[i])
		key_line[i] = p->line;
	if (!*value) {
		perr(p, p->line, "empty value for '%s'", key);
		return 0;
	}
	return sec->keys[i].set(p, value) == 0;
}

/* What a VM needs whole, whether from the file or from add-vm. */
static int check_vm(struct parser *p, const struct vrdma_vm_config *vm)
{
	if (!vm->n_gids)
		return perr(p, vm->line, "vm %s has no gid", vm->name);
	/* vhost-user names a queue's eventfds with an 8-bit index. */
	if (1 + vm->max_cq + 2 * vm->max_qp > VRDMA_CONF_MAX_VQS)
		return perr(p, vm->line,
			    "vm %s needs 1 + max_cq + 2 * max_qp = %u virtqueues; vhost-user addresses at most %d",
			    vm->name, 1 + vm->max_cq + 2 * vm->max_qp, VRDMA_CONF_MAX_VQS);
	return 0;
}

static int check_whole(struct parser *p)
{
	const struct vrdma_config *cfg = p->cfg;
	unsigned int i, j;

	if (!cfg->interface[0])
		return perr(p, 0, "[port] interface is required");
	if (cfg->n_worker_cpus && cfg->n_worker_cpus != cfg->workers)
		return perr(p, cfg->worker_cpus_line,
			    "worker_cpus lists %u CPU(s) for %u worker(s): list one per worker",
			    cfg->n_worker_cpus, cfg->workers);
	for (i = 0; i < cfg->n_vms; i++) {
		const struct vrdma_vm_config *vm = &cfg->vms[i];

		if (check_vm(p, vm))
			return p->rc;
		if (!strcmp(vm->socket, cfg->control_socket))
			return perr(p, vm->line,
				    "vm %s uses the same socket as control_socket",
				    vm->name);
		for (j = 0; j < i; j++)
			if (!strcmp(vm->socket, cfg->vms[j].socket))
				return perr(p, vm->line,
					    "vm %s uses the same socket as vm %s",
					    vm->name, cfg->vms[j].name);
	}
	return 0;
}

static void config_defaults(struct vrdma_config *cfg, const char *name)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->path, sizeof(cfg->path), "%s", name);
	cfg->workers = 1;
	snprintf(cfg->control_socket, sizeof(cfg->control_socket), "%s",
		 VRDMA_CONF_DEFAULT_CONTROL);
	cfg->log_level = VRDMA_LOG_INFO;
	cfg->idle_spin_us = VRDMA_CONF_DEFAULT_IDLE_SPIN_US;
	cfg->xdp_mode = VRDMA_XDP_AUTO;
	cfg->zerocopy = VRDMA_ZC_AUTO;
	cfg->multi_buffer = VRDMA_MB_AUTO;
	cfg->ecn = true;
	cfg->cnp_interval_us = VRDMA_CONF_DEFAULT_CNP_INTERVAL_US;
	cfg->tx_budget = VRDMA_CONF_DEFAULT_TX_BUDGET;
	cfg->queues = 0;
	snprintf(cfg->xdp_object, sizeof(cfg->xdp_object), "%s",
		 VRDMA_XDP_OBJECT_DEFAULT);
}

/* The one parser behind _load and _parse_string. *cfg is only written on
 * success, so a failed reload leaves a running config alone. */
static int config_parse(struct vrdma_config *cfg, const char *name,
			const char *text, size_t len, char *err, size_t errlen)
{
	struct vrdma_config tmp;
	struct parser p = {
		.cfg = &tmp,
		.name = name,
		.err = err,
		.errlen = errlen,
		.pos = text,
		.end = text + len,
	};
	int ret;

	if (err && errlen)
		err[0] = '\0';
	config_defaults(&tmp, name);

	ret = ini_parse_stream(conf_reader, &p, conf_handler, &p);
	if (!p.rc)
		check_unhandled(&p);
	if (!p.rc && ret > 0)	/* inih refused a line we let through */
		perr(&p, (unsigned int)ret, "%s", syntax_msg);
	if (!p.rc && ret < 0)
		perr_nomem(&p);
	if (!p.rc)
		check_whole(&p);
	free(p.vm_state);
	if (p.rc)
		goto free_vms;

	*cfg = tmp;
	return 0;

free_vms:
	free(tmp.vms);
	return p.rc;
}

int vrdma_config_parse_string(struct vrdma_config *cfg, const char *name,
			      const char *text, char *err, size_t errlen)
{
	return config_parse(cfg, name, text, strlen(text), err, errlen);
}

int vrdma_vm_config_from_keys(struct vrdma_vm_config *vc, const char *name,
			      const char *const (*kv)[2], unsigned int n, char *err, size_t errlen)
{
	struct vrdma_config tmp;
	struct parser p = { .cfg = &tmp, .name = "add-vm", .err = err, .errlen = errlen };
	unsigned int i, k;

	if (err && errlen)
		err[0] = '\0';
	config_defaults(&tmp, "add-vm");
	if (add_vm(&p, name))
		goto free_vms;
	for (i = 0; i < n && !p.rc; i++) {
		k = find_key(vm_keys, ARRAY_SIZE(vm_keys), kv[i][0]);
		if (k == ARRAY_SIZE(vm_keys)) {
			perr(&p, 0, "unknown key '%s' for a vm", kv[i][0]);
			break;
		}
		if (p.vm_state[0].key_line[k] && k != VM_KEY_GID) {
			perr(&p, 0, "'%s' given twice", kv[i][0]);
			break;
		}
		p.vm_state[0].key_line[k] = 1;
		if (!*kv[i][1])
			perr(&p, 0, "empty value for '%s'", kv[i][0]);
		else
			vm_keys[k].set(&p, kv[i][1]);
	}
	if (!p.rc)
		check_vm(&p, &tmp.vms[0]);
	if (!p.rc)
		*vc = tmp.vms[0];
free_vms:
	free(p.vm_state);
	free(tmp.vms);
	return p.rc;
}

bool vrdma_vm_config_equal(const struct vrdma_vm_config *a, const struct vrdma_vm_config *b)
{
	return !strcmp(a->name, b->name) && !strcmp(a->socket, b->socket) &&
	       a->n_gids == b->n_gids &&
	       !memcmp(a->gids, b->gids, a->n_gids * sizeof(a->gids[0])) &&
	       a->has_mac == b->has_mac && (!a->has_mac || !memcmp(a->mac, b->mac, 6)) &&
	       a->max_cq == b->max_cq && a->max_qp == b->max_qp &&
	       a->max_mr == b->max_mr && a->max_mr_pages == b->max_mr_pages &&
	       a->ring_max_cq == b->ring_max_cq && a->ring_max_qp == b->ring_max_qp &&
	       !strcmp(a->socket_owner, b->socket_owner) &&
	       !strcmp(a->socket_group, b->socket_group) && a->socket_mode == b->socket_mode;
}

int vrdma_config_load(struct vrdma_config *cfg, const char *path,
		      char *err, size_t errlen)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nbuf;
	ssize_t n;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "%s: cannot open: %s", path,
				 strerror(-ret));
		return ret;
	}

	for (;;) {
		if (len == cap) {
			if (cap >= CONF_FILE_MAX) {
				ret = -EFBIG;
				if (err && errlen)
					snprintf(err, errlen,
						 "%s: file is too large (at most %d bytes)",
						 path, CONF_FILE_MAX);
				goto free_buf;
			}
			cap = cap ? cap * 2 : 8192;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				ret = -ENOMEM;
				if (err && errlen)
					snprintf(err, errlen, "%s: out of memory",
						 path);
				goto free_buf;
			}
			buf = nbuf;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			if (err && errlen)
				snprintf(err, errlen, "%s: cannot read: %s",
					 path, strerror(-ret));
			goto free_buf;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}

	ret = config_parse(cfg, path, buf ? buf : "", len, err, errlen);

free_buf:
	free(buf);
	close(fd);
	return ret;
}

void vrdma_config_free(struct vrdma_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->vms);
	cfg->vms = NULL;
	cfg->n_vms = 0;
}
