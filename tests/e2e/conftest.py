"""End-to-end fixtures: ``python -m skyc`` as a real subprocess, in a temp cwd and SKYC_HOME.

Every command runs with stdin from /dev/null (no TTY), its own SKYC_HOME and no
cloud credentials, so nothing can reach a real cloud.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_CREDENTIAL_VARS = (
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "KUBECONFIG",
)


@dataclass
class Result:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def __str__(self) -> str:
        return (f"skyc {' '.join(self.args)} -> {self.returncode} in {self.seconds:.1f}s\n"
                f"--- stdout\n{self.stdout}--- stderr\n{self.stderr}")


@dataclass
class Skyc:
    """Runs skyc commands from ``cwd`` against ``home`` (SKYC_HOME)."""

    cwd: Path
    home: Path
    env: dict[str, str] = field(default_factory=dict)
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    def __call__(self, *args: str, timeout: float = 120) -> Result:
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "skyc", *args], cwd=self.cwd, env=self.env,
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
        )
        return Result(args, proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0)

    def ok(self, *args: str, timeout: float = 120) -> Result:
        result = self(*args, timeout=timeout)
        assert result.returncode == 0, str(result)
        assert "Traceback" not in result.output, str(result)
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "skyc", *args], cwd=self.cwd, env=self.env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        self.procs.append(proc)
        return proc

    def write(self, name: str, text: str) -> Path:
        path = self.cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def clusters(self) -> list[str]:
        """Cluster names ``skyc status --format json`` reports."""
        import json

        result = self.ok("status", "--format", "json")
        return [c["name"] for c in json.loads(result.stdout)["clusters"]]

    def workspace(self, cluster: str) -> Path:
        return self.home / "clusters" / cluster


@pytest.fixture
def skyc(tmp_path: Path) -> Iterator[Skyc]:
    cwd = tmp_path / "project"
    home = tmp_path / "skyc_home"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in _CREDENTIAL_VARS}
    env.update({
        "SKYC_HOME": str(home),
        "PYTHONPATH": str(REPO),
        # No credentials on this machine or in the test's view of it.
        "HOME": str(tmp_path / "user_home"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "NO_COLOR": "1",
        "COLUMNS": "200",
    })
    (tmp_path / "user_home").mkdir()
    runner = Skyc(cwd, home, env)
    try:
        yield runner
    finally:
        for proc in runner.procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
        # Leave no node processes behind: destroy what a failed test left up.
        if (home / "clusters").is_dir():
            for ws in (home / "clusters").iterdir():
                if (ws / "cluster.json").exists():
                    runner("destroy", ws.name, "--yes", timeout=120)


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_until(check: object, timeout: float = 10.0, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return True
        time.sleep(interval)
    return bool(callable(check) and check())


def files_containing(root: Path, needle: bytes) -> list[Path]:
    """Regular files under ``root`` whose bytes contain ``needle``."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink() and needle in path.read_bytes():
            found.append(path)
    return found
