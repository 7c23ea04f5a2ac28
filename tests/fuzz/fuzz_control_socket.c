// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target for the control socket (daemon/core/control.c; the
 * protocol is docs/control.md), `make fuzz`: up to four clients write bytes
 * to a real control socket, in the pieces and the order the input says, and
 * vrdmad's event loop reads them. (fuzz_ctrl is the device's control
 * commands from the guest, not this.)
 *
 * Adding and removing a VM is vm_admin.c's work on sockets, workers and the
 * XDP map, covered by the integration tests; here vm_admin_add/_remove are
 * stand-ins that keep the VM table as vm_admin.c does and check what the
 * control layer hands them.
 *
 * Input: records, as long as the input lasts.
 *   u8 op: bits 0-1 the client (0..3; one that is not connected connects)
 *          bits 2-4 0, 1: write: u8 length, then that many bytes
 *                   2:    write u8 byte repeated u8 × 1 KiB times (a
 *                         request over VRDMA_CONTROL_MAX_REQUEST)
 *                   3:    shut down its writing side
 *                   4:    close it without reading (the next op reconnects)
 *                   5, 6: run the daemon's loop once
 *                   7:    read what has come
 * At the end each client still connected shuts down its writing side and
 * reads until vrdmad closes the connection.
 *
 * Checks: a client that sent nothing gets nothing; one that sent a byte gets
 * exactly one line, a JSON object with "protocol" and "ok", and an error is a
 * non-empty string of printable ASCII (vrdmactl prints it to a terminal);
 * status names the VMs of the table, add-vm's answer a VM in it; the stand-in
 * add gets a configuration within vrdmad.conf(5)'s bounds; no connection is
 * left behind (LeakSanitizer sees the rest). FUZZ_VERBOSE=1 keeps the
 * daemon's log and prints each answer.
 */
#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "daemon.h"
#include "log.h"
#include "vm_admin.h"
#include "vm_config_ok.h"
#include "vrdma_control.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)
#define CLIENTS 4
#define ANSWER_MAX (4u << 20)
#define LOOP_MAX 100000

struct client {
	int fd;			/* -1: not connected */
	size_t sent;		/* bytes vrdmad may have read */
	char *answer;
	size_t len, cap;
	bool eof;
};

static struct vrdmad d;
static char dir[] = "/tmp/fuzz_control_socket.XXXXXX";
static char sock[128];
static struct client cl[CLIENTS];
static unsigned int added, removed;
/* every name added during this input: an answer may be older than the table */
static char (*names)[VRDMA_CONF_NAME_MAX + 1];
static unsigned int n_names;

static bool was_added(const char *name)
{
	for (unsigned int i = 0; i < n_names; i++)
		if (!strcmp(names[i], name))
			return true;
	return false;
}

/* ---- the stand-ins for vm_admin.c ---- */

int vm_admin_add(struct vrdmad *dd, const struct vrdma_vm_config *vc, bool runtime, char *err,
		 size_t errlen)
{
	int ret, id;

	CHECK(dd == &d && runtime);
	CHECK(vm_config_ok(vc));
	ret = vm_table_check(&d.vms, vc, d.cfg.control_socket, err, errlen);
	if (ret)
		return ret;
	id = vm_table_reserve(&d.vms, vc, runtime);
	if (id < 0) {
		snprintf(err, errlen, "no free VM slot");
		return id;
	}
	snprintf(d.vms.vms[id].start, sizeof(d.vms.vms[id].start), "new");
	vm_table_publish(&d.vms, (uint32_t)id);
	if (!was_added(vc->name)) {
		names = realloc(names, (n_names + 1) * sizeof(*names));
		CHECK(names);
		snprintf(names[n_names++], sizeof(*names), "%s", vc->name);
	}
	added++;
	return 0;
}

void vm_admin_remove(struct vrdmad *dd, struct vm *vm, const char *why)
{
	CHECK(dd == &d && vm->used && why);
	vm_table_remove(&d.vms, vm->id);
	removed++;
}

/* ---- the clients ---- */

static void run_once(void)
{
	CHECK(sd_event_run(d.event, 0) >= 0);
}

