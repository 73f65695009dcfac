#!/usr/bin/env python3
"""A consumer-group leader that holds a rebalance half-done, for tests.

It joins GROUP on the Kafka at BOOTSTRAP as a static member (protocol
cooperative-sticky, the one pano-indexer offers), leads the group alone and
heartbeats. When another member joins, it rejoins, gets the JoinGroup answer
naming every member (theirs is answered at the same moment) and then does not
send the SyncGroup: the other members wait for their assignment. It prints
"holding N members" then. With --release-after S it sends, S seconds later,
an empty assignment for every member and prints "released". It stops after
--hold seconds (60) or at SIGTERM.

Speaks the Kafka protocol itself (FindCoordinator v2, JoinGroup v5,
SyncGroup v3, Heartbeat v3): no client library offers a leader that stalls
on purpose.
"""
import argparse
import signal
import socket
import struct
import sys
import time

FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, SYNC_GROUP = 10, 11, 12, 14
REBALANCE_IN_PROGRESS = 27


def string(s):
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def data(b):
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


class Reader:
    def __init__(self, buf):
        self.buf, self.at = buf, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.buf, self.at)
        self.at += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.buf[self.at:self.at + n].decode()
        self.at += n
        return s

    def data(self):
        n = self.take(">i")
        if n < 0:
            return None
        b = self.buf[self.at:self.at + n]
        self.at += n
        return b


class Connection:
    def __init__(self, host, port):
        self.sock = socket.create_connection((host, port), timeout=90)
        self.correlation = 0

    def call(self, api, version, body):
        self.correlation += 1
        header = struct.pack(">hhi", api, version, self.correlation) + string("stuck-leader")
        msg = header + body
        self.sock.sendall(struct.pack(">i", len(msg)) + msg)
        size = struct.unpack(">i", self.recv(4))[0]
        r = Reader(self.recv(size))
        if r.take(">i") != self.correlation:
            sys.exit("kafka_stuck_leader: answer out of order")
        return r

    def recv(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                sys.exit("kafka_stuck_leader: connection closed by Kafka")
            out += chunk
        return out


def say(text):
    print(text, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bootstrap", help="host:port of a Kafka broker")
    ap.add_argument("group")
    ap.add_argument("--instance", default="stuck-leader", help="group.instance.id")
    ap.add_argument("--release-after", type=float, default=None)
    ap.add_argument("--hold", type=float, default=60)
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

    host, port = args.bootstrap.rsplit(":", 1)
    r = Connection(host, int(port)).call(FIND_COORDINATOR, 2,
                                         string(args.group) + struct.pack(">b", 0))
    r.take(">i")
    err = r.take(">h")
    r.string()
    r.take(">i")
    chost, cport = r.string(), r.take(">i")
    if err:
        sys.exit(f"kafka_stuck_leader: FindCoordinator: error {err}")
    kafka = Connection(chost, cport)
    member = ""
    subscription = struct.pack(">hi", 0, 0) + data(None)  # v0, no topics

    def join():
        nonlocal member
        body = (string(args.group) + struct.pack(">ii", 30000, 60000) + string(member) +
                string(args.instance) + string("consumer") + struct.pack(">i", 1) +
                string("cooperative-sticky") + data(subscription))
        r = kafka.call(JOIN_GROUP, 5, body)
        r.take(">i")
        err, generation = r.take(">h"), r.take(">i")
        r.string()
        leader, member = r.string(), r.string()
        members = [(r.string(), r.string(), r.data())[0] for _ in range(r.take(">i"))]
        if err or leader != member:
            sys.exit(f"kafka_stuck_leader: JoinGroup: error {err}, leader {leader!r}")
        return generation, members

    def sync(generation, members):
        empty = struct.pack(">hi", 0, 0) + data(None)  # v0, no partitions
        body = (string(args.group) + struct.pack(">i", generation) + string(member) +
                string(args.instance) + struct.pack(">i", len(members)) +
                b"".join(string(m) + data(empty) for m in members))
        r = kafka.call(SYNC_GROUP, 3, body)
        r.take(">i")
        err = r.take(">h")
        if err:
            sys.exit(f"kafka_stuck_leader: SyncGroup: error {err}")

    generation, members = join()
    sync(generation, members)
    say(f"leading {args.group} alone")
    while True:  # heartbeat until someone else joins
        time.sleep(0.3)
        r = kafka.call(HEARTBEAT, 3, string(args.group) + struct.pack(">i", generation) +
                       string(member) + string(args.instance))
        r.take(">i")
        err = r.take(">h")
        if err == REBALANCE_IN_PROGRESS:
            break
        if err:
            sys.exit(f"kafka_stuck_leader: Heartbeat: error {err}")
    generation, members = join()
    say(f"holding {len(members)} members")
    start = time.monotonic()
    if args.release_after is not None:
        time.sleep(args.release_after)
        sync(generation, members)
        say("released")
    time.sleep(max(0.0, args.hold - (time.monotonic() - start)))


if __name__ == "__main__":
    main()
