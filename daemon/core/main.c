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
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "daemon.h"
#include "log.h"
#include "restart.h"
#include "vm_admin.h"
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

	for (i = 0; i < d->n_workers; i++) {
		uint64_t beat = atomic_load(&d->workers[i].heartbeat_ns);

		/* A beat after our clock read is fresh, not 2^64 ns old. */
		if (beat < now && now - beat > max_age_ns)
			return false;
	}
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
	struct vrdmad *d = userdata;

	/* SIGTERM: systemctl stop or restart; only the store knows which */
	d->stopping = si->ssi_signo == SIGTERM;
	log_info("signal %s: shutting down", strsignal(si->ssi_signo));
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static void notify_serving(struct vrdmad *d, const char *extra)
{
	sd_notifyf(0, "%sSTATUS=serving %u VM(s) on %s (XDP %s, AF_XDP %s, %u queue(s), %u worker(s))",
		   extra, d->vms.n_vms, d->port.ifname, xdp_port_mode_name(&d->port),
		   xdp_port_zerocopy(&d->port) ? "zero-copy" : "copy", d->port.n_queues,
		   d->n_workers);
}

/* Settings outside [vm] sections that only a restart applies. */
static void warn_restart_needed(const struct vrdma_config *cur, const struct vrdma_config *next)
{
	const char *what = NULL;

	if (cur->workers != next->workers)
		what = "[daemon] workers";
	else if (strcmp(cur->control_socket, next->control_socket))
		what = "[daemon] control_socket";
	else if (cur->idle_spin_us != next->idle_spin_us)
		what = "[daemon] idle_spin_us";
	else if (cur->n_worker_cpus != next->n_worker_cpus ||
		 memcmp(cur->worker_cpus, next->worker_cpus,
			cur->n_worker_cpus * sizeof(cur->worker_cpus[0])))
		what = "[daemon] worker_cpus";
	else if (strcmp(cur->interface, next->interface))
		what = "[port] interface";
	else if (cur->xdp_mode != next->xdp_mode)
		what = "[port] xdp_mode";
	else if (cur->zerocopy != next->zerocopy)
		what = "[port] zerocopy";
	else if (cur->multi_buffer != next->multi_buffer)
		what = "[port] multi_buffer";
	else if (cur->queues != next->queues)
		what = "[port] queues";
	else if (strcmp(cur->xdp_object, next->xdp_object))
		what = "[port] xdp_object";
	else if (cur->ecn != next->ecn)
		what = "[port] ecn";
	else if (cur->cnp_interval_us != next->cnp_interval_us)
		what = "[port] cnp_interval_us";
	else if (cur->tx_budget != next->tx_budget)
		what = "[port] tx_budget";
	if (what)
		log_warn("reload: %s changed: only a restart applies it (systemctl restart vrdmad)",
			 what);
}

/* SIGHUP (systemctl reload): read the file again and serve its VMs, leaving
 * alone those that did not change and those vrdmactl added. A file that does
 * not parse changes nothing. */
static int on_reload_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct vrdmad *d = userdata;
	struct vm_reload_result r;
	struct vrdma_config next;
	char errbuf[VRDMA_CONF_ERR_MAX];

	(void)s;
	(void)si;
	sd_notify(0, "RELOADING=1");
	if (vrdma_config_load(&next, d->cfg.path, errbuf, sizeof(errbuf))) {
		log_err("reload: %s; nothing changed", errbuf);
		notify_serving(d, "READY=1\n");
		return 0;
	}
	warn_restart_needed(&d->cfg, &next);
	if (next.log_level != d->cfg.log_level)
		log_set_level(next.log_level);
	d->cfg.log_level = next.log_level;
	vm_admin_reload(d, &next, &r);
	log_info("reload: %s: %u VM(s) added, %u removed, %u re-created, %u unchanged, %u failed",
		 d->cfg.path, r.added, r.removed, r.changed, r.kept, r.failed);
	vrdma_config_free(&next);
	notify_serving(d, "READY=1\n");
	return 0;
}

/* The file's VMs, each as vrdmactl add-vm would add it; at start one that
 * cannot be served stops the daemon, so a typo is not missed. */
static int add_config_vms(struct vrdmad *d)
{
	char err[512];
	unsigned int i;
	int ret;

	for (i = 0; i < d->cfg.n_vms; i++) {
		ret = vm_admin_add(d, &d->cfg.vms[i], false, err, sizeof(err));
		if (ret) {
			log_err("vm %s: %s", d->cfg.vms[i].name, err);
			return ret;
		}
	}
	return 0;
}

static void remove_vms(struct vrdmad *d)
{
	struct vm *vm;

	vm_table_for_each(&d->vms, vm)
		vm_admin_remove(d, vm, "vrdmad is stopping");
}

