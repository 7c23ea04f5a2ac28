// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdmactl: inspect a running vrdmad through its control socket.
 * Exit codes: 0 done, 1 the daemon refused or could not be reached, 2 usage.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vrdma_control.h"

#define MAX_ANSWER (16u << 20)

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: vrdmactl [-s SOCKET] COMMAND [--json]\n\n"
		"Commands:\n"
		"  status       the port, XDP and AF_XDP modes, queues, workers and VMs\n"
		"  list         the VMs: whether a front-end is connected, socket, GIDs\n"
		"  stats        counters: the XDP program's, the port's (one per drop reason), per VM\n"
		"  stats NAME   one VM's counters: its device and transport\n\n"
		"Options:\n"
		"  -s, --socket SOCKET  control socket (default %s)\n"
		"  -j, --json           print the daemon's JSON answer (see docs/control.md)\n"
		"  -h, --help           show this help\n",
		VRDMA_CONTROL_DEFAULT_SOCKET);
}

/* One request, one answer: returns the parsed answer or NULL (message printed). */
static json_object *request(const char *path, const char *command)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = 0, cap = 65536;
	json_object *ans = NULL;
	char req[128], *buf;
	ssize_t n;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "vrdmactl: socket path %s is too long\n", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "vrdmactl: cannot connect to %s: %s (is vrdmad running? "
			"-s names another control socket)\n", path, strerror(errno));
		goto close_fd;
	}
	n = snprintf(req, sizeof(req), "{\"command\": \"%s\"}\n", command);
	if (write(fd, req, n) != n) {
		fprintf(stderr, "vrdmactl: cannot send to %s: %s\n", path, strerror(errno));
		goto close_fd;
	}
	buf = malloc(cap + 1);
	if (!buf)
		goto close_fd;
	while ((n = read(fd, buf + len, cap - len)) > 0) {
		len += n;
		if (len == cap) {
			char *nb = cap < MAX_ANSWER ? realloc(buf, 2 * cap + 1) : NULL;

			if (!nb) {
				fprintf(stderr, "vrdmactl: answer too large\n");
				goto free_buf;
			}
			buf = nb;
			cap *= 2;
		}
	}
	if (n < 0) {
		fprintf(stderr, "vrdmactl: reading from %s: %s\n", path, strerror(errno));
		goto free_buf;
	}
	buf[len] = '\0';
	ans = json_tokener_parse(buf);
	if (!ans || !json_object_is_type(ans, json_type_object)) {
		fprintf(stderr, "vrdmactl: the daemon's answer is not a JSON object\n");
		json_object_put(ans);
		ans = NULL;
	}
free_buf:
	free(buf);
close_fd:
	if (fd >= 0)
		close(fd);
	return ans;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

static const char *str(json_object *o, const char *key)
{
	const char *s = json_object_get_string(get(o, key));

	return s ? s : "-";
}

static void join_array(json_object *arr, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < json_object_array_length(arr) && off < len; i++)
		off += snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
				json_object_get_string(json_object_array_get_idx(arr, i)));
	if (!i)
		snprintf(buf, len, "-");
}

static void print_status(json_object *d)
{
	json_object *port = get(d, "port"), *arr;
	char buf[1024];
	size_t i;

	printf("vrdmad %s, pid %s, up %ss, config %s\n", str(d, "version"), str(d, "pid"),
	       str(d, "uptime_s"), str(d, "config"));
	printf("port      %s (ifindex %s, mac %s, mtu %s)\n", str(port, "interface"),
	       str(port, "ifindex"), str(port, "mac"), str(port, "mtu"));
	printf("xdp       %s mode, %s program id %s\n", str(port, "xdp_mode"),
	       !strcmp(str(port, "xdp_attach"), "dispatcher") ? "libxdp dispatcher," : "single",
	       str(port, "xdp_program_id"));
	join_array(get(port, "queues"), buf, sizeof(buf));
	printf("af_xdp    %s, queues %s of %s, multi-buffer %s\n",
	       json_object_get_boolean(get(port, "zerocopy")) ? "zero-copy" : "copy mode",
	       buf, str(port, "rx_queues"),
	       json_object_get_boolean(get(port, "multi_buffer")) ? "on" : "off");
	arr = get(d, "workers");
	for (i = 0; i < json_object_array_length(arr); i++) {
		json_object *w = json_object_array_get_idx(arr, i);

		join_array(get(w, "queues"), buf, sizeof(buf));
		printf("worker %-3s queues %s\n", str(w, "id"), buf);
	}
	arr = get(d, "vms");
	printf("\n%-16s %-32s %-17s %s\n", "VM", "SOCKET", "MAC", "GIDS");
	for (i = 0; i < json_object_array_length(arr); i++) {
		json_object *vm = json_object_array_get_idx(arr, i);

		join_array(get(vm, "gids"), buf, sizeof(buf));
		printf("%-16s %-32s %-17s %s\n", str(vm, "name"), str(vm, "socket"),
		       str(vm, "mac"), buf);
	}
	if (!i)
		printf("(no VMs)\n");
}

static void print_counters(json_object *o, int indent)
{
	json_object_object_foreach(o, key, val) {
		if (json_object_is_type(val, json_type_object)) {
			printf("%*s%s\n", indent, "", key);
			print_counters(val, indent + 2);
		} else {
			printf("%*s%-*s %s\n", indent, "", 24 - indent, key,
			       json_object_get_string(val));
		}
	}
}

