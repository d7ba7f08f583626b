"""Progress display for long joins: a tqdm bar when tqdm is installed, else one redrawn stderr line.

The engine reports (phase, fraction) from its join thread; the extension hands the latest report to
the callback made here on the thread that called mgjoin.join(), with the GIL held.
"""
from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional


class _Bar:
    """One bar for the whole join: its description is the current phase, its position that phase's %."""

    def __init__(self) -> None:
        try:
            from tqdm import tqdm
        except ImportError:
            tqdm = None
        # Shown only once a join has run half a second: short joins leave no trace.
        self._tqdm = (tqdm(total=100, desc="mgjoin", leave=False, file=sys.stderr, delay=0.5,
                           bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}") if tqdm else None)
        self._phase = ""
        self._shown_after = time.monotonic() + 0.5

    def __call__(self, phase: str, fraction: float) -> None:
        percent = int(round(max(0.0, min(1.0, fraction)) * 100))
        if self._tqdm is not None:
            if phase != self._phase:
                # set_description() would append ": " to what bar_format already follows with one.
                self._tqdm.set_description_str(f"mgjoin {phase}", refresh=False)
            # update() draws only once `delay` has passed (refresh() would draw at once); a phase that
            # starts over moves the bar back.
            self._tqdm.update(percent - self._tqdm.n)
            self._phase = phase
        elif time.monotonic() >= self._shown_after:
            sys.stderr.write(f"\rmgjoin: {phase:<12} {percent:3d}%")
            sys.stderr.flush()
            self._phase = phase

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        elif self._phase:
            sys.stderr.write("\n")
            sys.stderr.flush()


@contextlib.contextmanager
def progress_callback(progress: Any) -> Iterator[Optional[Callable[[str, float], Any]]]:
    """None for progress=False/None, a bar for True, the callable itself otherwise."""
    if progress is None or progress is False:
        yield None
    elif progress is True:
        bar = _Bar()
        try:
            yield bar
        finally:
            bar.close()
    elif callable(progress):
        yield progress
    else:
        raise ValueError(f"progress={progress!r}: expected True, False or a callable(phase, fraction)")
