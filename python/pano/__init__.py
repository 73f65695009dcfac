"""pano for Python: a task's own metrics into pano, a workflow's figures back.

Metrics go as DogStatsD lines to the metrics socket of the pano-monitor that
runs the task (PANO_METRICS_SOCKET), with no connection and without ever
blocking; outside pano-monitor, through pano-emit. The readers run
pano-query --json, so they read whichever store it is configured for.
"""

import atexit
import os
import re
import shutil
import socket
import subprocess
import time

__all__ = ["metric", "flush", "dropped", "status", "jobs", "job", "series", "anomalies", "PanoError"]

_KINDS = {"g", "c", "ms", "h", "d"}
_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_DATAGRAM_MAX = 60000  # bytes of lines a datagram
_PENDING_MAX = 65536  # bytes of lines waiting for a full socket
_socket = None
_socket_path = None
_pending = []
_pending_bytes = 0
_dropped = 0
atexit.register(lambda: _flush_at_exit())


class PanoError(RuntimeError):
    """A metric pano cannot take, or a pano-query that failed."""


def _line(name, value, level, kind, tags):
    if not isinstance(name, str) or not 0 < len(name.encode()) <= 255 or re.search(r"[:|\r\n\x00-\x1f]", name):
        raise PanoError(f"metric name {name!r}: 1 to 255 bytes, without ':', '|' or control characters")
    if kind not in _KINDS:
        raise PanoError(f"metric {name}: kind {kind!r} is not one of g, c, ms, h, d")
    if not isinstance(level, int) or not 1 <= level <= 9:
        raise PanoError(f"metric {name}: level {level!r} is not 1 to 9")
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise PanoError(f"metric {name}: the value is not a finite number")
    parts = [f"level:{level}"]
    for key, val in tags.items():
        val = str(val)
        if not _KEY.match(key) or re.search(r"[,|\r\n]", val):
            raise PanoError(f"metric {name}: tag {key}={val!r}: a key of letters, digits, '_', '-', '.'; "
                            "a value without ',', '|' or line breaks")
        parts.append(f"{key}:{val}")
    return f"{name}:{value!r}|{kind}|#{','.join(parts)}"


def _connect():
    global _socket, _socket_path
    path = os.environ.get("PANO_METRICS_SOCKET")
    if path and (_socket is None or _socket_path != path):
        if _socket is not None:
            _socket.close()
        _socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        _socket.setblocking(False)
        _socket_path = path
    return path


def flush():
    """Send the lines a full socket left waiting, as far as it takes them
    now (never waits). Returns how many still wait."""
    global _pending_bytes
    path = _connect()
    while _pending and path:
        chunk, size = [], 0
        for line in _pending:
            if chunk and size + len(line) + 1 > _DATAGRAM_MAX:
                break
            chunk.append(line)
            size += len(line) + 1
        try:
            _socket.sendto("\n".join(chunk).encode(), path)
        except BlockingIOError:
            break
        except OSError as e:
            raise PanoError(f"the metrics socket {path}: {e.strerror}") from None
        del _pending[:len(chunk)]
        _pending_bytes -= size
    return len(_pending)


def _flush_at_exit():
    deadline = time.monotonic() + 1
    try:
        while flush() and time.monotonic() < deadline:
            time.sleep(0.01)
    except PanoError:
        pass  # the monitor is gone: nothing will read them


def metric(name, value, level=1, kind="g", **tags):
    """Send one metric of the running task: a gauge (kind "g") unless kind
    says "c" (count), "ms" (timing), "h" (histogram) or "d" (distribution).

    Under pano-monitor it goes to its metrics socket and this never waits:
    when the socket is full the line waits here, and goes with the next
    ones in one datagram; past 64 KB waiting, it is dropped. Returns True
    when sent or waiting, False when dropped (counted by dropped()).
    Raises PanoError for a bad name, value, level or tag, or when neither a
    socket nor pano-emit is there."""
    global _dropped, _pending_bytes
    line = _line(name, value, level, kind, tags)
    if _connect():
        if _pending_bytes + len(line) + 1 > _PENDING_MAX:
            flush()
            if _pending_bytes + len(line) + 1 > _PENDING_MAX:
                _dropped += 1
                return False
        _pending.append(line)
        _pending_bytes += len(line) + 1
        flush()
        return True
    if kind != "g":
        raise PanoError(f"metric {name}: outside pano-monitor only gauges go (through pano-emit)")
    emit = os.environ.get("PANO_EMIT") or shutil.which("pano-emit")
    if not emit:
        raise PanoError("no PANO_METRICS_SOCKET (not under pano-monitor) and no pano-emit on PATH")
    argv = [emit, "--level", str(level)]
    for key, val in tags.items():
        argv += ["--tag", f"{key}={val}"]
    r = subprocess.run(argv + ["--", name, repr(float(value))], capture_output=True, text=True)
    if r.returncode != 0:
        raise PanoError(f"pano-emit: {r.stderr.strip()}")
    return True


def dropped():
    """Metrics dropped because the monitor's socket was full and 64 KB of
    lines waited already."""
    return _dropped


def _query(*args):
    import json
    query = os.environ.get("PANO_QUERY") or shutil.which("pano-query")
    if not query:
        raise PanoError("pano-query is not on PATH (or set PANO_QUERY)")
    r = subprocess.run([query, *args, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise PanoError(f"pano-query {' '.join(args)}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def status(wf):
    """The workflow's live state (pano-query status): a dict."""
    return _query("status", wf)


def jobs(wf, state=None, transformation=None):
    """One dict per job run (pano-query jobs), of one state if given."""
    args = ["jobs", wf]
    if state:
        args += ["--state", state]
    if transformation:
        args += ["--transformation", transformation]
    return _query(*args)["jobs"]


def job(wf, job_id):
    """One job, with its Darshan, transfer and custom events (pano-query job)."""
    return _query("job", wf, job_id)


def series(wf, metric, step=None, job=None):
    """A metric over time (pano-query series): a dict whose "points" are
    {"t": epoch seconds, "value": ...} (gauges: also "peak")."""
    args = ["series", wf, "--metric", metric]
    if step:
        args += ["--step", str(step)]
    if job:
        args += ["--job", job]
    return _query(*args)


def anomalies(wf):
    """The workflow's outliers, overdue and failed jobs (pano-query anomalies): a list."""
    return _query("anomalies", wf)
