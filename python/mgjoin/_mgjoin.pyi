# Stubs of the extension module mgjoin._mgjoin (python/src/). Use the mgjoin package's functions;
# these are its building blocks.
from collections.abc import Callable
from typing import Any, Optional

import numpy.typing as npt

class GpuError(RuntimeError):
    """A CUDA (or NCCL) call failed; the message names the call, `code` is its cudaError_t."""

    code: int

def join_tables(
    left: dict[str, npt.NDArray[Any]],
    right: dict[str, npt.NDArray[Any]],
    *,
    left_on: list[str],
    right_on: list[str],
    how: str = "inner",
    output: str = "columns",
    left_columns: Optional[list[str]] = None,
    right_columns: Optional[list[str]] = None,
    gpus: int = -1,
    gpu_ids: list[int] = [],
    gpu_memory_limit: int = 0,
    strategy: str = "auto",
    gather_on: str = "auto",
    tuning_file: str = "",
    progress: Optional[Callable[[str, float], Any]] = None,
    engine: Optional["Engine"] = None,
) -> dict[str, Any]:
    """Joins two tables given as dicts of 1-D C-contiguous NumPy arrays (mgjoin::join_tables), the GIL
    released. Returns a dict: count (int), columns (list of (name, numpy array), output="columns"),
    left_rows / right_rows (int64 arrays for output="maps", else None; right_rows None for semi and anti
    joins), executor, strategy, strategy_reason, materialization, gathers, seconds, join_seconds,
    peak_host_bytes, phases (list of dicts: name, seconds, bytes_pcie, bytes_nvlink)."""

class Engine:
    """GPUs and their memory taken once for repeated joins (mgjoin::Engine); one join at a time."""

    def __init__(self, gpus: int = -1, gpu_ids: list[int] = [], gpu_memory_limit: int = 0, tuning_file: str = "") -> None: ...
    @property
    def devices(self) -> list[int]: ...
    @property
    def device_bytes(self) -> int: ...
    def close(self) -> None: ...

def topology_json(tuning_file: str = "") -> str:
    """What `mgjoin topo --json` prints for this machine, as a JSON string."""

def default_tuning_path() -> str:
    """Where `mgjoin tune` writes its tuning file by default."""

def parse_byte_size(text: str) -> Optional[int]:
    """Bytes named by '4096', '512M', '8G', '1.5T', '64GiB' (K/M/G/T: powers of 1024); None if not a size."""
