/* SPDX-License-Identifier: GPL-2.0-only */
/* Control socket: vrdmactl's requests, answered on the control-plane thread. */
#ifndef VRDMAD_CONTROL_H
#define VRDMAD_CONTROL_H

#include "daemon.h"

int control_open(struct vrdmad *d, const char *path);
void control_close(struct vrdmad *d);

#endif
