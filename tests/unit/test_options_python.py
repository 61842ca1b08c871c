"""The Python binding's mirror of the profiler options' table
(dynprof._native.OPTIONS) against the C table (common/options.h), as
tests/unit/options_table.c prints it: same rows in the same order, same
types, ranges, defaults, MindSpore 2.4 keys and value names, and a ctypes
struct dynprof_options laid out as the library's."""

import ctypes
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.environ["DYNPROF_SOURCE_DIR"], "lib",
                                "python"))

from dynprof import _native, mindspore, Options  # noqa: E402


def c_table():
    out = subprocess.run([os.environ["DYNPROF_OPTIONS_TABLE"]], check=True,
                         stdout=subprocess.PIPE).stdout
    return json.loads(out)


def test_rows_match_the_c_table():
    rows = c_table()
    assert len(rows) == len(_native.OPTIONS)
    for c, py in zip(rows, _native.OPTIONS):
        name, kind, lo, hi, default, ms24, values = py
        assert name == c["name"]
        assert kind.__name__ == c["type"], name
        assert (lo, hi, default) == (c["min"], c["max"], c["default"]), name
        assert ms24 == c["ms24"], name
        expect = tuple(c["values"].split(",")) if c["values"] else None
        assert values == expect, name


def test_ctypes_layout_matches_the_library():
    for c in c_table():
        field = getattr(_native.Options, c["name"])
        assert field.offset == c["lib_offset"], c["name"]
        assert field.size == c["lib_size"], c["name"]
    assert ctypes.sizeof(_native.Options) == sum(
        c["lib_size"] for c in c_table())


def test_derived_lists():
    rows = c_table()
    assert list(Options._fields) == [c["name"] for c in rows]
    defaults = {c["ms24"]: (bool(c["default"]) if c["type"] == "bool"
                            else c["default"]) for c in rows if c["ms24"]}
    assert mindspore.DEFAULT_CONFIG == dict(start_step=-1, stop_step=-1,
                                            **defaults)
    assert list(mindspore.DEFAULT_CONFIG)[2:] == list(defaults)
