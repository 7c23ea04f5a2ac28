// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdma-pingpong: the ping-pong itself (pingpong.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "common/status.h"
#include "pingpong.h"

static const char *event_name(unsigned int ev)
{
	switch (ev) {
	case VIRTIO_RDMA_EVENT_CQ_ERR:
		return "CQ error";
	case VIRTIO_RDMA_EVENT_QP_FATAL:
		return "local work queue catastrophic error";
	case VIRTIO_RDMA_EVENT_QP_REQ_ERR:
		return "invalid request local work queue error";
	case VIRTIO_RDMA_EVENT_QP_ACCESS_ERR:
		return "local access violation work queue error";
	case VIRTIO_RDMA_EVENT_SQ_DRAINED:
		return "send queue drained";
	case VIRTIO_RDMA_EVENT_SRQ_LIMIT_REACHED:
		return "SRQ limit reached";
	default:
		return "unknown";
	}
}

/* libvrdma's errors; -ECONNRESET means the daemon dropped us. */
const char *vrdma_err(int ret)
{
	return ret == -ECONNRESET ? "vrdmad closed the connection" : strerror(-ret);
}

/* ---- the ping-pong ---- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Has the daemon closed our vhost-user connection? */
static bool daemon_gone(struct pp_ctx *c)
{
	struct pollfd pfd = { .fd = vrdma_socket_fd(c->dev), .events = POLLRDHUP };

	return poll(&pfd, 1, 0) > 0 &&
	       (pfd.revents & (POLLHUP | POLLERR | POLLRDHUP | POLLNVAL));
}

static void say_timeout(const struct pp_ctx *c)
{
	fprintf(stderr, "No completion in %u s (%u sent, %u received): is the peer still there?\n",
		c->o->timeout_s, c->scnt, c->rcnt);
}

/* One completion, as parse_single_wc: count it, keep the receive queue
 * topped up, and send again once both the last send and a receive are
 * done. Returns 0 or -1 (said why). */
static int pp_handle_wc(struct pp_ctx *c, const struct virtio_rdma_cqe *wc)
{
	int wr_id = (int)wc->wr_id, q;

	/* ibverbs has these on the async fd, which rdma-core's tools do not
	 * read: not completions. A QP's error completions follow its event;
	 * after a CQ's, nothing more comes. */
	if (wc->opcode == VIRTIO_RDMA_WC_ASYNC_EVENT) {
		fprintf(stderr, "Got async event: %s (%u)%s\n", event_name(wc->vendor_err),
			wc->vendor_err, wc->qp_num ? " on the QP" : " on the CQ");
		return wc->vendor_err == VIRTIO_RDMA_EVENT_CQ_ERR ? -1 : 0;
	}
	if (wc->status != IB_WC_SUCCESS) {
		fprintf(stderr, "Failed status %s (%d) for wr_id %d\n", wc_status_str(wc->status),
			wc->status, wr_id);
		return -1;
	}
	/* each QP pings on its own (ibv_srq_pingpong's find_qp) */
	q = pp_find_qp(c, wc->qp_num);
	if (q < 0) {
		fprintf(stderr, "Couldn't find QPN %06x\n", wc->qp_num);
		return -1;
	}
	switch (wr_id) {
	case PINGPONG_SEND_WRID:
		c->scnt++;
		break;
	case PINGPONG_RECV_WRID:
		/* the SRQ is topped up once no more than one per QP is left */
		if (--c->routs <= (int)c->o->num_qp) {
			c->routs += pp_post_recv(c, c->o->rx_depth - c->routs);
			if (c->routs < (int)c->o->rx_depth) {
				fprintf(stderr, "Couldn't post receive (%d)\n", c->routs);
				return -1;
			}
		}
		c->rcnt++;
		break;
	default:
		fprintf(stderr, "Completion for unknown wr_id %d\n", wr_id);
		return -1;
	}
	c->pending[q] &= ~wr_id;
	if (c->scnt < c->o->iters && !c->pending[q]) {
		if (pp_post_send(c, (unsigned int)q)) {
			fprintf(stderr, "Couldn't post send\n");
			return -1;
		}
		c->pending[q] = PINGPONG_RECV_WRID | PINGPONG_SEND_WRID;
	}
	return 0;
}

/* Until iters sends and iters receives have completed. */
static int pp_run(struct pp_ctx *c)
{
	const struct pp_opts *o = c->o;
	int64_t deadline = now_ms() + (int64_t)o->timeout_s * 1000;

	while (c->rcnt < o->iters || c->scnt < o->iters) {
		struct virtio_rdma_cqe wc[16];
		unsigned int polls = 0;
		int ne, i, ret;

		if (o->events) {
			int64_t left = deadline - now_ms();

			ret = left > 0 ? vrdma_cq_wait(c->cq, (int)left) : 0;
			if (!ret) {
				say_timeout(c);
				return -1;
			}
			if (ret < 0) {
				fprintf(stderr, "Failed to get cq_event: %s\n", vrdma_err(ret));
				return -1;
			}
			ret = vrdma_req_notify_cq(c->cq, false);
			if (ret) {
				fprintf(stderr, "Couldn't request CQ notification: %s\n",
					vrdma_err(ret));
				return -1;
			}
		}
		do {
			ne = vrdma_poll_cq(c->cq, c->o->srq ? 16 : 2, wc);
			if (ne < 0) {
				fprintf(stderr, "poll CQ failed %d\n", ne);
				return -1;
			}
			/* busy-polling sees neither a silent peer nor a dead daemon */
			if (!ne && !o->events && ++polls % POLLS_PER_CHECK == 0) {
				if (daemon_gone(c)) {
					fprintf(stderr, "poll CQ failed: vrdmad closed the connection\n");
					return -1;
				}
				if (now_ms() >= deadline) {
					say_timeout(c);
					return -1;
				}
			}
		} while (!o->events && ne < 1);
		if (ne > 0)
			deadline = now_ms() + (int64_t)o->timeout_s * 1000;
		for (i = 0; i < ne; i++) {
			if (pp_handle_wc(c, &wc[i])) {
				/* ibv_rc_pingpong says this too; uc and ud do not */
				if (o->type == VIRTIO_IB_QPT_RC)
					fprintf(stderr, "parse WC failed %d\n", ne);
				return -1;
			}
		}
	}
	return 0;
}

