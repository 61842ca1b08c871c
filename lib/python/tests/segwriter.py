"""Test-only: plays the agent's part on a segment the C library created.

The structures below mirror common/segment.h field for field (ctypes lays them
out as the C compiler does).  check_layout() compares them with the sizes and
offsets the C library wrote into the segment's header, so a layout change in C
that is not made here fails loudly instead of writing garbage.  Only the agent
writes the config part, under the header's seqlock; this does the same.
"""

import ctypes
import fcntl
import mmap
import os

SEG_MAGIC = 0x31464F5250594E44
SEG_VERSION = 10
SEG_JOB_MAX = 64
SEG_MAX_WINDOWS = 16
SEG_RANKS_MAX = 256
SEG_SUBDIR_MAX = 256
SEG_FWOPTS_MAX = 4096
SEG_PATH_MAX = 1024
SEG_ERROR_MAX = 256
SEG_LOG_TEXT_MAX = 320
SEG_LOG_ENTRIES = 40
SEG_ARRIVE_ENTRIES = 32
SEG_WINDOW_CANCELLED = 0x1


class SegOptions(ctypes.Structure):
    _fields_ = [
        ("aicore_metrics", ctypes.c_int32),
        ("profiler_level", ctypes.c_int32),
        ("profile_framework", ctypes.c_int32),
        ("analyse_mode", ctypes.c_int32),
        ("profile_communication", ctypes.c_uint8),
        ("parallel_strategy", ctypes.c_uint8),
        ("with_stack", ctypes.c_uint8),
        ("data_simplification", ctypes.c_uint8),
        ("fwopts_len", ctypes.c_uint32),
        ("output_subdir", ctypes.c_char * SEG_SUBDIR_MAX),
        ("fwopts", ctypes.c_char * SEG_FWOPTS_MAX),
    ]


