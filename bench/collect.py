#!/usr/bin/python3
"""Trace collection's cost to the node (bench/README.md, "collect").

  upload [MB] [RATE] [PART]
                      one rank's trace of MB MiB of random bytes (default 512)
                      packed and uploaded to s3rver (loopback) with
                      --upload-rate RATE (default 64m) and
                      --upload-part-size PART (default 64m: in parts; 5g:
                      one PUT up to 5 GiB), while a CPU-bound
                      step loop runs beside it: its step times before the
                      window (baseline) against those while the agent packs
                      and while it uploads, in the same run; the agent's and
                      its child's RSS sampled every 20 ms; the children's CPU.
  many [N] [NODES]    N ranks (default 256) of one job over NODES nodes
                      (default 1; a node's segment holds 256 ranks of a
                      job), an agent each on this machine: time from the
                      window's last stop to every rank collected (the
                      index's counts).
  fetch [N] [MB] [RUNS]
                      N ranks (default 8) each with a trace of MB MiB of
                      random bytes (default 32) collected to s3rver
                      (loopback); then `dynprofctl fetch` RUNS times (default
                      3) with the coordinator's presigned URLs into a fresh
                      directory: MiB/s of archives fetched and checked, median
                      and range.
"""

import calendar
import os
import re
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
from cluster import Cluster, log, wait_for  # noqa: E402
import s3 as s3mod  # noqa: E402

STEP_LOOP = r"""
import hashlib, sys, time
buf = b"x" * (1 << 20)
out = open(sys.argv[1], "w")
while True:
    t0 = time.time()
    for _ in range(8):              # about 5 ms of sha256 on this machine
        hashlib.sha256(buf).digest()
    t1 = time.time()
    out.write("%.6f %.6f\n" % (t0, t1 - t0))
    out.flush()
"""


def rss_kb(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    try:
        return [int(x) for x in open("/proc/%d/task/%d/children" % (pid, pid))
                .read().split()]
    except OSError:
        return []


def child_cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[13]) + int(f[14])) / os.sysconf("SC_CLK_TCK")


def log_time(stamp):
    """A log line's UTC time stamp (2026-12-04T23:54:56.479Z) in seconds."""
    return calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + \
        float("0." + stamp[20:].rstrip("Z"))


def stats(xs):
    xs = sorted(xs)
    if not xs:
        return "none"
    return "n=%d median %.2f ms p95 %.2f ms max %.2f ms" % (
        len(xs), 1000 * statistics.median(xs),
        1000 * xs[int(0.95 * (len(xs) - 1))], 1000 * xs[-1])


