"""rsim_torch: measure a device through PyTorch, with nothing of rsim but its plan file.

    python3 -m rsim_torch probe   --device cuda:0|cpu|mps [-o PLATFORM.yaml] [--json FILE]
    python3 -m rsim_torch measure PLAN.json --device D [--execution eager,graph] [--reps N] -o DIR

`rsim plan SCENARIO -o plan.json` writes the plan (docs/plan.schema.json); `measure` builds each
layer as the torch module or function a model would use, times it with device events (and the
networks as forward passes), and writes measured.csv and measured_networks.csv, which
`rsim calibrate` reads. Pure Python: it needs torch (1.13 or newer) and nothing else.

    net = rsim_torch.trace(module, example_inputs, name="resnet18")   # an rsim network (a dict), torch.fx

traces an nn.Module into an rsim network for rsim.run(scenario=...) or a zoo file (net.to_yaml()):
docs/python.md (PyTorch modules).
"""

__version__ = "1"
__all__ = ["trace", "TraceError", "Network"]

from .trace_fx import Network, TraceError, trace  # noqa: E402,F401  (imports torch only when called)
