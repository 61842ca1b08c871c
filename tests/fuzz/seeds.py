#!/usr/bin/python3
"""Writes the seed streams of fuzz_coord_dispatch and fuzz_agent_dispatch:
AgentLink frames (flag byte 0, 4-byte big-endian length, the message) of
messages written in protobuf text format and encoded by protoc; and the seeds
of fuzz_legacy_status, one LegacyStatus each, unframed.

    python3 tests/fuzz/seeds.py     (from the source tree; needs protoc)
"""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.join(HERE, "..", "..", "proto")


def encode(kind, text):
    return subprocess.run(
        ["protoc", "--proto_path=" + PROTO_DIR,
         "--encode=dynprof.v1." + kind, "dynprof.proto"],
        input=text.encode(), stdout=subprocess.PIPE, check=True).stdout


def frame(kind, text):
    out = encode(kind, text)
    return b"\0" + len(out).to_bytes(4, "big") + out


def event(seq, kind, rank, extra="", boot=77, job="fz"):
    return ('event { seq: %d agent_boot_id: %d event { kind: %s job: "%s" '
            'rank: %d pid: %d slot: %d %s } }' %
            (seq, boot, kind, job, rank, 2000 + rank, rank, extra))


WIN1 = "window_id: 1 start_step: 10 stop_step: 20"
WIN2 = "window_id: 2 start_step: 100 stop_step: 120"

# The LegacyStatus of a legacy job: written alone (fuzz_legacy_status) and
# inside an AgentMessage (fuzz_coord_dispatch).
LEGACY_TEXT = {
    "written": 'job: "fz" dialect: "mindspore-2.4" output_dir: "/out/fz" '
               'windows { window_id: 1 state: LEGACY_WINDOW_WRITTEN } '
               'windows { window_id: 2 state: LEGACY_WINDOW_REFUSED '
               'reason: "the dialect cannot say it" }',
    "error": 'job: "fz" dialect: "torch_npu" error: "config unwritable" '
             'windows { window_id: 2 state: LEGACY_WINDOW_WAITING } '
             'windows { window_id: 99 state: LEGACY_WINDOW_UNVERIFIED }',
    "other": 'job: "other" dialect: ""',
    "removed": 'job: "fz" removed: true',
}


def legacy(name):
    return "legacy { %s }" % LEGACY_TEXT[name]