static void client_read(struct client *c)
{
	ssize_t n;

	while (c->fd >= 0 && !c->eof) {
		if (c->len == c->cap) {
			CHECK(c->cap < ANSWER_MAX);
			c->cap = c->cap ? 2 * c->cap : 4096;
			c->answer = realloc(c->answer, c->cap);
			CHECK(c->answer);
		}
		n = read(c->fd, c->answer + c->len, c->cap - c->len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {		/* vrdmad closed it (or reset it) */
			c->eof = true;
			return;
		}
		c->len += (size_t)n;
	}
}

/* What a client that wrote something must have got: one answer line. */
static void check_answer(struct client *c)
{
	json_object *a, *v, *data, *vms, *name;
	const char *s;
	size_t i;

	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "client %td sent %zu bytes, got: %.*s\n", c - cl, c->sent,
			(int)c->len, c->answer ? c->answer : "");
	if (!c->sent) {
		CHECK(c->len == 0);
		return;
	}
	CHECK(c->len > 0 && c->answer[c->len - 1] == '\n');
	CHECK(memchr(c->answer, '\n', c->len) == c->answer + c->len - 1);
	c->answer[c->len - 1] = '\0';
	a = json_tokener_parse(c->answer);
	CHECK(a && json_object_is_type(a, json_type_object));
	CHECK(json_object_object_get_ex(a, "protocol", &v) && json_object_is_type(v, json_type_int) &&
	      json_object_get_int(v) == VRDMA_CONTROL_PROTOCOL);
	CHECK(json_object_object_get_ex(a, "ok", &v) && json_object_is_type(v, json_type_boolean));
	if (!json_object_get_boolean(v)) {
		CHECK(json_object_object_get_ex(a, "error", &v) &&
		      json_object_is_type(v, json_type_string));
		s = json_object_get_string(v);
		CHECK(s[0]);
		for (; *s; s++)
			CHECK(*s >= 0x20 && *s < 0x7f);
		json_object_put(a);
		return;
	}
	CHECK(json_object_object_get_ex(a, "data", &data) &&
	      json_object_is_type(data, json_type_object));
	if (json_object_object_get_ex(data, "vms", &vms) &&
	    json_object_object_get_ex(data, "workers", &v)) {
		/* status: VMs that were added (the table may have changed
		 * since vrdmad answered) */
		CHECK(json_object_is_type(vms, json_type_array));
		CHECK(json_object_array_length(vms) <= VM_TABLE_SLOTS);
		for (i = 0; i < json_object_array_length(vms); i++) {
			CHECK(json_object_object_get_ex(json_object_array_get_idx(vms, i), "name",
							&name));
			CHECK(json_object_is_type(name, json_type_string));
			CHECK(was_added(json_object_get_string(name)));
		}
	}
	if (json_object_object_get_ex(data, "socket", &v) &&
	    json_object_object_get_ex(data, "name", &name)) {
		/* add-vm: the VM it names was added (and may be gone since) */
		CHECK(json_object_is_type(name, json_type_string));
		CHECK(was_added(json_object_get_string(name)));
	}
	json_object_put(a);
}

static void client_drop(struct client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->answer);
	*c = (struct client){ .fd = -1 };
}

/* Run the loop until it has nothing to do. */
static void settle(void)
{
	unsigned int k;
	int r;

	for (k = 0; (r = sd_event_run(d.event, 0)) > 0; k++)
		CHECK(k < LOOP_MAX);
	CHECK(r == 0);
}

/* Connect once vrdmad let go of what the closed clients left behind, and
 * let it accept: never more than CLIENTS connections at once, so none is
 * refused for too many clients. */
static void client_connect(struct client *c)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	settle();
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	CHECK(c->fd >= 0);
	CHECK(connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	settle();
	CHECK(control_clients(&d) <= CLIENTS);
}

static void client_write(struct client *c, const uint8_t *p, size_t n)
{
	unsigned int k = 0;
	ssize_t w;

	while (n && c->fd >= 0) {
		w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			/* vrdmad reads up to its limit, then answers and closes */
			run_once();
			client_read(c);
			CHECK(++k < LOOP_MAX);
			continue;
		}
		if (w < 0) {
			CHECK(errno == EPIPE || errno == ECONNRESET);
			return;
		}
		c->sent += (size_t)w;
		p += w;
		n -= (size_t)w;
	}
}

