// SPDX-License-Identifier: GPL-2.0-only
/*
 * vrdmad: virtio-rdma for VMs over RoCEv2 on AF_XDP. Runs in the foreground
 * (systemd Type=notify); startup undoes everything it did if any step fails.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "control.h"
#include "daemon.h"
#include "log.h"
#include "vm_server.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: vrdmad [OPTIONS]\n"
		"Serve virtio-rdma devices to VMs over RoCEv2 on an AF_XDP port.\n\n"
		"  -c, --config FILE         configuration file (default %s)\n"
		"      --check-config        check the configuration and exit\n"
		"      --print-capabilities  print the vhost-user backend capabilities (JSON)\n"
		"  -v, --verbose             log at debug level\n"
		"  -V, --version             print the version and exit\n"
		"  -h, --help                show this help\n",
		VRDMA_CONF_DEFAULT_PATH);
}

bool vrdmad_dataplane_healthy(const struct vrdmad *d, uint64_t max_age_ns)
{
	uint64_t now = mono_ns();
	unsigned int i;

	for (i = 0; i < d->n_workers; i++)
		if (now - atomic_load(&d->workers[i].heartbeat_ns) > max_age_ns)
			return false;
	return true;
}

static int on_watchdog(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct vrdmad *d = userdata;
	uint64_t max_age = d->watchdog_usec * 1000 / 2;

	if (max_age < 3ull * WORKER_POLL_MS * 1000000)
		max_age = 3ull * WORKER_POLL_MS * 1000000;
	/* No ping while a worker is stuck: systemd then restarts us. */
	if (vrdmad_dataplane_healthy(d, max_age)) {
		sd_notify(0, "WATCHDOG=1");
	} else {
		if (!d->watchdog_missed++)
			log_err("a data-plane worker is stuck: withholding the watchdog ping");
	}
	return sd_event_source_set_time(s, usec + d->watchdog_usec / 4);
}

static int on_exit_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	(void)userdata;
	log_info("signal %s: shutting down", strsignal(si->ssi_signo));
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

/* SIGHUP (systemctl reload): check the file again and say what a restart
 * would change. Adding and removing VMs at run time is not there yet; until
 * then a reload must neither kill the daemon (SIGHUP's default) nor apply
 * half a configuration. */
static int on_reload_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct vrdmad *d = userdata;
	struct vrdma_config next;
	char errbuf[512];

	(void)s;
	(void)si;
	sd_notify(0, "RELOADING=1");
	if (vrdma_config_load(&next, d->cfg.path, errbuf, sizeof(errbuf))) {
		log_err("reload: %s; the running configuration stays", errbuf);
	} else {
		log_warn("reload: %s is valid (%u VM(s)), but vrdmad cannot apply a "
			 "configuration at run time yet: restart it to use the file "
			 "(systemctl restart vrdmad)", d->cfg.path, next.n_vms);
		vrdma_config_free(&next);
	}
	sd_notify(0, "READY=1");
	return 0;
}