def upload(mb, rate, part):
    s3mod.use_credentials()
    job = "bench-upload"
    with Cluster("bench-upload") as c, s3mod.S3(c.dir, "traces") as s3:
        c.start_coordinator()
        n = c.node("n0")
        store = c.trace_store()
        n.start_agent(extra=s3.agent_flags(
            store, "bench", "--upload-rate", rate, "--upload-part-size", part,
            endpoint="http://127.0.0.1:%d" % s3.backend_port))
        n.start_rank(job, 0, rate=20)
        c.wait_ranks(job, 1, min_step=3)
        steps = os.path.join(c.dir, "steps.txt")
        loop = subprocess.Popen([sys.executable, "-c", STEP_LOOP, steps])
        samples, stop = [], threading.Event()

        def sample():
            while not stop.is_set():
                kids = children(n.agent.pid)
                samples.append((time.time(), rss_kb(n.agent.pid),
                                max([rss_kb(k) for k in kids] or [0])))
                time.sleep(0.02)
        threading.Thread(target=sample, daemon=True).start()
        cpu0 = child_cpu_s(n.agent.pid)
        time.sleep(6)                       # the baseline
        t_window = time.time()
        w = c.add_window(job, {"in_steps": 5, "steps": 5})
        c.wait_window_done(job, w["id"], [0], timeout=60)
        tdir = os.path.join(n.out, "rank0_start%d_stop%d" % (
            w["start_step"], w["stop_step"]))
        with open(os.path.join(tdir, "big.bin"), "wb") as f:
            for _ in range(mb):
                f.write(os.urandom(1 << 20))
        wait_for(lambda: "uploaded job %s" % job in n.agent.output() or None,
                 1800, "the upload", interval=0.5)
        time.sleep(3)
        stop.set()
        loop.kill()
        cpu = child_cpu_s(n.agent.pid) - cpu0
        text = n.agent.output()
        m1 = re.search(r"(\S+) dynprof-agent info: collected job \S+ window "
                       r"\d+ rank 0: \S+, (\d+) bytes, sha256 \S+, \d+ files "
                       r"\((\d+) bytes\) in (\d+) ms", text)
        m2 = re.search(r"(\S+) dynprof-agent info: uploaded job \S+ window \d+ "
                       r"rank 0: \S+, (\d+) bytes in (\d+) ms", text)
        pack_end, pack_ms = log_time(m1.group(1)), int(m1.group(4))
        up_end, up_ms = log_time(m2.group(1)), int(m2.group(3))
        pack = (pack_end - pack_ms / 1000.0, pack_end)
        up = (up_end - up_ms / 1000.0, up_end)
        rows = [tuple(map(float, x.split())) for x in open(steps)]
        t_first = rows[0][0]
        # The baseline: from the loop's first second to the window's post.
        base = [d for t, d in rows if t_first + 1 < t < t_window]
        during_pack = [d for t, d in rows if pack[0] <= t <= pack[1]]
        during_up = [d for t, d in rows if up[0] <= t <= up[1]]
        agent_rss = max(s[1] for s in samples)
        child_rss = max(s[2] for s in samples)
        load = open("/proc/loadavg").read().split()[:3]
        print("archive %s bytes (%d MiB of random input) packed in %d ms, "
              "uploaded in %d ms: %.1f MiB/s (cap %s)" % (
                  m2.group(2), mb, pack_ms, up_ms,
                  int(m2.group(2)) / (up_ms / 1000.0) / (1 << 20), rate))
        print("step loop, baseline:       %s" % stats(base))
        print("step loop, while packing:  %s" % stats(during_pack))
        print("step loop, while uploading: %s" % stats(during_up))
        print("agent RSS max %d KiB; its child's (packer, uploader) max %d KiB; "
              "children's CPU %.2f s" % (agent_rss, child_rss, cpu))
        print("load average %s" % " ".join(load))


def many(nranks, nnodes):
    job = "bench-many"
    with Cluster("bench-many") as c:
        c.start_coordinator()
        store = c.trace_store()
        nodes = [c.node("n%d" % i) for i in range(nnodes)]
        for n in nodes:
            n.start_agent(extra=["--trace-store", store, "--trace-settle", "1"])
        for r in range(nranks):
            nodes[r % nnodes].start_rank(job, r, rate=5)
        c.wait_ranks(job, nranks, timeout=600, min_step=2)
        w = c.add_window(job, {"in_steps": 10, "steps": 2})
        c.wait_window_done(job, w["id"], list(range(nranks)), timeout=600)
        t0 = time.time()

        def all_in():
            code, body = c.http("GET", "/v1/jobs/%s/windows/%d/traces" % (
                job, w["id"]))
            return body if code == 200 and body["counts"]["collected"] == \
                nranks else None
        body = wait_for(all_in, 1800, "every rank collected", interval=0.2)
        dt = time.time() - t0
        size = sum(t["size"] for t in body["traces"])
        print("%d ranks on %d node(s): all collected %.1f s after the "
              "window's last stop was seen (%.1f ms a rank, settle 1 s "
              "included; archives %d bytes in all); load average %s" % (
                  nranks, nnodes, dt, 1000 * dt / nranks, size,
                  " ".join(open("/proc/loadavg").read().split()[:3])))


