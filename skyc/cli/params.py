"""Validated numeric command-line values, shared by every command.

Each is a parser for ``typer.Option(parser=...)`` or ``typer.Argument(parser=...)``
(the ValueError it raises becomes the usage error): a value outside its range
(``--max-attempts 0``, ``--timeout -1``, ``--timeout nan``, ``--lock-timeout inf``)
is a usage error that names the flag and what it accepts, before the command runs.
"""

from __future__ import annotations

import functools
import math
from typing import Any


@functools.cache
def _error_type() -> type[ValueError]:
    """A ValueError that is also pydantic's custom error: typer releases that validate
    through pydantic print it as the message alone (a plain ValueError would read
    "Value error, <message>"); releases that use click's own types print any ValueError."""
    from pydantic_core import PydanticCustomError

    class Invalid(PydanticCustomError, ValueError):
        """An invalid command-line value."""

    return Invalid


def _invalid(message: str) -> ValueError:
    return _error_type()("skyc_value", message)


class Count:
    """A whole number from ``least`` to ``most``."""

    def __init__(self, least: int = 1, most: int = 1_000_000) -> None:
        self.least = least
        self.most = most
        self.__name__ = "integer"

    def __call__(self, value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            if not text.lstrip("+-").isdigit() or len(text) > 20:
                raise _invalid(f"expected a whole number, got {str(value)[:40]!r}")
            number = int(text)
        if not self.least <= number <= self.most:
            raise _invalid(
                f"must be a whole number from {self.least:,} to {self.most:,}, got {number:,}")
        return number


class Seconds:
    """A finite number of seconds above zero (or zero, with ``zero_ok``), at most ``most``."""

    def __init__(self, *, zero_ok: bool = False, most: float = 366 * 86400.0) -> None:
        self.zero_ok = zero_ok
        self.most = most
        self.__name__ = "seconds"

    def __call__(self, value: Any) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise _invalid(
                f"expected a number of seconds, got {str(value)[:40]!r}") from None
        least = "0 or more" if self.zero_ok else "more than 0"
        if not math.isfinite(number):
            raise _invalid(
                f"must be a finite number of seconds ({least}), got {value}")
        if number < 0 or (number == 0 and not self.zero_ok):
            raise _invalid(f"must be {least} seconds, got {value}")
        if number > self.most:
            raise _invalid(f"must be at most {self.most:,.0f} seconds, got {value}")
        return number


class Minutes:
    """A finite number of minutes, 0 or more (0: as soon as idle), at most a year."""

    def __init__(self) -> None:
        self.__name__ = "minutes"

    def __call__(self, value: Any) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise _invalid(f"expected a number of minutes, got {str(value)[:40]!r}") from None
        if not math.isfinite(number) or not 0 <= number <= 366 * 1440:
            raise _invalid(f"must be from 0 to {366 * 1440:,} minutes, got {value}")
        return number


ATTEMPTS = Count(1, 1000)
IDLE_MINUTES = Minutes()
JOB_ID = Count(1, 2**62)
TIMEOUT = Seconds()
LOCK_TIMEOUT = Seconds(zero_ok=True)
