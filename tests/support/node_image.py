"""What a node's machine image would hold, for tests whose "node" is a Unix user of
this machine (an sshd stand-in): this interpreter's installed packages, hard-linked
into that user's ``~/.local`` site-packages, where the node's ``/usr/bin/python3`` of
the same minor version finds them."""

from __future__ import annotations

import os
import re
import shutil
import sys
from importlib import metadata
from pathlib import Path

NODE_PYTHON = Path("/usr/bin/python3")


def node_python_missing() -> str | None:
    """Why a node's Python cannot use this interpreter's packages (None: it can)."""
    if not NODE_PYTHON.exists() or sys.version_info[:2] != (3, 11):
        return "needs /usr/bin/python3 of this interpreter's minor version"
    return None


def user_site(home: Path) -> Path:
    minor = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return home / ".local" / "lib" / minor / "site-packages"


def distributions(*names: str) -> list[metadata.Distribution]:
    """``names`` and everything they require (no extras), skyc itself left out (it is
    what the tests ship)."""
    seen: dict[str, metadata.Distribution] = {}

    def visit(name: str) -> None:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in seen:
            return
        seen[key] = dist
        for req in dist.requires or []:
            if "extra ==" not in req:
                visit(re.split(r"[ ;<>=!~\[(]", req, maxsplit=1)[0])

    for name in names:
        visit(name)
    return [d for k, d in seen.items() if k != "skyc"]


def give_packages(home: Path, *names: str, owner: str | None = None) -> Path:
    """Put ``names`` and their requirements into ``home``'s user site-packages (owned
    by ``owner`` when given; directories 0755); returns that directory."""
    site = user_site(home)
    for dist in distributions(*names):
        base = Path(str(dist.locate_file("")))
        for rel in dist.files or []:
            src, dst = base / rel, site / rel
            if str(rel).startswith("..") or not src.is_file() or dst.exists():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
    for path in [home / ".local", *(home / ".local").rglob("*")]:
        if owner is not None:
            shutil.chown(path, owner, owner)
        if path.is_dir():
            path.chmod(0o755)
    return site
