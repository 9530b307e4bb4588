#!/usr/bin/env python3
"""The rooms of the house (issue 43) and who may include whom: the one-way rule.

Every `#include "ROOM/..."` in a source file (.cpp, .hpp outside tests/, bench/, fuzz/ and build
folders) must name its own room or one the table below lets it read; a room is a folder of
the table (engine's rooms are its subfolders). The rooms are listed in the order data flows
through them: the scenario's vocabulary first, the programs last. The check also keeps each
third-party header in the one folder that owns it (THIRD_PARTY). docs/architecture.md says the
same in words; this table is the rule.

usage: scripts/check_rooms.py [--root DIR]; exit 1 with one line per broken include.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if "--root" in sys.argv:  # another tree (the test's)
    ROOT = os.path.abspath(sys.argv[sys.argv.index("--root") + 1])

ENGINE = ["engine/model", "engine/ops", "engine/graph", "engine/hardware", "engine/scenario", "engine/eval",
          "engine/output"]
# room: the rooms it may include besides itself (an engine room: those before it)
ALLOWED = {r: ENGINE[:i] for i, r in enumerate(ENGINE)}
ALLOWED.update({
    "importers": ENGINE,            # ONNX files in: networks for the engine
    "scripting": ENGINE,            # Lua: the ${...} evaluator and the script hooks the engine calls
    "serving": ENGINE,              # the request-level simulation, each batch priced by the engine
    "plots": ENGINE + ["serving"],  # figures of results (and of serving's tables)
    "measure": ENGINE + ["plots"],  # this machine, for real: probe, timing, calibration (and their figures)
    "session": ENGINE + ["importers", "scripting", "serving", "plots", "measure"],  # a run as `rsim run` does
    "app": ENGINE + ["importers", "scripting", "serving", "plots", "measure", "session"],   # the executable
    "python": ENGINE + ["importers", "scripting", "serving", "plots", "measure", "session"],  # the module
})
EXEMPT = {"tests", "bench", "fuzz"}  # they test and time any room
# third-party header prefix: the one folder that may include it
THIRD_PARTY = {
    "yaml-cpp/": "engine/model", "zlib.h": "engine/model", "lua.h": "scripting", "lualib.h": "scripting",
    "lauxlib.h": "scripting", "cairo": "plots", "png.h": "plots", "onnx/": "importers", "google/protobuf": "importers",
    "oneapi/dnnl": "measure", "dnnl": "measure", "pybind11/": "python", "boost/": "app", "benchmark/": "bench",
    "nlohmann/": "tests",  # the tests read our JSON with a parser that is not ours
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SKIP = {".git", "out", "dist", "node_modules", "__pycache__"}


def room_of(rel):
    """the room of a repository path, or None (a file outside every room)"""
    for r in sorted(ALLOWED, key=len, reverse=True):
        if rel == r or rel.startswith(r + "/"):
            return r
    top = rel.split("/")[0]
    return top if top in EXEMPT else None


def main():
    broken = []
    for d, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(x for x in dirs if x not in SKIP and not x.startswith("build"))
        for f in sorted(files):
            if not f.endswith((".cpp", ".hpp", ".h")):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, ROOT)
            room = room_of(rel)
            with open(path, encoding="utf-8", errors="replace") as fh:
                for n, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    kind, name = m.groups()
                    if kind == "<":
                        owner = next((o for p, o in THIRD_PARTY.items() if name.startswith(p)), None)
                        if owner and not (rel == owner or rel.startswith(owner + "/")):
                            broken.append(f"{rel}:{n}: <{name}> belongs to {owner}/ alone (include it there and "
                                          "give the others an interface)")
                        continue
                    target = room_of(name)
                    if target is None or room is None or room in EXEMPT or target == room:
                        continue
                    if target in EXEMPT:
                        broken.append(f"{rel}:{n}: \"{name}\": {target}/ is not a room a source may include")
                    elif target not in ALLOWED[room]:
                        may = ", ".join(ALLOWED[room]) or "no other room"
                        broken.append(f"{rel}:{n}: \"{name}\": {room}/ may not include {target}/ (it may include: {may})")
    for b in broken:
        print(b)
    if broken:
        print(f"check_rooms: {len(broken)} include(s) against the one-way rule (scripts/check_rooms.py, "
              "docs/architecture.md)")
        return 1
    print("check_rooms: every include runs one way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