static void print_stats(json_object *d)
{
	json_object *arr = get(d, "vms");
	size_t i;

	printf("xdp program\n");
	print_counters(get(d, "xdp"), 2);
	printf("port\n");
	print_counters(get(d, "port"), 2);
	printf("\n%-16s %16s %16s\n", "VM", "RX_FRAMES", "RX_BYTES");
	for (i = 0; i < json_object_array_length(arr); i++) {
		json_object *vm = json_object_array_get_idx(arr, i);

		printf("%-16s %16s %16s\n", str(vm, "name"), str(vm, "rx_frames"),
		       str(vm, "rx_bytes"));
	}
}

static json_object *find_vm(json_object *d, const char *name)
{
	json_object *arr = get(d, "vms");
	size_t i;

	for (i = 0; i < json_object_array_length(arr); i++) {
		json_object *vm = json_object_array_get_idx(arr, i);

		if (!strcmp(str(vm, "name"), name))
			return vm;
	}
	return NULL;
}

/* A VM's state from its stats: connected, waiting for a front-end, or
 * waiting after its device was marked broken (the count says how often). */
static void print_list(json_object *status, json_object *stats)
{
	json_object *arr = get(status, "vms");
	char gids[1024], state[32];
	size_t i;

	printf("%-16s %-12s %-32s %s\n", "VM", "STATE", "SOCKET", "GIDS");
	for (i = 0; i < json_object_array_length(arr); i++) {
		json_object *vm = json_object_array_get_idx(arr, i);
		json_object *dev = get(find_vm(stats, str(vm, "name")), "device");
		int broken = json_object_get_int(get(dev, "broken"));

		if (json_object_get_boolean(get(dev, "connected")))
			snprintf(state, sizeof(state), "connected");
		else if (broken)
			snprintf(state, sizeof(state), "broken(%d)", broken);
		else
			snprintf(state, sizeof(state), "waiting");
		join_array(get(vm, "gids"), gids, sizeof(gids));
		printf("%-16s %-12s %-32s %s\n", str(vm, "name"), state, str(vm, "socket"), gids);
	}
	if (!i)
		printf("(no VMs)\n");
}

static void print_json(json_object *o);

/* list --json: status's VMs, each with its connection state from stats. */
static void print_list_json(json_object *status, json_object *stats)
{
	json_object *arr = get(status, "vms");
	size_t i;

	for (i = 0; i < json_object_array_length(arr); i++) {
		json_object *vm = json_object_array_get_idx(arr, i);
		json_object *dev = get(find_vm(stats, str(vm, "name")), "device");

		json_object_object_add(vm, "connected", json_object_get(get(dev, "connected")));
		json_object_object_add(vm, "broken", json_object_get(get(dev, "broken")));
	}
	print_json(arr);
}

static void print_json(json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_SPACED |
						       JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* The answer's data, or NULL with the daemon's error printed. */
static json_object *answer_data(json_object *ans)
{
	if (!ans)
		return NULL;
	if (!json_object_get_boolean(get(ans, "ok"))) {
		fprintf(stderr, "vrdmactl: %s\n", str(ans, "error"));
		return NULL;
	}
	return get(ans, "data");
}

static const struct option opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{}
};

/* Options may come before and after the command (`vrdmactl stats --json`):
 * parse up to the first non-option ('+'), then again after the command.
 * Returns -1 to go on, else the exit code. */
static int parse_opts(int argc, char **argv, const char *optstring, const char **path,
		      bool *json)
{
	int c;

	while ((c = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
		switch (c) {
		case 's': *path = optarg; break;
		case 'j': *json = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *path = VRDMA_CONTROL_DEFAULT_SOCKET, *cmd, *vm_name = NULL;
	json_object *ans, *data;
	bool json = false;
	int ret;

	ret = parse_opts(argc, argv, "+s:jh", &path, &json);
	if (ret >= 0)
		return ret;
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind++];
	ret = parse_opts(argc, argv, "s:jh", &path, &json);
	if (ret >= 0)
		return ret;
	ret = 1;
	/* stats takes a VM name; nothing else takes an argument */
	if (!strcmp(cmd, "stats") && optind < argc)
		vm_name = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "vrdmactl: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (strcmp(cmd, "status") && strcmp(cmd, "stats") && strcmp(cmd, "list")) {
		fprintf(stderr, "vrdmactl: unknown command '%s' (try --help)\n", cmd);
		return 2;
	}
	ans = request(path, !strcmp(cmd, "list") ? "status" : cmd);
	data = answer_data(ans);
	if (!data)
		goto put_ans;
	if (!strcmp(cmd, "list")) {
		json_object *stats_ans = request(path, "stats"), *stats = answer_data(stats_ans);

		if (stats) {
			if (json)
				print_list_json(data, stats);
			else
				print_list(data, stats);
			ret = 0;
		}
		json_object_put(stats_ans);
		goto put_ans;
	}
	if (vm_name) {
		data = find_vm(data, vm_name);
		if (!data) {
			fprintf(stderr, "vrdmactl: no VM named '%s' (vrdmactl list shows them)\n",
				vm_name);
			goto put_ans;
		}
	}
	if (json)
		print_json(data);
	else if (!strcmp(cmd, "status"))
		print_status(data);
	else if (vm_name)
		print_counters(data, 0);
	else
		print_stats(data);
	ret = 0;
put_ans:
	json_object_put(ans);
	return ret;
}
