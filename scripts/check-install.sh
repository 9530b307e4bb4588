#!/usr/bin/env bash
# The install acceptance (run by CI): from a copy of the checkout, a Release build with warnings as
# errors, `cmake --install` into a prefix and `cpack -G DEB`; the copy is deleted, then the
# installed rsim and the .deb's rsim (unpacked with dpkg-deb -x) each run a scenario with the
# catalog and the zoo from an unrelated folder (tests/install_test.sh --prefix).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
jobs=${JOBS:-$(nproc)}

mkdir "$tmp/checkout"
tar -C "$src" --exclude=./.git --exclude='./build*' --exclude=./out -cf - . | tar -C "$tmp/checkout" -xf -
cmake -S "$tmp/checkout" -B "$tmp/checkout/build" -DCMAKE_BUILD_TYPE=Release -DRSIM_WERROR=ON -DRSIM_BENCH=OFF \
      -DRSIM_PYTHON=OFF -DBUILD_TESTING=OFF >/dev/null
cmake --build "$tmp/checkout/build" -j "$jobs"
cmake --install "$tmp/checkout/build" --prefix "$tmp/prefix" --strip >/dev/null
(cd "$tmp/checkout/build" && cpack -G DEB >/dev/null)
mv "$tmp/checkout/build"/rsim_*.deb "$tmp/"
rm -rf "$tmp/checkout"
deb=$(ls "$tmp"/rsim_*.deb)

echo "check-install: cmake --install prefix"
bash "$src/tests/install_test.sh" --prefix "$tmp/prefix"

echo "check-install: $(basename "$deb")"
depends=$(dpkg-deb -f "$deb" Depends)
echo "check-install: Depends: $depends"
grep -q 'libyaml-cpp' <<<"$depends" || { echo "check-install: the .deb declares no library dependencies" >&2; exit 1; }
dpkg-deb -c "$deb" > "$tmp/contents.txt"
for f in usr/bin/rsim usr/share/rsim/hardware/rtx3080.yaml usr/share/rsim/models/resnet50.yaml usr/share/man/man1/rsim.1.gz \
         usr/share/rsim/python/rsim_torch/__main__.py \
         usr/share/bash-completion/completions/rsim; do
  grep -q " \./$f\$" "$tmp/contents.txt" || { echo "check-install: the .deb lacks /$f" >&2; exit 1; }
done
dpkg-deb -x "$deb" "$tmp/deb"
bash "$src/tests/install_test.sh" --prefix "$tmp/deb/usr"
echo "check-install: ok"
