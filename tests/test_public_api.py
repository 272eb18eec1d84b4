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


def test_the_commands_library_functions_are_public() -> None:
    """``skyc plan`` (with the engine's diff) and ``skyc apply FILE`` as functions that
    print nothing, beside ``launch`` (``skyc apply TASK``)."""
    from skyc.apply.plan_diff import PlanDiffOptions, PlanResult, plan_with_diff
    from skyc.apply.saved_plan import apply_saved_plan

    assert skyc.plan_with_diff is plan_with_diff and skyc.apply_saved_plan is apply_saved_plan
    assert skyc.PlanDiffOptions is PlanDiffOptions and skyc.PlanResult is PlanResult
    assert {"launch", "plan_with_diff", "apply_saved_plan", "PlanDiffOptions", "PlanProgress",
            "PlanResult", "LaunchResult"} <= set(skyc.__all__)


def test_planning_from_the_library_loads_no_command_line() -> None:
    """The library's plan functions are importable without the CLI's modules or the
    stages they run only when called (the engines, apply's launch)."""
    code = ("import skyc, sys; skyc.plan_with_diff; skyc.apply_saved_plan; "
            "print(sorted(m for m in sys.modules if m.startswith(('skyc.cli', "
            "'skyc.apply.launch', 'skyc.stacks', 'skyc.review', 'typer'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]"
