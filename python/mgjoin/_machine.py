"""mgjoin.topology() and mgjoin.tune(): the CLI's `mgjoin topo --json` and `mgjoin tune`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

from . import _mgjoin


def cli_path() -> Path:
    """The `mgjoin` command-line tool installed inside the package (python -m mgjoin runs it)."""
    path = Path(__file__).resolve().parent / "bin" / "mgjoin"
    if not path.is_file():
        raise RuntimeError(f"the mgjoin command-line tool is not installed with this package (no {path}); "
                           "install the package with `pip install .` from the repository")
    return path


def topology(tuning_file: Optional[str] = None) -> dict[str, Any]:
    """The machine as mgjoin sees it: what ``mgjoin topo --json`` prints.

    Keys: "gpus" (per GPU: cuda_id, name, pci_bus_id, memory_bytes, numa_node, package, cpuset, ...),
    "links" (GPU x GPU: kind, nvlinks, p2p, gbps), "numa_nodes", "packages", "uplinks", "machine" and
    "chosen" (per GPU count g: the GPU set a join on g GPUs uses, from the tuning file when one was made
    on this machine, else from the model). Without GPUs, "gpus" and "chosen" are empty lists.
    """
    return json.loads(_mgjoin.topology_json(tuning_file or ""))


def tune(out: Optional[str] = None, *, join_scale: float = 0.25, mib: int = 256, repeats: int = 5,
         progress: bool = True, verbose: bool = False) -> list[dict[str, Any]]:
    """Measures this machine once, as ``mgjoin tune`` does, and writes the tuning file that joins then
    follow (``out``, default ~/.cache/mgjoin/tuning.json).

    Runs the bundled CLI in a child process (its GPU memory and NCCL communicators go with it). Returns
    the chosen set per GPU count: ``[{"g": 2, "gpus": [0, 1], "strategy": "radix", "flow": "copart",
    "seconds": ..., "copart_seconds": ...}, ...]``.

    Raises:
        mgjoin.GpuError: the machine has no CUDA GPU.
        RuntimeError: the measurement failed (the CLI's message).
        KeyboardInterrupt: Ctrl-C; the child stops cleanly and writes no file.
    """
    if not topology()["gpus"]:
        raise _mgjoin.GpuError("no CUDA GPUs found: nothing to tune")
    path = out or _mgjoin.default_tuning_path()
    command = [str(cli_path()), "tune", "--out", path, "--join-scale", str(join_scale), "--mib", str(mib),
               "--repeats", str(repeats)] + (["--verbose"] if verbose else [])
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    last = ""
    try:
        assert child.stderr is not None
        for line in child.stderr:
            last = line.strip() or last
            if progress:
                sys.stderr.write(line)
        returncode = child.wait()
    except KeyboardInterrupt:
        if child.poll() is None:  # a terminal's Ctrl-C reached the child too; a signal sent to us alone did not
            child.send_signal(signal.SIGINT)
        child.wait()
        raise
    if returncode != 0:
        raise RuntimeError(f"mgjoin tune failed (exit {returncode}): {last}")
    with open(path) as f:
        return json.load(f)["best"]


def run_cli(args: list[str]) -> None:
    """Replaces this process by the bundled CLI with `args` (python -m mgjoin)."""
    path = cli_path()
    os.execv(path, [path.name, *args])
