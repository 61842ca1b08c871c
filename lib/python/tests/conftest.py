"""Fixtures shared by the binding's tests.

The tests load the real libdynprof ($DYNPROF_LIBRARY, which CTest sets, else
$DYNPROF_BUILD_DIR/lib/libdynprof.so) and the package from this source tree.
Every test gets its own job name, shm dir, output root and agent socket, so they
run in parallel with each other and with the rest of the suite.
"""

import itertools
import os
import shutil
import socket
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))     # lib/python: the package
sys.path.insert(0, HERE)                      # segwriter, stand-ins

if not os.environ.get("DYNPROF_LIBRARY") and os.environ.get("DYNPROF_BUILD_DIR"):
    os.environ["DYNPROF_LIBRARY"] = os.path.join(
        os.environ["DYNPROF_BUILD_DIR"], "lib", "libdynprof.so")

_jobs = itertools.count(1)

# RankEvent (proto/dynprof.proto): field number -> (name, kind).
RANK_EVENT_FIELDS = {
    1: ("kind", "int"), 2: ("job", "str"), 3: ("rank", "int"),
    4: ("pid", "int"), 5: ("slot", "int"), 6: ("window_id", "int"),
    7: ("start_step", "int"), 8: ("stop_step", "int"), 9: ("step", "int"),
    10: ("output_dir", "str"), 11: ("reason", "int"), 12: ("error", "str"),
    13: ("generation", "int"), 14: ("time_unix_ns", "int"),
    15: ("rank_seq", "int"),
}
EVENT_ATTACHED, EVENT_STARTED, EVENT_STOPPED = 1, 2, 3
EVENT_SKIPPED, EVENT_FAILED, EVENT_DETACHED = 4, 5, 6


def _varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b):
            raise ValueError("truncated varint")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i
        if shift > 63:
            raise ValueError("varint too long")


def decode_rank_event(b):
    """A minimal proto3 decoder for RankEvent: a dict of the fields present."""
    out = {}
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
            if v >= 1 << 63:
                v -= 1 << 64            # int32/int64 negatives
        elif wt == 2:
            n, i = _varint(b, i)
            v = bytes(b[i:i + n])
            if len(v) != n:
                raise ValueError("truncated field %d" % num)
            i += n
        elif wt == 1:
            v = int.from_bytes(b[i:i + 8], "little")
            i += 8
        elif wt == 5:
            v = int.from_bytes(b[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        name, kind = RANK_EVENT_FIELDS.get(num, ("field%d" % num, "raw"))
        if kind == "str":
            v = v.decode("utf-8")
        out[name] = v
    return out


class EventSink:
    """The agent's socket, played by the test: a bound unix datagram socket."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.events = []

    def drain(self, timeout=0.0):
        """Receives what is queued (waiting up to timeout for the first)."""
        if timeout > 0:
            self.sock.settimeout(timeout)
        else:
            self.sock.setblocking(False)
        while True:
            try:
                data = self.sock.recv(65536)
            except (BlockingIOError, socket.timeout):
                break
            self.events.append(decode_rank_event(data))
            self.sock.setblocking(False)
        return self.events

    def wait_for(self, pred, timeout=5.0):
        """Polls until an event matching pred arrived; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            for e in self.events:
                if pred(e):
                    return e
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no matching event; got %r" % self.events)
            self.drain(min(left, 0.2))

    def kinds(self):
        self.drain()
        return [e.get("kind", 0) for e in self.events]

    def close(self):
        self.sock.close()


class Env:
    """Names and directories private to one test."""

    def __init__(self):
        # Short: a unix socket path is at most 107 bytes.
        self.dir = tempfile.mkdtemp(prefix="dpy")
        self.shm_dir = os.path.join(self.dir, "shm")
        self.out = os.path.join(self.dir, "out")
        self.socket = os.path.join(self.dir, "agent.sock")
        os.mkdir(self.shm_dir)
        os.mkdir(self.out)
        self.job = "pytest-%d-%d" % (os.getpid(), next(_jobs))
        self.sink = None

    def kwargs(self, **kw):
        d = dict(job=self.job, output_root=self.out, shm_dir=self.shm_dir,
                 agent_socket=self.socket)
        d.update(kw)
        return d

    def listen(self):
        self.sink = EventSink(self.socket)
        return self.sink

    def segment(self):
        import segwriter
        return segwriter.Segment(self.shm_dir, self.job)

    def cleanup(self):
        if self.sink is not None:
            self.sink.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def env(monkeypatch):
    e = Env()
    # For the wrappers that build their Monitor from the environment.
    monkeypatch.setenv("DYNPROF_JOB", e.job)
    monkeypatch.setenv("DYNPROF_SHM_DIR", e.shm_dir)
    monkeypatch.setenv("DYNPROF_OUTPUT_ROOT", e.out)
    monkeypatch.setenv("DYNPROF_AGENT_SOCKET", e.socket)
    for v in ("RANK", "RANK_ID", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
              "SLURM_JOB_ID"):
        monkeypatch.delenv(v, raising=False)
    try:
        yield e
    finally:
        e.cleanup()