/* ---- one input ---- */

static void setup_daemon(void)
{
	CHECK(control_open(&d, sock) == 0);
	added = removed = 0;
	n_names = 0;
	for (unsigned int i = 0; i < CLIENTS; i++)
		cl[i] = (struct client){ .fd = -1 };
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char conf[512], err[VRDMA_CONF_ERR_MAX];

	(void)argc;
	(void)argv;
	if (!getenv("FUZZ_VERBOSE"))
		log_set_level(VRDMA_LOG_ERROR - 1);
	signal(SIGPIPE, SIG_IGN);	/* as vrdmad does */
	CHECK(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/control.sock", dir);
	snprintf(conf, sizeof(conf), "[daemon]\ncontrol_socket = %s\n[port]\ninterface = veth0\n",
		 sock);
	CHECK(vrdma_config_parse_string(&d.cfg, "fuzz.conf", conf, err, sizeof(err)) == 0);
	CHECK(sd_event_new(&d.event) >= 0);
	CHECK(vm_table_init(&d.vms) == 0);
	d.port.gids_fd = d.port.xsks_fd = d.port.stats_fd = -1;
	snprintf(d.port.ifname, sizeof(d.port.ifname), "veth0");
	d.port.frame_mtu = 1500;
	d.broken_fd = -1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *end = data + size;
	struct client *c;
	unsigned int i, k, n_vms;
	const struct vm *vm;
	uint8_t op, *fill;
	size_t n;

	setup_daemon();
	while (data < end) {
		op = *data++;
		c = &cl[op & 3];
		switch ((op >> 2) & 7) {
		case 0:
		case 1:
			n = data < end ? *data++ : 0;
			n = n < (size_t)(end - data) ? n : (size_t)(end - data);
			if (c->fd < 0)
				client_connect(c);
			client_write(c, data, n);
			data += n;
			break;
		case 2:
			if (end - data < 2) {
				data = end;
				break;
			}
			n = (size_t)data[1] << 10;
			fill = malloc(n + 1);
			CHECK(fill);
			memset(fill, data[0], n);
			data += 2;
			if (c->fd < 0)
				client_connect(c);
			client_write(c, fill, n);
			free(fill);
			break;
		case 3:
			if (c->fd < 0)
				client_connect(c);
			shutdown(c->fd, SHUT_WR);
			break;
		case 4:
			client_drop(c);
			break;
		case 5:
		case 6:
			run_once();
			break;
		case 7:
			client_read(c);
			break;
		}
	}
	/* Every client says it is done and waits for its answer. */
	for (i = 0; i < CLIENTS; i++)
		if (cl[i].fd >= 0)
			shutdown(cl[i].fd, SHUT_WR);
	for (k = 0; k < LOOP_MAX; k++) {
		bool all = true;

		run_once();
		for (i = 0; i < CLIENTS; i++) {
			client_read(&cl[i]);
			all &= cl[i].fd < 0 || cl[i].eof;
		}
		if (all)
			break;
	}
	for (i = 0; i < CLIENTS; i++) {
		if (cl[i].fd >= 0) {
			CHECK(cl[i].eof);	/* vrdmad never left a client waiting */
			check_answer(&cl[i]);
		}
		client_drop(&cl[i]);
	}
	for (k = 0; control_clients(&d) && k < LOOP_MAX; k++)
		run_once();
	CHECK(control_clients(&d) == 0);
	n_vms = 0;
	vm_table_for_each(&d.vms, vm)
		n_vms++;
	CHECK(n_vms == added - removed && n_vms == d.vms.n_vms);
	control_close(&d);
	/* the table is big (a slot per VM vrdmad can serve): emptied, not freed */
	vm_table_for_each(&d.vms, vm)
		vm_table_remove(&d.vms, vm->id);
	CHECK(d.vms.n_vms == 0 && d.vms.n_gids == 0);
	return 0;
}
