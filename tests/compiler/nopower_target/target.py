"""The record of test_targets' target that declares stop/start without a power part."""

from tests.compiler.test_targets import TARGET

__all__ = ["TARGET"]
