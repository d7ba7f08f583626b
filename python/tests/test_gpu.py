"""The same joins on GPUs: skipped on machines without a CUDA GPU (CI), run on a GPU machine."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import mgjoin
from conftest import as_pairs, gpu_count, needs_gpu, reference_maps

pytestmark = needs_gpu


@pytest.mark.parametrize("strategy", ["auto", "paper", "copart"])
@pytest.mark.parametrize("how", ["inner", "left", "full", "semi", "anti"])
def test_gpu_joins_match_the_reference(rng, strategy, how, gpu_engine):
    # 50 000 rows run the same GPU code as 200 000 did (in core, every GPU a share) and keep the dict
    # reference in Python at a fraction of a second; the size-driven paths have tests of their own.
    n = 50_000
    left = {"k": rng.integers(0, n, n), "v": rng.random(n)}
    right = {"k": rng.integers(0, n, n), "w": rng.integers(0, 100, n).astype(np.int32)}
    if strategy == "copart" and how in ("semi", "anti"):
        pytest.skip("semi/anti joins count first: the co-partitioned flow is covered by the others")
    lr, rr = mgjoin.join(left, right, on="k", how=how, output="gather_maps", strategy=strategy, engine=gpu_engine())
    assert as_pairs(lr, rr) == as_pairs(*reference_maps([left["k"]], [right["k"]], how))
    table = mgjoin.join(pa.table(left), pa.table(right), on="k", how=how, strategy=strategy, engine=gpu_engine())
    cpu = mgjoin.join(pa.table(left), pa.table(right), on="k", how=how, gpus=0)
    assert table.num_rows == cpu.num_rows
    assert table.sort_by([(c, "ascending") for c in table.column_names]).equals(
        cpu.sort_by([(c, "ascending") for c in cpu.column_names]))


def test_gpu_sets_and_memory_limits(rng):
    n = 1_000_000
    left, right = {"k": rng.integers(0, n, n)}, {"k": rng.integers(0, n, n)}
    want = mgjoin.join(left, right, on="k", output="count", gpus=0)
    info = {}
    assert mgjoin.join(left, right, on="k", output="count", gpus=1, gpu_memory_limit="256M", info=info) == want
    assert info["executor"].startswith("GPU")
    assert mgjoin.join(left, right, on="k", output="count", gpus=[gpu_count() - 1]) == want


def test_too_much_gpu_memory_is_refused():
    k = np.arange(10)
    with pytest.raises(ValueError, match="gpu_memory_limit"):
        mgjoin.join({"k": k}, {"k": k}, on="k", gpu_memory_limit="1000T")


def test_ctrl_c_stops_a_gpu_join(rng, monkeypatch):
    n = 4_000_000
    left, right = {"k": rng.integers(0, n, n)}, {"k": rng.integers(0, n, n)}
    monkeypatch.setenv("MGJOIN_TEST_SIGINT_AT", "sort")
    with pytest.raises(KeyboardInterrupt):
        mgjoin.join(left, right, on="k", strategy="paper", gpu_memory_limit="64M")
    monkeypatch.delenv("MGJOIN_TEST_SIGINT_AT")
    assert mgjoin.join(left, right, on="k", output="count") == mgjoin.join(left, right, on="k", output="count", gpus=0)


def test_topology_and_tune(tmp_path):
    topo = mgjoin.topology()
    assert len(topo["gpus"]) == gpu_count() > 0
    best = mgjoin.tune(str(tmp_path / "tuning.json"), join_scale=0, mib=16, repeats=1, progress=False)
    assert [c["g"] for c in best] == list(range(1, gpu_count() + 1))
    assert mgjoin.topology(str(tmp_path / "tuning.json"))["chosen"]


def test_an_engine_serves_many_joins(rng):
    """An Engine takes the GPUs' memory once; its joins equal the CPU path's, and a closed one refuses."""
    # Keys of 0..100 000 (2 and 1.5 rows a key): ~300 000 pairs, ~45 000 left and ~20 000 right rows unmatched.
    # Keys of 0..5000 made 6 million pairs, whose sorted Python tuples (as_pairs) took 90% of the test's time
    # on the CPU path, and left no row unmatched: the left and full joins were the inner one, the anti join empty.
    left = {"k": rng.integers(0, 100_000, 200_000), "v": rng.integers(0, 1 << 40, 200_000)}
    right = {"k": rng.integers(0, 100_000, 150_000), "w": rng.random(150_000)}
    with mgjoin.Engine(gpus=1, gpu_memory_limit="2G") as engine:
        assert engine.devices and engine.device_bytes == 2 << 30
        for how in ("inner", "left", "full", "semi", "anti"):
            got = engine.join(left, right, on="k", how=how, output="gather_maps")
            want = mgjoin.join(left, right, on="k", how=how, output="gather_maps", gpus=0)
            assert as_pairs(*got) == as_pairs(*want), how
        with pytest.raises(ValueError, match="engine's GPUs"):
            engine.join(left, right, on="k", gpus=1)
    with pytest.raises(ValueError, match="closed"):
        engine.join(left, right, on="k")


@pytest.mark.skipif(gpu_count() < 2, reason="needs 2 GPUs")
@pytest.mark.parametrize("strategy", ["auto", "paper", "copart"])
def test_two_gpus_match_the_cpu_path(rng, strategy, gpu_engine):
    """g = 2: every kind's gather maps equal the CPU path's; a table equals it up to row order."""
    n = 300_001  # not divisible by the GPU count
    left = {"k": rng.integers(-n, n, n), "v": rng.random(n)}
    right = {"k": rng.integers(-n, n, n - 7), "w": rng.integers(0, 100, n - 7).astype(np.int16)}
    for how in ("inner", "left", "full", "semi", "anti"):
        if strategy == "copart" and how in ("semi", "anti"):
            continue  # semi/anti joins count first (see test_gpu_joins_match_the_reference)
        got = mgjoin.join(left, right, on="k", how=how, output="gather_maps", engine=gpu_engine(2), strategy=strategy)
        want = mgjoin.join(left, right, on="k", how=how, output="gather_maps", gpus=0)
        assert as_pairs(*got) == as_pairs(*want), how
    info = {}
    table = mgjoin.join(pa.table(left), pa.table(right), on="k", engine=gpu_engine(2), strategy=strategy, info=info)
    assert info["executor"].split(" ")[1].count(",") == 1, info["executor"]  # "GPUs a,b (...)"
    cpu = mgjoin.join(pa.table(left), pa.table(right), on="k", gpus=0)
    order = [(c, "ascending") for c in cpu.column_names]
    assert table.sort_by(order).equals(cpu.sort_by(order))


def _keys(rng, dtype, n):
    """Keys of `dtype` that the other side's type holds in part: small numbers and the type's extremes;
    for floats also NaN, -0.0 and infinities."""
    if dtype.startswith("float"):
        v = (rng.integers(-4000, 4000, n) / 4).astype(dtype)
        for value, share in ((np.nan, 0.02), (-0.0, 0.02), (np.inf, 0.01), (-np.inf, 0.01)):
            v[rng.random(n) < share] = value
        return v
    info = np.iinfo(dtype)
    v = rng.integers(max(info.min, -n // 4), min(info.max, n // 4), n, endpoint=True).astype(dtype)
    v[rng.random(n) < 0.02] = info.max
    v[rng.random(n) < 0.02] = info.min
    return v


@pytest.mark.parametrize("gpus", [1, 2, 4])
@pytest.mark.parametrize("left_type,right_type", [("int32", "int64"), ("uint32", "int64"), ("uint64", "int64"),
                                                  ("uint32", "int32"), ("float32", "float64"), ("float64", "float64")])
def test_mixed_width_and_float_keys_on_gpus(rng, gpus, left_type, right_type, gpu_engine):
    """Keys compared by value on g GPUs: every kind's rows equal the Python reference's (a dict; NaN
    equal to NaN, -0.0 to 0.0), and the key column has the type that holds both sides."""
    if gpu_count() < gpus:
        pytest.skip(f"needs {gpus} GPUs")
    # 20 000 rows: each value class (small numbers, either extreme, NaN, -0.0, infinities) still appears
    # hundreds of times a side; at 200 000 the Python reference took ~2 s a join kind, 18 cases x 7 of them.
    n = 20_000
    left = {"k": _keys(rng, left_type, n), "v": rng.random(n)}
    right = {"k": _keys(rng, right_type, n - 11), "w": rng.integers(0, 100, n - 11).astype(np.int32)}
    kinds = ("inner", "left", "right", "full", "semi", "anti")
    want = {how: reference_maps([left["k"]], [right["k"]], how) for how in kinds}
    for how, (want_left, want_right) in want.items():
        got = mgjoin.join(left, right, on="k", how=how, output="gather_maps", engine=gpu_engine(gpus))
        assert as_pairs(*got) == as_pairs(want_left, want_right), how
    table = mgjoin.join(left, right, on="k", how="left", engine=gpu_engine(gpus), gather_on="gpus")
    assert table.num_rows == len(want["left"][0])
    if left_type != right_type:
        want = {"int32": pa.int64(), "uint32": pa.int64(), "uint64": pa.uint64(), "float32": pa.float64()}[left_type]
        assert table.schema.field("k").type == want
