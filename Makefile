# vrdmad — see README.md. `make help` lists the targets.
SHELL := /bin/bash
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib/vrdmad
SYSCONFDIR ?= /etc
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
HOOKDIR ?= $(SYSCONFDIR)/libvirt/hooks/qemu.d
DESTDIR ?=
BUILD ?= build

CC ?= gcc
CLANG ?= clang
PKG_CONFIG ?= pkg-config
PKGS := libxdp libbpf libsystemd json-c inih libisal
ARCH_INC := /usr/include/$(shell $(CC) -dumpmachine)

# Debian packages the project needs: to build, to test, and to run the demo.
DEB_PACKAGES := gcc make pkg-config clang llvm libc6-dev libclang-rt-14-dev \
	libxdp-dev libbpf-dev libsystemd-dev libjson-c-dev libinih-dev libisal-dev \
	libcmocka-dev zlib1g-dev iproute2 iputils-ping python3 python3-scapy tshark jq \
	iperf3 util-linux qemu-system-x86 debootstrap e2fsprogs busybox-static groff-base man-db \
	systemd-container libvirt-clients strace nftables \
	dpkg-dev patch meson ninja-build libglib2.0-dev libpixman-1-dev libfdt-dev libcap-ng-dev

WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral \
	-Wmissing-prototypes -Wstrict-prototypes
BASE_CFLAGS := -std=gnu11 -g -D_GNU_SOURCE $(WARN)
CFLAGS ?= -O2
SAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_FLAGS := -std=gnu11 -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=all

ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-7s %s\n' $(1) $(2);
endif

# pkg-config runs only for targets that compile: `make deps` must work first.
pkg_cflags = $(shell $(PKG_CONFIG) --cflags $(PKGS))
pkg_libs = $(shell $(PKG_CONFIG) --libs $(PKGS)) -lpthread

# ---- the daemon's subsystems ----
# One folder each under daemon/, lowest first. A subsystem's files may
# include their own headers, include/, and the headers of the subsystems it
# USES, nothing else: each file is compiled with exactly those -I, so a file
# that reaches across the rule does not build. (docs/architecture.md)
SUBSYSTEMS := common roce engine vhost device port core
USES_common :=
USES_roce :=
USES_engine := roce
USES_vhost := common
USES_device := common roce engine vhost
USES_port := common roce engine vhost device
USES_core := common roce engine vhost device port
sub_inc = -Iinclude -Idaemon/$(1) $(addprefix -Idaemon/,$(USES_$(1)))
# Tests and benches see every subsystem and their harnesses (tests/lib); the
# tools only what they link.
ALL_INC := -Iinclude $(addprefix -Idaemon/,$(SUBSYSTEMS)) -Itools -Itests/lib
TOOL_INC := -Iinclude -Itools

