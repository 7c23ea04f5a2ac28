/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vrdmactl capture: the frames the workers receive, send and loop back, as
 * a pcap stream (nanosecond timestamps, Ethernet). A capture on the
 * interface cannot see them: XDP redirects them before any tap, and AF_XDP
 * sends past it. The workers copy frames into their capture rings while
 * capture_on is set; the control thread turns it on and off and drains.
 */
#ifndef VRDMAD_CAPTURE_H
#define VRDMAD_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "worker.h"

#define CAPTURE_PCAP_HEADER 24
#define CAPTURE_PCAP_RECORD 16		/* before each frame */

/* Drop what an earlier capture left in the rings, then start copying. */
void capture_start(struct worker *ws, unsigned int n);
void capture_stop(struct worker *ws, unsigned int n);
void capture_pcap_header(uint8_t out[CAPTURE_PCAP_HEADER], uint32_t snaplen);
/* Move captured frames into out as pcap records while they fit in cap bytes
 * and fewer than max (0: no limit) have been moved; returns the bytes
 * written and adds the records to *frames. */
size_t capture_drain(struct worker *ws, unsigned int n, uint8_t *out, size_t cap, uint64_t max,
		     uint64_t *frames);
/* Copies the workers lost because their ring was full. */
uint64_t capture_lost(const struct worker *ws, unsigned int n);

#endif
