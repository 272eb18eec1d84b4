"""The CLI's root: version, help, and clean errors for usage mistakes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skyc import __version__


def _skyc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "skyc", *args], capture_output=True, text=True, timeout=60
    )


def test_version() -> None:
    out = _skyc("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"skyc {__version__}"


def test_help_lists_usage() -> None:
    out = _skyc("--help")
    assert out.returncode == 0
    assert "Usage" in out.stdout


def test_unknown_command_is_an_error_without_traceback() -> None:
    out = _skyc("no-such-command")
    assert out.returncode != 0
    assert "Traceback" not in out.stderr


def _commands() -> list[str]:
    from skyc.cli import app

    names = [c.name for c in app.registered_commands if c.name]
    names += [f"{g.name} {c.name}" for g in app.registered_groups if g.typer_instance
              for c in g.typer_instance.registered_commands if g.name and c.name]
    return sorted(names)


def test_every_command_has_help() -> None:
    commands = _commands()
    assert {"validate", "plan", "compile", "apply", "exec", "status", "destroy"} <= set(commands)
    for command in commands:
        out = _skyc(*command.split(), "--help")
        assert out.returncode == 0, (command, out.stderr[-2000:])
        assert "Usage" in out.stdout and "Traceback" not in out.stderr, command


@pytest.mark.parametrize(("args", "flag", "why"), [
    (("apply", "t.yaml", "-y", "--max-attempts", "0"), "--max-attempts", "from 1 to 1,000"),
    (("apply", "t.yaml", "-y", "--max-attempts", "-3"), "--max-attempts", "from 1 to 1,000"),
    (("apply", "t.yaml", "-y", "--max-attempts", "two"), "--max-attempts", "a whole number"),
    (("apply", "t.yaml", "-y", "--timeout", "-1"), "--timeout", "more than 0 seconds"),
    (("apply", "t.yaml", "-y", "--timeout", "nan"), "--timeout", "finite number of seconds"),
    (("apply", "t.yaml", "-y", "--timeout", "inf"), "--timeout", "finite number of seconds"),
    (("apply", "t.yaml", "-y", "--lock-timeout", "nan"), "--lock-timeout", "finite number"),
    (("apply", "t.yaml", "-y", "--lock-timeout", "-5"), "--lock-timeout", "0 or more seconds"),
    (("logs", "c", "0"), "JOB_ID", "from 1 to"),
    (("cancel", "c", "99999999999999999999999"), "JOB_ID", "a whole number"),
])
def test_numeric_flags_are_validated(
    args: tuple[str, ...], flag: str, why: str, tmp_path: Path
) -> None:
    (tmp_path / "t.yaml").write_text("name: t\nresources:\n  infra: local\nrun: echo hi\n")
    out = subprocess.run(
        [sys.executable, "-m", "skyc", *args], capture_output=True, text=True, timeout=60,
        cwd=tmp_path, env={**os.environ, "SKYC_HOME": str(tmp_path / "home"),
                           "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert out.returncode == 2, out
    assert f"Invalid value for '{flag}': " in out.stderr and why in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "home" / "clusters").exists()


@pytest.mark.parametrize("command", ["plan", "apply", "launch", "exec", "compile", "queue",
                                     "cancel", "destroy", "ssh", "show-gpus"])
def test_help_uses_plain_metavars(command: str) -> None:
    out = subprocess.run([sys.executable, "-m", "skyc", command, "--help"], capture_output=True,
                         text=True, timeout=60, env={**os.environ, "COLUMNS": "120"})
    assert out.returncode == 0, out.stderr
    for python_type in ("<str>", "<list[str]>", "<integer>", "<int>", "{task_file}",
                        "{cluster}", "task_file", "TEXT", "INTEGER"):
        assert python_type not in out.stdout, (python_type, out.stdout)


def test_shared_flags_mean_the_same_on_plan_apply_and_exec() -> None:
    texts = {c: _skyc(c, "--help").stdout for c in ("plan", "apply", "exec")}
    for flag in ("--gpus", "--cpus", "--memory", "--instance-type", "--num-nodes",
                 "--env-file"):
        assert all(flag in t for t in texts.values()), flag
    assert "as in SkyPilot's --infra" in texts["plan"] and "as in SkyPilot's --infra" in \
        texts["apply"]


def test_optimize_choices_are_listed_and_checked(tmp_path: Path) -> None:
    task = tmp_path / "t.yaml"
    task.write_text("run: echo\n")
    out = _skyc("plan", str(task), "--optimize", "fast", "--no-diff")
    assert out.returncode == 1 and "--optimize fast: expected one of cost, time" in out.stderr
    assert "--optimize cost|time" in _skyc("plan", "--help").stdout


def test_a_run_imports_only_its_commands_module() -> None:
    code = ("import sys; import skyc.cli as c; c._register_for(sys.argv[1:]); "
            "print(sorted(m for m in sys.modules if m.startswith('skyc.cli.cmd_')))")
    named = subprocess.run([sys.executable, "-c", code, "validate", "x.yaml"],
                           capture_output=True, text=True, timeout=60)
    assert named.returncode == 0, named.stderr
    assert named.stdout.strip() == "['skyc.cli.cmd_task']"
    for argv in (["--help"], ["no-such-command"]):
        out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                             text=True, timeout=60)
        assert "skyc.cli.cmd_plan" in out.stdout and "skyc.cli.cmd_jobs" in out.stdout
    out = _skyc("jobs", "--help")  # a group registered with add_typer
    assert out.returncode == 0 and "launch" in out.stdout


_EXIT_DRIVER = """
import atexit, gc, sys
atexit.register(lambda: print(f"atexit ran; frozen {gc.get_freeze_count()}", file=sys.stderr))
sys.argv = ["skyc", *sys.argv[1:]]
from skyc.cli import main
main()
"""


@pytest.mark.parametrize(("args", "code"), [(("--version",), 0), (("validate", "missing.yaml"), 1),
                                           (("no-such-command",), 2)])
def test_the_exit_keeps_its_code_and_hooks_and_skips_the_last_collections(
        tmp_path: Path, args: tuple[str, ...], code: int) -> None:
    """Every way out of a command: its exit code; atexit hooks run; the objects alive at
    the end are left out of the interpreter's last garbage collections (frozen)."""
    env = {**os.environ, "SKYC_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", _EXIT_DRIVER, *args], capture_output=True,
                         text=True, timeout=60, cwd=tmp_path, env=env)
    assert out.returncode == code, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("atexit ran; frozen ") and int(last.split()[-1]) > 10_000, last