COORD = {
    # A node's whole life with the job: subscribe, ranks attach, a window
    # starts and stops, progress, applied, heartbeats that commit.
    "life": [
        'subscribe { job: "fz" applied_generation: 0 }',
        'applied { job: "fz" generation: 2 }',
        event(1, "EVENT_ATTACHED", 4),
        event(2, "EVENT_ATTACHED", 5),
        'progress { job: "fz" ranks_alive: 2 min_step: 9 max_step: 9 '
        'ranks { rank: 4 step: 9 pid: 2004 state: RANK_ARMED } '
        'ranks { rank: 5 step: 9 pid: 2005 state: RANK_ARMED } }',
        event(3, "EVENT_STARTED", 4, WIN1 + ' step: 10 output_dir: "o4"'),
        event(4, "EVENT_STARTED", 5, WIN1 + ' step: 10 output_dir: "o5"'),
        "heartbeat { time_unix_ns: 1 }",
        event(5, "EVENT_STOPPED", 4, WIN1 + " step: 20 reason: STOP_COMPLETED"),
        event(6, "EVENT_STOPPED", 5, WIN1 + " step: 20 reason: STOP_COMPLETED"),
        "heartbeat { time_unix_ns: 2 }",
        event(7, "EVENT_SKIPPED", 4, WIN2 + " step: 130"),
        event(8, "EVENT_DETACHED", 5, "step: 131"),
        'unsubscribe { job: "fz" }',
        "heartbeat { }",
    ],
    # Replays: the same seqs again, then a new boot whose seqs restart.
    "replay": [
        'subscribe { job: "fz" }',
        event(1, "EVENT_STARTED", 6, WIN1 + ' step: 10 output_dir: "o6"'),
        event(1, "EVENT_STARTED", 6, WIN1 + ' step: 10 output_dir: "o6"'),
        "heartbeat { }",
        event(1, "EVENT_STARTED", 6, WIN1 + ' step: 10 output_dir: "o6"'),
        event(1, "EVENT_STOPPED", 6, WIN1 + " step: 20 reason: STOP_CLOSED",
              boot=78),
        event(2, "EVENT_FAILED", 7, WIN2 + ' step: 100 error: "no disk"',
              boot=78),
        "heartbeat { }",
    ],
    # Ranks of another job, one that does not exist, a bad job id.
    "jobs": [
        'subscribe { job: "other" applied_generation: 5 }',
        'applied { job: "other" generation: 9 }',
        event(1, "EVENT_ATTACHED", 0, job="other"),
        event(2, "EVENT_STARTED", 1, WIN1, job="nojob"),
        event(3, "EVENT_ATTACHED", 1, job="../x"),
        'progress { job: "other" ranks_alive: 1 min_step: 5 max_step: 5 '
        'ranks { rank: 0 step: 5 pid: 2000 state: RANK_ATTACHED } }',
        'unsubscribe { job: "nojob" }',
        'subscribe { job: "" }',
        "heartbeat { }",
    ],
    # Protocol errors: seq 0, a second hello.
    "seq0": ['subscribe { job: "fz" }', event(0, "EVENT_ATTACHED", 3)],
    "hello_again": ['hello { protocol_version: 1 node: "n2" }', "heartbeat { }"],
    # A legacy job served by this node: its status, the events observed for
    # it, a status of another job, one of a bad job id, then the job gone.
    "legacy": [
        legacy("written"),
        event(1, "EVENT_OBSERVED", 8, WIN1 + ' step: 10 output_dir: "/out/fz/r8"'),
        event(2, "EVENT_OBSERVED_COMPLETE", 8, WIN1 + " step: 20"),
        "heartbeat { }",
        legacy("error"),
        legacy("other"),
        'legacy { job: "../x" }',
        legacy("removed"),
        event(3, "EVENT_OBSERVED", 9, WIN2 + ' step: 100'),
        "heartbeat { }",
    ],
}

# One LegacyStatus a seed (fuzz_legacy_status).
LEGACY = {name: [text] for name, text in LEGACY_TEXT.items()}

AGENT = {
    # Welcome, the job's schedule, acks of events it never sent, heartbeats.
    "life": [
        "welcome { protocol_version: 1 heartbeat_ms: 500 acked_seq: 0 }",
        'config { job: "fz" generation: 2 windows { id: 1 start_step: 10 '
        'stop_step: 20 ranks: "0-3" state: WINDOW_SCHEDULED } }',
        "heartbeat { time_unix_ns: 5 }",
        "ack { seq: 2 }",
        'config { job: "fz" generation: 3 windows { id: 1 start_step: 10 '
        'stop_step: 20 ranks: "0-3" state: WINDOW_CANCELLED } windows { '
        'id: 2 start_step: 100 stop_step: 120 options { profiler_level: 1 '
        'output_subdir: "sub" framework_options_json: "{}" } state: '
        'WINDOW_SCHEDULED } }',
        "ack { seq: 4 }",
        "ack { seq: 1000 }",
        'config { job: "fz" generation: 1 }',
        "welcome { protocol_version: 1 }",
    ],
    "acked_welcome": [
        "welcome { protocol_version: 1 heartbeat_ms: 1 acked_seq: 3 "
        "agent_boot_id: 77 }",
        'config { job: "j2" generation: 7 windows { id: 3 start_step: 5 '
        'stop_step: 5 } }',
        'config { job: "../bad" generation: 8 }',
        "ack { seq: 5 }",
    ],
    "not_welcome": ["heartbeat { }", "welcome { protocol_version: 1 }"],
    "error": ["welcome { protocol_version: 1 }",
              'error { code: ERROR_REPLACED reason: "another agent" }'],
    "bad_version": ["welcome { protocol_version: 99 }"],
}


def write(target, seeds, kind, wrap=frame):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name, msgs in seeds.items():
        with open(os.path.join(d, "seed_" + name), "wb") as f:
            for m in msgs:
                f.write(wrap(kind, m))


if __name__ == "__main__":
    write("coord_dispatch", COORD, "AgentMessage")
    write("agent_dispatch", AGENT, "CoordinatorMessage")
    write("legacy_status", LEGACY, "LegacyStatus", encode)
