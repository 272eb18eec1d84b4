"""Running a call again after a pause when it fails in a way worth another try."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
E = TypeVar("E", bound=Exception)


def with_pauses(call: Callable[[], T], pauses: Sequence[float],
                errors: type[E] | tuple[type[E], ...], again: Callable[[E], bool]) -> T:
    """``call()``; when it raises one of ``errors`` that ``again`` accepts, it runs
    again after the next of ``pauses`` (seconds). Once the pauses are spent, or for an
    error ``again`` refuses, the error is raised."""
    for pause in pauses:
        try:
            return call()
        except errors as exc:
            if not again(exc):
                raise
        time.sleep(pause)
    return call()