def fetch(nranks, mb, runs):
    s3mod.use_credentials()
    job = "bench-fetch"
    with Cluster("bench-fetch") as c, s3mod.S3(c.dir, "traces") as s3:
        direct = "http://127.0.0.1:%d" % s3.backend_port
        c.start_coordinator(extra=["--s3-endpoint", direct, "--presign-ttl",
                                   "900"])
        n = c.node("n0")
        store = c.trace_store()
        # Settled 10 s: the big files below are written after the stop.
        n.start_agent(extra=s3.agent_flags(store, "bench", "--trace-settle",
                                           "10", endpoint=direct))
        for r in range(nranks):
            n.start_rank(job, r, rate=20)
        c.wait_ranks(job, nranks, min_step=3)
        w = c.add_window(job, {"in_steps": 5, "steps": 2})
        c.wait_window_done(job, w["id"], list(range(nranks)), timeout=120)
        for r in range(nranks):
            tdir = os.path.join(n.out, "rank%d_start%d_stop%d" % (
                r, w["start_step"], w["stop_step"]))
            with open(os.path.join(tdir, "big.bin"), "wb") as f:
                for _ in range(mb):
                    f.write(os.urandom(1 << 20))

        def all_up():
            code, body = c.http("GET", "/v1/jobs/%s/windows/%d/traces" % (
                job, w["id"]))
            ok = code == 200 and body["counts"]["collected"] == nranks and \
                all(t["location"].startswith("s3://") for t in body["traces"])
            return body if ok else None
        idx = wait_for(all_up, 1800, "every rank uploaded", interval=0.5)
        total = sum(t["size"] for t in idx["traces"])
        if total < nranks * mb << 20:
            sys.exit("archives of %d bytes: some big files were not packed "
                     "whole" % total)
        # No credentials here: the presigned URLs alone.
        for k in [k for k in os.environ if k.startswith("AWS_")]:
            del os.environ[k]
        rates = []
        for i in range(runs):
            out = os.path.join(c.dir, "fetched-%d" % i)
            t0 = time.monotonic()
            r = c.ctl("fetch", job, str(w["id"]), "--out", out, timeout=1800)
            dt = time.monotonic() - t0
            if r.returncode != 0:
                sys.exit("fetch failed:\n%s" % r.stdout)
            rates.append(total / dt / (1 << 20))
            log("fetch %d: %d bytes in %.2f s: %.1f MiB/s" % (
                i + 1, total, dt, rates[-1]))
            subprocess.run(["rm", "-rf", out])
        print("fetch of %d ranks' archives (%d bytes, %d MiB of random input "
              "each) from s3rver by presigned URLs: median %.1f MiB/s "
              "[%.1f - %.1f] over %d runs; load average %s" % (
                  nranks, total, mb, statistics.median(rates), min(rates),
                  max(rates), runs,
                  " ".join(open("/proc/loadavg").read().split()[:3])))


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "upload"
    if what == "upload":
        upload(int(sys.argv[2]) if len(sys.argv) > 2 else 512,
               sys.argv[3] if len(sys.argv) > 3 else "64m",
               sys.argv[4] if len(sys.argv) > 4 else "64m")
    elif what == "many":
        n = int(sys.argv[2]) if len(sys.argv) > 2 else 256
        nodes = int(sys.argv[3]) if len(sys.argv) > 3 else 1
        if n > 256 * nodes:
            sys.exit("many: %d ranks need at least %d nodes (256 a node)" % (
                n, (n + 255) // 256))
        many(n, nodes)
    elif what == "fetch":
        fetch(int(sys.argv[2]) if len(sys.argv) > 2 else 8,
              int(sys.argv[3]) if len(sys.argv) > 3 else 32,
              int(sys.argv[4]) if len(sys.argv) > 4 else 3)
    else:
        sys.exit(__doc__)
