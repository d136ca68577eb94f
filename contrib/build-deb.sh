#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Builds the Debian package openmpi-coll-gpu from this tree (debian/): copies the sources into OUTDIR/src
# and runs dpkg-buildpackage -b there, so the packages (and the -dbgsym one) land in OUTDIR, by default
# build/deb. Needs the build dependencies (contrib/install-deps.sh) and the CUDA toolkit.
# usage: sh contrib/build-deb.sh [OUTDIR]
set -e
cd "$(dirname "$0")/.."
top=$PWD
out=${1:-$top/build/deb}
rm -rf "$out"
mkdir -p "$out/src"
out=$(cd "$out" && pwd)
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
  # a checkout: its files and the new ones not ignored, as they are in the working tree
  git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$out/src"
else
  # an unpacked tarball: everything but what builds leave
  tar --exclude=./build --exclude=./.git --exclude=./.carry -cf - . | tar -C "$out/src" -xf -
fi
cd "$out/src"
dpkg-buildpackage -b -us -uc --jobs=auto
ls "$out"/*.deb
