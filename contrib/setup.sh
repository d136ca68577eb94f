#!/bin/sh
# One command for a fresh Debian 12 machine: installs the dependencies, builds coll/gpu, installs it
# into Open MPI's own component directory (so every mpirun finds it), then runs the main job:
# the allreduce benchmark through the component on the GPUs present, or the host-side checks
# where there is no GPU. Run as root from the repository root: sh contrib/setup.sh
set -e
cd "$(dirname "$0")/.."
sh contrib/install-deps.sh
./autogen.sh
mcadir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
mkdir -p build
cd build
../configure --prefix=/usr/local --with-mca-dir="$mcadir"
make -j"$(nproc)"
make install
cd ..
exec sh contrib/main-job.sh
