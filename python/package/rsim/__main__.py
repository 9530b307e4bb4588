"""`python3 -m rsim ARGS...` and the `rsim` console script: the rsim executable with ARGS."""
import os
import sys


def executable():
    """the rsim executable of this package (pip: rsim/bin/rsim) or of its build tree (build/rsim)"""
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "bin", "rsim"), os.path.join(os.path.dirname(os.path.dirname(here)), "rsim")):
        if os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    sys.exit(f"rsim: no rsim executable beside the package ({here}/bin/rsim): reinstall it with "
             "`pip install --no-build-isolation --no-index .` from a clone")


def main():
    exe = executable()
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
