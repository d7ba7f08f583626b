"""Ctrl-C during a join: the engine stops at its next cancellation point, KeyboardInterrupt reaches the
caller, and the module (and Python's own Ctrl-C handling) keeps working."""
from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import mgjoin

# A process started with SIGINT ignored (a detached background job of a non-interactive shell) gets no
# Python Ctrl-C handler, so nothing can interrupt its joins: these tests say so instead of failing.
pytestmark = pytest.mark.skipif(signal.getsignal(signal.SIGINT) is signal.SIG_IGN,
                                reason="SIGINT is ignored in this process (its launcher ignored it)")

ROWS = 6_000_000  # the CPU path sorts each side for a few hundred milliseconds on a 2-core machine


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(5)
    return {"k": rng.integers(0, ROWS, ROWS)}, {"k": rng.integers(0, ROWS, ROWS)}


def full_join_seconds(left, right):
    start = time.perf_counter()
    mgjoin.join(left, right, on="k", output="count", gpus=0)
    return time.perf_counter() - start


def test_the_test_hook_interrupts_a_join_at_a_phase(big, monkeypatch):
    left, right = big
    full = full_join_seconds(left, right)
    monkeypatch.setenv("MGJOIN_TEST_SIGINT_AT", "sort")
    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        mgjoin.join(left, right, on="k", output="count", gpus=0)
    stopped = time.perf_counter() - start
    monkeypatch.delenv("MGJOIN_TEST_SIGINT_AT")
    assert stopped < full, f"stopped after {stopped:.3f} s, a whole join takes {full:.3f} s"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert mgjoin.join(left, right, on="k", output="count", gpus=0) > 0  # still usable


def test_a_real_sigint_from_another_thread_stops_a_join(big):
    left, right = big
    full = full_join_seconds(left, right)
    timer = threading.Timer(min(0.2, full / 4), os.kill, (os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            mgjoin.join(left, right, on="k", how="left", gpus=0, progress=True)
    finally:
        timer.join()
    stopped = time.perf_counter() - start
    assert stopped < full + 0.5
    assert mgjoin.join(left, right, on="k", output="count", gpus=0) > 0