/* How long ago (ms) this process was forked, to 1/CLK_TCK: the part of a
 * restart's gap that the service manager spends on the sandbox and exec
 * shows as the time from the fork to main(). -1 if /proc cannot say. */
static double ms_since_fork(void)
{
	unsigned long long start;
	struct timespec now;
	char buf[1024], *p;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/self/stat", "r");
	int i;

	if (!f)
		return -1;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* field 22, counted after the ")" that ends the command's name */
	if (!p || !(p = strrchr(buf, ')')) || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &now))
		return -1;
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &start) != 1)
		return -1;
	return (now.tv_sec + now.tv_nsec / 1e9 - (double)start / hz) * 1e3;
}

/* ms since *t, and *t moved to now: one step of the start's timing */
static double ms_since(uint64_t *t)
{
	uint64_t now = mono_ns();
	double ms = (now - *t) / 1e6;

	*t = now;
	return ms;
}

static int run(struct vrdmad *d)
{
	/* where a start's time goes (ms): a restart's gap is mostly this and
	 * the service manager's part (docs/restart.md) */
	double t_load, t_ctl, t_port, t_workers, t_vms;
	uint64_t now, t;
	sigset_t mask;
	int err;

	/* Block before any thread exists, so only the event loop sees them. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);

	restart_load(d);
	t = mono_ns();
	t_load = (t - d->start_ns) / 1e6;
	err = sd_event_new(&d->event);
	if (err < 0)
		return err;
	if ((err = sd_event_add_signal(d->event, NULL, SIGTERM, on_exit_signal, d)) < 0 ||
	    (err = sd_event_add_signal(d->event, NULL, SIGINT, on_exit_signal, d)) < 0 ||
	    (err = sd_event_add_signal(d->event, NULL, SIGHUP, on_reload_signal, d)) < 0)
		goto unref_event;
	err = vm_table_init(&d->vms);
	if (err)
		goto unref_event;
	err = control_open(d, d->cfg.control_socket);
	if (err)
		goto free_vms;
	t_ctl = ms_since(&t);
	sd_notifyf(0, "STATUS=attaching to %s", d->cfg.interface);
	err = xdp_port_open(&d->port, &d->cfg);
	if (err)
		goto close_control;
	t_port = ms_since(&t);
	err = vm_server_watch_broken(d);
	if (err)
		goto close_port;
	d->n_workers = d->cfg.workers;
	err = workers_create(&d->workers, d->n_workers, &d->port, &d->vms, d->cfg.idle_spin_us,
			     d->broken_fd);
	if (err)
		goto unwatch_broken;
	if (d->cfg.n_worker_cpus)
		workers_pin(d->workers, d->n_workers, d->cfg.worker_cpus);
	t_workers = ms_since(&t);
	/* The VMs before the workers run: adding or restoring one pauses every
	 * worker (twice, for a restore), and on a busy host each pause waits
	 * for a thread to be scheduled; one that has not started needs none. */
	err = add_config_vms(d);
	t_vms = ms_since(&t);
	restart_settle(d);
	if (err)
		goto remove_vms;
	err = workers_run(d->workers, d->n_workers);
	if (err)
		goto remove_vms;	/* stopped the ones it started */
	t_workers += ms_since(&t);
	if (sd_watchdog_enabled(0, &d->watchdog_usec) > 0) {
		sd_event_source *wd;

		sd_event_now(d->event, CLOCK_MONOTONIC, &now);
		err = sd_event_add_time(d->event, &wd, CLOCK_MONOTONIC,
					now + d->watchdog_usec / 4, 0, on_watchdog, d);
		if (err < 0)
			goto remove_vms;
		/* Periodic: on_watchdog moves the time forward each round. */
		sd_event_source_set_enabled(wd, SD_EVENT_ON);
		sd_event_source_set_floating(wd, 1);
		sd_event_source_unref(wd);
	}

	notify_serving(d, "READY=1\n");
	log_info("ready: %u VM(s), control socket %s; started in %.1f ms (load %.1f, control %.1f, "
		 "port %.1f, workers %.1f, VMs %.1f; main() %.0f ms after the fork)", d->vms.n_vms,
		 d->cfg.control_socket, (mono_ns() - d->start_ns) / 1e6, t_load, t_ctl, t_port,
		 t_workers, t_vms, d->fork_ms);
	err = sd_event_loop(d->event);
	sd_notify(0, "STOPPING=1");
	if (d->stopping)
		restart_save(d);

remove_vms:
	remove_vms(d);
	workers_stop(d->workers, d->n_workers);
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
	fdstore_free(&d->fds);
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
	struct vrdmad d = { .broken_fd = -1, .start_ns = mono_ns(), .fork_ms = ms_since_fork() };
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
