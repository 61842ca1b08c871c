"""mindspore.profiler stand-in: Profiler records every call in CALLS."""
import enum

CALLS = []
FAIL = {}       # method name -> exception to raise


class ProfilerLevel(enum.Enum):
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class _AscendProfiler:
    def finalize(self):
        CALLS.append(("finalize",))


class Profiler:
    def __init__(self, **kwargs):
        CALLS.append(("Profiler", kwargs))
        if "init" in FAIL:
            raise FAIL["init"]
        self._ascend_profiler = _AscendProfiler()

    def start(self):
        CALLS.append(("start",))
        if "start" in FAIL:
            raise FAIL["start"]

    def stop(self):
        CALLS.append(("stop",))
        if "stop" in FAIL:
            raise FAIL["stop"]

    def analyse(self, **kwargs):
        CALLS.append(("analyse", kwargs))
