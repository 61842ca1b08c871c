#!/usr/bin/python3
"""PID namespaces apart (docs/containers.md): the agent in a PID namespace of its
own (unshare --pid --fork --mount-proc, as in a container without hostPID), two
ranks each in another, the sidecar layout: segment and socket in one shared
directory (DYNPROF_SHM_DIR, DYNPROF_AGENT_SOCKET).  Every one of them is pid 1
in its namespace, so no pid means anything across them.

- Both ranks attach (the coordinator sees them) and a window completes.
- A spoofed datagram from a fourth namespace, naming rank 0's slot and pid with
  a wrong token and its own pidfd, is refused; the spoofer then exits, and rank
  0 keeps its slot (its pidfd was not taken for rank 0's).
- Rank 1 is SIGKILLed: the agent notices at once (its pidfd), reports it
  gone, and frees its slot (state GONE in the segment).

Then the same with the agent in the test's namespace, the ranks' parent: the
kernel gives it their pids as it sees them, not the ones in their slots.

Needs root (unshare --pid): skipped (77) with a message when not root; as root,
an unshare that fails is a failure (cluster.skip())."""

import os
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "support"))
from cluster import (Cluster, check, log, main, segment_slots,  # noqa: E402
                     skip, wait_for)

JOB = "pidns-%d" % os.getpid()
AGENT_NS = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
RANK_NS = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]

STATE_GONE = 7


def can_unshare():
    if os.geteuid() != 0:
        return "not root: unshare --pid needs CAP_SYS_ADMIN"
    p = subprocess.run(AGENT_NS + ["true"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True,
                       timeout=20)
    if p.returncode != 0:
        return "unshare --pid failed: %s" % p.stdout.strip()
    return None


def slots(node, job):
    """{slot index: (pid, rank, state, pidns)} of the job's segment."""
    return {i: (v["pid"], v["rank"], v["state"], v["pidns"])
            for i, v in segment_slots(node.shm, job).items()}


def varint(n):
    out = b""
    while True:
        c = n & 0x7f
        n >>= 7
        if n:
            out += bytes([c | 0x80])
        else:
            return out + bytes([c])


def rank_event(job, rank, pid, slot, token):
    """An attached RankEvent (proto/dynprof.proto), encoded by hand."""
    b = varint(1 << 3) + varint(1)                          # kind attached
    b += varint(2 << 3 | 2) + varint(len(job)) + job.encode()
    b += varint(3 << 3) + varint(rank)
    b += varint(4 << 3) + varint(pid)
    b += varint(5 << 3) + varint(slot)
    b += varint(15 << 3) + varint(1)                        # rank_seq
    b += varint(16 << 3 | 1) + struct.pack("<Q", token)     # slot_token
    return b


SPOOF = r"""
import os, socket, sys
fd = os.pidfd_open(os.getpid())
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.sendmsg([bytes.fromhex(sys.argv[2])],
          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fd.to_bytes(4, "little"))],
          0, sys.argv[1])
print("spoofed as pid", os.getpid())
"""


def refusals(node):
    """The datagrams the agent logged as refused: from a sender that does not
    hold the slot named, or that claims another pid."""
    return len([ln for ln in node.agent.output().splitlines()
                if "does not hold slot" in ln or "claims pid" in ln])


def test():
    why = can_unshare()
    if why:
        return skip(why)
    log("the agent in a pid namespace of its own")
    apart("own", AGENT_NS)
    log("the agent in the parent namespace: it sees the ranks, by other pids")
    apart("parent", [])
    return 0


def apart(name, agent_wrap):
    job = "%s-%s" % (JOB, name)
    with Cluster("pidns-" + name) as c:
        c.start_coordinator()
        node = c.node("n0")
        node.start_agent(wrap=agent_wrap)
        r0 = node.start_rank(job, 0, rate=50, wrap=RANK_NS)
        node.start_rank(job, 1, rate=50, wrap=RANK_NS)
        c.wait_ranks(job, 2, min_step=5)
        sl = wait_for(lambda: (lambda s: s if len(s) == 2 else None)(
            slots(node, job)), 10, "two slots held")
        check(all(v[0] == 1 for v in sl.values()),
              "each rank is pid 1 in its namespace: %s" % sl)
        check(len({v[3] for v in sl.values()}) == 2,
              "the ranks' pid namespaces differ: %s" % sl)
        log("ranks attached from other pid namespaces: slots %s" % sl)

        # 5 s ahead at 50 steps a second: the window reaches the agent before
        # the ranks reach its start, however loaded the machine.
        w = c.add_window(job, {"in_steps": 250, "steps": 5})
        wid, a, b = w["id"], w["start_step"], w["stop_step"]
        c.wait_window_done(job, wid, [0, 1], timeout=60)
        check(node.trace(0, a, b) is not None and node.trace(1, a, b) is not None,
              "both ranks wrote the window's trace")
        log("window %d (%d-%d) completed on both ranks" % (wid, a, b))

        # A spoof: rank 0's slot and pid (1), a wrong token, its own pidfd.
        slot0 = [i for i, v in sl.items() if v[1] == 0][0]
        before = refusals(node)
        check(before == 0, "the ranks' own datagrams were refused:\n%s" %
              node.agent.output()[-2000:])
        dgram = rank_event(job, 0, 1, slot0, 0x5eed)
        p = subprocess.run(RANK_NS + [sys.executable, "-c", SPOOF, node.sock,
                                      dgram.hex()],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=20)
        check(p.returncode == 0, "spoofer: %s" % p.stdout)
        wait_for(lambda: refusals(node) > before, 10, "the spoof refused")
        log("spoofed datagram refused")
        time.sleep(1.0)     # the spoofer is gone: its pidfd, had it been kept, fires
        st = c.status(job)
        by = {r["rank"]: r for r in st["ranks"]}
        check(by[0].get("state") not in ("gone", "unknown") and r0.alive() and
              slots(node, job).get(slot0, (0,))[0] == 1,
              "rank 0 kept its slot after the spoof: %s, slots %s" % (
                  by[0], slots(node, job)))

        # Rank 1 SIGKILLed: noticed, reported detached, its slot freed.
        slot1 = [i for i, v in sl.items() if v[1] == 1][0]
        node.ranks[1].kill9()
        t0 = time.monotonic()
        wait_for(lambda: (lambda r: r if r and r.get("state") == "gone"
                          else None)(
            {r["rank"]: r for r in c.status(job)["ranks"]}.get(1)),
            10, "rank 1 reported gone")
        s = slots(node, job).get(slot1)
        check(s is not None and s[0] == 0 and s[2] == STATE_GONE,
              "rank 1's slot %d is free and GONE: %s" % (slot1, s))
        log("rank 1's SIGKILL noticed in %.2fs, slot %d reclaimed" % (
            time.monotonic() - t0, slot1))
        check(r0.alive(), "rank 0 still runs")


if __name__ == "__main__":
    main(test)
