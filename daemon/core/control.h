/* SPDX-License-Identifier: GPL-2.0-only */
/* Control socket: vrdmactl's requests, answered on the control-plane thread. */
#ifndef VRDMAD_CONTROL_H
#define VRDMAD_CONTROL_H

#include "daemon.h"

int control_open(struct vrdmad *d, const char *path);
void control_close(struct vrdmad *d);
/* The clients connected now (the control-socket fuzzer checks that every
 * one it left was let go). */
unsigned int control_clients(const struct vrdmad *d);

#endif
