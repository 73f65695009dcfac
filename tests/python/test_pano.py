"""The Python package (python/pano): the lines it writes to the metrics
socket, read back by a socket of the test's own; what it refuses; a full
socket dropping and counting; the readers over a fake pano-query."""

import os
import socket
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import pano  # noqa: E402


class Metric(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "metrics.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.server.bind(self.path)
        os.environ["PANO_METRICS_SOCKET"] = self.path

    def tearDown(self):
        del os.environ["PANO_METRICS_SOCKET"]
        self.server.close()
        self.dir.cleanup()

    def received(self):
        return self.server.recv(65536).decode()

    def test_lines(self):
        pano.flush()
        self.assertTrue(pano.metric("loss", 0.031, epoch=7, model="cnn"))
        self.assertEqual(self.received(), "loss:0.031|g|#level:1,epoch:7,model:cnn")
        self.assertTrue(pano.metric("batches", 3, kind="c", level=2))
        self.assertEqual(self.received(), "batches:3.0|c|#level:2")
        pano.metric("tiny", 1.5e-300, url="http://h:80/x")
        self.assertEqual(self.received(), "tiny:1.5e-300|g|#level:1,url:http://h:80/x")

    def test_refused(self):
        for args, kwargs in [(("a:b", 1), {}), (("", 1), {}), (("x", float("nan")), {}),
                             (("x", float("inf")), {}), (("x", 1), {"level": 0}),
                             (("x", 1), {"level": 10}), (("x", 1), {"kind": "s"}),
                             (("x", 1), {"bad key": "v"}), (("x", 1), {"k": "a,b"}),
                             (("x" * 256, 1), {})]:
            with self.assertRaises(pano.PanoError, msg=f"{args} {kwargs}"):
                pano.metric(*args, **kwargs)
        with self.assertRaises(ValueError):
            pano.metric("x", "not a number")

    def drain(self):
        lines = []
        self.server.setblocking(False)
        try:
            while True:
                lines += self.server.recv(65536).decode().split("\n")
        except BlockingIOError:
            return lines

    def test_full_socket_waits_then_drops_and_counts(self):
        before = pano.dropped()
        taken = 0
        for i in range(100000):  # nobody reads: the queue fills, then 64 KB wait here
            if not pano.metric("flood", i):
                break
            taken += 1
        self.assertGreater(taken, 0)
        self.assertEqual(pano.dropped(), before + 1)
        lines = self.drain()
        while pano.flush():  # what waited goes, as the socket takes it
            lines += self.drain()
        lines += self.drain()
        # every metric taken arrives, once, in order; what waited went many a datagram
        self.assertEqual(lines, [f"flood:{float(i)!r}|g|#level:1" for i in range(taken)])


class Readers(unittest.TestCase):
    """pano-query is run with the arguments asked and its --json parsed."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        fake = os.path.join(self.dir.name, "pano-query")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\n'
                    'case "$1" in\n'
                    '  fail) echo "pano-query: no such workflow" >&2; exit 1;;\n'
                    '  jobs) echo \'{"jobs": [{"id": "a", "args": "\'"$*"\'"}]}\';;\n'
                    '  *) echo \'{"args": "\'"$*"\'"}\';;\n'
                    'esac\n')
        os.chmod(fake, stat.S_IRWXU)
        os.environ["PANO_QUERY"] = fake

    def tearDown(self):
        del os.environ["PANO_QUERY"]
        self.dir.cleanup()

    def test_arguments(self):
        self.assertEqual(pano.status("W"), {"args": "status W --json"})
        self.assertEqual(pano.jobs("W", state="failed"),
                         [{"id": "a", "args": "jobs W --state failed --json"}])
        self.assertEqual(pano.series("W", "rss", step="2s", job="j1"),
                         {"args": "series W --metric rss --step 2s --job j1 --json"})
        self.assertEqual(pano.anomalies("W"), {"args": "anomalies W --json"})
        self.assertEqual(pano.job("W", "j1"), {"args": "job W j1 --json"})

    def test_failure(self):
        with self.assertRaises(pano.PanoError) as e:
            pano._query("fail")
        self.assertIn("no such workflow", str(e.exception))


if __name__ == "__main__":
    unittest.main()
