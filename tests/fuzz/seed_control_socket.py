#!/usr/bin/python3
# Seeds for fuzz_control_socket (make fuzz): vrdmactl's requests, whole, in
# pieces, from several clients at once, in fuzz_control_socket.c's records.
# Usage: seed_control_socket.py DIR
import json
import os
import sys

OUT = sys.argv[1]
WRITE, FILL, SHUT, CLOSE, RUN, READ = 0, 2, 3, 4, 5, 7


def op(client, what):
    return bytes([client | what << 2])


def write(client, data):
    out = b''
    while True:   # records of up to 255 bytes
        out += op(client, WRITE) + bytes([min(len(data), 255)]) + data[:255]
        data = data[255:]
        if not data:
            return out


def req(obj):
    return json.dumps(obj).encode() + b'\n'


def seed(name, body):
    with open(os.path.join(OUT, name), 'wb') as f:
        f.write(body)


ADD = req({'command': 'add-vm', 'name': 'vm-a',
           'vm': {'gid': '10.0.0.5', 'socket': '/run/vrdmad/vm-a.sock',
                  'max_qp': '8', 'socket_mode': '0660'}})
ADD_B = req({'command': 'add-vm', 'name': 'b.1',
             'vm': {'gid': '10.0.0.6, fd00::6', 'mac': '52:54:00:00:00:06'}})
seed('status', write(0, req({'command': 'status'})))
seed('stats', write(0, req({'command': 'stats'})))
seed('capture', write(0, req({'command': 'capture', 'count': 5})))
seed('add-status-del', write(0, ADD) + op(0, RUN) + op(0, READ) + write(1, ADD_B) +
     op(1, RUN) + write(2, req({'command': 'status'})) + op(2, RUN) +
     write(3, req({'command': 'del-vm', 'name': 'vm-a'})))
seed('add-twice', write(0, ADD) + op(0, RUN) + write(1, ADD))
seed('pieces', write(0, b'{"command": "st') + op(0, RUN) + write(0, b'atus"}\n'))
seed('no-newline', write(0, b'{"command": "stats"}') + op(0, SHUT))
seed('not-json', write(0, b'status\n'))
seed('not-object', write(0, b'["command", "status"]\n'))
seed('unknown', write(0, req({'command': 'st\x1bt'})))
seed('del-unknown', write(0, req({'command': 'del-vm', 'name': 'x\ny'})))
seed('bad-setting', write(0, req({'command': 'add-vm', 'name': 'a',
                                  'vm': {'gid': 5, 'max_qp': '0'}})))
seed('too-long', op(0, FILL) + b' \x41')
seed('closed', write(0, b'{"command": "sta') + op(0, CLOSE) + write(0, req({'command': 'status'})))
seed('two-lines', write(0, req({'command': 'stats'}) + req({'command': 'status'})))