class SegWindow(ctypes.Structure):
    _fields_ = [
        ("id", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("start_step", ctypes.c_int64),
        ("stop_step", ctypes.c_int64),
        ("start_ns", ctypes.c_int64),
        ("stop_ns", ctypes.c_int64),
        ("start_unix_ns", ctypes.c_int64),
        ("stop_unix_ns", ctypes.c_int64),
        ("ranks", ctypes.c_char * SEG_RANKS_MAX),
        ("options", SegOptions),
    ]


class SegConfig(ctypes.Structure):
    _fields_ = [
        ("generation", ctypes.c_uint64),
        ("nwindows", ctypes.c_uint32),
        ("pad", ctypes.c_uint32),
        ("windows", SegWindow * SEG_MAX_WINDOWS),
    ]


class SegLogEntry(ctypes.Structure):
    _fields_ = [
        ("seq", ctypes.c_uint32),
        ("kind", ctypes.c_uint32),
        ("window_id", ctypes.c_uint32),
        ("reason", ctypes.c_uint32),
        ("start_step", ctypes.c_int64),
        ("stop_step", ctypes.c_int64),
        ("step", ctypes.c_int64),
        ("generation", ctypes.c_uint64),
        ("time_ns", ctypes.c_int64),
        ("rank_seq", ctypes.c_uint32),
        ("pid", ctypes.c_int32),
        ("text", ctypes.c_char * SEG_LOG_TEXT_MAX),
    ]


class SegSlot(ctypes.Structure):
    _fields_ = [
        ("pid", ctypes.c_int32),
        ("seq", ctypes.c_uint32),
        ("step", ctypes.c_int64),
        ("rank", ctypes.c_int32),
        ("state", ctypes.c_uint32),
        ("window_id", ctypes.c_uint32),
        ("last_event", ctypes.c_uint32),
        ("start_step", ctypes.c_int64),
        ("stop_step", ctypes.c_int64),
        ("event_step", ctypes.c_int64),
        ("event_time_ns", ctypes.c_int64),
        ("attach_time_ns", ctypes.c_int64),
        ("generation", ctypes.c_uint64),
        ("reason", ctypes.c_uint32),
        ("rank_seq", ctypes.c_uint32),
        ("output_dir", ctypes.c_char * SEG_PATH_MAX),
        ("error", ctypes.c_char * SEG_ERROR_MAX),
        ("labels", ctypes.c_char * 256),
        ("last_pid", ctypes.c_int32),
        ("incarnation", ctypes.c_uint32),
        ("log_head", ctypes.c_uint32),
        ("log_lost", ctypes.c_uint32),
        ("log_acked", ctypes.c_uint64),
        ("root_inc", ctypes.c_uint32),
        ("pad0", ctypes.c_char * 28),       # pad0, pidns, last_pidns, token
        ("busy_begin_ns", ctypes.c_int64),
        ("busy_last_ns", ctypes.c_int64),
        ("busy_avg_ns", ctypes.c_int64),
        ("busy_max_ns", ctypes.c_int64),
        ("busy_count", ctypes.c_uint64),
        ("pad", ctypes.c_char * 72),
        ("output_root", ctypes.c_char * SEG_PATH_MAX),
        ("log", SegLogEntry * SEG_LOG_ENTRIES),
        ("arrive_count", ctypes.c_uint64),
        ("pad3", ctypes.c_char * 56),
        ("arrive", ctypes.c_int64 * (2 * SEG_ARRIVE_ENTRIES)),  # step, mark_ns
    ]


class SegHeader(ctypes.Structure):
    _fields_ = [
        ("magic", ctypes.c_uint64),
        ("version", ctypes.c_uint32),
        ("header_size", ctypes.c_uint32),
        ("segment_size", ctypes.c_uint64),
        ("config_offset", ctypes.c_uint32),
        ("config_size", ctypes.c_uint32),
        ("slots_offset", ctypes.c_uint32),
        ("slot_size", ctypes.c_uint32),
        ("nslots", ctypes.c_uint32),
        ("pad0", ctypes.c_uint32),
        ("job", ctypes.c_char * (SEG_JOB_MAX + 1)),
        ("pad1", ctypes.c_char * 7),
        ("created_ns", ctypes.c_int64),
        ("seq", ctypes.c_uint32),
        ("agent_pid", ctypes.c_int32),
        ("generation", ctypes.c_uint64),
        ("served", ctypes.c_uint32),
        ("pad2", ctypes.c_char * 44),
    ]


class Segment:
    """A mapping of the segment file <shm_dir>/dynprof.<job>."""

    def __init__(self, shm_dir, job):
        self.path = os.path.join(shm_dir, "dynprof." + job)
        # As an agent serving it: a user's shared lock held while mapped and
        # the segment marked served, so that its ranks' closes keep the file.
        self.fd = os.open(self.path, os.O_RDWR)
        fcntl.flock(self.fd, fcntl.LOCK_SH)
        self.map = mmap.mmap(self.fd, 0)
        self.hdr = SegHeader.from_buffer(self.map, 0)
        self.hdr.served = 1
        self.check_layout()
        self.config = SegConfig.from_buffer(self.map, self.hdr.config_offset)

    def check_layout(self):
        h = self.hdr
        assert h.magic == SEG_MAGIC, hex(h.magic)
        assert h.version == SEG_VERSION, h.version
        assert h.header_size == ctypes.sizeof(SegHeader), \
            (h.header_size, ctypes.sizeof(SegHeader))
        assert h.config_size == ctypes.sizeof(SegConfig), \
            (h.config_size, ctypes.sizeof(SegConfig))
        assert h.slot_size == ctypes.sizeof(SegSlot), \
            (h.slot_size, ctypes.sizeof(SegSlot))
        assert h.config_offset >= h.header_size
        assert h.slots_offset >= h.config_offset + h.config_size
        assert h.segment_size == len(self.map)
        assert h.slots_offset + h.nslots * h.slot_size <= h.segment_size

    def slot(self, i):
        return SegSlot.from_buffer(self.map,
                                   self.hdr.slots_offset + i * self.hdr.slot_size)

    def slot_of(self, pid):
        """The slot a process claimed, or None."""
        for i in range(self.hdr.nslots):
            s = self.slot(i)
            if s.pid == pid:
                return s
        return None

    def write(self, windows, generation=None):
        """Writes a schedule under the seqlock, as the agent does.  windows: a
        list of dicts with id, start, stop (steps; 0 for a time window) and
        optionally start_ns, stop_ns (CLOCK_MONOTONIC), start_unix_ns,
        stop_unix_ns (CLOCK_REALTIME), ranks, cancelled,
        subdir, fwopts (a str) and any ProfilerOptions field."""
        c = SegConfig()
        c.generation = (self.config.generation + 1) if generation is None \
            else generation
        c.nwindows = len(windows)
        for i, w in enumerate(windows):
            sw = c.windows[i]
            sw.id = w["id"]
            sw.flags = SEG_WINDOW_CANCELLED if w.get("cancelled") else 0
            sw.start_step = w["start"]
            sw.stop_step = w["stop"]
            sw.start_ns = w.get("start_ns", 0)
            sw.stop_ns = w.get("stop_ns", 0)
            sw.start_unix_ns = w.get("start_unix_ns", 0)
            sw.stop_unix_ns = w.get("stop_unix_ns", 0)
            sw.ranks = w.get("ranks", "").encode()
            o = sw.options
            o.aicore_metrics = w.get("aicore_metrics", -1)
            o.profiler_level = w.get("profiler_level", -1)
            o.profile_framework = w.get("profile_framework", -1)
            o.analyse_mode = w.get("analyse_mode", -1)
            o.profile_communication = int(w.get("profile_communication", 0))
            o.parallel_strategy = int(w.get("parallel_strategy", 0))
            o.with_stack = int(w.get("with_stack", 0))
            o.data_simplification = int(w.get("data_simplification", 1))
            fw = w.get("fwopts", "").encode()
            o.fwopts = fw
            o.fwopts_len = len(fw)
            o.output_subdir = w.get("subdir", "").encode()
        h = self.hdr
        h.seq += 1                      # odd: writing
        ctypes.memmove(ctypes.addressof(self.config), ctypes.addressof(c),
                       ctypes.sizeof(c))
        h.generation = c.generation
        h.seq += 1                      # even: done
        return c.generation

    def close(self):
        os.close(self.fd)
        del self.hdr, self.config
        try:
            self.map.close()
        except BufferError:     # a slot view still alive: the GC unmaps it
            pass
