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
	systemd-container libvirt-clients strace

WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral \
	-Wmissing-prototypes -Wstrict-prototypes
BASE_CFLAGS := -std=gnu11 -g -D_GNU_SOURCE $(WARN) -Iinclude -Idaemon \
	-DVRDMA_XDP_OBJECT_DEFAULT='"$(LIBDIR)/vrdma_xdp.bpf.o"'
CFLAGS ?= -O2
SAN_FLAGS := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

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

DAEMON_SRCS := $(wildcard daemon/*.c)
DAEMON_LIB_SRCS := $(filter-out daemon/main.c,$(DAEMON_SRCS))
CTL_SRCS := tools/vrdmactl.c daemon/config.c
UNIT_TESTS := $(patsubst tests/unit/%.c,%,$(wildcard tests/unit/test_*.c))
HEADERS := $(wildcard include/*.h daemon/*.h)

BPF_OBJ := $(BUILD)/vrdma_xdp.bpf.o
LIBVRDMA_SRCS := tools/libvrdma.c
LIBVRDMA_HEADERS := tools/libvrdma.h include/virtio_rdma.h include/vhost_user.h
FUZZ_TARGETS := fuzz_parse fuzz_vhost fuzz_ctrl fuzz_wqe fuzz_state
PROGS := $(BUILD)/vrdmad $(BUILD)/vrdmactl
SAN_PROGS := $(BUILD)/asan/vrdmad $(BUILD)/asan/vrdmactl
# The perf tools on libvrdma: vrdma-pingpong, vrdma-perf.
TOOL_PROGS := $(patsubst tools/%.c,$(BUILD)/%,$(wildcard tools/vrdma-*.c))
SAN_TOOL_PROGS := $(patsubst $(BUILD)/%,$(BUILD)/asan/%,$(TOOL_PROGS))
SAN_TESTS := $(addprefix $(BUILD)/asan/,$(UNIT_TESTS))

CODEC_SRCS := daemon/codec.c daemon/icrc.c daemon/opcode.c
CODEC_HEADERS := daemon/codec.h daemon/icrc.h daemon/opcode.h include/roce_wire.h
VECTORS := tests/vectors/roce-frames.txt
FUZZ_SECONDS ?= 60
FUZZ_DEVICE_SECONDS ?= 30
FUZZ_STATE_SECONDS ?= 60
PY := /usr/bin/python3	# Debian's (scapy), whatever python3 is first on PATH

.PHONY: all deps check man-check install-check systemd-check unit codec-interop fuzz integration interop demo bench install uninstall clean help
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
	@echo '                (commands, WQEs, frames, vhost-user) for FUZZ_STATE_SECONDS ($(FUZZ_STATE_SECONDS))'
	@echo 'make integration  only the network-namespace tests (root)'
	@echo 'make interop    Soft-RoCE in a QEMU guest against vrdmad and the perf tools (root)'
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

$(BUILD)/vrdmad: $(DAEMON_SRCS) $(HEADERS) $(LIBDIR_STAMP) | $(BUILD)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(pkg_cflags) $(DAEMON_SRCS) -o $@ $(pkg_libs)

$(BUILD)/vrdmactl: $(CTL_SRCS) $(HEADERS) | $(BUILD)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(pkg_cflags) $(CTL_SRCS) -o $@ $(pkg_libs)

$(BUILD)/asan/vrdmad: $(DAEMON_SRCS) $(HEADERS) $(LIBDIR_STAMP) | $(BUILD)/asan
	$(call say,CC-SAN,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(pkg_cflags) $(DAEMON_SRCS) -o $@ $(pkg_libs)

$(BUILD)/asan/vrdmactl: $(CTL_SRCS) $(HEADERS) | $(BUILD)/asan
	$(call say,CC-SAN,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $(pkg_cflags) $(CTL_SRCS) -o $@ $(pkg_libs)

# A unit test links the daemon's sources except main.c; the linker keeps
# only what the test uses.
$(BUILD)/asan/test_%: tests/unit/test_%.c $(DAEMON_LIB_SRCS) $(HEADERS) | $(BUILD)/asan
	$(call say,CC-SAN,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -DVRDMA_SRCDIR='"$(CURDIR)"' \
		-DVRDMA_VECTORS='"$(CURDIR)/$(VECTORS)"' $(pkg_cflags) \
		$$($(PKG_CONFIG) --cflags cmocka) $< $(DAEMON_LIB_SRCS) -o $@ \
		$(pkg_libs) $$($(PKG_CONFIG) --libs cmocka)

$(BPF_OBJ): bpf/vrdma_xdp.bpf.c include/vrdma_xdp.h | $(BUILD)
	$(call say,BPF,$@)
	$(Q)$(CLANG) -O2 -g -Wall -Werror -target bpf -Iinclude -I$(ARCH_INC) -c $< -o $@

# The codec's command-line front end for the scapy and tshark checks.
$(BUILD)/asan/roce_tool: tests/codec/roce_tool.c $(CODEC_SRCS) $(CODEC_HEADERS) | $(BUILD)/asan
	$(call say,CC-SAN,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) $< $(CODEC_SRCS) -o $@ $$($(PKG_CONFIG) --libs libisal)

$(BUILD)/fuzz_parse: tests/fuzz/fuzz_parse.c $(CODEC_SRCS) $(CODEC_HEADERS) | $(BUILD)
	$(call say,FUZZ,$@)
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -Idaemon \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		$< $(CODEC_SRCS) -o $@ $$($(PKG_CONFIG) --libs libisal)

# The device's parsers: vhost-user messages, control commands, WQEs.
$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_device.h $(DAEMON_LIB_SRCS) $(HEADERS) | $(BUILD)
	$(call say,FUZZ,$@)
	$(Q)$(CLANG) -std=gnu11 -g -O1 -D_GNU_SOURCE -Iinclude -Idaemon \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(pkg_cflags) \
		$< $(DAEMON_LIB_SRCS) -o $@ $(pkg_libs)

$(BUILD)/codec_bench: tests/bench/codec_bench.c $(CODEC_SRCS) $(CODEC_HEADERS) | $(BUILD)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $< $(CODEC_SRCS) -o $@ \
		$$($(PKG_CONFIG) --libs libisal) -lz

# Two transport engines over an in-memory wire, on one thread.
ENGINE_SRCS := daemon/engine.c daemon/mr.c daemon/cq.c daemon/qp.c daemon/req.c daemon/resp.c \
	daemon/comp.c
$(BUILD)/engine_bench: tests/bench/engine_bench.c $(ENGINE_SRCS) $(CODEC_SRCS) $(HEADERS) | $(BUILD)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $< $(ENGINE_SRCS) $(CODEC_SRCS) -o $@ \
		$$($(PKG_CONFIG) --libs libisal)

codec-interop: $(BUILD)/asan/roce_tool
	$(Q)ROCE_TOOL=$(CURDIR)/$(BUILD)/asan/roce_tool VECTORS=$(CURDIR)/$(VECTORS) \
		tests/codec/run.sh

fuzz: $(addprefix $(BUILD)/,$(FUZZ_TARGETS))
	$(Q)rm -rf $(BUILD)/fuzz-corpus && mkdir -p $(BUILD)/fuzz-corpus
	$(Q)tests/fuzz/seed.sh $(VECTORS) $(BUILD)/fuzz-corpus
	$(Q)echo "== fuzz_parse ($(FUZZ_SECONDS) s)"; $(BUILD)/fuzz_parse -max_total_time=$(FUZZ_SECONDS) \
		-print_final_stats=1 -artifact_prefix=$(BUILD)/ \
		$(BUILD)/fuzz-corpus 2>&1 | tail -15; test $${PIPESTATUS[0]} = 0
	$(Q)set -e; for t in fuzz_vhost fuzz_ctrl fuzz_wqe; do \
		echo "== $$t ($(FUZZ_DEVICE_SECONDS) s)"; rm -rf $(BUILD)/$$t-corpus; mkdir -p $(BUILD)/$$t-corpus; \
		if [ -e tests/fuzz/seed_$${t#fuzz_}.py ]; then $(PY) tests/fuzz/seed_$${t#fuzz_}.py $(BUILD)/$$t-corpus; fi; \
		$(BUILD)/$$t -max_total_time=$(FUZZ_DEVICE_SECONDS) -max_len=8192 -print_final_stats=1 \
			-artifact_prefix=$(BUILD)/$$t- $(BUILD)/$$t-corpus 2>&1 | tail -6; \
		test $${PIPESTATUS[0]} = 0; done
	$(Q)echo "== fuzz_state ($(FUZZ_STATE_SECONDS) s)"; rm -rf $(BUILD)/fuzz_state-corpus; \
		$(PY) tests/fuzz/seed_state.py $(BUILD)/fuzz_state-corpus && \
		$(BUILD)/fuzz_state -max_total_time=$(FUZZ_STATE_SECONDS) -max_len=4096 \
			-print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz_state- \
			$(BUILD)/fuzz_state-corpus 2>&1 | tail -6; test $${PIPESTATUS[0]} = 0

# The transport tests also dump every frame they send; tshark must decode
# them all without a malformed packet. (Its RPC-over-RDMA heuristic claims
# SEND payloads and throws on 0- or 1-byte ones: not ours to decode.)
unit: $(SAN_TESTS)
	$(Q)set -e; for t in $(SAN_TESTS); do echo "== $$t"; \
		TRANSPORT_PCAP=$(BUILD)/transport.pcap $$t; done
	$(Q)n=$$(tshark -r $(BUILD)/transport.pcap 2>/dev/null | wc -l); \
		bad=$$(tshark -r $(BUILD)/transport.pcap --disable-heuristic rpcordma \
			-Y _ws.malformed 2>/dev/null | wc -l); \
		echo "transport pcap: $$n frames, $$bad malformed"; test "$$n" -gt 1000 -a "$$bad" = 0

# The perf tools on libvrdma: vrdma-pingpong, vrdma-perf.
$(BUILD)/vrdma-%: tools/vrdma-%.c $(LIBVRDMA_SRCS) $(LIBVRDMA_HEADERS) $(wildcard tools/*.h) | $(BUILD)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -Itools $< $(LIBVRDMA_SRCS) -o $@ -lm

$(BUILD)/asan/vrdma-%: tools/vrdma-%.c $(LIBVRDMA_SRCS) $(LIBVRDMA_HEADERS) $(wildcard tools/*.h) | $(BUILD)/asan
	$(call say,CC-SAN,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -Itools $< $(LIBVRDMA_SRCS) -o $@ -lm

# Raw AF_XDP sender, receiver and ping-pong over the daemon's own port code:
# the bench's baseline.
XSK_RAW_SRCS := tests/bench/xsk_raw.c daemon/xdp_port.c daemon/config.c daemon/log.c
$(BUILD)/xsk_raw: $(XSK_RAW_SRCS) $(HEADERS) | $(BUILD)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $(pkg_cflags) $(XSK_RAW_SRCS) -o $@ $(pkg_libs)

# libvrdma's end-to-end test program, against a running vrdmad.
$(BUILD)/asan/vrdma_test: tests/integration/vrdma_test.c $(LIBVRDMA_SRCS) $(LIBVRDMA_HEADERS) | $(BUILD)/asan
	$(call say,CC-SAN,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -Itools $< $(LIBVRDMA_SRCS) -o $@

# A front end that attacks the daemon (issue 15), on libvrdma's code
# compiled into it: the library itself has no such knob.
$(BUILD)/asan/hostile: tests/integration/hostile.c $(LIBVRDMA_SRCS) $(LIBVRDMA_HEADERS) | $(BUILD)/asan
	$(call say,CC-SAN,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -Itools $< -o $@

# A lossy link where the kernel has no sch_netem.
$(BUILD)/impair: tests/integration/impair.c | $(BUILD)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $< -o $@

integration: all $(SAN_PROGS) $(SAN_TOOL_PROGS) $(BUILD)/asan/vrdma_test $(BUILD)/asan/hostile \
		$(BUILD)/impair
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/asan/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/asan/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) VRDMA_TEST=$(CURDIR)/$(BUILD)/asan/vrdma_test \
		HOSTILE=$(CURDIR)/$(BUILD)/asan/hostile \
		IMPAIR=$(CURDIR)/$(BUILD)/impair VRDMA_PINGPONG=$(CURDIR)/$(BUILD)/asan/vrdma-pingpong \
		VRDMA_PERF=$(CURDIR)/$(BUILD)/asan/vrdma-perf tests/run-integration.sh

# Soft-RoCE in a QEMU guest against the daemon and the perf tools (the
# guest image is built once and cached in $(VRDMA_GUEST_CACHE)).
VRDMA_GUEST_CACHE ?= /var/cache/vrdmad-test
interop: all $(SAN_PROGS) $(SAN_TOOL_PROGS)
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/asan/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/asan/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) VRDMA_PINGPONG=$(CURDIR)/$(BUILD)/asan/vrdma-pingpong \
		VRDMA_PERF=$(CURDIR)/$(BUILD)/asan/vrdma-perf VRDMA_GUEST_CACHE=$(VRDMA_GUEST_CACHE) \
		tests/run-interop.sh

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

check: deps
	$(Q)$(MAKE) --no-print-directory all $(SAN_PROGS) $(SAN_TESTS)
	$(Q)$(MAKE) --no-print-directory man-check
	$(Q)$(MAKE) --no-print-directory unit
	$(Q)$(MAKE) --no-print-directory codec-interop
	$(Q)$(MAKE) --no-print-directory fuzz
	$(Q)$(MAKE) --no-print-directory integration
	$(Q)$(MAKE) --no-print-directory interop
	$(Q)$(MAKE) --no-print-directory install-check
	$(Q)$(MAKE) --no-print-directory systemd-check

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) VRDMA_PINGPONG=$(CURDIR)/$(BUILD)/vrdma-pingpong \
		VRDMA_PERF=$(CURDIR)/$(BUILD)/vrdma-perf tests/demo.sh

$(BUILD)/udp_blast: tests/bench/udp_blast.c | $(BUILD)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) $< -o $@

$(BUILD)/qp_mem: tests/bench/qp_mem.c $(LIBVRDMA_SRCS) $(LIBVRDMA_HEADERS) | $(BUILD)
	$(call say,CC,$@)
	$(Q)$(CC) $(BASE_CFLAGS) $(CFLAGS) -Itools $< $(LIBVRDMA_SRCS) -o $@

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/udp_blast $(BUILD)/codec_bench \
		$(BUILD)/engine_bench $(BUILD)/qp_mem $(BUILD)/xsk_raw
	$(Q)$(BUILD)/codec_bench
	$(Q)$(BUILD)/engine_bench
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) UDP_BLAST=$(CURDIR)/$(BUILD)/udp_blast tests/bench/run.sh
	$(Q)VRDMAD=$(CURDIR)/$(BUILD)/vrdmad VRDMACTL=$(CURDIR)/$(BUILD)/vrdmactl \
		BPF_OBJ=$(CURDIR)/$(BPF_OBJ) QP_MEM=$(CURDIR)/$(BUILD)/qp_mem tests/bench/qp_mem.sh
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
