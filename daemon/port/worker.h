/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Data-plane workers. Each owns some of the port's queues (queue q belongs to
 * worker q % workers) and some of the VMs' devices (VM v belongs to worker
 * v % workers), with all their QPs: only it touches their rings, queues and
 * engine, so the fast path takes no lock. A frame received by one worker for
 * another's device, or to be sent by a worker without a queue, crosses over
 * a single-producer ring. A worker busy-polls, and after idle_spin_us with
 * nothing to do sleeps on its sockets, its devices' kick eventfds and a wake
 * eventfd. The control thread changes a device only while its worker is
 * quiesced (worker_quiesce / worker_resume).
 *
 * Counters have one writer (the worker) and are read by the control thread
 * with relaxed atomics.
 */
#ifndef VRDMAD_WORKER_H
#define VRDMAD_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "codec.h"
#include "frame_ring.h"
#include "vdev.h"
#include "vm.h"
#include "xdp_port.h"
#include "xsk_ring.h"

/* Why a frame that reached an XSK was dropped before the transport: the
 * codec's reasons (enum roce_drop, same values), then the port's own. */
enum port_drop {
	PORT_DROP_UNKNOWN_GID = ROCE_DROP_MAX,	/* destination GID served by no VM */
	PORT_DROP_HANDOVER_FULL,		/* another worker's ring was full */
	PORT_DROP_TX_FULL,			/* no transmit buffer on the NIC queue */
	PORT_DROP_TX_TOO_BIG,			/* frame needs multi-buffer the port lacks */
	PORT_DROP_MAX,
};
const char *port_drop_name(enum port_drop d);

struct worker_stats {
	uint64_t rx_frames;
	uint64_t rx_bytes;
	uint64_t rx_buffers;		/* > rx_frames with multi-buffer frames */
	uint64_t tx_frames, tx_bytes;	/* onto the NIC */
	uint64_t loopback_frames;	/* between two VMs of this daemon */
	uint64_t handed_over;		/* frames passed to another worker */
	uint64_t wakeups;		/* sleeps that ended */
	uint64_t kicks;			/* front-end notifications its VMs' queues got */
	uint64_t capture_lost;		/* frames vrdmactl capture did not get (ring full) */
	uint64_t drops[PORT_DROP_MAX];
};

#define WORKER_MAX_FRAME 10240		/* largest frame handled (9000 MTU + headers) */

/* The frame the engine is building (between tx_alloc and tx_send): into the
 * NIC's UMEM frames, straight into another worker's ring (loopback, or a
 * frame for worker 0 to send), or into scratch to be dropped. */
enum tx_target { TX_NONE, TX_NIC, TX_RING, TX_DROP };

struct tx_pending {
	enum tx_target target;
	enum port_drop drop;		/* TX_DROP: why */
	struct frame_ring *ring;	/* TX_RING */
	struct worker *dst;
	struct frame_rec *rec;
	uint64_t base;			/* the ring's head before the record */
	uint16_t kind, vm;
	unsigned int n;			/* TX_NIC: UMEM frames taken */
	uint64_t addr[XSK_MAX_FRAGS];
};
#define CAPTURE_RING_BYTES (2u << 20)	/* per worker, for vrdmactl capture */

/* frame_rec.kind of a captured frame */
enum capture_dir { CAPTURE_RX, CAPTURE_TX, CAPTURE_LOOPBACK };

struct worker {
	unsigned int id;
	pthread_t thread;
	bool started;
	struct worker *all;		/* the pool, for handing frames over */
	unsigned int n_workers;
	struct xdp_port *port;
	struct vm_table *vms;		/* read only, but for this worker's
					 * rx[id] counters of each record */
	struct xsk_queue **queues;	/* the ones this worker owns */
	unsigned int n_queues;
	struct xsk_queue *txq;		/* where it sends: its first queue, or NULL */
	struct xsk_tx_pool tx_pool;	/* txq's transmit frames */
	uint32_t tx_left;		/* TX descriptors the kernel had not taken */
	struct tx_pending tx;
	struct vm_gid_cache rx_gid, tx_gid;	/* the last destination GIDs */
	struct frame_ring *in;		/* [n_workers]: from each worker (self: loopback) */
	struct vdev **own;		/* devices this worker runs */
	unsigned int n_own;
	uint64_t idle_spin_ns;
	int cpu;			/* the CPU it is pinned to, or -1 */
	int epfd;
	int stop_fd;			/* eventfd: written once to stop */
	int wake_fd;			/* eventfd: a ring got work, or quiesce */
	int broken_fd;			/* eventfd of the control thread: a device broke */
	_Atomic int stop;		/* set once by workers_stop */
	_Atomic int sleeping;
	_Atomic int pause_req;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool paused;
	unsigned int quiesce_depth;	/* control thread only */
	_Atomic uint64_t heartbeat_ns;	/* CLOCK_MONOTONIC at the last loop */
	uint64_t poll_ns;		/* the same while it polls, else 0 */
	/* vrdmactl capture: while capture_on, each frame received, sent or looped
	 * back is copied into capture (the worker produces, the control thread
	 * consumes; daemon/core/capture.c). */
	_Atomic int capture_on;
	struct frame_ring capture;
	uint8_t tx_buf[WORKER_MAX_FRAME];	/* TX_DROP's scratch */
	struct worker_stats stats;
};

#define WORKER_POLL_MS 250	/* longest sleep, so the heartbeat stays fresh */

/* Make the pool (no thread yet). */
int workers_create(struct worker **out, unsigned int n, struct xdp_port *port,
		   struct vm_table *vms, unsigned int idle_spin_us, int broken_fd);
/* Run worker i on CPU cpus[i] only (before workers_run). */
void workers_pin(struct worker *ws, unsigned int n, const uint16_t *cpus);
/* The worker that owns VM vm_id's device. */
static inline struct worker *worker_of_vm(struct worker *ws, unsigned int n, uint32_t vm_id)
{
	return &ws[vm_id % n];
}
/* The clock and wire (for its engine) and sync hooks of a device owned by w. */
void worker_vdev_hooks(struct worker *w, struct eng_tx *tx, struct vdev_sync *sync);
int workers_run(struct worker *ws, unsigned int n);
void workers_stop(struct worker *ws, unsigned int n);
void workers_free(struct worker *ws, unsigned int n);

/* Stop w at a safe point (nests); its devices may then be changed. */
void worker_quiesce(struct worker *w);
void worker_resume(struct worker *w);
/* Every worker: the VM table and its devices may then be changed. */
void workers_quiesce(struct worker *ws, unsigned int n);
void workers_resume(struct worker *ws, unsigned int n);
/* Give w the device v (its loop polls it) / take it back. With the pool
 * quiesced; the VM table's record points at the device meanwhile. */
void worker_own(struct worker *w, struct vdev *v);
void worker_disown(struct worker *w, struct vdev *v);

static inline uint64_t stat_read(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

uint64_t mono_ns(void);

#endif
