/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Addresses as people write them: GIDs (an IPv4 or IPv6 address) and MACs,
 * for the config file, the control socket and the VM table.
 */
#ifndef VRDMAD_ADDR_H
#define VRDMAD_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roce_wire.h"	/* struct vrdma_gid */

/* 0, or -EINVAL if text is neither an IPv4 nor an IPv6 address. */
int vrdma_gid_parse(struct vrdma_gid *gid, const char *text);
void vrdma_gid_format(const struct vrdma_gid *gid, char *buf, size_t len); /* len >= INET6_ADDRSTRLEN */
bool vrdma_gid_is_v4mapped(const struct vrdma_gid *gid);
/* Why an address cannot be a unicast RoCE GID, or NULL if it can. */
const char *vrdma_gid_unusable(const struct vrdma_gid *gid);
/* fe80::/64 with the EUI-64 of mac (RFC 4291 appendix A). */
void vm_link_local_gid(const uint8_t mac[6], struct vrdma_gid *gid);

/* "52:54:00:12:34:56": 0, or -EINVAL. */
int vrdma_mac_parse(uint8_t mac[6], const char *text);
/* 2 * n hex digits into n bytes: 0, or -EINVAL at the first that is not one
 * (never reading past it, so a short string is safe). */
int vrdma_unhex(uint8_t *out, const char *hex, size_t n);

#endif
