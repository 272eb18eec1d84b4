"""The public API in skyc/__init__.py: every name resolves, and importing skyc is cheap."""

from __future__ import annotations

import subprocess
import sys

import skyc


def test_every_public_name_resolves() -> None:
    for name in skyc.__all__:
        assert getattr(skyc, name) is not None, name


def test_import_skyc_loads_no_stage() -> None:
    code = "import skyc, sys; print(sorted(m for m in sys.modules if m.startswith('skyc.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]"
