"""mgjoin: multi-GPU out-of-core sort-merge joins of pyarrow tables, pandas DataFrames and NumPy arrays.

    >>> import mgjoin, pyarrow.parquet as pq
    >>> out = mgjoin.join(pq.read_table("orders.parquet"), pq.read_table("customers.parquet"),
    ...                   on="c_id", how="left")          # a pyarrow.Table
    >>> out = mgjoin.join("orders/", "customers.parquet", on="c_id")   # files: the columns used, read

``join`` runs on every GPU (the CPU path without GPUs); an ``Engine`` keeps the GPUs' memory for many
joins; ``topology()`` and ``tune()`` are the CLI's
``mgjoin topo --json`` and ``mgjoin tune``; ``python -m mgjoin`` is the CLI itself.
"""
from ._mgjoin import GpuError
from ._join import Engine, join
from ._machine import topology, tune

__version__ = "0.1.0"
__all__ = ["Engine", "GpuError", "join", "topology", "tune", "__version__"]
