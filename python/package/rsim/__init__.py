"""rsim, the roofline simulator: rsim.run('scenario.yaml', set={'groups': 4}) evaluates a scenario
with the C++ engine (the extension module rsim._rsim) and returns a Result of its tables.

The package is laid out like an installation prefix: bin/rsim (the executable `python3 -m rsim`
and the `rsim` console script run) and share/rsim/ (the platform catalog, the model zoo, the
example scenarios) beside this file when pip installed it; in a build tree (build/python/rsim) the
executable is build/rsim and the data are the source tree's.
"""
from rsim import _rsim
from rsim._rsim import *  # noqa: F401,F403 (the binding: run, Result, Error, schema, ...)
from rsim._rsim import __version__  # noqa: F401
from rsim import notebook as _notebook
from rsim import cluster as _cluster

__doc__ = _rsim.__doc__ + "\n\n" + __doc__
Result._repr_html_ = _notebook.result_html  # noqa: F405 (a notebook shows the summary, then the layers)


_run_here = _rsim.run


def run(path=None, *, text=None, scenario=None, set=None, jobs=1, hw_dir="", client=None, shards=None):
    """Evaluate a scenario as `rsim run PATH --set NAME=VALUE ... --jobs N` does and return its tables: from a file's path,
    from YAML text (text=...), or from a dict (scenario=..., the structure its YAML loads to). Raises rsim.Error with the
    located message for a bad scenario.

    client: a distributed.Client: the sweep runs as `shards` Dask tasks (default: twice the cluster's workers), each
    `rsim run --shard K/N`, merged here by `rsim merge` into the tables a local run returns (rsim.cluster)."""
    if client is None:
        return _run_here(path, text=text, scenario=scenario, set=set or {}, jobs=jobs, hw_dir=hw_dir)
    return _cluster.run_on(client, path, text=text, scenario=scenario, set=set, hw_dir=hw_dir, shards=shards)


def plot(result, out, *, formats=None, style=""):
    """Write the figures `rsim run` draws for this result (the scenario's plots, else the default ones) and report.md into
    the folder `out`; formats: 'png,svg' or a list (default png and svg), style: screen, paper, paper-wide or slides.
    Returns the names of the files written (a list, which a notebook shows as the figures inline)."""
    return _notebook.Figures(_rsim.plot(result, out, formats=formats, style=style), out)
