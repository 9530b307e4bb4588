"""A sweep's shards as tasks on a Dask cluster: rsim.run(path, client=distributed.Client(...)).

Each task runs `rsim run SCENARIO --shard K/N` (the rsim executable of the worker's rsim package)
into a folder of its own and returns the shard's file; the caller's machine writes the shards and
runs `rsim merge`, which writes the result set an unsharded run would (byte for byte), and reads its
tables back as a Result. A task that fails (or whose worker dies) is retried once; a shard that
fails twice fails the run, naming it, and nothing is merged.

The scenario travels as its text (a scenario given by path is read here): files it names by a
relative path (models/, onnx:, plugins) must be where the worker can read them, at the same path.
"""
import json
import os
import shutil
import subprocess
import tempfile


def _run_shard(k, n, yaml_text, name, options):
    """On a worker: shard k of n of the scenario `yaml_text`; the bytes of its shard.rsim."""
    from rsim.__main__ import executable  # (imported on the worker)

    work = tempfile.mkdtemp(prefix="rsim-shard-")
    try:
        scen = os.path.join(work, name)
        with open(scen, "w", encoding="utf-8") as f:
            f.write(yaml_text)
        out = os.path.join(work, "out")
        p = subprocess.run([executable(), "run", scen, "--shard", f"{k}/{n}", "-o", out, "-q", "-j", "1", *options],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(f"rsim run --shard {k}/{n} exited {p.returncode}: {p.stderr.strip()}")
        with open(os.path.join(out, "shard.rsim"), "rb") as f:
            return f.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_on(client, path=None, *, text=None, scenario=None, set=None, hw_dir="", shards=None):
    """The scenario evaluated as `shards` Dask tasks (default: twice the cluster's workers) and merged."""
    import rsim
    from rsim.__main__ import executable

    given = (path is not None) + (text is not None) + (scenario is not None)
    if given != 1:
        raise ValueError("rsim.run takes one of: a scenario file's path, text=YAML, or scenario=dict")
    if path is not None:
        with open(path, encoding="utf-8") as f:
            yaml_text = f.read()
        name = os.path.basename(path)
    else:
        yaml_text = text if text is not None else json.dumps(scenario, indent=1)
        name = "scenario.yaml"
    options = [f"--set={k}={'true' if v is True else 'false' if v is False else v}" for k, v in (set or {}).items()]
    if hw_dir:
        options.append(f"--hw-dir={os.path.abspath(hw_dir)}")
    n = shards or max(1, 2 * len(client.scheduler_info().get("workers", {})))
    futures = [client.submit(_run_shard, k, n, yaml_text, name, options, retries=1, pure=False, key=f"rsim-shard-{k}-of-{n}-{os.getpid()}-{id(yaml_text)}")
               for k in range(n)]
    work = tempfile.mkdtemp(prefix="rsim-merge-")
    try:
        dirs = []
        for k, fut in enumerate(futures):
            try:
                data = fut.result()
            except Exception as e:  # the task's error, or a worker lost twice
                for other in futures:
                    other.cancel()
                raise rsim.Error(f"shard {k} of {n} failed (after one retry): {e}") from e
            d = os.path.join(work, f"shard-{k}")
            os.makedirs(d)
            with open(os.path.join(d, "shard.rsim"), "wb") as f:
                f.write(data)
            dirs.append(d)
        local = path if path is not None else os.path.join(work, name)
        if path is None:
            with open(local, "w", encoding="utf-8") as f:
                f.write(yaml_text)
        out = os.path.join(work, "out")
        p = subprocess.run([executable(), "merge", out, *dirs, "-q", "--scenario", os.path.abspath(local)], capture_output=True, text=True)
        if p.returncode != 0:
            raise rsim.Error(f"rsim merge: {p.stderr.strip()}")
        return rsim.read_result(out, path if path is not None else "<text>" if text is not None else "<dict>")
    finally:
        shutil.rmtree(work, ignore_errors=True)
