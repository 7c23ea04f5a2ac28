// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdmactl: inspect and manage a running vrdmad through its control socket.
 * Exit codes: 0 done, 1 the daemon refused or could not be reached, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
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
		"Usage: vrdmactl [-s SOCKET] COMMAND [ARGS] [--json]\n\n"
		"Commands:\n"
		"  status       the port, XDP and AF_XDP modes, queues, workers and VMs\n"
		"  list         the VMs: whether a front-end is connected, socket, GIDs\n"
		"  stats        counters: the XDP program's, the port's (one per drop reason), per VM\n"
		"  stats NAME   one VM's counters: its device and transport\n"
		"  add-vm NAME --gid G[,G...] [--socket PATH] [--mac MAC] [--owner USER]\n"
		"               [--group GROUP] [--mode MODE] [--max-cq N] [--max-qp N]\n"
		"               [--max-mr N] [--max-mr-pages N] [--ring-max-cq N]\n"
		"               [--ring-max-qp N]\n"
		"               serve a new VM (until del-vm or a restart)\n"
		"  del-vm NAME  stop serving a VM: its connection closes, its socket goes\n"
		"  capture FILE [--count N]\n"
		"               write the daemon's RoCE frames to a pcap file (- for stdout)\n"
		"               until N frames or Ctrl-C\n\n"
		"Options (before the command):\n"
		"  -s, --socket SOCKET  control socket (default %s)\n"
		"  -j, --json           print the daemon's JSON answer (see docs/control.md)\n"
		"  -h, --help           show this help\n",
		VRDMA_CONTROL_DEFAULT_SOCKET);
}

