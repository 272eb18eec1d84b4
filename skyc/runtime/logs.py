"""Local copies: every job's prefixed log lines and the cluster's job table."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from skyc.config import skyc_home

LineCallback = Callable[[str, str], None]


def cluster_log_root(cluster: str, log_dir: Path | None = None) -> Path:
    """``$SKYC_HOME/logs/<cluster>/`` unless the caller chose another directory."""
    return log_dir if log_dir is not None else skyc_home() / "logs" / cluster


class JobLog:
    """Writes each node's lines to ``<node>.log`` and all of them, prefixed, to ``run.log``."""

    def __init__(self, directory: Path, on_line: LineCallback | None) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.on_line = on_line
        self._lock = threading.Lock()
        self._all: TextIO = (self.dir / "run.log").open("a", encoding="utf-8")
        self._per_node: dict[str, TextIO] = {}

    def sink(self, node: str, label: str) -> Callable[[str], None]:
        def emit(line: str) -> None:
            with self._lock:
                fh = self._per_node.get(node)
                if fh is None:
                    fh = self._per_node[node] = (self.dir / f"{node}.log").open(
                        "a", encoding="utf-8")
                fh.write(line + "\n")
                fh.flush()
                self._all.write(f"{label} {line}\n")
                self._all.flush()
            if self.on_line is not None:
                self.on_line(label, line)

        return emit

    def close(self) -> None:
        for fh in [self._all, *self._per_node.values()]:
            fh.close()


def write_job_table(root: Path, jobs: list[dict[str, Any]]) -> None:
    """The local copy of the head node's job table."""
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / "jobs.json.tmp"
    tmp.write_text(json.dumps(jobs, indent=1, sort_keys=True) + "\n")
    tmp.replace(root / "jobs.json")


def update_job_table(root: Path, entry: dict[str, Any]) -> None:
    path = root / "jobs.json"
    jobs: list[dict[str, Any]] = []
    if path.exists():
        try:
            jobs = json.loads(path.read_text())
        except ValueError:
            jobs = []
    jobs = [j for j in jobs if j.get("job_id") != entry["job_id"]] + [entry]
    write_job_table(root, sorted(jobs, key=lambda j: int(j["job_id"])))
