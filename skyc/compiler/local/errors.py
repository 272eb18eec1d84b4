"""Nothing to classify: creating a directory has no capacity or quota to run out of."""

from __future__ import annotations

from skyc.compiler.base import classify_nothing as classify

__all__ = ["classify"]
