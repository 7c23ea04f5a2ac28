/* SPDX-License-Identifier: GPL-2.0-only */
/* Data-plane workers. Each owns some of the port's queues (queue q belongs to
 * worker q % workers): only it touches their rings, so no locks. Counters have
 * one writer (the worker) and are read by the control thread with relaxed
 * atomics. */
#ifndef VRDMAD_WORKER_H
#define VRDMAD_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "codec.h"
#include "vm.h"
#include "xdp_port.h"

/* Why a frame that reached an XSK was dropped before the transport: the
 * codec's reasons (enum roce_drop, same values), then the port's own. */
enum port_drop {
	PORT_DROP_UNKNOWN_GID = ROCE_DROP_MAX,	/* destination GID served by no VM */
	PORT_DROP_MAX,
};
const char *port_drop_name(enum port_drop d);

struct worker_stats {
	uint64_t rx_frames;
	uint64_t rx_bytes;
	uint64_t rx_buffers;		/* > rx_frames with multi-buffer frames */
	uint64_t drops[PORT_DROP_MAX];
	uint64_t *vm_rx_frames;		/* [vm id] */
	uint64_t *vm_rx_bytes;
};

struct worker {
	unsigned int id;
	pthread_t thread;
	bool started;
	struct xdp_port *port;
	const struct vm_table *vms;
	struct xsk_queue **queues;	/* the ones this worker owns */
	unsigned int n_queues;
	int stop_fd;			/* eventfd: written once to stop */
	_Atomic uint64_t heartbeat_ns;	/* CLOCK_MONOTONIC at the last loop */
	struct worker_stats stats;
};

#define WORKER_POLL_MS 250	/* longest sleep, so the heartbeat stays fresh */

int workers_start(struct worker **out, unsigned int n, struct xdp_port *port,
		  const struct vm_table *vms);
void workers_stop(struct worker *w, unsigned int n);

static inline uint64_t stat_read(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

uint64_t mono_ns(void);

#endif