static int serve_gids(struct vrdmad *d)
{
	char buf[INET6_ADDRSTRLEN];
	unsigned int i;
	int err;

	for (i = 0; i < d->vms.n_gids; i++) {
		err = xdp_port_serve_gid(&d->port, &d->vms.gids[i].gid, d->vms.gids[i].vm_id);
		if (err) {
			vrdma_gid_format(&d->vms.gids[i].gid, buf, sizeof(buf));
			log_err("cannot add GID %s to the XDP map: %s", buf, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* One device per VM, owned by its worker. */
static int devices_create(struct vrdmad *d)
{
	struct vdev_port port = { .mtu = d->port.mtu };
	unsigned int i, n = d->vms.n_vms;
	int err;

	memcpy(port.mac, d->port.mac, sizeof(port.mac));
	d->vdevs = calloc(n ? n : 1, sizeof(*d->vdevs));
	d->vdev_ptrs = calloc(n ? n : 1, sizeof(*d->vdev_ptrs));
	if (!d->vdevs || !d->vdev_ptrs)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct worker *w = worker_of_vm(d->workers, d->n_workers, i);
		struct vdev_host host;
		struct vdev_sync sync;

		worker_vdev_hooks(w, &host, &sync);
		err = vdev_init(&d->vdevs[i], &d->vms.vms[i].cfg, i, &port, &host, &sync);
		if (err) {
			log_err("vm %s: cannot create its device: %s", d->vms.vms[i].cfg.name,
				strerror(-err));
			return err;
		}
		d->vdev_ptrs[i] = &d->vdevs[i];
	}
	for (i = 0; i < d->n_workers; i++)
		d->workers[i].vdevs = d->vdev_ptrs;
	return 0;
}

static void devices_free(struct vrdmad *d)
{
	unsigned int i;

	for (i = 0; d->vdev_ptrs && i < d->vms.n_vms; i++)
		if (d->vdev_ptrs[i])
			vdev_free(d->vdev_ptrs[i]);
	free(d->vdevs);
	free(d->vdev_ptrs);
	d->vdevs = NULL;
	d->vdev_ptrs = NULL;
}

static int run(struct vrdmad *d)
{
	sigset_t mask;
	uint64_t now;
	int err;

	/* Block before any thread exists, so only the event loop sees them. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	d->start_ns = mono_ns();
	err = sd_event_new(&d->event);
	if (err < 0)
		return err;
	if ((err = sd_event_add_signal(d->event, NULL, SIGTERM, on_exit_signal, d)) < 0 ||
	    (err = sd_event_add_signal(d->event, NULL, SIGINT, on_exit_signal, d)) < 0 ||
	    (err = sd_event_add_signal(d->event, NULL, SIGHUP, on_reload_signal, d)) < 0)
		goto unref_event;
	err = vm_table_init(&d->vms, &d->cfg);
	if (err)
		goto unref_event;
	err = control_open(d, d->cfg.control_socket);
	if (err)
		goto free_vms;
	sd_notifyf(0, "STATUS=attaching to %s", d->cfg.interface);
	err = xdp_port_open(&d->port, &d->cfg);
	if (err)
		goto close_control;
	err = serve_gids(d);
	if (err)
		goto close_port;
	err = vm_server_watch_broken(d);
	if (err)
		goto close_port;
	d->n_workers = d->cfg.workers;
	err = workers_create(&d->workers, d->n_workers, &d->port, &d->vms, d->cfg.idle_spin_us,
			     d->broken_fd);
	if (err)
		goto unwatch_broken;
	err = devices_create(d);
	if (err)
		goto free_devices;
	err = workers_run(d->workers, d->n_workers);
	if (err)
		goto free_devices;
	err = vm_server_open(d);
	if (err)
		goto stop_workers;
	if (sd_watchdog_enabled(0, &d->watchdog_usec) > 0) {
		sd_event_source *wd;

		sd_event_now(d->event, CLOCK_MONOTONIC, &now);
		err = sd_event_add_time(d->event, &wd, CLOCK_MONOTONIC,
					now + d->watchdog_usec / 4, 0, on_watchdog, d);
		if (err < 0)
			goto stop_workers;
		/* Periodic: on_watchdog moves the time forward each round. */
		sd_event_source_set_enabled(wd, SD_EVENT_ON);
		sd_event_source_set_floating(wd, 1);
		sd_event_source_unref(wd);
	}

	sd_notifyf(0, "READY=1\nSTATUS=serving %u VM(s) on %s (XDP %s, AF_XDP %s, %u queue(s), %u worker(s))",
		   d->vms.n_vms, d->port.ifname, xdp_port_mode_name(&d->port),
		   xdp_port_zerocopy(&d->port) ? "zero-copy" : "copy", d->port.n_queues,
		   d->n_workers);
	log_info("ready: %u VM(s), control socket %s", d->vms.n_vms, d->cfg.control_socket);
	err = sd_event_loop(d->event);
	sd_notify(0, "STOPPING=1");

	vm_server_close(d);
stop_workers:
	workers_stop(d->workers, d->n_workers);
free_devices:
	devices_free(d);
	workers_free(d->workers, d->n_workers);
	d->workers = NULL;
	d->n_workers = 0;
unwatch_broken:
	vm_server_unwatch_broken(d);
close_port:
	xdp_port_close(&d->port);
close_control:
	control_close(d);
free_vms:
	vm_table_free(&d->vms);
unref_event:
	d->event = sd_event_unref(d->event);
	return err < 0 ? err : 0;
}

int main(int argc, char **argv)
{
	enum { OPT_CHECK = 256, OPT_CAPS };
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, OPT_CHECK },
		{ "print-capabilities", no_argument, NULL, OPT_CAPS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	const char *path = VRDMA_CONF_DEFAULT_PATH;
	bool check = false, caps = false, verbose = false;
	char errbuf[VRDMA_CONF_ERR_MAX];
	struct vrdmad d = { .broken_fd = -1 };
	int c, err;

	while ((c = getopt_long(argc, argv, "c:vVh", opts, NULL)) != -1) {
		switch (c) {
		case 'c': path = optarg; break;
		case OPT_CHECK: check = true; break;
		case OPT_CAPS: caps = true; break;
		case 'v': verbose = true; break;
		case 'V': printf("vrdmad %s\n", VRDMAD_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "vrdmad: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (caps) {
		/* vhost-user.rst "Backend program conventions": one JSON object. */
		printf("{\n  \"type\": \"rdma\",\n  \"features\": []\n}\n");
		return 0;
	}
	err = vrdma_config_load(&d.cfg, path, errbuf, sizeof(errbuf));
	if (err) {
		log_err("%s", errbuf);
		return 1;
	}
	if (check) {
		printf("%s: OK (%u VM%s)\n", path, d.cfg.n_vms, d.cfg.n_vms == 1 ? "" : "s");
		vrdma_config_free(&d.cfg);
		return 0;
	}
	log_set_level(verbose ? VRDMA_LOG_DEBUG : d.cfg.log_level);
	err = run(&d);
	vrdma_config_free(&d.cfg);
	if (err) {
		log_err("vrdmad could not start: %s", strerror(-err));
		return 1;
	}
	log_info("stopped");
	return 0;
}
