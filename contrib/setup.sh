#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# One command for a fresh Debian 12 machine: installs what building needs, builds the Debian package
# openmpi-coll-gpu (contrib/build-deb.sh), installs it (the component into Open MPI's own component
# directory, so that every mpirun finds it; apt-get purge openmpi-coll-gpu removes every file again),
# then runs the main job: the allreduce benchmark through the component on the GPUs present, or the
# host-side checks where there is no GPU. Run as root from the repository root: sh contrib/setup.sh
set -e
cd "$(dirname "$0")/.."
sh contrib/install-deps.sh
sh contrib/build-deb.sh build/deb
deb=$(ls build/deb/openmpi-coll-gpu_*.deb)
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall "./$deb"
exec sh contrib/main-job.sh
