#!/usr/bin/env python3
"""Every example scenario, zoo model and catalog platform satisfies `rsim schema` (checked by a
real JSON Schema validator, python3-jsonschema, draft 2020-12), and misspelt keys do not.
Usage: schema_check.py RSIM SOURCE_DIR"""
import glob
import json
import os
import subprocess
import sys

import jsonschema
import yaml

rsim, src = sys.argv[1], sys.argv[2]
failures = []


def schema(*args):
    out = subprocess.run([rsim, "schema", *args], check=True, capture_output=True, text=True).stdout
    s = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(s)  # a valid 2020-12 schema itself
    return s


def validator(s, root=None):
    if root:  # validate against one definition, e.g. a zoo file against $defs/network_item
        s = dict(s, **{"$ref": "#/$defs/" + root})
    return jsonschema.Draft202012Validator(s)


def errors(v, doc):
    return sorted(f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in v.iter_errors(doc))


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


scenario, platform = schema(), schema("platform")
checks = [(validator(scenario), sorted(glob.glob(os.path.join(src, "scenarios", "*.yaml")))),
          (validator(scenario, "network_item"), sorted(glob.glob(os.path.join(src, "scenarios", "models", "*.yaml")))),
          (validator(platform), sorted(glob.glob(os.path.join(src, "hardware", "*.yaml"))))]
count = 0
for v, files in checks:
    assert files, "no files found"
    for path in files:
        count += 1
        for e in errors(v, load(path)):
            failures.append(f"{os.path.relpath(path, src)}: {e}")

# Misspelt keys, each at a different level, must be rejected.
v = validator(scenario)
base = {
    "name": "t",
    "settings": {"dtype": "fp16"},
    "sweep": {"grid": {"g": [1, 2], "c": {"from": 8, "to": 64, "factor": 2}}},
    "platforms": ["rtx3080", {"base": "rtx3080", "name": "slow", "derate": {"bandwidth_fraction": 0.5}}],
    "networks": [{"name": "n", "input": [1, 32, 56, 56],
                  "layers": [{"op": "conv2d", "out_channels": "${c}", "kernel": 3, "padding": "same", "groups": "${g}"},
                             {"op": "relu"}]},
                 {"model": "resnet18", "args": {"batch": 8}}],
    "plots": [{"kind": "roofline", "color": "op"}, {"kind": "trend", "x": "g", "y": "intensity"}],
}
if errors(v, base):
    failures.append(f"the hand-written base scenario is rejected: {errors(v, base)}")


def mutate(path, bad_key):
    """A copy of `base` with the key at `path` renamed to `bad_key`."""
    doc = json.loads(json.dumps(base))
    node = doc
    for p in path[:-1]:
        node = node[p]
    node[bad_key] = node.pop(path[-1])
    return doc


misspelt = [
    (["platforms"], "platfroms"),                        # top level
    (["settings", "dtype"], "dtpye"),                    # settings
    (["sweep", "grid"], "gird"),                         # sweep
    (["networks", 0, "layers", 0, "out_channels"], "out_channel"),  # an operator's attribute
    (["networks", 0, "layers", 0, "kernel"], "kernal"),  # an optional-looking attribute
    (["networks", 0, "layers", 1, "op"], "opp"),         # a layer key
    (["networks", 0, "input"], "imput"),                 # a network key
    (["networks", 1, "args"], "arsg"),                   # a model use
    (["platforms", 1, "derate"], "derat"),               # an inline platform
    (["platforms", 1, "derate", "bandwidth_fraction"], "bandwidth_fracton"),
    (["plots", 0, "color"], "colour"),                   # a roofline plot
    (["plots", 1, "y"], "yy"),                           # a trend plot
]
for path, bad in misspelt:
    if not errors(v, mutate(path, bad)):
        failures.append(f"misspelt key '{bad}' (for {'/'.join(map(str, path))}) is accepted")
# wrong values: a unit-less bandwidth, an unknown dtype, a roofline-only key on a trend plot
wrong = json.loads(json.dumps(base))
wrong["platforms"][1]["memory"] = [{"name": "HBM", "bandwidth": "760"}]
if not errors(v, wrong):
    failures.append("a bandwidth without a unit is accepted")
wrong = json.loads(json.dumps(base))
wrong["settings"]["dtype"] = "fp17"
if not errors(v, wrong):
    failures.append("dtype fp17 is accepted")
wrong = json.loads(json.dumps(base))
wrong["plots"][1]["color"] = "op"
if not errors(v, wrong):
    failures.append("a roofline key on a trend plot is accepted")
pv = validator(platform)
plat = load(os.path.join(src, "hardware", "rtx3080.yaml"))
plat["memory"][0]["bandwith"] = plat["memory"][0].pop("bandwidth")
if not errors(pv, plat):
    failures.append("misspelt 'bandwith' in a platform file is accepted")

# `rsim plan` against docs/plan.schema.json: two example scenarios (a CNN sweep, an LLM with a KV
# cache), and a plan with a misspelt key rejected
with open(os.path.join(src, "docs", "plan.schema.json"), encoding="utf-8") as f:
    plan_schema = json.load(f)
jsonschema.Draft202012Validator.check_schema(plan_schema)
plan_v = jsonschema.Draft202012Validator(plan_schema)
for name in ("group_conv_sweep.yaml", "llm_prefill_decode.yaml"):
    out = subprocess.run([rsim, "plan", os.path.join(src, "scenarios", name)], check=True, capture_output=True, text=True).stdout
    plan = json.loads(out)
    for e in errors(plan_v, plan):
        failures.append(f"plan of {name}: {e}")
    count += 1
plan["points"][0]["networks"][0]["layers"][0]["kernal"] = "x"
if not errors(plan_v, plan):
    failures.append("a plan layer with a misspelt key 'kernal' is accepted")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"schema_check: {count} files valid, {len(misspelt) + 5} bad documents rejected")