DAEMON_MAIN := daemon/core/main.c
sub_srcs = $(filter-out $(DAEMON_MAIN),$(wildcard daemon/$(1)/*.c))
CTL_SRCS := tools/vrdmactl.c
# libvrdma, one archive per flavour, linked into the perf tools and tests.
LIBVRDMA_SRCS := $(wildcard tools/libvrdma/*.c)
libvrdma = $(OBJ)/$(1)/tools/libvrdma.a
UNIT_TESTS := $(patsubst tests/unit/%.c,%,$(wildcard tests/unit/test_*.c))

# Objects in three flavours, each source compiled once per flavour: rel
# (CFLAGS), asan (gcc, ASan+UBSan: tests and the daemon the integration tests
# run), fuzz (clang, libFuzzer's instrumentation). Each subsystem is an
# archive linked as a group into the daemon, the unit tests and the fuzzers.
OBJ := $(BUILD)/obj
objs = $(patsubst %.c,$(OBJ)/$(1)/%.o,$(2))
sub_lib = $(OBJ)/$(1)/lib$(2).a
daemon_libs = $(foreach s,$(SUBSYSTEMS),$(call sub_lib,$(1),$(s)))
# What tests and benches share (tests/lib): one archive per flavour.
TESTLIB_SRCS := $(wildcard tests/lib/*.c)
test_lib = $(OBJ)/$(1)/libtests.a
link_libs = -Wl,--start-group $(call daemon_libs,$(1)) -Wl,--end-group
BPF_OBJ := $(BUILD)/vrdma_xdp.bpf.o
FUZZ_TARGETS := fuzz_parse fuzz_vhost fuzz_ctrl fuzz_wqe fuzz_restore fuzz_gring fuzz_state fuzz_config \
		fuzz_control_socket
PROGS := $(BUILD)/vrdmad $(BUILD)/vrdmactl
SAN_PROGS := $(BUILD)/asan/vrdmad $(BUILD)/asan/vrdmactl
# The perf tools on libvrdma: vrdma-pingpong, vrdma-perf (tools/perf/).
TOOL_PROGS := $(BUILD)/vrdma-pingpong $(BUILD)/vrdma-perf
TOOLS_COMMON_SRCS := $(wildcard tools/common/*.c)
PERF_SRCS := $(wildcard tools/perf/*.c) $(TOOLS_COMMON_SRCS)
SAN_TOOL_PROGS := $(patsubst $(BUILD)/%,$(BUILD)/asan/%,$(TOOL_PROGS))
SAN_TESTS := $(addprefix $(BUILD)/asan/,$(UNIT_TESTS))

VECTORS := tests/vectors/roce-frames.txt
FUZZ_SECONDS ?= 20
FUZZ_DEVICE_SECONDS ?= 20
FUZZ_STATE_SECONDS ?= 30
FUZZ_CONFIG_SECONDS ?= 10
FUZZ_CONTROL_SECONDS ?= 10
PY := /usr/bin/python3	# Debian's (scapy), whatever python3 is first on PATH

.SECONDARY:
.PHONY: all deps check check-steps check-build man-check install-check systemd-check unit codec-interop fuzz integration interop qemu vm-check demo bench install uninstall clean help
all: $(PROGS) $(TOOL_PROGS) $(BPF_OBJ)

help:
	@echo 'make            build vrdmad, vrdmactl and the XDP program into $(BUILD)/'
	@echo 'make deps       install the Debian packages the project needs (as root)'
	@echo 'make check      deps, build, then every test (unit under ASan+UBSan, netns integration; as root)'
	@echo 'make unit       only the unit tests'
	@echo 'make man-check  the man pages: no groff warning, every flag and key documented'
	@echo 'make codec-interop  codec against scapy and tshark'
	@echo 'make fuzz       the packet parser under libFuzzer for FUZZ_SECONDS ($(FUZZ_SECONDS)), the device'"'"'s'
	@echo '                parsers for FUZZ_DEVICE_SECONDS ($(FUZZ_DEVICE_SECONDS)) each, one whole device'
	@echo '                (commands, WQEs, frames, vhost-user; v1 or rings) for FUZZ_STATE_SECONDS ($(FUZZ_STATE_SECONDS)),'
	@echo '                the configuration and add-vm parser for FUZZ_CONFIG_SECONDS ($(FUZZ_CONFIG_SECONDS)),'
	@echo '                the control socket for FUZZ_CONTROL_SECONDS ($(FUZZ_CONTROL_SECONDS))'
	@echo 'make integration  only the network-namespace tests (root)'
	@echo 'make interop    Soft-RoCE in a QEMU guest against vrdmad and the perf tools (root)'
	@echo 'make qemu       Debian'"'"'s QEMU with vhost-user-rdma-pci (guest/qemu/), built once, cached (root)'
	@echo 'make vm-check   a QEMU guest with vhost-user-rdma-pci on vrdmad (root)'
	@echo 'make systemd-check  vrdmad.service under systemd in a container (root)'
	@echo 'make install-check  make install / uninstall into a scratch DESTDIR'
	@echo 'make demo       deps, build, run vrdmad on a veth pair and show it working (root)'
	@echo 'make bench      benchmarks (root)'
	@echo 'make install    install into $$(DESTDIR)$$(PREFIX) (PREFIX=$(PREFIX))'
	@echo 'make uninstall  remove what install put there'
	@echo 'V=1             show full commands'

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" != 0 ]; then echo "missing packages:" $$missing "- run: sudo make deps" >&2; exit 1; fi; \
		echo "installing:" $$missing; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(BUILD) $(BUILD)/asan:
	$(Q)mkdir -p $@

# The XDP object's default path is compiled in: rebuild when LIBDIR changes
# (make PREFIX=/usr install after a plain make).
LIBDIR_STAMP := $(BUILD)/libdir.stamp
$(shell mkdir -p $(BUILD); [ "$$(cat $(LIBDIR_STAMP) 2>/dev/null)" = "$(LIBDIR)" ] || \
	echo "$(LIBDIR)" > $(LIBDIR_STAMP))

# ---- compiling: one rule per flavour and kind of source; -MMD dependencies ----
$(OBJ)/rel/daemon/%.o: daemon/%.c
	$(call say,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(BASE_CFLAGS) $(CFLAGS) $(DEFS) $(pkg_cflags) \
		$(call sub_inc,$(word 2,$(subst /, ,$<))) -MMD -MP -c $< -o $@
$(OBJ)/asan/daemon/%.o: daemon/%.c
	$(call say,CC-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(DEFS) $(pkg_cflags) \
		$(call sub_inc,$(word 2,$(subst /, ,$<))) -MMD -MP -c $< -o $@
# vrdmad-liar (tests only): the device subsystem again, with its lies
# compiled in (daemon/device/vdev_lie.h); never installed.
$(OBJ)/liar/daemon/%.o: daemon/%.c
	$(call say,CC-LIAR,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -DVDEV_LIES $(DEFS) $(pkg_cflags) \
		$(call sub_inc,$(word 2,$(subst /, ,$<))) -MMD -MP -c $< -o $@
$(OBJ)/fuzz/daemon/%.o: daemon/%.c
	$(call say,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) $(FUZZ_FLAGS) $(DEFS) $(pkg_cflags) \
		$(call sub_inc,$(word 2,$(subst /, ,$<))) -MMD -MP -c $< -o $@

XDP_DEFAULT_DEF = -DVRDMA_XDP_OBJECT_DEFAULT='"$(LIBDIR)/vrdma_xdp.bpf.o"'
TEST_DEFS = -DVRDMA_SRCDIR='"$(CURDIR)"' -DVRDMA_VECTORS='"$(CURDIR)/$(VECTORS)"' $(XDP_DEFAULT_DEF)
cmocka_cflags = $(shell $(PKG_CONFIG) --cflags cmocka)
$(OBJ)/rel/tests/%.o: tests/%.c
	$(call say,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(BASE_CFLAGS) $(CFLAGS) $(TEST_DEFS) $(pkg_cflags) \
		$(ALL_INC) -MMD -MP -c $< -o $@
$(OBJ)/asan/tests/%.o: tests/%.c
	$(call say,CC-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(TEST_DEFS) $(pkg_cflags) \
		$(cmocka_cflags) $(ALL_INC) -MMD -MP -c $< -o $@
$(OBJ)/fuzz/tests/%.o: tests/%.c
	$(call say,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D) && $(CLANG) $(FUZZ_FLAGS) $(pkg_cflags) $(ALL_INC) -MMD -MP -c $< -o $@

$(OBJ)/rel/tools/%.o: tools/%.c
	$(call say,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(BASE_CFLAGS) $(CFLAGS) $(pkg_cflags) $(TOOL_INC) -MMD -MP \
		-c $< -o $@
$(OBJ)/asan/tools/%.o: tools/%.c
	$(call say,CC-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(pkg_cflags) $(TOOL_INC) -MMD -MP \
		-c $< -o $@

# The XDP object's default path is compiled into config.c (and the test of
# its default) alone.
CONFIG_OBJS := $(foreach f,rel asan fuzz,$(call objs,$(f),daemon/common/config.c))
$(CONFIG_OBJS): DEFS = $(XDP_DEFAULT_DEF)
$(CONFIG_OBJS) $(OBJ)/asan/tests/unit/test_config.o: $(LIBDIR_STAMP)

define SUBSYSTEM_LIB
$(call sub_lib,$(1),$(2)): $(call objs,$(1),$(call sub_srcs,$(2)))
	$$(call say,AR,$$@)
	$$(Q)rm -f $$@ && $(AR) rcs $$@ $$^
endef
$(foreach f,rel asan fuzz,$(foreach s,$(SUBSYSTEMS),$(eval $(call SUBSYSTEM_LIB,$(f),$(s)))))

define TEST_LIB
$(call test_lib,$(1)): $(call objs,$(1),$(TESTLIB_SRCS))
	$$(call say,AR,$$@)
	$$(Q)rm -f $$@ && $(AR) rcs $$@ $$^
endef
$(foreach f,rel asan fuzz,$(eval $(call TEST_LIB,$(f))))

define LIBVRDMA_LIB
$(call libvrdma,$(1)): $(call objs,$(1),$(LIBVRDMA_SRCS))
	$$(call say,AR,$$@)
	$$(Q)rm -f $$@ && $(AR) rcs $$@ $$^
endef
$(foreach f,rel asan,$(eval $(call LIBVRDMA_LIB,$(f))))

-include $(shell find $(OBJ) -name '*.d' 2> /dev/null)

# ---- linking ----
$(BUILD)/vrdmad: $(call objs,rel,$(DAEMON_MAIN)) $(call daemon_libs,rel)
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $< $(call link_libs,rel) -o $@ $(pkg_libs)

$(BUILD)/asan/vrdmad: $(call objs,asan,$(DAEMON_MAIN)) $(call daemon_libs,asan)
	$(call say,LD-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) $< $(call link_libs,asan) -o $@ $(pkg_libs)

LIAR_LIBS := $(foreach s,$(SUBSYSTEMS),$(if $(filter device,$(s)),$(OBJ)/liar/libdevice.a,$(call sub_lib,asan,$(s))))
$(OBJ)/liar/libdevice.a: $(call objs,liar,$(call sub_srcs,device))
	$(call say,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

# The test guests' system-call counter (tests/vm/syscount.c), preloaded
# into verbs programs there: no sanitizer (it runs in the guest).
$(BUILD)/syscount.so: tests/vm/syscount.c
	$(call say,CC-SO,$@)
	$(Q)mkdir -p $(@D) && $(CC) -std=gnu11 -O2 $(WARN) -shared -fPIC -o $@ $< -ldl

$(BUILD)/asan/vrdmad-liar: $(call objs,asan,$(DAEMON_MAIN)) $(LIAR_LIBS)
	$(call say,LD-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) $< -Wl,--start-group $(LIAR_LIBS) -Wl,--end-group \
		-o $@ $(pkg_libs)

$(BUILD)/vrdmactl: $(call objs,rel,$(CTL_SRCS))
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(pkg_libs)

$(BUILD)/asan/vrdmactl: $(call objs,asan,$(CTL_SRCS))
	$(call say,LD-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) $^ -o $@ $(pkg_libs)

# A unit test links the daemon's subsystems; the linker keeps what it uses.
$(BUILD)/asan/test_%: $(OBJ)/asan/tests/unit/test_%.o $(call test_lib,asan) $(call daemon_libs,asan)
	$(call say,LD-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) $< $(call test_lib,asan) $(call link_libs,asan) -o $@ \
		$(pkg_libs) $$($(PKG_CONFIG) --libs cmocka)

$(BPF_OBJ): bpf/vrdma_xdp.bpf.c include/vrdma_xdp.h include/roce_defs.h | $(BUILD)
	$(call say,BPF,$@)
	$(Q)$(CLANG) -O2 -g -Wall -Werror -target bpf -Iinclude -I$(ARCH_INC) -c $< -o $@

# The codec's command-line front end for the scapy and tshark checks.
$(BUILD)/asan/roce_tool: $(OBJ)/asan/tests/codec/roce_tool.o $(call sub_lib,asan,roce) \
		$(call sub_lib,asan,common)
	$(call say,LD-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) $^ -o $@ $$($(PKG_CONFIG) --libs libisal)

# The fuzz targets: the packet parser, and the device's (vhost-user
# messages, control commands, WQEs, the whole device at once), the
# engine's saved state, the configuration's parser and the control socket.
$(BUILD)/fuzz_%: $(OBJ)/fuzz/tests/fuzz/fuzz_%.o $(call test_lib,fuzz) $(call daemon_libs,fuzz)
	$(call say,LD-FUZZ,$@)
	$(Q)$(CLANG) -fsanitize=fuzzer,address,undefined $< $(call test_lib,fuzz) $(call link_libs,fuzz) -o $@ \
		$(pkg_libs)

$(BUILD)/codec_bench: $(OBJ)/rel/tests/bench/codec_bench.o $(call sub_lib,rel,roce)
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $$($(PKG_CONFIG) --libs libisal) -lz

# Two transport engines over an in-memory wire, on one thread.
$(BUILD)/engine_bench: $(OBJ)/rel/tests/bench/engine_bench.o $(call test_lib,rel) $(call sub_lib,rel,engine) \
		$(call sub_lib,rel,roce)
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $$($(PKG_CONFIG) --libs libisal)

codec-interop: $(BUILD)/asan/roce_tool
	$(Q)ROCE_TOOL=$(CURDIR)/$(BUILD)/asan/roce_tool VECTORS=$(CURDIR)/$(VECTORS) \
		tests/codec/run.sh

fuzz: $(addprefix $(BUILD)/,$(FUZZ_TARGETS))
	$(Q)FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_DEVICE_SECONDS=$(FUZZ_DEVICE_SECONDS) \
		FUZZ_STATE_SECONDS=$(FUZZ_STATE_SECONDS) FUZZ_CONFIG_SECONDS=$(FUZZ_CONFIG_SECONDS) \
		FUZZ_CONTROL_SECONDS=$(FUZZ_CONTROL_SECONDS) PY=$(PY) \
		tests/fuzz/run.sh $(BUILD) $(VECTORS)

# The transport tests also dump every frame they send; tshark must decode
# them all without a malformed packet, and test_gsi's CM ConnectRequest as
# one, with QP1's headers. (Its RPC-over-RDMA heuristic claims
# SEND payloads and throws on 0- or 1-byte ones: not ours to decode.)
unit: $(SAN_TESTS)
	$(Q)set -e; for t in $(SAN_TESTS); do echo "== $$t"; \
		TRANSPORT_PCAP=$(BUILD)/transport.pcap $$t; done
	$(Q)n=$$(tshark -r $(BUILD)/transport.pcap 2>/dev/null | wc -l); \
		bad=$$(tshark -r $(BUILD)/transport.pcap --disable-heuristic rpcordma \
			-Y _ws.malformed 2>/dev/null | wc -l); \
		echo "transport pcap: $$n frames, $$bad malformed"; test "$$n" -gt 1000 -a "$$bad" = 0
	$(Q)cm=$$(tshark -r $(BUILD)/transport.pcap -Y 'infiniband.cm.req.localqpn == 0x123456 && \
		infiniband.cm.req.serviceid == 0x10604d2 && infiniband.bth.destqp == 1 && \
		infiniband.deth.srcqp == 1 && infiniband.deth.q_key == 0x80010000' 2>/dev/null | wc -l); \
		echo "transport pcap: $$cm CM ConnectRequest from QP1 to QP1 (test_gsi)"; test "$$cm" = 1

# The perf tools on libvrdma: vrdma-pingpong, vrdma-perf.
PINGPONG_SRCS := $(wildcard tools/pingpong/*.c) $(TOOLS_COMMON_SRCS)
$(BUILD)/vrdma-pingpong: $(call objs,rel,$(PINGPONG_SRCS)) $(call libvrdma,rel)
$(BUILD)/vrdma-perf: $(call objs,rel,$(PERF_SRCS)) $(call libvrdma,rel)
$(BUILD)/asan/vrdma-pingpong: $(call objs,asan,$(PINGPONG_SRCS)) $(call libvrdma,asan)
$(BUILD)/asan/vrdma-perf: $(call objs,asan,$(PERF_SRCS)) $(call libvrdma,asan)
$(TOOL_PROGS):
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lm
$(SAN_TOOL_PROGS):
	$(call say,LD-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) $^ -o $@ -lm

# Raw AF_XDP sender, receiver and ping-pong over the daemon's own port code:
# the bench's baseline.
$(BUILD)/xsk_raw: $(OBJ)/rel/tests/bench/xsk_raw.o $(call daemon_libs,rel)
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $< $(call link_libs,rel) -o $@ $(pkg_libs)

# libvrdma's end-to-end test program, against a running vrdmad.
$(BUILD)/asan/vrdma_test: $(OBJ)/asan/tests/integration/vrdma_test.o \
		$(OBJ)/asan/tests/integration/qp_connect.o $(call libvrdma,asan)
	$(call say,LD-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) $^ -o $@

# A front end that attacks the daemon (issue 15) with libvrdma's insides
# (tools/libvrdma/internal.h): the library itself has no such knob.
$(BUILD)/asan/hostile: $(OBJ)/asan/tests/integration/hostile.o \
		$(OBJ)/asan/tests/integration/qp_connect.o $(call libvrdma,asan)
	$(call say,LD-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) $^ -o $@

# Thousands of RC QPs between two VMs on ABI v2 (issue 30): the test, and
# (--busy) what idle QPs cost a busy one in make bench.
$(BUILD)/asan/qp_scale: $(OBJ)/asan/tests/integration/qp_scale.o \
		$(OBJ)/asan/tests/integration/qp_connect.o $(call libvrdma,asan)
	$(call say,LD-SAN,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(SAN_FLAGS) $^ -o $@

$(BUILD)/qp_scale: $(OBJ)/rel/tests/integration/qp_scale.o \
		$(OBJ)/rel/tests/integration/qp_connect.o $(call libvrdma,rel)
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@

# A lossy link where the kernel has no sch_netem.
$(BUILD)/impair: $(OBJ)/rel/tests/integration/impair.o
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@

integration: all $(SAN_PROGS) $(SAN_TOOL_PROGS) $(BUILD)/asan/vrdma_test $(BUILD)/asan/hostile \
		$(BUILD)/impair $(BUILD)/asan/qp_scale
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/asan/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/asan/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) VRDMA_TEST=$(CURDIR)/$(BUILD)/asan/vrdma_test \
		HOSTILE=$(CURDIR)/$(BUILD)/asan/hostile QP_SCALE=$(CURDIR)/$(BUILD)/asan/qp_scale \
		IMPAIR=$(CURDIR)/$(BUILD)/impair VRDMA_PINGPONG=$(CURDIR)/$(BUILD)/asan/vrdma-pingpong \
		VRDMA_PERF=$(CURDIR)/$(BUILD)/asan/vrdma-perf tests/run-integration.sh

# Soft-RoCE in a QEMU guest against the daemon and the perf tools (the
# guest image is built once and cached in $(VRDMA_GUEST_CACHE)).
VRDMA_GUEST_CACHE ?= /var/cache/vrdmad-test
interop: all $(SAN_PROGS) $(SAN_TOOL_PROGS)
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/asan/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/asan/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) VRDMA_PINGPONG=$(CURDIR)/$(BUILD)/asan/vrdma-pingpong \
		VRDMA_PERF=$(CURDIR)/$(BUILD)/asan/vrdma-perf VRDMA_GUEST_CACHE=$(VRDMA_GUEST_CACHE) \
		tests/run-suite.sh interop interop --harness smoke.sh rxe.sh jumbo.sh

# Debian's QEMU source with our device, vhost-user-rdma-pci (guest/qemu/),
# built once (~6 min) and cached in $(VRDMA_GUEST_CACHE)/qemu-KEY; vm-check
# boots guests with it on vrdmad (tests/vm/: the device alone, then the
# Debian 13 guest of guest/image.sh running rdma-core programs).
qemu:
	$(Q)guest/qemu/build.sh $(VRDMA_GUEST_CACHE) > /dev/null

vm-check: all $(SAN_PROGS) $(SAN_TOOL_PROGS) $(BUILD)/asan/vrdmad-liar $(BUILD)/syscount.so
	$(Q)qdir=$$(guest/qemu/build.sh $(VRDMA_GUEST_CACHE)) && \
		VRDMAD=$(CURDIR)/$(BUILD)/asan/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/asan/vrdmactl \
		VRDMA_SYSCOUNT=$(CURDIR)/$(BUILD)/syscount.so \
		VRDMAD_LIAR=$(CURDIR)/$(BUILD)/asan/vrdmad-liar \
		VRDMA_PINGPONG=$(CURDIR)/$(BUILD)/asan/vrdma-pingpong \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) VRDMA_QEMU_DIR=$$qdir VRDMA_GUEST_CACHE=$(VRDMA_GUEST_CACHE) \
		tests/run-suite.sh vm vm --harness device.sh verbs.sh rings.sh perf.sh cm.sh restart.sh upgrade.sh \
		hostile.sh checkpatch.sh

# Every man page renders without a warning and documents every flag, command
# and configuration key the programs have.
man-check: all
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/vrdmactl \
		VRDMA_PINGPONG=$(CURDIR)/$(BUILD)/vrdma-pingpong VRDMA_PERF=$(CURDIR)/$(BUILD)/vrdma-perf \
		tests/man/check.sh

# vrdmad.service under a real systemd as PID 1 (a cached Debian root booted
# with systemd-nspawn): start, STATUS, reload, stop, watchdog, exposure.
# make install / uninstall into a scratch DESTDIR (PREFIX=/usr, as
# systemd-check installs: the daemon is rebuilt for that LIBDIR once).
install-check: all
	$(Q)tests/install/check.sh

systemd-check: all
	$(Q)VRDMA_GUEST_CACHE=$(VRDMA_GUEST_CACHE) tests/systemd/nspawn.sh

# What the VM and container suites boot (QEMU, the guest images, the
# container's root) is built beside the host tests, at idle priority, when
# it is not in the cache yet (tests/warm-caches.sh).
check: deps
	$(Q)VRDMA_GUEST_CACHE=$(VRDMA_GUEST_CACHE) tests/warm-caches.sh \
		$(MAKE) --no-print-directory check-steps

# Each step's time at the end, where a CI log's tail shows it.
CHECK_STEPS = check-build man-check unit codec-interop fuzz integration interop vm-check \
	install-check systemd-check
check-steps:
	$(Q)t0=$$(date +%s); times=; for s in $(CHECK_STEPS); do t=$$(date +%s); \
		$(MAKE) --no-print-directory $$s; rc=$$?; \
		times="$$times $$s $$(($$(date +%s) - t)) s,"; \
		[ $$rc = 0 ] || { echo "check: $$s failed; times:$${times%,}"; exit 1; }; done; \
		echo "check times:$${times%,}; in all $$(($$(date +%s) - t0)) s"

# Everything the steps run, built first on every core.
CHECK_PROGS = all $(SAN_PROGS) $(SAN_TESTS) $(SAN_TOOL_PROGS) $(BUILD)/asan/roce_tool \
	$(addprefix $(BUILD)/,$(FUZZ_TARGETS)) $(BUILD)/asan/vrdma_test $(BUILD)/asan/hostile \
	$(BUILD)/impair $(BUILD)/asan/qp_scale $(BUILD)/asan/vrdmad-liar $(BUILD)/syscount.so
check-build:
	$(Q)$(MAKE) --no-print-directory -j$$(nproc) $(CHECK_PROGS)

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) VRDMA_PINGPONG=$(CURDIR)/$(BUILD)/vrdma-pingpong \
		VRDMA_PERF=$(CURDIR)/$(BUILD)/vrdma-perf tests/demo.sh

$(BUILD)/udp_blast: $(OBJ)/rel/tests/bench/udp_blast.o
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@

$(BUILD)/sched_cost: $(OBJ)/rel/tests/bench/sched_cost.o
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -pthread

$(BUILD)/qp_mem: $(OBJ)/rel/tests/bench/qp_mem.o $(call libvrdma,rel)
	$(call say,LD,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/udp_blast $(BUILD)/codec_bench \
		$(BUILD)/engine_bench $(BUILD)/qp_mem $(BUILD)/xsk_raw $(BUILD)/qp_scale \
		$(BUILD)/sched_cost
	$(Q)$(BUILD)/codec_bench
	$(Q)$(BUILD)/engine_bench
	$(Q)$(BUILD)/sched_cost
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) UDP_BLAST=$(CURDIR)/$(BUILD)/udp_blast tests/bench/run.sh
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) QP_MEM=$(CURDIR)/$(BUILD)/qp_mem tests/bench/qp_mem.sh
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) QP_SCALE=$(CURDIR)/$(BUILD)/qp_scale tests/bench/qp_scale.sh
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) XSK_RAW=$(CURDIR)/$(BUILD)/xsk_raw \
		VRDMA_PERF=$(CURDIR)/$(BUILD)/vrdma-perf tests/bench/veth.sh

# What install puts where; uninstall removes exactly these (never the
# configuration, which is the administrator's).
MAN_PAGES := $(wildcard man/*.[158])
INSTALLED := $(SBINDIR)/vrdmad $(SBINDIR)/vrdmactl $(LIBDIR)/vrdma_xdp.bpf.o \
	$(patsubst $(BUILD)/%,$(BINDIR)/%,$(TOOL_PROGS)) \
	$(if $(wildcard systemd/vrdmad.service),$(UNITDIR)/vrdmad.service) \
	$(if $(wildcard systemd/vrdmad.tmpfiles),$(TMPFILESDIR)/vrdmad.conf) \
	$(if $(wildcard etc/libvirt-hook),$(HOOKDIR)/vrdmad) \
	$(foreach m,$(MAN_PAGES),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m)))

install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(SYSCONFDIR)
	install -m 0755 $(BUILD)/vrdmad $(DESTDIR)$(SBINDIR)/vrdmad
	install -m 0755 $(BUILD)/vrdmactl $(DESTDIR)$(SBINDIR)/vrdmactl
	install -m 0644 $(BPF_OBJ) $(DESTDIR)$(LIBDIR)/vrdma_xdp.bpf.o
	$(foreach t,$(TOOL_PROGS),install -m 0755 $(t) $(DESTDIR)$(BINDIR)/$(notdir $(t));)
	test -e $(DESTDIR)$(SYSCONFDIR)/vrdmad.conf || \
		install -m 0644 etc/vrdmad.conf $(DESTDIR)$(SYSCONFDIR)/vrdmad.conf
	if [ -e systemd/vrdmad.service ]; then install -d $(DESTDIR)$(UNITDIR) && \
		sed 's|@SBINDIR@|$(SBINDIR)|g' systemd/vrdmad.service > $(DESTDIR)$(UNITDIR)/vrdmad.service && \
		chmod 0644 $(DESTDIR)$(UNITDIR)/vrdmad.service; fi
	if [ -e systemd/vrdmad.tmpfiles ]; then install -d $(DESTDIR)$(TMPFILESDIR) && \
		install -m 0644 systemd/vrdmad.tmpfiles $(DESTDIR)$(TMPFILESDIR)/vrdmad.conf; fi
	if [ -e etc/libvirt-hook ]; then install -d $(DESTDIR)$(HOOKDIR) && \
		sed 's|@SBINDIR@|$(SBINDIR)|g' etc/libvirt-hook > $(DESTDIR)$(HOOKDIR)/vrdmad && \
		chmod 0755 $(DESTDIR)$(HOOKDIR)/vrdmad; fi
	$(foreach m,$(MAN_PAGES),install -D -m 0644 $(m) \
		$(DESTDIR)$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(notdir $(m));)

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(LIBDIR) 2>/dev/null

clean:
	rm -rf $(BUILD)
