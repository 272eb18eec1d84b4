"""Which files of a workdir are uploaded: ``.skyignore`` if present, else ``.gitignore`` files.

Patterns follow gitignore semantics (pathspec's gitignore implementation):
negation with ``!``, directory-only patterns, anchoring, and nested
``.gitignore`` files that apply below their directory and take precedence over
the ones above. As in git, nothing inside an ignored directory is re-included.
"""

from __future__ import annotations

import os
from pathlib import Path

from skyc.errors import RuntimeAgentError


def _load(path: Path) -> object:
    import pathspec

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise RuntimeAgentError(f"{path}: cannot read ignore file: {exc}") from None
    return pathspec.GitIgnoreSpec.from_lines(lines)


class IgnoreRules:
    """Ignore decisions for paths relative to a root directory (``/``-separated)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        skyignore = root / ".skyignore"
        self.use_gitignore = not skyignore.is_file()
        self._specs: dict[str, object] = {}
        if not self.use_gitignore:
            self._specs[""] = _load(skyignore)
        else:
            self.enter_dir("")

    def enter_dir(self, rel_dir: str) -> None:
        """Pick up the ``.gitignore`` of a directory before its entries are checked."""
        if not self.use_gitignore:
            return
        path = self.root / rel_dir / ".gitignore" if rel_dir else self.root / ".gitignore"
        if path.is_file():
            self._specs[rel_dir] = _load(path)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        if not self._specs:
            return False
        # deepest ignore file first: it takes precedence over the ones above it
        for base in sorted(self._specs, key=len, reverse=True):
            if base and not rel.startswith(base + "/"):
                continue
            sub = rel[len(base) + 1:] if base else rel
            spec = self._specs[base]
            decision = spec.check_file(sub + "/" if is_dir else sub).include  # type: ignore[attr-defined]
            if decision is not None:
                return bool(decision)
        return False


def walk(root: Path) -> list[tuple[str, os.stat_result]]:
    """Every path under root that is not ignored, with its lstat, parents first."""
    rules = IgnoreRules(root)
    top = str(root)
    found: list[tuple[str, os.stat_result]] = []
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        rules.enter_dir(rel_dir)
        directory = os.path.join(top, rel_dir) if rel_dir else top
        try:
            with os.scandir(directory) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise RuntimeAgentError(f"{directory}: cannot list directory: {exc}") from None
        subdirs = []
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if rules.ignored(rel, is_dir):
                continue
            found.append((rel, entry.stat(follow_symlinks=False)))
            if is_dir:
                subdirs.append(rel)
        stack.extend(reversed(subdirs))
    return found
