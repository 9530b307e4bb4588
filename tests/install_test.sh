#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then the installed rsim runs a scenario that uses the
# catalog and the zoo from an unrelated folder, with no RSIM_* variables set; without its
# share/rsim it finds nothing (it never falls back on the source tree).
# Usage: install_test.sh BUILD_DIR CMAKE      install BUILD_DIR, then check the installation
#        install_test.sh --prefix DIR           check what is already installed under DIR
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset RSIM_HARDWARE RSIM_MODELS
fail() { echo "install_test: $*" >&2; exit 1; }

if [ "$1" = --prefix ]; then
  p=$(cd "$2" && pwd)
else
  "$2" --install "$1" --prefix "$tmp/prefix" --strip >/dev/null
  p=$tmp/prefix
fi
for f in bin/rsim share/rsim/hardware/rtx3080.yaml share/rsim/models/resnet18.yaml share/rsim/scenarios/group_conv_sweep.yaml \
         share/rsim/scenarios/lua/custom_ops.lua share/man/man1/rsim.1.gz share/bash-completion/completions/rsim \
         share/rsim/python/rsim_torch/__main__.py share/rsim/python/rsim_torch/ops.py; do
  [ -e "$p/$f" ] || fail "missing $f"
done
[ ! -e "$p/bin/rsim-build-tree" ] || fail "the build-tree marker was installed"
gzip -dc "$p/share/man/man1/rsim.1.gz" | grep -q '^\.TH RSIM 1' || fail "the man page is not roff"
bash -n "$p/share/bash-completion/completions/rsim" || fail "the completion script does not parse"

mkdir "$tmp/work"
cd "$tmp/work"
cat > s.yaml <<'YAML'
name: installed
platforms: [rtx3080]
networks:
  - {model: resnet18, name: r18}
  - name: fc
    input: [1, 256]
    layers: [{op: linear, out_features: 128}]
YAML
"$p/bin/rsim" run s.yaml --no-plots -q || fail "the installed rsim could not run s.yaml"
# value of COLUMN in the row of FILE whose `network` (and `layer`, if given) match
cell() {
  awk -F, -v col="$2" -v net="$3" -v layer="${4:-}" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
    $h["network"] == net && (layer == "" || $h["layer"] == layer) { print $h[col]; exit }' "$1"
}
# linear 256 → 128 at batch 1: MACs = 256 × 128 = 32768, FLOPs = 2 × 32768 = 65536,
# params = 256 × 128 + 128 = 32896
[ "$(cell out/installed/results.csv macs fc linear_1)" = 32768 ] || fail "linear macs: $(cell out/installed/results.csv macs fc linear_1)"
[ "$(cell out/installed/results.csv flops fc linear_1)" = 65536 ] || fail "linear flops"
[ "$(cell out/installed/results.csv params fc linear_1)" = 32896 ] || fail "linear params"
# the zoo's ResNet-18: torchvision's 11,689,512 parameters
[ "$(cell out/installed/summary.csv params r18)" = 11689512 ] || fail "resnet18 from the zoo: $(cell out/installed/summary.csv params r18) parameters"
# rsim_torch from share/rsim/python, from an unrelated folder: the fc network measured on the CPU
# (where an interpreter with PyTorch is at hand: Debian's python3-torch)
torch_python=${RSIM_PYTHON:-/usr/bin/python3}
if "$torch_python" -c "import torch" 2>/dev/null; then
  RSIM_PYTHON=$torch_python "$p/bin/rsim" measure s.yaml --backend torch --device cpu --reps 2 --out m -q 2>torch.txt ||
    fail "rsim measure --backend torch failed: $(cat torch.txt)"
  grep -q '^0,rtx3080,fc,linear_1,linear,' m/measured.csv || fail "measured.csv lacks the fc layer"
  grep -q '^0,fc,fc,1,fp32,eager,' m/measured_networks.csv || fail "measured_networks.csv lacks the fc network"
else
  echo "install_test: no python3 with torch: rsim_torch not run (apt install python3-torch)"
fi
# an installed example scenario with a Lua plugin beside it
"$p/bin/rsim" validate "$p/share/rsim/scenarios/custom_ops.yaml" >/dev/null || fail "the installed custom_ops.yaml does not validate"

# without its data the installed binary finds no catalog (no path into the source tree)
mv "$p/share/rsim" "$p/share/rsim.away"
trap '[ -d "$p/share/rsim.away" ] && mv "$p/share/rsim.away" "$p/share/rsim"; rm -rf "$tmp"' EXIT
if "$p/bin/rsim" run s.yaml --no-plots -q 2>err.txt; then fail "ran without share/rsim: it found data elsewhere"; fi
grep -q "rtx3080" err.txt || fail "unexpected error without share/rsim: $(cat err.txt)"
# RSIM_HARDWARE and RSIM_MODELS point elsewhere
RSIM_HARDWARE=$p/share/rsim.away/hardware RSIM_MODELS=$p/share/rsim.away/models "$p/bin/rsim" run s.yaml --no-plots -q ||
  fail "RSIM_HARDWARE/RSIM_MODELS were not used"
mv "$p/share/rsim.away" "$p/share/rsim"
echo "install_test: ok"
exit 0
