#!/usr/bin/env python3
"""Writes docs/operators.md from `rsim ops` (each operator: what it is, its inputs, its attributes
with their types and defaults, its cost formulas), so the reference never drifts from the
operator table. usage: scripts/operators_doc.py [path/to/rsim] [--check] (--check: exit 1 when
docs/operators.md differs from what it would write)"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RSIM = next((a for a in sys.argv[1:] if not a.startswith("--")), os.path.join(ROOT, "build", "rsim"))
OUT = os.path.join(ROOT, "docs", "operators.md")


def ops(*args):
    return subprocess.run([RSIM, "ops", *args], check=True, capture_output=True, text=True).stdout


def page():
    listing = ops().splitlines()
    names = [l.split()[0] for l in listing[1:] if l.startswith("  ") and l.strip()]
    doc = ["# Operators", "",
           "Every built-in operator of rsim: what it computes, its attributes (the keys of a layer of that `op:`) and how "
           "its FLOPs, MACs, parameters and bytes are counted. Generated from `rsim ops NAME` by "
           "`scripts/operators_doc.py` (a test checks it is current); a scenario's Lua operators show with "
           "`rsim ops --scenario FILE`. " + listing[0][listing[0].find("(") + 1:listing[0].rfind(")")].split(";")[0] + ".", ""]
    doc += ["| operator | what it is |", "|---|---|"]
    for l in listing[1:]:
        if l.startswith("  ") and l.strip():
            name, _, what = l.strip().partition(" ")
            doc.append(f"| [`{name}`](#{name}) | {what.strip()} |")
    doc.append("")
    for name in names:
        lines = ops(name).rstrip("\n").splitlines()
        title = lines[0].split(" — ", 1)
        doc += [f"## {name}", "", (title[1] if len(title) > 1 else "").strip() + ".", ""]
        section = None
        cost = []
        for l in lines[1:]:
            s = l.strip()
            if not s:
                continue
            if not l.startswith("    ") and s.endswith(":") :
                section = s[:-1]
                if section == "attributes":
                    doc += ["Attributes:", ""]
                continue
            if not l.startswith("    ") and ":" in s:  # "inputs: 1" and other one-line facts
                key, _, val = s.partition(":")
                doc += [f"{key.capitalize()}: {val.strip()}.", ""]
                section = None
                continue
            if section == "attributes":
                key, _, rest = s.partition(" ")
                doc.append(f"- `{key}` {rest}")
            else:
                cost.append(s)
        if section == "attributes" or any(d.startswith("- `") for d in doc[-3:]):
            doc.append("")
        if cost:
            doc += ["Cost:", "", "```"] + cost + ["```", ""]
    return "\n".join(doc).rstrip("\n") + "\n"


text = page()
if "--check" in sys.argv:
    same = os.path.exists(OUT) and open(OUT, encoding="utf-8").read() == text
    print("docs/operators.md is current" if same else "docs/operators.md is out of date: run scripts/operators_doc.py")
    sys.exit(0 if same else 1)
with open(OUT, "w", encoding="utf-8") as f:
    f.write(text)
print(f"wrote docs/operators.md ({text.count(chr(10) + '## ')} operators)")
