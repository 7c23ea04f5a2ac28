#!/usr/bin/python3
# Seeds for fuzz_config (make fuzz): the shipped example configuration, one
# that sets every key, and add-vm requests, in fuzz_config.c's format (a
# byte saying which, then the text). Usage: seed_config.py DIR
import os
import sys

OUT = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))


def seed(name, kind, body):
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(bytes([kind]) + body)


with open(os.path.join(HERE, '..', '..', 'etc', 'vrdmad.conf'), 'rb') as f:
    seed('example', 0, f.read())
seed('every-key', 0, b'''# every key once
[daemon]
workers = 2
control_socket = /run/x/ctl.sock
log_level = debug
idle_spin_us = 200
worker_cpus = 1,3-5
[port]
interface = enp3s0f1
xdp_mode = native
zerocopy = off
multi_buffer = off
queues = 4
xdp_object = /opt/vrdma/xdp.o
ecn = off
cnp_interval_us = 1000
tx_budget = 512
[vm web-1.a_b]
socket = /run/x/web.sock
gid = 10.0.0.5, fd00::5
mac = 52:54:00:AB:cd:EF
max_cq = 251
max_qp = 2
max_mr = 65536
max_mr_pages = 1
ring_max_cq = 1
ring_max_qp = 16384
socket_owner = libvirt-qemu
socket_group = 64055
socket_mode = 0660
[vm b]
gid = 10.0.0.6
''')
seed('add-vm', 1, b'web1\0gid\x0010.0.0.5\0gid\0fd00::7\0max_qp\x0064\0'
     b'socket\0/run/vrdmad/web1.sock\0socket_mode\x000660\0mac\x0052:54:00:00:00:01\0')
seed('add-vm-bad', 1, b'1-bad name\0gid\0not an address\0max_qp\x000\0')
