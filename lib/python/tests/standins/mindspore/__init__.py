"""Stand-ins for the MindSpore modules dynprof.mindspore uses (MindSpore cannot
be installed here).  profiler.CALLS records every Profiler call, in order."""
