"""The user's kubeconfig: which contexts exist and which is current, or why none.

Read through skyc's bounded reader (a regular file of at most 8 MiB of YAML), as
kubectl merges them: ``KUBECONFIG`` (a list of files joined by ``os.pathsep``;
missing files skipped), else ``~/.kube/config``. The first
file to name a context (or the current context) wins. Only names, namespaces
and server addresses are kept: never a token, key or certificate, and a file
that does not parse is reported by line, not quoted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from skyc.settings.config import SkycConfig

HELP = ("point KUBECONFIG at a kubeconfig file, or create ~/.kube/config "
        "(e.g. `gcloud container clusters get-credentials`, `aws eks update-kubeconfig`)")


class KubeContextInfo(NamedTuple):
    name: str
    cluster: str | None = None
    user: str | None = None
    namespace: str | None = None
    server: str | None = None


class Kubeconfig(NamedTuple):
    """What the kubeconfig holds (``ok``/``reason``/``hint`` as every target reports)."""

    ok: bool
    reason: str
    hint: str | None = None
    paths: tuple[Path, ...] = ()
    contexts: tuple[KubeContextInfo, ...] = ()
    current: str | None = None
    problems: tuple[str, ...] = ()

    def context(self, name: str | None = None) -> KubeContextInfo | None:
        """The named context, or the current one."""
        name = name or self.current
        return next((c for c in self.contexts if c.name == name), None)


def kubeconfig_paths(env: Mapping[str, str], home: Path) -> tuple[list[Path], str]:
    """The files to read and where that list came from."""
    listed = env.get("KUBECONFIG", "")
    if listed.strip():
        return [Path(p).expanduser() for p in listed.split(os.pathsep) if p.strip()], "KUBECONFIG"
    return [home / ".kube" / "config"], "~/.kube/config"


def _load(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A kubeconfig file's data, or why it cannot be used (a regular file of at most
    8 MiB of bounded YAML, whose errors never quote it)."""
    from skyc.errors import SkycError
    from skyc.task.documents import load_yaml
    from skyc.task.inputs import KUBECONFIG

    try:
        data = load_yaml(path, str(path), KUBECONFIG, quote=False)
    except SkycError as exc:
        return None, exc.message
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return None, f"{path}: not a kubeconfig (expected a mapping)"
    return data, None


def _named(items: Any, key: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            value = item.get(key)
            out.setdefault(item["name"], value if isinstance(value, dict) else {})
    return out


def credentials(env: Mapping[str, str] | None = None, home: Path | None = None,
                config: SkycConfig | None = None) -> Kubeconfig:
    """The merged kubeconfig's contexts, or why there are none (``config`` is unused:
    the kubeconfig alone says which contexts exist)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    paths, origin = kubeconfig_paths(env, home)
    found = [p for p in paths if p.exists()]  # a FIFO or a device is reported, not skipped
    if not found:
        where = ", ".join(str(p) for p in paths) if origin == "KUBECONFIG" else "~/.kube/config"
        reason = (f"KUBECONFIG names {where}: none exists" if origin == "KUBECONFIG"
                  else "no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist")
        return Kubeconfig(ok=False, reason=reason, hint=HELP, paths=tuple(paths))
    contexts: dict[str, dict[str, Any]] = {}
    clusters: dict[str, dict[str, Any]] = {}
    current: str | None = None
    problems: list[str] = []
    for path in found:
        data, problem = _load(path)
        if data is None:
            problems.append(problem or f"{path}: unreadable")
            continue
        for name, ctx in _named(data.get("contexts"), "context").items():
            contexts.setdefault(name, ctx)
        for name, cluster in _named(data.get("clusters"), "cluster").items():
            clusters.setdefault(name, cluster)
        if current is None and isinstance(data.get("current-context"), str) \
                and data["current-context"]:
            current = data["current-context"]
    infos = tuple(
        KubeContextInfo(
            name=name, cluster=ctx.get("cluster"), user=ctx.get("user"),
            namespace=ctx.get("namespace"),
            server=clusters.get(str(ctx.get("cluster")), {}).get("server"),
        )
        for name, ctx in sorted(contexts.items())
    )
    files = ", ".join(str(p) for p in found) if origin == "KUBECONFIG" else origin
    if not infos:
        reason = "; ".join(problems) or f"{files} defines no contexts"
        return Kubeconfig(ok=False, reason=reason, hint=HELP, paths=tuple(found),
                          problems=tuple(problems))
    if current is not None and current not in contexts:
        problems.append(f"current-context {current!r} is not defined")
        current = None
    shown = f" (current: {current})" if current else " (no current context)"
    reason = f"{len(infos)} context{'s' if len(infos) != 1 else ''} in {files}{shown}"
    return Kubeconfig(ok=True, reason=reason, paths=tuple(found), contexts=infos,
                      current=current, problems=tuple(problems))
