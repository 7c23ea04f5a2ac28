// SPDX-License-Identifier: GPL-2.0-only
/*
 * Control socket (protocol in include/vrdma_control.h, docs/control.md).
 * Non-blocking on the sd-event loop: a slow or silent client costs a slot,
 * never the loop. Mode 0600: only root may talk to the daemon.
 */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "capture.h"
#include "log.h"
#include "unix_path.h"
#include "vm_admin.h"
#include "vrdma_control.h"

#define CONTROL_MAX_CONNS	16
#define CONTROL_TIMEOUT_USEC	(5 * 1000000ull)

struct control_conn {
	struct control_server *srv;
	struct control_conn *next;
	int fd;
	sd_event_source *io, *timer;
	char *buf;		/* request, then response */
	size_t len, off;
	bool answering;
	/* capture: after the answer, a pcap stream until want frames (0: until
	 * the client goes) */
	bool capturing;
	uint64_t want, got;
	uint8_t *out;
	size_t out_len, out_off;
};

#define CAPTURE_OUT_BYTES (512u << 10)
#define CAPTURE_TICK_USEC 10000ull	/* drain the rings every 10 ms */

struct control_server {
	struct vrdmad *d;
	int fd;
	sd_event_source *io;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct control_conn *conns;
	unsigned int n_conns;
	struct control_conn *capture;	/* the one capture running, or NULL */
};

