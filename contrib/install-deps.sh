#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Copyright (c) 2026 the coll/gpu authors
# Installs what building, packaging and testing coll/gpu needs on Debian 12 or Ubuntu 24.04 (as root).
# The CUDA toolkit (nvcc, cudart) is expected under /usr/local/cuda; pass --with-cuda to configure
# for another place.
set -e
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
  build-essential autoconf automake libtool pkg-config \
  openmpi-bin libopenmpi-dev libhwloc-dev libucx-dev libgtest-dev \
  debhelper dpkg-dev fakeroot
