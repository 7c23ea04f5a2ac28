/* SPDX-License-Identifier: GPL-2.0-only */
/* The daemon's state, owned by the control-plane thread. */
#ifndef VRDMAD_DAEMON_H
#define VRDMAD_DAEMON_H

#include <stdint.h>
#include <systemd/sd-event.h>

#include "config.h"
#include "fdstore.h"
#include "vm.h"
#include "worker.h"
#include "vdev.h"
#include "xdp_port.h"

#define VRDMAD_VERSION "0.1.0"

struct control_server;

struct vrdmad {
	struct vrdma_config cfg;
	struct vm_table vms;
	struct xdp_port port;
	struct worker *workers;
	unsigned int n_workers;
	struct control_server *control;
	int broken_fd;			/* eventfd: a worker marked a device broken */
	sd_event_source *broken_src;
	sd_event *event;
	uint64_t start_ns;		/* main() began */
	double fork_ms;			/* then, ms since the fork (-1: unknown) */
	uint64_t watchdog_usec;		/* 0: systemd does not watch us */
	uint64_t watchdog_missed;	/* pings withheld: a worker was stuck */
	struct fdstore fds;		/* systemd's store: restarts that keep state */
	bool stopping;			/* SIGTERM: keep the VMs' state for the next vrdmad */
};

/* True when every worker looped recently: the watchdog is pinged only then. */
bool vrdmad_dataplane_healthy(const struct vrdmad *d, uint64_t max_age_ns);

#endif