static void conn_free(struct control_conn *c)
{
	struct control_conn **pp;

	for (pp = &c->srv->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	c->srv->n_conns--;
	if (c->srv->capture == c) {
		capture_stop(c->srv->d->workers, c->srv->d->n_workers);
		c->srv->capture = NULL;
		log_info("capture: ended, %" PRIu64 " frame(s) sent, %" PRIu64 " lost",
			 c->got, capture_lost(c->srv->d->workers, c->srv->d->n_workers));
	}
	free(c->out);
	sd_event_source_disable_unref(c->io);
	sd_event_source_disable_unref(c->timer);
	close(c->fd);
	free(c->buf);
	free(c);
}

static void format_mac(char *buf, size_t len, const uint8_t m[6])
{
	snprintf(buf, len, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static json_object *json_u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

/* The answer to "status" (the request has nothing more in it). */
static int cmd_status(struct vrdmad *d, json_object *req, json_object **data, char *err,
		      size_t errlen)
{
	json_object *o = json_object_new_object(), *port, *arr, *w, *vm, *gids, *qs;
	const struct xdp_port *p = &d->port;
	const struct vm *v;
	char buf[INET6_ADDRSTRLEN + 1];
	unsigned int i, j;

	(void)req;
	(void)err;
	(void)errlen;
	json_object_object_add(o, "version", json_object_new_string(VRDMAD_VERSION));
	json_object_object_add(o, "pid", json_object_new_int(getpid()));
	json_object_object_add(o, "uptime_s", json_u64((mono_ns() - d->start_ns) / 1000000000ull));
	json_object_object_add(o, "config", json_object_new_string(d->cfg.path));

	port = json_object_new_object();
	json_object_object_add(port, "interface", json_object_new_string(p->ifname));
	json_object_object_add(port, "ifindex", json_object_new_int(p->ifindex));
	format_mac(buf, sizeof(buf), p->mac);
	json_object_object_add(port, "mac", json_object_new_string(buf));
	json_object_object_add(port, "mtu", json_object_new_int(p->mtu));
	json_object_object_add(port, "roce_mtu", json_object_new_int(vdev_roce_mtu(p->frame_mtu)));
	json_object_object_add(port, "xdp_mode", json_object_new_string(xdp_port_mode_name(p)));
	json_object_object_add(port, "xdp_attach",
			       json_object_new_string(p->dispatcher ? "dispatcher" : "single"));
	json_object_object_add(port, "xdp_program_id", json_object_new_int64(p->prog_id));
	json_object_object_add(port, "zerocopy", json_object_new_boolean(xdp_port_zerocopy(p)));
	json_object_object_add(port, "multi_buffer", json_object_new_boolean(p->multi_buffer));
	json_object_object_add(port, "tx_budget",
			       json_object_new_int(p->n_queues ? (int)p->queues[0].tx_batch : 0));
	json_object_object_add(port, "rx_queues", json_object_new_int(p->hw_rx_queues));
	qs = json_object_new_array();
	for (i = 0; i < p->n_queues; i++)
		json_object_array_add(qs, json_object_new_int(p->queues[i].queue_id));
	json_object_object_add(port, "queues", qs);
	json_object_object_add(o, "port", port);

	arr = json_object_new_array();
	for (i = 0; i < d->n_workers; i++) {
		w = json_object_new_object();
		json_object_object_add(w, "id", json_object_new_int(i));
		json_object_object_add(w, "cpu", d->workers[i].cpu < 0 ? NULL :
					  json_object_new_int(d->workers[i].cpu));
		qs = json_object_new_array();
		for (j = 0; j < d->workers[i].n_queues; j++)
			json_object_array_add(qs, json_object_new_int(d->workers[i].queues[j]->queue_id));
		json_object_object_add(w, "queues", qs);
		json_object_array_add(arr, w);
	}
	json_object_object_add(o, "workers", arr);

	arr = json_object_new_array();
	vm_table_for_each(&d->vms, v) {
		const struct vrdma_vm_config *vc = &v->cfg;

		vm = json_object_new_object();
		json_object_object_add(vm, "name", json_object_new_string(vc->name));
		json_object_object_add(vm, "origin",
				       json_object_new_string(v->runtime ? "runtime" : "config"));
		json_object_object_add(vm, "socket", json_object_new_string(vc->socket));
		json_object_object_add(vm, "owner", json_object_new_string(vc->socket_owner));
		json_object_object_add(vm, "group", json_object_new_string(vc->socket_group));
		snprintf(buf, sizeof(buf), "%04o", vc->socket_mode);
		json_object_object_add(vm, "mode", json_object_new_string(buf));
		format_mac(buf, sizeof(buf), vc->has_mac ? vc->mac : p->mac);
		json_object_object_add(vm, "mac", json_object_new_string(buf));
		gids = json_object_new_array();
		for (j = 0; j < vc->n_gids; j++) {
			vrdma_gid_format(&vc->gids[j], buf, sizeof(buf));
			json_object_array_add(gids, json_object_new_string(buf));
		}
		json_object_object_add(vm, "gids", gids);
		json_object_object_add(vm, "max_cq", json_object_new_int(vc->max_cq));
		json_object_object_add(vm, "max_qp", json_object_new_int(vc->max_qp));
		json_object_object_add(vm, "start", json_object_new_string(v->start));
		json_object_array_add(arr, vm);
	}
	json_object_object_add(o, "vms", arr);
	*data = o;
	return 0;
}

/* Each destination's congestion window (docs/congestion.md), by GID. */
static json_object *paths_json(const struct eng_dev *eng)
{
	struct eng_path_info p[ENG_PATH_INFO_MAX];
	json_object *o = json_object_new_object(), *e;
	char gid[INET6_ADDRSTRLEN];
	unsigned int i, n;

	n = eng_dev_paths(eng, p, ENG_PATH_INFO_MAX);
	for (i = 0; i < n; i++) {
		e = json_object_new_object();
		vrdma_gid_format((const struct vrdma_gid *)p[i].dgid, gid, sizeof(gid));
		json_object_object_add(e, "qps", json_u64(p[i].qps));
		json_object_object_add(e, "cwnd", json_u64(p[i].cwnd));
		json_object_object_add(e, "ssthresh", json_u64(p[i].ssthresh));
		json_object_object_add(e, "inflight", json_u64(p[i].inflight));
		json_object_object_add(e, "srtt_us", json_u64(p[i].srtt_ns / 1000));
		json_object_object_add(o, gid, e);
	}
	return o;
}

/* Written by the owning worker, read here without stopping it. */
static json_object *device_json(struct vdev *v)
{
	json_object *e = json_object_new_object(), *t = json_object_new_object();
	const struct vdev_stats *s = &v->stats;
	const struct eng_counters *c;
	unsigned int k;

	json_object_object_add(e, "connected", json_object_new_boolean(
		__atomic_load_n(&v->vu.fd, __ATOMIC_RELAXED) >= 0));
	/* ABI v2 negotiated: its queues are rings in guest memory */
	json_object_object_add(e, "rings", json_object_new_boolean(
		__atomic_load_n(&v->vu.features, __ATOMIC_RELAXED) &
		(1ull << VIRTIO_RDMA_F_RINGS)));
	json_object_object_add(e, "broken", json_u64(stat_read(&s->broken)));
	json_object_object_add(e, "bad_messages", json_u64(stat_read(&v->vu.bad_messages)));
	json_object_object_add(e, "ctrl_cmds", json_u64(stat_read(&s->ctrl_cmds)));
	json_object_object_add(e, "ctrl_errors", json_u64(stat_read(&s->ctrl_errors)));
	json_object_object_add(e, "send_wqes", json_u64(stat_read(&s->send_wqes)));
	json_object_object_add(e, "recv_wqes", json_u64(stat_read(&s->recv_wqes)));
	json_object_object_add(e, "refused_wqes", json_u64(stat_read(&s->refused_wqes)));
	json_object_object_add(e, "refused_mrs", json_u64(stat_read(&s->refused_mrs)));
	json_object_object_add(e, "refused_mws", json_u64(stat_read(&s->refused_mws)));
	json_object_object_add(e, "refused_db_pages", json_u64(stat_read(&s->refused_db_pages)));
	json_object_object_add(e, "ring_errors", json_u64(stat_read(&s->ring_errors)));
	json_object_object_add(e, "stray_doorbells", json_u64(stat_read(&s->stray_doorbells)));
	json_object_object_add(e, "ring_wqes", json_u64(stat_read(&s->ring_wqes)));
	json_object_object_add(e, "events_late", json_u64(stat_read(&s->events_late)));
	json_object_object_add(e, "events_lost", json_u64(stat_read(&s->events_lost)));
	json_object_object_add(e, "srq_wqes", json_u64(stat_read(&s->srq_wqes)));
	json_object_object_add(e, "refused_srq_wqes", json_u64(stat_read(&s->refused_srq_wqes)));
	json_object_object_add(e, "cqes", json_u64(stat_read(&s->cqes)));
	json_object_object_add(e, "events", json_u64(stat_read(&s->events)));
	json_object_object_add(e, "interrupts", json_u64(stat_read(&s->interrupts)));
	json_object_object_add(e, "cq_interrupts", json_u64(stat_read(&s->cq_interrupts)));
	/* v->eng is replaced only on this thread (a reset), so it is stable here. */
	if (v->eng) {
		c = eng_dev_counters(v->eng);
		for (k = 0; k < ENG_CNT_MAX; k++)
			json_object_object_add(t, eng_counter_name(k), json_u64(stat_read(&c->c[k])));
	}
	json_object_object_add(e, "transport", t);
	if (v->eng)
		json_object_object_add(e, "paths", paths_json(v->eng));
	return e;
}

/* The answer to "stats" (the request has nothing more in it). */
static int cmd_stats(struct vrdmad *d, json_object *req, json_object **data, char *err,
		     size_t errlen)
{
	json_object *o = json_object_new_object(), *x, *port, *drops, *arr, *e;
	uint64_t xs[VRDMA_XDP_STAT_MAX], sum[PORT_DROP_MAX] = {}, fr = 0, by = 0, bu = 0;
	uint64_t tf = 0, tb = 0, lo = 0, ho = 0;
	struct xsk_kernel_stats ks;
	const struct vm *v;
	unsigned int i, k;

	(void)req;
	(void)err;
	(void)errlen;
	x = json_object_new_object();
	if (xdp_port_read_stats(&d->port, xs) == 0)
		for (k = 0; k < VRDMA_XDP_STAT_MAX; k++)
			json_object_object_add(x, vrdma_xdp_stat_name(k), json_u64(xs[k]));
	json_object_object_add(o, "xdp", x);

	arr = json_object_new_array();
	for (i = 0; i < d->n_workers; i++) {
		const struct worker_stats *s = &d->workers[i].stats;

		e = json_object_new_object();
		json_object_object_add(e, "id", json_object_new_int(i));
		json_object_object_add(e, "rx_frames", json_u64(stat_read(&s->rx_frames)));
		json_object_object_add(e, "rx_bytes", json_u64(stat_read(&s->rx_bytes)));
		json_object_object_add(e, "wakeups", json_u64(stat_read(&s->wakeups)));
		json_object_object_add(e, "kicks", json_u64(stat_read(&s->kicks)));
		json_object_array_add(arr, e);
		fr += stat_read(&s->rx_frames);
		by += stat_read(&s->rx_bytes);
		bu += stat_read(&s->rx_buffers);
		tf += stat_read(&s->tx_frames);
		tb += stat_read(&s->tx_bytes);
		lo += stat_read(&s->loopback_frames);
		ho += stat_read(&s->handed_over);
		for (k = 0; k < PORT_DROP_MAX; k++)
			sum[k] += stat_read(&s->drops[k]);
	}
	port = json_object_new_object();
	json_object_object_add(port, "rx_frames", json_u64(fr));
	json_object_object_add(port, "rx_bytes", json_u64(by));
	json_object_object_add(port, "rx_buffers", json_u64(bu));
	json_object_object_add(port, "tx_frames", json_u64(tf));
	json_object_object_add(port, "tx_bytes", json_u64(tb));
	json_object_object_add(port, "loopback_frames", json_u64(lo));
	json_object_object_add(port, "handed_over", json_u64(ho));
	json_object_object_add(port, "capture_lost", json_u64(capture_lost(d->workers, d->n_workers)));
	drops = json_object_new_object();
	for (k = 0; k < PORT_DROP_MAX; k++)
		json_object_object_add(drops, port_drop_name(k), json_u64(sum[k]));
	json_object_object_add(port, "drops", drops);
	if (xdp_port_read_xsk_stats(&d->port, &ks) == 0) {
		x = json_object_new_object();
		json_object_object_add(x, "rx_dropped", json_u64(ks.rx_dropped));
		json_object_object_add(x, "rx_ring_full", json_u64(ks.rx_ring_full));
		json_object_object_add(x, "rx_fill_ring_empty", json_u64(ks.rx_fill_ring_empty));
		json_object_object_add(x, "rx_invalid_descs", json_u64(ks.rx_invalid_descs));
		json_object_object_add(x, "tx_invalid_descs", json_u64(ks.tx_invalid_descs));
		json_object_object_add(x, "tx_ring_empty", json_u64(ks.tx_ring_empty));
		json_object_object_add(port, "xsk", x);
	}
	json_object_object_add(o, "port", port);
	json_object_object_add(o, "workers", arr);

	arr = json_object_new_array();
	vm_table_for_each(&d->vms, v) {
		uint64_t vf = 0, vb = 0;

		for (k = 0; k < d->n_workers; k++) {
			vf += stat_read(&v->rx[k].frames);
			vb += stat_read(&v->rx[k].bytes);
		}
		e = json_object_new_object();
		json_object_object_add(e, "name", json_object_new_string(v->cfg.name));
		json_object_object_add(e, "rx_frames", json_u64(vf));
		json_object_object_add(e, "rx_bytes", json_u64(vb));
		if (v->dev)
			json_object_object_add(e, "device", device_json(v->dev));
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "vms", arr);
	*data = o;
	return 0;
}

/* A string member of req, or NULL with err set. */
static const char *req_string(json_object *req, const char *key, char *err, size_t errlen)
{
	json_object *v;

	if (!json_object_object_get_ex(req, key, &v) || !json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "request needs a \"%s\" string", key);
		return NULL;
	}
	return json_object_get_string(v);
}

#define ADD_VM_MAX_KEYS 16

/* {"command": "add-vm", "name": N, "vm": {KEY: "VALUE", ...}} with the keys
 * of a [vm NAME] section; checked as the file is, then against the VMs
 * served. Nothing changes unless it all succeeds. */
static int cmd_add_vm(struct vrdmad *d, json_object *req, json_object **data, char *err,
		      size_t errlen)
{
	const char *kv[ADD_VM_MAX_KEYS][2];
	struct vrdma_vm_config vc;
	const char *name;
	json_object *keys;
	unsigned int n = 0;
	int ret;

	name = req_string(req, "name", err, errlen);
	if (!name)
		return -EINVAL;
	if (!json_object_object_get_ex(req, "vm", &keys) ||
	    !json_object_is_type(keys, json_type_object)) {
		snprintf(err, errlen, "request needs a \"vm\" object of settings");
		return -EINVAL;
	}
	json_object_object_foreach(keys, key, val) {
		if (!json_object_is_type(val, json_type_string)) {
			snprintf(err, errlen, "setting \"%.32s\" must be a string", key);
			return -EINVAL;
		}
		if (n == ADD_VM_MAX_KEYS) {
			snprintf(err, errlen, "too many settings");
			return -EINVAL;
		}
		kv[n][0] = key;
		kv[n++][1] = json_object_get_string(val);
	}
	ret = vrdma_vm_config_from_keys(&vc, name, kv, n, err, errlen);
	if (ret)
		return ret;
	ret = vm_admin_add(d, &vc, true, err, errlen);
	if (ret)
		return ret;
	*data = json_object_new_object();
	json_object_object_add(*data, "name", json_object_new_string(vc.name));
	json_object_object_add(*data, "socket", json_object_new_string(vc.socket));
	return 0;
}

static int cmd_del_vm(struct vrdmad *d, json_object *req, json_object **data, char *err,
		      size_t errlen)
{
	const char *name = req_string(req, "name", err, errlen);
	struct vm *vm;

	if (!name)
		return -EINVAL;
	vm = vm_table_find_name(&d->vms, name);
	if (!vm) {
		snprintf(err, errlen, "no VM named '%.64s'", name);
		return -ENOENT;
	}
	vm_admin_remove(d, vm, "vrdmactl del-vm");
	*data = json_object_new_object();
	return 0;
}

static const struct control_command {
	const char *name;
	int (*fn)(struct vrdmad *d, json_object *req, json_object **data, char *err,
		  size_t errlen);
} commands[] = {
	{ "status", cmd_status },
	{ "stats", cmd_stats },
	{ "add-vm", cmd_add_vm },
	{ "del-vm", cmd_del_vm },
};

/* An error quotes what the client sent (a command, a VM's name, a setting)
 * and vrdmactl prints it to a terminal: anything but printable ASCII in it
 * is written as '?', as config.c does for its messages. */
static json_object *answer_error(json_object *ans, const char *error)
{
	char text[VRDMA_CONF_ERR_MAX];
	size_t i;

	snprintf(text, sizeof(text), "%s", error);
	for (i = 0; text[i]; i++)
		if (text[i] < 0x20 || text[i] >= 0x7f)
			text[i] = '?';
	json_object_object_add(ans, "ok", json_object_new_boolean(0));
	json_object_object_add(ans, "error", json_object_new_string(text));
	return ans;
}

/* {"command": "capture", "count": N}: answered like any request, then the
 * connection carries a pcap stream (capture_stream). One at a time. */
static int capture_request(struct control_conn *c, json_object *req, char *err, size_t errlen)
{
	struct control_server *srv = c->srv;
	json_object *v;
	int64_t count = 0;

	if (json_object_object_get_ex(req, "count", &v)) {
		if (!json_object_is_type(v, json_type_int) || (count = json_object_get_int64(v)) < 0) {
			snprintf(err, errlen, "\"count\" must be a number of frames, 0 or more");
			return -EINVAL;
		}
	}
	if (srv->capture) {
		snprintf(err, errlen, "a capture is running already (one at a time)");
		return -EBUSY;
	}
	if (!srv->d->workers) {
		snprintf(err, errlen, "vrdmad is not running its data plane yet");
		return -EAGAIN;
	}
	c->out = malloc(CAPTURE_OUT_BYTES);
	if (!c->out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->capturing = true;
	c->want = (uint64_t)count;
	srv->capture = c;
	return 0;
}

/* Answer one request line; always produces an answer object. */
static json_object *handle_request(struct control_conn *c, const char *line)
{
	struct vrdmad *d = c->srv->d;
	json_object *req, *cmd, *data = NULL, *ans = json_object_new_object();
	enum json_tokener_error jerr;
	const char *name;
	char msg[VRDMA_CONF_ERR_MAX];
	size_t i;

	json_object_object_add(ans, "protocol", json_object_new_int(VRDMA_CONTROL_PROTOCOL));
	req = json_tokener_parse_verbose(line, &jerr);
	if (!req) {
		snprintf(msg, sizeof(msg), "request is not JSON: %s", json_tokener_error_desc(jerr));
		return answer_error(ans, msg);
	}
	if (!json_object_is_type(req, json_type_object) ||
	    !json_object_object_get_ex(req, "command", &cmd) ||
	    !json_object_is_type(cmd, json_type_string)) {
		answer_error(ans, "request must be an object with a \"command\" string");
		goto put_req;
	}
	name = json_object_get_string(cmd);
	if (!strcmp(name, "capture")) {
		msg[0] = '\0';
		if (capture_request(c, req, msg, sizeof(msg))) {
			answer_error(ans, msg);
			goto put_req;
		}
		data = json_object_new_object();
		json_object_object_add(data, "format", json_object_new_string("pcap"));
		json_object_object_add(data, "count", json_object_new_uint64(c->want));
		json_object_object_add(ans, "ok", json_object_new_boolean(1));
		json_object_object_add(ans, "data", data);
		goto put_req;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			break;
	if (i == sizeof(commands) / sizeof(commands[0])) {
		snprintf(msg, sizeof(msg),
			 "unknown command '%.64s' (known: status, stats, add-vm, del-vm, capture)", name);
		answer_error(ans, msg);
		goto put_req;
	}
	msg[0] = '\0';
	if (commands[i].fn(d, req, &data, msg, sizeof(msg))) {
		answer_error(ans, msg[0] ? msg : "failed");
		goto put_req;
	}
	json_object_object_add(ans, "ok", json_object_new_boolean(1));
	json_object_object_add(ans, "data", data);
put_req:
	json_object_put(req);
	return ans;
}

/* Serialize ans (consumed) into the connection and switch it to writing. */
static int conn_send(struct control_conn *c, json_object *ans)
{
	const char *text = json_object_to_json_string_ext(ans, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(text);
	char *out = malloc(n + 1);

	if (!out) {
		json_object_put(ans);
		return -ENOMEM;
	}
	memcpy(out, text, n);
	out[n] = '\n';
	json_object_put(ans);
	free(c->buf);
	c->buf = out;
	c->len = n + 1;
	c->off = 0;
	c->answering = true;
	return sd_event_source_set_io_events(c->io, EPOLLOUT);
}

/* Send what is pending, then move more frames from the rings; the client
 * reading slowly makes the rings fill and the workers count lost copies. */
static void capture_pump(struct control_conn *c)
{
	struct vrdmad *d = c->srv->d;
	ssize_t n;

	for (;;) {
		if (c->out_off == c->out_len) {
			c->out_off = c->out_len = 0;
			if (c->want && c->got == c->want) {
				conn_free(c);	/* the count is reached: the stream ends */
				return;
			}
			c->out_len = capture_drain(d->workers, d->n_workers, c->out,
						   CAPTURE_OUT_BYTES, c->want, &c->got);
			if (!c->out_len)
				break;
		}
		n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			conn_free(c);	/* the client went away */
			return;
		}
		c->out_off += (size_t)n;
	}
	sd_event_source_set_io_events(c->io, EPOLLIN | (c->out_off < c->out_len ? EPOLLOUT : 0));
}

static int on_capture_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct control_conn *c = userdata;

	if (sd_event_source_set_time(s, usec + CAPTURE_TICK_USEC) < 0 ||
	    sd_event_source_set_enabled(s, SD_EVENT_ON) < 0) {
		conn_free(c);
		return 0;
	}
	capture_pump(c);
	return 0;
}

/* The answer is out: the pcap header goes first, then the frames. */
static void capture_begin(struct control_conn *c)
{
	struct control_server *srv = c->srv;
	uint64_t now;

	capture_pcap_header(c->out, WORKER_MAX_FRAME);
	c->out_len = CAPTURE_PCAP_HEADER;
	c->answering = false;
	/* A capture lasts as long as the client wants: no request timeout. */
	sd_event_now(srv->d->event, CLOCK_MONOTONIC, &now);
	c->timer = sd_event_source_disable_unref(c->timer);
	if (sd_event_add_time(srv->d->event, &c->timer, CLOCK_MONOTONIC, now, 0,
			      on_capture_tick, c) < 0) {
		conn_free(c);
		return;
	}
	capture_start(srv->d->workers, srv->d->n_workers);
	log_info("capture: started%s", c->want ? "" : " (until vrdmactl stops)");
	capture_pump(c);
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct control_conn *c = userdata;
	ssize_t n;
	char *nl;

	(void)s;
	if (c->capturing && !c->answering) {
		char junk[64];

		/* The client says nothing more: readable means it left. */
		if ((revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
		    ((n = read(fd, junk, sizeof(junk))) == 0 ||
		     (n < 0 && errno != EAGAIN && errno != EINTR))) {
			conn_free(c);
			return 0;
		}
		if (revents & EPOLLOUT)
			capture_pump(c);
		return 0;
	}
	if (c->answering) {
		n = write(fd, c->buf + c->off, c->len - c->off);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n > 0 && (c->off += n) == c->len && c->capturing)
			capture_begin(c);
		else if (n <= 0 || c->off == c->len)
			conn_free(c);	/* done, or the client went away */
		return 0;
	}
	if (!(revents & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return 0;
	n = read(fd, c->buf + c->len, VRDMA_CONTROL_MAX_REQUEST - c->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n < 0) {
		conn_free(c);
		return 0;
	}
	c->len += n;
	c->buf[c->len] = '\0';
	nl = memchr(c->buf, '\n', c->len);
	if (nl)
		*nl = '\0';
	else if (n > 0 && c->len < VRDMA_CONTROL_MAX_REQUEST)
		return 0;	/* more to come */
	else if (n == 0 && c->len == 0) {
		conn_free(c);	/* connected and left */
		return 0;
	} else if (c->len >= VRDMA_CONTROL_MAX_REQUEST) {
		json_object *ans = json_object_new_object();

		json_object_object_add(ans, "protocol", json_object_new_int(VRDMA_CONTROL_PROTOCOL));
		if (conn_send(c, answer_error(ans, "request too long")) < 0)
			conn_free(c);
		return 0;
	}
	if (conn_send(c, handle_request(c, c->buf)) < 0)
		conn_free(c);
	return 0;
}

static int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	(void)s;
	(void)usec;
	log_debug("control: dropping a client that sent nothing in time");
	conn_free(userdata);
	return 0;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct control_server *srv = userdata;
	struct control_conn *c;
	uint64_t now;
	int cfd;

	(void)s;
	(void)revents;
	cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0)
		return 0;
	if (srv->n_conns >= CONTROL_MAX_CONNS) {
		log_ratelimited(VRDMA_LOG_WARNING, "control: too many clients, refusing one");
		close(cfd);
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto close_fd;
	c->buf = malloc(VRDMA_CONTROL_MAX_REQUEST + 1);
	if (!c->buf)
		goto free_conn;
	c->srv = srv;
	c->fd = cfd;
	if (sd_event_add_io(srv->d->event, &c->io, cfd, EPOLLIN, on_conn_io, c) < 0)
		goto free_buf;
	sd_event_now(srv->d->event, CLOCK_MONOTONIC, &now);
	if (sd_event_add_time(srv->d->event, &c->timer, CLOCK_MONOTONIC,
			      now + CONTROL_TIMEOUT_USEC, 0, on_conn_timeout, c) < 0)
		goto unref_io;
	c->next = srv->conns;
	srv->conns = c;
	srv->n_conns++;
	return 0;

unref_io:
	sd_event_source_disable_unref(c->io);
free_buf:
	free(c->buf);
free_conn:
	free(c);
close_fd:
	close(cfd);
	return 0;
}

int control_open(struct vrdmad *d, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct control_server *srv;
	mode_t old_umask;
	int err;

	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->d = d;
	snprintf(srv->path, sizeof(srv->path), "%s", path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	err = unix_path_mkparent(path);
	if (err < 0) {
		log_err("cannot create the directory of control socket %s: %s", path,
			strerror(-err));
		goto free_srv;
	}
	/* A socket left by a daemon that died is replaced; one that answers
	 * belongs to a running daemon and is left alone. */
	err = unix_path_claim(path);
	if (err == -EEXIST)
		log_err("control socket %s exists and is not a socket: remove it or set "
			"[daemon] control_socket", path);
	else if (err == -EADDRINUSE)
		log_err("control socket %s is in use: another vrdmad is running "
			"(stop it, or give this one another control_socket)", path);
	if (err)
		goto free_srv;
	srv->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (srv->fd < 0) {
		err = -errno;
		goto free_srv;
	}
	old_umask = umask(0177);	/* born 0600: no window where others may connect */
	err = bind(srv->fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old_umask);
	if (err) {
		log_err("cannot bind control socket %s: %s", path, strerror(-err));
		goto close_fd;
	}
	if (listen(srv->fd, CONTROL_MAX_CONNS) < 0) {
		err = -errno;
		goto unlink_path;
	}
	err = sd_event_add_io(d->event, &srv->io, srv->fd, EPOLLIN, on_accept, srv);
	if (err < 0)
		goto unlink_path;
	d->control = srv;
	return 0;

unlink_path:
	unlink(path);
close_fd:
	close(srv->fd);
free_srv:
	free(srv);
	return err;
}

unsigned int control_clients(const struct vrdmad *d)
{
	return d->control ? d->control->n_conns : 0;
}

void control_close(struct vrdmad *d)
{
	struct control_server *srv = d->control;

	if (!srv)
		return;
	while (srv->conns)
		conn_free(srv->conns);
	sd_event_source_disable_unref(srv->io);
	close(srv->fd);
	unlink(srv->path);
	free(srv);
	d->control = NULL;
}
