"""python3 -m rsim_torch probe | measure (see the package's docstring)."""

import argparse
import os
import sys


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m rsim_torch", description="Measure a device through PyTorch for rsim.")
    sub = ap.add_subparsers(dest="command")
    pp = sub.add_parser("probe", help="measure the device's roofs and runtime: a platform file for rsim")
    pp.add_argument("--device", default="cuda:0", help="cuda[:N], cpu or mps (default cuda:0)")
    pp.add_argument("-o", "--output", help="the platform file to write (YAML, rsim's catalog format)")
    pp.add_argument("--json", help="every measurement as JSON")
    pp.add_argument("--name", help="the platform's name (default: from the file name, else the device)")
    pp.add_argument("--quick", action="store_true", help="fewer sizes and repetitions")
    mp = sub.add_parser("measure", help="time every layer of a plan (rsim plan) and its networks as forward passes")
    mp.add_argument("plan", help="plan.json written by `rsim plan`")
    mp.add_argument("--device", default="cuda:0", help="cuda[:N], cpu or mps (default cuda:0)")
    mp.add_argument("--execution", help="eager,graph (default: every mode the device supports: cuda eager,graph; cpu and mps eager)")
    mp.add_argument("--reps", type=int, default=20, help="timed repetitions per layer and network (default 20)")
    mp.add_argument("--what", default="layers,networks", help="layers, networks or both (default)")
    mp.add_argument("-o", "--out", required=True, help="output folder: measured.csv, measured_networks.csv")
    args = ap.parse_args(argv)
    if args.command is None:
        ap.print_help()
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("rsim_torch: error: PyTorch is not installed for %s; install it (Debian: apt install python3-torch; "
              "elsewhere: pip install torch), or point RSIM_PYTHON at an interpreter that has it" % sys.executable, file=sys.stderr)
        return 3  # (rsim then tries the interpreter Debian's python3-torch serves, /usr/bin/python3)
    from .device import modes_of, parse_device

    dev = parse_device(args.device)
    if args.command == "probe":
        from .probe import probe

        return probe(dev, args.output, args.json, args.name, args.quick)
    from .measure import PlanError, load_plan, measure

    modes = modes_of(dev)
    if args.execution:
        asked = [m.strip() for m in args.execution.split(",") if m.strip()]
        for m in asked:
            if m not in ("eager", "graph"):
                print("rsim_torch: error: --execution %s: choose eager, graph or both" % m, file=sys.stderr)
                return 2
            if m not in modes:
                print("rsim_torch: error: --execution %s needs a CUDA device (%s runs eager only)" % (m, dev), file=sys.stderr)
                return 2
        modes = asked
    if not 1 <= args.reps <= 100000:
        print("rsim_torch: error: --reps must be between 1 and 100000", file=sys.stderr)
        return 2
    what = {w.strip() for w in args.what.split(",")}
    if not what <= {"layers", "networks"} or not what:
        print("rsim_torch: error: --what takes layers, networks or both", file=sys.stderr)
        return 2
    try:
        plan = load_plan(args.plan)
        os.makedirs(args.out, exist_ok=True)
        layer_rows, net_rows = measure(plan, dev, modes, args.reps, args.out, layers="layers" in what, networks="networks" in what)
    except PlanError as e:
        print("rsim_torch: error: %s" % e, file=sys.stderr)
        return 1
    ran = sum(1 for r in layer_rows if r[4][0])
    layers_note = "%d layer timings (%d not run, see measured_note)" % (ran, len(layer_rows) - ran) if "layers" in what else "layers not timed"
    print("rsim_torch: %s, %d network timings; wrote %s/measured.csv, %s/measured_networks.csv"
          % (layers_note, sum(1 for r in net_rows if r[3]), args.out, args.out), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
