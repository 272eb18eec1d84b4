"""Nothing to classify: the hosts exist already; nothing is provisioned."""

from __future__ import annotations

from skyc.compiler.base import classify_nothing as classify

__all__ = ["classify"]