static int ctl_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "vrdmactl: socket path %s is too long\n", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "vrdmactl: cannot connect to %s: %s (is vrdmad running? "
			"-s names another control socket)\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int send_request(int fd, json_object *req)
{
	const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text), off = 0;
	ssize_t n;

	while (off <= len) {
		/* the text, then the newline that ends the request */
		n = off < len ? write(fd, text + off, len - off) : write(fd, "\n", 1);
		if (n <= 0) {
			fprintf(stderr, "vrdmactl: cannot send the request: %s\n", strerror(errno));
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/* One request (consumed), one answer: the parsed answer or NULL (message printed). */
static json_object *request_obj(const char *path, json_object *req)
{
	size_t len = 0, cap = 65536;
	json_object *ans = NULL;
	char *buf;
	ssize_t n;
	int fd;

	fd = ctl_connect(path);
	if (fd < 0 || send_request(fd, req) < 0)
		goto close_fd;
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
	json_object_put(req);
	return ans;
}

static json_object *new_request(const char *command)
{
	json_object *req = json_object_new_object();

	json_object_object_add(req, "command", json_object_new_string(command));
	return req;
}

static json_object *request(const char *path, const char *command)
{
	return request_obj(path, new_request(command));
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
	size_t i, n;

	printf("vrdmad %s, pid %s, up %ss, config %s\n", str(d, "version"), str(d, "pid"),
	       str(d, "uptime_s"), str(d, "config"));
	printf("port      %s (ifindex %s, mac %s, mtu %s, RoCE path MTU %s)\n",
	       str(port, "interface"), str(port, "ifindex"), str(port, "mac"), str(port, "mtu"),
	       str(port, "roce_mtu"));
	printf("xdp       %s mode, %s program id %s\n", str(port, "xdp_mode"),
	       !strcmp(str(port, "xdp_attach"), "dispatcher") ? "libxdp dispatcher," : "single",
	       str(port, "xdp_program_id"));
	join_array(get(port, "queues"), buf, sizeof(buf));
	printf("af_xdp    %s, queues %s of %s, multi-buffer %s, %s frames per sendto\n",
	       json_object_get_boolean(get(port, "zerocopy")) ? "zero-copy" : "copy mode",
	       buf, str(port, "rx_queues"),
	       json_object_get_boolean(get(port, "multi_buffer")) ? "on" : "off",
	       str(port, "tx_budget"));
	arr = get(d, "workers");
	for (i = 0; i < json_object_array_length(arr); i++) {
		json_object *w = json_object_array_get_idx(arr, i);

		join_array(get(w, "queues"), buf, sizeof(buf));
		if (json_object_get_type(get(w, "cpu")) == json_type_int)
			printf("worker %-3s queues %s, CPU %s\n", str(w, "id"), buf, str(w, "cpu"));
		else
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
	/* after a restart: which VMs the last vrdmad's state brought back */
	for (i = 0, n = 0; i < json_object_array_length(arr); i++) {
		json_object *vm = json_object_array_get_idx(arr, i);

		if (strcmp(str(vm, "start"), "new"))
			printf("%s%-16s %s\n", n++ ? "" : "\n", str(vm, "name"), str(vm, "start"));
	}
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
 * Returns -1 to go on (optind at the first operand), else the exit code. */
static int parse_opts(int argc, char **argv, const char *optstring, const char **path,
		      bool *json)
{
	int c;

	optind = 0;	/* getopt starts over: argv is a command's own */
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

/* status, list, stats [NAME]: argv[0] is the command. */
static int cmd_show(int argc, char **argv, const char *path, bool json)
{
	const char *cmd = argv[0], *vm_name = NULL;
	json_object *ans, *data;
	int ret;

	ret = parse_opts(argc, argv, "s:jh", &path, &json);
	if (ret >= 0)
		return ret;
	/* stats takes a VM name; status and list take no argument */
	if (!strcmp(cmd, "stats") && optind < argc)
		vm_name = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "vrdmactl: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	ret = 1;
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

/* add-vm's options: each is a [vm NAME] key of vrdmad.conf(5), and the
 * daemon checks them as it checks the file. */
static const struct option add_opts[] = {
	{ "socket", required_argument, NULL, 's' },
	{ "gid", required_argument, NULL, 'g' },
	{ "mac", required_argument, NULL, 'm' },
	{ "owner", required_argument, NULL, 'o' },
	{ "group", required_argument, NULL, 'G' },
	{ "mode", required_argument, NULL, 'M' },
	{ "max-cq", required_argument, NULL, 'c' },
	{ "max-qp", required_argument, NULL, 'q' },
	{ "max-mr", required_argument, NULL, 'r' },
	{ "max-mr-pages", required_argument, NULL, 'P' },
	{ "ring-max-cq", required_argument, NULL, 'C' },
	{ "ring-max-qp", required_argument, NULL, 'Q' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{}
};
static const char *const add_keys[] = {	/* parallel to add_opts */
	"socket", "gid", "mac", "socket_owner", "socket_group", "socket_mode", "max_cq", "max_qp",
	"max_mr", "max_mr_pages", "ring_max_cq", "ring_max_qp",
};

static int cmd_add_vm(int argc, char **argv, const char *path, bool json)
{
	json_object *req, *vm = json_object_new_object(), *ans, *data, *old;
	const char *key, *name;
	int c, k, ret = 2;

	optind = 0;
	while ((c = getopt_long(argc, argv, "s:g:m:o:G:M:c:q:r:P:C:Q:jh", add_opts, NULL)) != -1) {
		if (c == 'j') {
			json = true;
			continue;
		}
		if (c == 'h') {
			usage(stdout);
			ret = 0;
			goto put_vm;
		}
		for (k = 0; add_opts[k].name && add_opts[k].val != c; k++)
			;
		if (!add_opts[k].name || k >= (int)(sizeof(add_keys) / sizeof(add_keys[0]))) {
			usage(stderr);
			goto put_vm;
		}
		key = add_keys[k];
		/* --gid may repeat, like the file's gid key */
		if (c == 'g' && json_object_object_get_ex(vm, key, &old)) {
			size_t n = strlen(json_object_get_string(old)) + strlen(optarg) + 2;
			char *joined = malloc(n);

			if (!joined)
				goto put_vm;
			snprintf(joined, n, "%s,%s", json_object_get_string(old), optarg);
			json_object_object_add(vm, key, json_object_new_string(joined));
			free(joined);
			continue;
		}
		if (json_object_object_get_ex(vm, key, NULL)) {
			fprintf(stderr, "vrdmactl: --%s given twice\n", add_opts[k].name);
			goto put_vm;
		}
		json_object_object_add(vm, key, json_object_new_string(optarg));
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "vrdmactl: add-vm takes one NAME%s\n",
			optind < argc ? ", and options" : "");
		goto put_vm;
	}
	name = argv[optind];
	if (!json_object_object_get_ex(vm, "gid", NULL)) {
		fprintf(stderr, "vrdmactl: add-vm needs --gid (the VM's addresses)\n");
		goto put_vm;
	}
	req = new_request("add-vm");
	json_object_object_add(req, "name", json_object_new_string(name));
	json_object_object_add(req, "vm", vm);
	ans = request_obj(path, req);
	data = answer_data(ans);
	ret = 1;
	if (data) {
		if (json)
			print_json(data);
		else
			printf("vm %s added, socket %s\n", name, str(data, "socket"));
		ret = 0;
	}
	json_object_put(ans);
	return ret;

put_vm:
	json_object_put(vm);
	return ret;
}

static int cmd_del_vm(int argc, char **argv, const char *path, bool json)
{
	json_object *req, *ans;
	int ret;

	ret = parse_opts(argc, argv, "jh", &path, &json);
	if (ret >= 0)
		return ret;
	if (optind + 1 != argc) {
		fprintf(stderr, "vrdmactl: del-vm takes one NAME\n");
		return 2;
	}
	req = new_request("del-vm");
	json_object_object_add(req, "name", json_object_new_string(argv[optind]));
	ans = request_obj(path, req);
	ret = answer_data(ans) ? 0 : 1;
	if (!ret && !json)
		printf("vm %s removed\n", argv[optind]);
	else if (!ret)
		print_json(get(ans, "data"));
	json_object_put(ans);
	return ret;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	interrupted = 1;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	ssize_t n;

	while (len) {
		n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#define PCAP_HEADER 24
#define PCAP_RECORD 16
#define CAPTURE_BUF (1u << 20)

/* Whole pcap units at the front of buf[0..len): the file header first, then
 * records; what is left is a piece of the next. */
static size_t pcap_complete(const uint8_t *buf, size_t len, bool *have_header, uint64_t *frames)
{
	size_t off = 0;
	uint32_t incl;

	if (!*have_header) {
		if (len < PCAP_HEADER)
			return 0;
		*have_header = true;
		off = PCAP_HEADER;
	}
	while (len - off >= PCAP_RECORD) {
		memcpy(&incl, buf + off + 8, sizeof(incl));
		if (incl > CAPTURE_BUF - PCAP_RECORD || len - off - PCAP_RECORD < incl)
			break;
		off += PCAP_RECORD + incl;
		(*frames)++;
	}
	return off;
}

/* capture FILE [--count N]: the daemon's frames into a pcap file, until N
 * frames or Ctrl-C; the file holds only whole records either way. */
static int cmd_capture(int argc, char **argv, const char *path, bool json)
{
	static const struct option cap_opts[] = {
		{ "count", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct sigaction sa = { .sa_handler = on_interrupt };	/* no SA_RESTART */
	uint64_t count = 0, frames = 0;
	bool have_header = false, to_stdout;
	json_object *req, *ans;
	size_t len = 0, done;
	uint8_t *buf = NULL;
	char *nl, *end;
	int c, fd, out = -1, ret = 2;
	ssize_t n;

	(void)json;
	optind = 0;
	while ((c = getopt_long(argc, argv, "c:h", cap_opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			errno = 0;
			count = strtoull(optarg, &end, 10);
			if (errno || *end || end == optarg || *optarg == '-' || !count) {
				fprintf(stderr, "vrdmactl: --count must be a number of frames, 1 or more\n");
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc) {
		fprintf(stderr, "vrdmactl: capture takes one FILE (- for stdout)\n");
		return 2;
	}
	to_stdout = !strcmp(argv[optind], "-");
	ret = 1;
	buf = malloc(CAPTURE_BUF);
	fd = ctl_connect(path);
	if (!buf || fd < 0)
		goto free_buf;
	req = new_request("capture");
	json_object_object_add(req, "count", json_object_new_uint64(count));
	if (send_request(fd, req) < 0) {
		json_object_put(req);
		goto close_fd;
	}
	json_object_put(req);
	/* The answer is one line; the stream follows it. */
	while (!(nl = memchr(buf, '\n', len))) {
		n = read(fd, buf + len, CAPTURE_BUF - 1 - len);
		if (n <= 0) {
			fprintf(stderr, "vrdmactl: the daemon closed the connection without an answer\n");
			goto close_fd;
		}
		len += (size_t)n;
	}
	*nl = '\0';
	ans = json_tokener_parse((char *)buf);
	if (!answer_data(ans)) {
		if (!ans)
			fprintf(stderr, "vrdmactl: the daemon's answer is not JSON\n");
		json_object_put(ans);
		goto close_fd;
	}
	json_object_put(ans);
	len -= (size_t)((uint8_t *)nl + 1 - buf);
	memmove(buf, nl + 1, len);
	out = to_stdout ? STDOUT_FILENO :
	      open(argv[optind], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (out < 0) {
		fprintf(stderr, "vrdmactl: cannot write %s: %s\n", argv[optind], strerror(errno));
		goto close_fd;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!to_stdout)
		fprintf(stderr, "capturing into %s%s\n", argv[optind],
			count ? "" : " (Ctrl-C stops)");
	for (;;) {
		done = pcap_complete(buf, len, &have_header, &frames);
		if (done && write_all(out, buf, done) < 0) {
			fprintf(stderr, "vrdmactl: writing %s: %s\n", argv[optind], strerror(errno));
			goto close_out;
		}
		len -= done;
		memmove(buf, buf + done, len);
		if (interrupted || (count && frames >= count))
			break;
		n = read(fd, buf + len, CAPTURE_BUF - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (count && frames < count) {
				fprintf(stderr, "vrdmactl: the daemon ended the capture after %llu of %llu frames\n",
					(unsigned long long)frames, (unsigned long long)count);
				goto close_out;
			}
			break;
		}
		len += (size_t)n;
	}
	fprintf(stderr, "%llu frame(s) captured\n", (unsigned long long)frames);
	ret = 0;
close_out:
	if (!to_stdout && close(out) < 0 && !ret) {
		fprintf(stderr, "vrdmactl: writing %s: %s\n", argv[optind], strerror(errno));
		ret = 1;
	}
close_fd:
	if (fd >= 0)
		close(fd);
free_buf:
	free(buf);
	return ret;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv, const char *path, bool json);
} commands[] = {
	{ "status", cmd_show },
	{ "list", cmd_show },
	{ "stats", cmd_show },
	{ "add-vm", cmd_add_vm },
	{ "del-vm", cmd_del_vm },
	{ "capture", cmd_capture },
};

int main(int argc, char **argv)
{
	const char *path = VRDMA_CONTROL_DEFAULT_SOCKET;
	bool json = false;
	size_t i;
	int ret;

	ret = parse_opts(argc, argv, "+s:jh", &path, &json);
	if (ret >= 0)
		return ret;
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[optind], commands[i].name))
			return commands[i].fn(argc - optind, argv + optind, path, json);
	fprintf(stderr, "vrdmactl: unknown command '%s' (try --help)\n", argv[optind]);
	return 2;
}
