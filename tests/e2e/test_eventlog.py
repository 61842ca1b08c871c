#!/usr/bin/python3
"""Rank events that no agent could take when they happened still reach the
coordinator exactly once, from the slot's event log (docs/events.md):

1. the agent is SIGKILLed before window 1's stop step and restarted once the
   rank has started window 2: window 1's started and stopped and window 2's
   started all appear, once each;
2. the same, but the rank finishes both windows and exits while the agent is
   down: all four events and the rank's end appear;
3. the agent is SIGSTOPped and its socket queue filled with garbage datagrams
   while the rank runs a window, so the rank's own datagrams are refused: after
   SIGCONT both events appear, once each.

Each fails with agents that only forward datagrams and re-report the slot's
last state."""

import os
import signal
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib", "python", "tests"))
from cluster import Cluster, check, events_of, log, main, wait_for  # noqa: E402
from segwriter import Segment  # noqa: E402

RATE = 50


def slot_step(node, job, pid):
    """The rank's step in its slot, read from the segment (no agent needed)."""
    seg = Segment(node.shm, job)
    try:
        s = seg.slot_of(pid)
        return None if s is None else s.step
    finally:
        seg.close()


def segment_generation(node, job):
    """The generation a rank can read: the header's copy, stored once the
    agent's write is over (the config's own field changes mid-write, and an
    agent stopped then would leave the seqlock odd and the window unseen)."""
    seg = Segment(node.shm, job)
    try:
        return -1 if seg.hdr.seq & 1 else seg.hdr.generation
    finally:
        seg.close()


def wait_step(node, job, pid, step, what):
    wait_for(lambda: (slot_step(node, job, pid) or -1) >= step, 30,
             "%s: rank at step %d" % (what, step), interval=0.02)


def exactly_once(c, job, want, settle=1.5):
    """want: [(kind, window id, step)]; waits for all, then checks each is
    there once (replays would show up as duplicates after settle s)."""
    def have_all():
        st = c.status(job)
        r = [x for x in st.get("ranks", []) if x.get("rank") == 0]
        return r and all(events_of(r[0], k, w) for k, w, _ in want)
    wait_for(have_all, 30, "%s: events %s" % (job, want), interval=0.1)
    time.sleep(settle)
    r = [x for x in c.status(job)["ranks"] if x["rank"] == 0][0]
    for kind, wid, step in want:
        evs = events_of(r, kind, wid)
        check(len(evs) == 1, "%s: %d %s events of window %d (want 1): %s" % (
            job, len(evs), kind, wid, r.get("events")))
        check(evs[0].get("step") == step, "%s: %s of window %d at step %s, "
              "want %d" % (job, kind, wid, evs[0].get("step"), step))
    return r


def two_windows(c, node, job, rank):
    """Window 1 soon, window 2 right after it; both applied by the agent."""
    c.wait_ranks(job, 1, min_step=5)
    # Far enough ahead and long enough for a loaded machine: the window
    # reaches the rank before its start, the agent dies before its stop.
    # Ahead of the rank's own step (the coordinator's view of it can be a
    # sample or two old on a loaded machine).
    now = slot_step(node, job, rank.pid)
    w1 = c.add_window(job, {"start_step": now + 100, "stop_step": now + 199})
    a1, b1 = w1["start_step"], w1["stop_step"]
    w2 = c.add_window(job, {"start_step": b1 + 20, "stop_step": b1 + 40})
    wait_for(lambda: segment_generation(node, job) >= w2["generation"], 10,
             "%s: window 2 applied" % job)
    wait_for(lambda: events_of([x for x in c.status(job)["ranks"]
                                if x["rank"] == 0][0], "started", w1["id"]),
             20, "%s: window 1 started" % job, interval=0.02)
    step = slot_step(node, job, rank.pid)
    check(step is not None and step < b1 - 10, "%s: rank at step %s, too close "
          "to window 1's stop %d for the test" % (job, step, b1))
    return w1, w2


def agent_killed_between_windows(c, node):
    job = "evlog-kill-%d" % os.getpid()
    rank = node.start_rank(job, 0, rate=RATE)
    w1, w2 = two_windows(c, node, job, rank)
    log("SIGKILL the agent inside window 1 (%d-%d)" % (w1["start_step"],
                                                       w1["stop_step"]))
    node.agent.kill9()
    wait_step(node, job, rank.pid, w2["start_step"] + 3, job)
    node.start_agent()
    log("agent restarted with window 2 running")
    exactly_once(c, job, [("started", w1["id"], w1["start_step"]),
                          ("stopped", w1["id"], w1["stop_step"]),
                          ("started", w2["id"], w2["start_step"])])
    rank.stop()


def rank_exits_without_agent(c, node):
    job = "evlog-exit-%d" % os.getpid()
    rank = node.start_rank(job, 0, rate=RATE)
    w1, w2 = two_windows(c, node, job, rank)
    node.agent.kill9()
    wait_step(node, job, rank.pid, w2["stop_step"] + 3, job)
    check(rank.stop() == 0, "%s: rank did not exit 0" % job)
    log("rank ran both windows and exited while no agent listened")
    node.start_agent()
    r = exactly_once(c, job, [("started", w1["id"], w1["start_step"]),
                              ("stopped", w1["id"], w1["stop_step"]),
                              ("started", w2["id"], w2["start_step"]),
                              ("stopped", w2["id"], w2["stop_step"])])
    check(r.get("state") == "gone", "%s: rank in state %s, want gone" % (
        job, r.get("state")))


def full_socket(c, node):
    job = "evlog-full-%d" % os.getpid()
    rank = node.start_rank(job, 0, rate=RATE)
    c.wait_ranks(job, 1, min_step=5)
    now = slot_step(node, job, rank.pid)
    w = c.add_window(job, {"start_step": now + 150, "stop_step": now + 159})
    wait_for(lambda: segment_generation(node, job) >= w["generation"], 10,
             "%s: window applied" % job)
    node.agent.signal(signal.SIGSTOP)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.setblocking(False)
        sent = 0
        for _ in range(100000):
            try:
                s.sendto(b"\xff" * 64, node.sock)
                sent += 1
            except (BlockingIOError, ConnectionRefusedError):
                break
        s.close()
        log("agent stopped, its socket full after %d garbage datagrams" % sent)
        check(sent < 100000, "the agent's socket never filled")
        step = slot_step(node, job, rank.pid)
        check(step is not None and step < w["start_step"], "%s: rank at step "
              "%s, already in window %d-%d" % (job, step, w["start_step"],
                                               w["stop_step"]))
        wait_step(node, job, rank.pid, w["stop_step"] + 3, job)
    finally:
        node.agent.signal(signal.SIGCONT)
    log("window ran with the socket full; agent continued")
    exactly_once(c, job, [("started", w["id"], w["start_step"]),
                          ("stopped", w["id"], w["stop_step"])])
    rank.stop()


def test():
    with Cluster("eventlog") as c:
        c.start_coordinator()
        node = c.node("n0")
        node.start_agent()
        agent_killed_between_windows(c, node)
        rank_exits_without_agent(c, node)
        full_socket(c, node)


if __name__ == "__main__":
    main(test)
