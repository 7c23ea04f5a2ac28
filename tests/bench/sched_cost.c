// SPDX-License-Identifier: GPL-2.0-only
/*
 * `make bench`: what this machine charges for a system call and for a switch
 * between two runnable parties on one CPU, the costs that bound the veth
 * bench's RC round trip. There, two daemons' workers and two perf programs
 * share two CPUs, so each hand-off between a worker and the program beside
 * it is a switch between processes; the raw XSK ping-pong has one party per
 * CPU and switches none. Each figure is the median of ROUNDS runs.
 *
 *   bench: machine_syscall_ns          sched_yield() with nothing else to run
 *   bench: machine_process_switch_ns   sched_yield() between two processes
 *   bench: machine_thread_switch_ns    ... between two threads of one process
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ITERS	100000
#define ROUNDS	5

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void *yield_loop(void *arg)
{
	long i;

	for (i = 0; i < ITERS; i++)
		sched_yield();
	return arg;
}

/* ns per sched_yield() with nothing else runnable on this CPU */
static double alone(void)
{
	double t = now_ns();

	yield_loop(NULL);
	return (now_ns() - t) / ITERS;
}

/* ns per sched_yield() while a forked process yields on the same CPU: each
 * one hands the CPU over. -1 if the child could not run. */
static double two_processes(void)
{
	double t = now_ns();
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (!pid) {
		yield_loop(NULL);
		_exit(0);
	}
	yield_loop(NULL);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return (now_ns() - t) / (2.0 * ITERS);
}

static double two_threads(void)
{
	double t = now_ns();
	pthread_t th;

	if (pthread_create(&th, NULL, yield_loop, NULL))
		return -1;
	yield_loop(NULL);
	pthread_join(th, NULL);
	return (now_ns() - t) / (2.0 * ITERS);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* median of ROUNDS runs of fn; -1 if any failed */
static double median(double (*fn)(void))
{
	double v[ROUNDS];
	int i;

	for (i = 0; i < ROUNDS; i++) {
		v[i] = fn();
		if (v[i] < 0)
			return -1;
	}
	qsort(v, ROUNDS, sizeof(v[0]), cmp_double);
	return v[ROUNDS / 2];
}

int main(void)
{
	double sys, proc, thr;
	cpu_set_t set;

	/* Both parties on one CPU (a child inherits it): CPU 0, where the
	 * bench's side A runs. */
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, "sched_cost: cannot pin to CPU 0: %s\n", strerror(errno));
		return 1;
	}
	sys = median(alone);
	proc = median(two_processes);
	thr = median(two_threads);
	if (proc < 0 || thr < 0) {
		fprintf(stderr, "sched_cost: the second party did not run\n");
		return 1;
	}
	printf("bench: machine_syscall_ns=%.0f\n", sys);
	printf("bench: machine_process_switch_ns=%.0f\n", proc);
	printf("bench: machine_thread_switch_ns=%.0f\n", thr);
	return 0;
}
