#!/usr/bin/env bash
# `pip install .` (issue 44 item 1) as Debian 12 allows it: a fresh venv with the system's site
# packages in a temporary folder, pip offline without build isolation, installing from a copy of
# the source tree with the C++ build reused from BUILD_DIR (RSIM_CMAKE_BUILD_DIR: setup.py builds
# only what is out of date there). Then, from an unrelated folder with no RSIM_* variables: the
# module imports from the venv (not the source or build tree), runs a scenario given as a dict
# that names a catalog platform and a zoo model, `python -m rsim run` and the `rsim` console
# script write a run's tables, a wheel is built and installed into a second venv, and pip
# uninstalls the package leaving nothing of it behind.
# Usage: pip_install_test.sh SOURCE_DIR BUILD_DIR PYTHON
set -euo pipefail
src=$(cd "$1" && pwd); build=$(cd "$2" && pwd); py=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset RSIM_HARDWARE RSIM_MODELS PYTHONPATH
fail() { echo "pip_install_test: $*" >&2; exit 1; }
"$py" -c "import venv, ensurepip, setuptools, wheel" 2>/dev/null || { echo "pip_install_test: SKIP ($py lacks venv, ensurepip, setuptools or wheel: apt install python3-venv python3-setuptools python3-wheel)"; exit 77; }

# a copy of the tracked sources (what a clone has), so that the test writes nothing into the tree
mkdir -p "$tmp/tree"
if git -C "$src" rev-parse 2>/dev/null; then
  git -C "$src" ls-files -z --cached --others --exclude-standard | (cd "$src" && xargs -0 cp --parents -t "$tmp/tree" 2>/dev/null || true)
else
  (cd "$src" && tar --exclude='./build*' --exclude=./out -cf - .) | tar -xf - -C "$tmp/tree"
fi
export RSIM_CMAKE_BUILD_DIR=$build

"$py" -m venv --system-site-packages "$tmp/v" >/dev/null
"$tmp/v/bin/pip" install --quiet --no-build-isolation --no-index "$tmp/tree" || fail "pip install failed"

mkdir "$tmp/work" && cd "$tmp/work"
site=$("$tmp/v/bin/python" -c "import rsim, os; print(os.path.dirname(rsim.__file__))")
case "$site" in "$tmp/v/"*) ;; *) fail "rsim imported from $site, not from the venv" ;; esac
for f in bin/rsim share/rsim/hardware/h100_sxm.yaml share/rsim/models/resnet18.yaml share/rsim/scenarios/group_conv_sweep.yaml \
         share/rsim/python/rsim_torch/__main__.py; do
  [ -e "$site/$f" ] || fail "the package lacks $f"
done
"$tmp/v/bin/python" -c "import rsim_torch" || fail "rsim_torch does not import"

# ResNet-18 from the zoo on the catalog's H100 at batch 1: its parameters are torchvision's
# 11,689,512 (conv 11,166,912 + batchnorm 9,600 + fc 513,000: the zoo keeps BatchNorm)
"$tmp/v/bin/python" - <<'PY' || fail "the module did not run the zoo model on the catalog platform"
import rsim
r = rsim.run(scenario={"name": "pip", "networks": [{"model": "resnet18"}], "platforms": ["h100_sxm"]})
s = r.summary[0]
assert int(float(s["params"])) == 11689512, s["params"]
assert s["platform"] == "h100_sxm", s["platform"]
PY

cat > s.yaml <<'YAML'
name: pipcheck
networks:
  - name: one
    input: [1, 1024]
    layers:
      - {name: fc, op: linear, out_features: 1024, bias: false}
platforms: [h100_sxm]
YAML
"$tmp/v/bin/python" -m rsim run s.yaml -o out >/dev/null || fail "python -m rsim run failed"
# fc: 1024 x 1024 weights = 1,048,576 MACs = 2,097,152 FLOPs
grep -q "2097152" out/results.csv || fail "python -m rsim run wrote no 2,097,152-FLOP row"
"$tmp/v/bin/rsim" run s.yaml -o out2 >/dev/null || fail "the rsim console script failed"
cmp -s out/results.csv out2/results.csv || fail "the console script and python -m rsim differ"

# a wheel, installed into a second venv
(cd "$tmp/tree" && "$tmp/v/bin/pip" wheel --quiet --no-build-isolation --no-index --no-deps -w "$tmp/wheels" .) || fail "pip wheel failed"
whl=$(ls "$tmp"/wheels/rsim-*.whl) || fail "no wheel written"
case "$whl" in *-linux_*.whl|*-manylinux*.whl) ;; *) fail "the wheel is not a platform wheel: $whl" ;; esac
"$py" -m venv --system-site-packages "$tmp/v2" >/dev/null
"$tmp/v2/bin/pip" install --quiet --no-index "$whl" || fail "the wheel does not install"
"$tmp/v2/bin/python" -m rsim run s.yaml -o out3 >/dev/null || fail "the wheel's rsim does not run"
cmp -s out/results.csv out3/results.csv || fail "the wheel's run differs"

"$tmp/v/bin/pip" uninstall --quiet -y rsim || fail "pip uninstall failed"
[ ! -e "$site" ] || fail "uninstall left $site"
! "$tmp/v/bin/python" -c "import rsim" 2>/dev/null || fail "rsim still imports after uninstall"
echo "pip_install_test: venv install, module, python -m rsim, console script, wheel and uninstall all work"
