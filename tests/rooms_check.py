#!/usr/bin/env python3
"""scripts/check_rooms.py: the repository keeps the one-way rule, and the check finds what it should
in a small tree made here (each broken include placed by hand below). usage: rooms_check.py SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

SRC = sys.argv[1]
SCRIPT = os.path.join(SRC, "scripts", "check_rooms.py")
failures = []


def check(root):
    r = subprocess.run([sys.executable, SCRIPT, "--root", root], capture_output=True, text=True)
    return r.returncode, r.stdout


def expect(cond, what):
    if not cond:
        failures.append(what)


rc, out = check(SRC)
expect(rc == 0, "the repository breaks the one-way rule:\n" + out)

with tempfile.TemporaryDirectory() as t:
    def write(rel, text):
        os.makedirs(os.path.dirname(os.path.join(t, rel)), exist_ok=True)
        with open(os.path.join(t, rel), "w") as f:
            f.write(text)

    # allowed: a room reads one before it, its own room, the standard library, tests read anything
    write("engine/eval/evaluate.cpp", '#include "engine/eval/evaluate.hpp"\n#include "engine/model/units.hpp"\n#include <vector>\n')
    write("app/cli.cpp", '#include "session/session.hpp"\n#include <boost/program_options.hpp>\n')
    write("tests/test_x.cpp", '#include "app/cli_common.hpp"\n#include "engine/output/output.hpp"\n')
    rc, out = check(t)
    expect(rc == 0, "an allowed tree was refused:\n" + out)
    # line 2 of a model file reads the evaluator (a room after it); line 1 of a plot includes Lua
    write("engine/model/keys.cpp", '#include "engine/model/keys.hpp"\n#include "engine/eval/evaluate.hpp"\n')
    write("plots/chart.cpp", '#include <lua.h>\n#include "engine/output/output.hpp"\n')
    # python and app are both programs: neither includes the other
    write("python/module.cpp", '#include "app/cli_common.hpp"\n')
    rc, out = check(t)
    expect(rc == 1, "the broken tree passed:\n" + out)
    expect('engine/model/keys.cpp:2: "engine/eval/evaluate.hpp": engine/model/ may not include engine/eval/' in out,
           "the model reading the evaluator was not named:\n" + out)
    expect("plots/chart.cpp:1: <lua.h> belongs to scripting/ alone" in out, "lua.h in plots/ was not named:\n" + out)
    expect('python/module.cpp:1: "app/cli_common.hpp": python/ may not include app/' in out,
           "python reading app was not named:\n" + out)
    expect("3 include(s)" in out and "plots/chart.cpp:2" not in out, "the count or an allowed line is wrong:\n" + out)

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
