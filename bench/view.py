#!/usr/bin/python3
"""The admin API's side of bench/view.sh, with the standard library only.

  view.py follow PORT JOB SINCE EXPECTED OUT   follow the job's event stream
      from SINCE until EXPECTED events came (or 120 s): how far behind their
      commit each arrived, written to OUT as "key=value ..."
  view.py measure PORT JOB RUNS                GET /v1/jobs/JOB RUNS times and
      the whole ranks listing (pages of 10,000) RUNS/10 times: each time from
      the request to the last byte, then one listing parsed to count its ranks
  view.py status PORT JOB RUNS                 GET /v1/jobs/JOB RUNS times,
      read and parsed (the status of a coordinator that lists every rank)
Figures go to stdout as "key=value ..." lines.
"""

import datetime
import http.client
import json
import statistics
import sys
import time


def spread(name, xs):
    xs = sorted(xs)
    return "%s_median=%.2f %s_min=%.2f %s_max=%.2f %s_n=%d" % (
        name, statistics.median(xs), name, xs[0], name, xs[-1], name, len(xs))


def get(conn, path):
    """One GET on a kept connection: (status, body, seconds to the last
    byte)."""
    t0 = time.monotonic()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    return r.status, body, time.monotonic() - t0


def wall(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def follow(port, job, since, expected, out):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=130)
    conn.request("GET", "/v1/jobs/%s/events?since=%s&follow=1" % (job, since))
    r = conn.getresponse()
    if r.status != 200:
        raise SystemExit("follow: HTTP %d %s" % (r.status, r.read()[:200]))
    n, lags, t_first, t_last, beats = 0, [], None, None, 0
    deadline = time.monotonic() + 120
    while n < expected and time.monotonic() < deadline:
        line = r.readline()
        if not line:
            break
        if not line.startswith(b'{"rev":'):
            beats += line.startswith(b'{"type":"heartbeat"')
            continue
        now = time.time()
        n += 1
        t_first = t_first or now
        t_last = now
        # Parsing every line would make this reader the slowest process
        # on the machine: one line in 100, and the last.
        if n % 100 == 0 or n == expected:
            e = json.loads(line)
            lags.append((now - wall(e["time"])) * 1000)
    with open(out, "w") as f:
        f.write("follow_events=%d follow_heartbeats=%d follow_span_s=%.3f "
                "follow_last_wall=%.3f %s lag_last_ms=%.1f\n" % (
                    n, beats, (t_last or 0) - (t_first or 0), t_last or 0,
                    spread("lag_ms", lags or [0]), lags[-1] if lags else -1))


def listing(conn, job):
    """Every page of the job's ranks: (pages, bytes, seconds, last body)."""
    after, pages, size, total, body = -1, 0, 0, 0.0, b""
    while True:
        st, body, dt = get(conn, "/v1/jobs/%s/ranks?limit=10000&after=%d" %
                           (job, after))
        if st != 200:
            raise SystemExit("ranks: HTTP %d" % st)
        pages, size, total = pages + 1, size + len(body), total + dt
        # "next" is the last member: read it from the tail, not by parsing.
        tail = body[-40:].decode()
        nxt = tail[tail.rindex('"next":') + 7:].strip().rstrip("}").strip()
        if nxt == "null":
            return pages, size, total
        after = int(nxt)


def measure(port, job, runs):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    ms, size = [], 0
    for _ in range(runs):
        st, body, dt = get(conn, "/v1/jobs/%s" % job)
        if st != 200:
            raise SystemExit("summary: HTTP %d" % st)
        ms.append(dt * 1000)
        size = len(body)
    doc = json.loads(body)
    print("summary_bytes=%d ranks=%d revision=%d %s" % (
        size, doc["rank_counts"]["total"], doc["revision"],
        spread("summary_ms", ms)))
    secs = []
    for _ in range(max(3, runs // 10)):
        pages, nbytes, dt = listing(conn, job)
        secs.append(dt)
    # Once more, each page parsed: every rank once, in order.
    after, count = -1, 0
    t0 = time.monotonic()
    while True:
        st, body, _ = get(conn, "/v1/jobs/%s/ranks?limit=10000&after=%d" %
                          (job, after))
        page = json.loads(body)
        for r in page["ranks"]:
            assert r["rank"] > after
            after = r["rank"]
            count += 1
        if page["next"] is None:
            break
    parsed = time.monotonic() - t0
    print("listing_pages=%d listing_bytes=%d listing_ranks=%d "
          "listing_parsed_s=%.3f %s" % (pages, nbytes, count, parsed,
                                        spread("listing_s", secs)))


def status(port, job, runs):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    ms, parse_ms, size = [], [], 0
    for _ in range(runs):
        st, body, dt = get(conn, "/v1/jobs/%s" % job)
        if st != 200:
            raise SystemExit("status: HTTP %d" % st)
        t0 = time.monotonic()
        doc = json.loads(body)
        parse_ms.append((time.monotonic() - t0) * 1000)
        ms.append(dt * 1000)
        size = len(body)
    n = len(doc["ranks"]) if isinstance(doc.get("ranks"), list) else \
        doc["rank_counts"]["total"]
    print("status_bytes=%d status_ranks=%d %s %s" % (
        size, n, spread("status_ms", ms), spread("status_parse_ms", parse_ms)))


def main():
    cmd, port, job = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if cmd == "follow":
        follow(port, job, sys.argv[4], int(sys.argv[5]), sys.argv[6])
    elif cmd == "measure":
        measure(port, job, int(sys.argv[4]))
    elif cmd == "status":
        status(port, job, int(sys.argv[4]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