/* What the client sent (with -c it zeroes the first byte of every page of
 * a buffer filled with 0x7b): the server checks every byte of it. Returns
 * how many pages differ, each reported as rdma-core does. */
static unsigned int check_buf(const struct pp_ctx *c, size_t page_size)
{
	const uint8_t *data = c->buf + c->grh;
	unsigned int bad = 0;
	size_t page, i;

	for (page = 0; page * page_size < c->o->size; page++) {
		size_t end = (page + 1) * page_size;

		if (end > c->o->size)
			end = c->o->size;
		for (i = page * page_size; i < end; i++)
			if (data[i] != (i == page * page_size ? 0 : 0x7b))
				break;
		if (i < end) {
			printf("invalid data in page %zu\n", page);
			bad++;
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	static struct pp_dest my[PP_MAX_QP], rem[PP_MAX_QP];	/* -T srq: one per QP */
	struct timeval start, end;
	size_t page_size = (size_t)sysconf(_SC_PAGESIZE);
	struct pp_opts o;
	struct pp_ctx c;
	char gid[INET6_ADDRSTRLEN];
	unsigned int bad = 0, i;
	int ret;

	ret = parse_args(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 1;
	srand48(getpid() * time(NULL));

	if (pp_init(&c, &o))
		return 1;
	c.routs = pp_post_recv(&c, o.rx_depth);
	if (c.routs < (int)o.rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", c.routs);
		goto free_ctx;
	}
	if (o.events) {
		ret = vrdma_req_notify_cq(c.cq, false);
		if (ret) {
			fprintf(stderr, "Couldn't request CQ notification: %s\n", vrdma_err(ret));
			goto free_ctx;
		}
	}

	for (i = 0; i < o.num_qp; i++) {
		my[i].lid = 0;		/* RoCE: no LID */
		ret = vrdma_query_gid(c.dev, (unsigned int)o.gidx, my[i].gid);
		if (ret) {
			if (o.type == VIRTIO_IB_QPT_UD || o.srq)
				fprintf(stderr, "Could not get local gid for gid index %d\n",
					o.gidx);
			else
				fprintf(stderr, "can't read sgid of index %d\n", o.gidx);
			goto free_ctx;
		}
		my[i].qpn = vrdma_qp_num(c.qps[i]);
		my[i].psn = (unsigned int)(lrand48() & ROCE_PSN_MASK);
		inet_ntop(AF_INET6, my[i].gid, gid, sizeof(gid));
		/* ibv_ud_pingpong really prints "PSN 0x...: GID" here */
		printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s\n",
		       my[i].lid, my[i].qpn, my[i].psn, o.type == VIRTIO_IB_QPT_UD ? ":" : ",",
		       gid);
	}
	fflush(stdout);

	if (o.servername)
		ret = client_exch_dest(&o, my, rem);
	else
		ret = server_exch_dest(&c, my, rem);
	if (ret)
		goto free_ctx;

	for (i = 0; i < o.num_qp; i++) {
		inet_ntop(AF_INET6, rem[i].gid, gid, sizeof(gid));
		printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
		       rem[i].lid, rem[i].qpn, rem[i].psn, gid);
	}
	fflush(stdout);

	if (o.servername && pp_connect(&c, my, rem))
		goto free_ctx;

	for (i = 0; i < o.num_qp; i++)
		c.pending[i] = PINGPONG_RECV_WRID;
	if (o.servername) {
		size_t j;

		if (o.chk)
			for (j = 0; j < o.size; j += page_size)
				c.buf[c.grh + j] = 0;	/* rdma-core's i / page_size % sizeof(char) */
		/* ibv_srq_pingpong starts every QP */
		for (i = 0; i < o.num_qp; i++) {
			if (pp_post_send(&c, i)) {
				fprintf(stderr, "Couldn't post send\n");
				goto free_ctx;
			}
			c.pending[i] |= PINGPONG_SEND_WRID;
		}
	}

	if (gettimeofday(&start, NULL)) {
		perror("gettimeofday");
		goto free_ctx;
	}
	if (pp_run(&c))
		goto free_ctx;
	if (gettimeofday(&end, NULL)) {
		perror("gettimeofday");
		goto free_ctx;
	}

	{
		/* float, as rdma-core computes it */
		float usec = (end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec - start.tv_usec);
		long long bytes = (long long)o.size * o.iters * 2;

		printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n",
		       bytes, usec / 1000000., bytes * 8. / usec);
		printf("%u iters in %.2f seconds = %.2f usec/iter\n",
		       o.iters, usec / 1000000., usec / o.iters);
		if (!o.servername && o.chk)
			bad = check_buf(&c, page_size);
	}

	if (pp_close(&c))
		return 1;
	return bad ? 1 : 0;

free_ctx:
	pp_free(&c);
	return 1;
}
