"""The installed package needs no NCCL: the extension and the bundled CLI do not link libnccl, and
importing mgjoin and joining on the CPU path (or one GPU) never loads it (NCCL is loaded only when an NCCL
exchange is used). scripts/test.sh runs these tests against the repaired wheel in a fresh virtual
environment with LD_LIBRARY_PATH cleared."""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

import mgjoin

PACKAGE = pathlib.Path(mgjoin.__file__).parent
ELF_FILES = sorted(PACKAGE.glob("_mgjoin*.so")) + sorted(PACKAGE.glob("bin/mgjoin"))

LOADED_AFTER_A_JOIN = """
import mgjoin, numpy as np
left = {"k": np.arange(100, dtype=np.int64)}
right = {"k": np.arange(50, 150, dtype=np.int64)}
assert mgjoin.join(left, right, on="k", gpus=0, output="count") == 50
print(open("/proc/self/maps").read())
"""


def test_the_extension_and_the_cli_are_in_the_package():
    assert [p.name for p in ELF_FILES if p.name.startswith("_mgjoin")], f"no extension module in {PACKAGE}"
    assert (PACKAGE / "bin" / "mgjoin").exists()


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf (binutils)")
@pytest.mark.parametrize("elf", ELF_FILES, ids=lambda p: p.name)
def test_no_binary_of_the_package_needs_libnccl(elf):
    dynamic = subprocess.run(["readelf", "-d", str(elf)], check=True, capture_output=True, text=True).stdout
    needed = [line for line in dynamic.splitlines() if "(NEEDED)" in line]
    assert needed, f"{elf}: no NEEDED entries"
    assert not [line for line in needed if "libnccl" in line], "\n".join(needed)


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux's /proc")
def test_importing_and_a_cpu_join_never_load_nccl():
    # A fresh interpreter: an earlier test of this session may have used the NCCL exchange on GPUs.
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    maps = subprocess.run([sys.executable, "-c", LOADED_AFTER_A_JOIN], check=True, capture_output=True,
                          text=True, env=env).stdout
    assert "_mgjoin" in maps, "the extension module was not loaded"
    assert "libnccl" not in maps, [line for line in maps.splitlines() if "libnccl" in line]
