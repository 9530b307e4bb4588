#!/usr/bin/env bash
# Installs everything rsim needs to build, test and draw, from Debian 12 packages.
# Idempotent: does nothing when every package is already installed. Needs root (or sudo).
set -euo pipefail
packages=(build-essential cmake pkg-config libyaml-cpp-dev liblua5.4-dev libboost-program-options-dev
          catch2 libbenchmark-dev libcairo2-dev libpng-dev fonts-dejavu-core libdnnl-dev
          libonnx-dev libprotobuf-dev libonnx-testdata        # ONNX import (and its test models)
          dpkg-dev                                    # cpack -G DEB: dpkg-shlibdeps computes Depends
          python3-jsonschema python3-yaml             # the schema test validates scenarios with a real validator
          python3-dev pybind11-dev                    # the Python module (make python)
          python3-venv python3-pip python3-setuptools python3-wheel  # pip install . into a venv, and its test
          nlohmann-json3-dev                          # the tests parse every JSON output with a real parser
          zlib1g-dev                                  # gzip'd traces and op tables (engine/model/text_file.cpp, the only file with zlib)
          clang-14 libclang-rt-14-dev                 # the clang build, the ThreadSanitizer run and the fuzzers of CI
          python3-torch python3-torchvision           # rsim_torch (measure and probe through PyTorch) and its tests on the CPU
          chromium                                    # report.html's test: Debian's chromium, headless, loads it and points at every marker
          python3-distributed                         # sweeps as Dask tasks (rsim.run(..., client=...)) and their LocalCluster test
          poppler-utils)                              # CI's gallery check reads the paper PDF's page size and fonts (pdfinfo, pdffonts)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
