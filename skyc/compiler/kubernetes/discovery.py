"""Reading a context's nodes through the official ``kubernetes`` client, and the cache.

``read_nodes`` lists the nodes with the user's kubeconfig and context (the client
is imported here, on this path only) and keeps, per node, what offers are made
of: name, labels, taints, allocatable resources and the Ready condition. The
result is written to ``$SKYC_HOME/kubernetes/<context>.json`` like a catalog, so
planning works offline from the last read. Nothing secret is kept: no
annotations, addresses or kubeconfig content.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skyc.errors import CatalogError
from skyc.settings.config import skyc_home

CACHE_VERSION = 1
DEFAULT_TIMEOUT = 20.0


def cache_dir(home: Path | None = None) -> Path:
    return (home or skyc_home()) / "kubernetes"


def cache_path(context: str, home: Path | None = None) -> Path:
    """The cache file of a context: a readable name plus a digest (names hold ``/``, ``:``)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", context).strip("._")[:80] or "context"
    digest = hashlib.sha256(context.encode()).hexdigest()[:8]
    return cache_dir(home) / f"{safe}-{digest}.json"


def slim_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a node offers are made of, in the node list's own shape."""
    meta, spec, status = node.get("metadata", {}), node.get("spec", {}), node.get("status", {})
    slim_spec = {k: spec[k] for k in ("taints", "unschedulable") if spec.get(k)}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    return {
        "metadata": {"name": meta.get("name"), "labels": dict(meta.get("labels") or {})},
        "spec": slim_spec,
        "status": {
            "allocatable": dict(status.get("allocatable") or {}),
            "conditions": [{"type": "Ready", "status": c.get("status")} for c in ready],
        },
    }


def write_cache(context: str, node_list: Mapping[str, Any], *, home: Path | None = None,
                now: _dt.datetime | None = None) -> Path:
    """Store a context's nodes (slimmed); returns the file written."""
    read_at = (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    items = sorted((slim_node(n) for n in node_list.get("items") or []),
                   key=lambda n: str(n["metadata"]["name"]))
    data = {"version": CACHE_VERSION, "context": context, "read_at": read_at,
            "nodes": {"kind": "List", "apiVersion": "v1", "items": items}}
    path = cache_path(context, home)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def read_cache(context: str, home: Path | None = None) -> dict[str, Any] | None:
    """The cached read of a context (``{"context", "read_at", "nodes"}``), or None."""
    from skyc.task.documents import load_json
    from skyc.task.inputs import node_cache

    path = cache_path(context, home)
    if not (path.exists() or path.is_symlink()):
        return None
    data = load_json(path, str(path), node_cache(context))
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION \
            or data.get("context") != context or not isinstance(data.get("nodes"), dict):
        raise CatalogError(f"{path}: not a node cache of context {context!r}",
                           hint="delete it and read the cluster again")
    return data


def cached_contexts(home: Path | None = None) -> list[str]:
    """Contexts with a cached read."""
    from skyc.errors import SkycError
    from skyc.task.documents import load_json
    from skyc.task.inputs import node_cache

    out = []
    for path in sorted(cache_dir(home).glob("*.json")):
        try:
            data = load_json(path, str(path), node_cache(path.stem))
        except SkycError:
            continue  # read_cache names what is wrong with it, if its context is used
        if isinstance(data, dict) and isinstance(data.get("context"), str):
            out.append(data["context"])
    return sorted(out)


def _api_error(context: str, exc: Any) -> CatalogError:
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", "") or ""
    try:
        message = json.loads(getattr(exc, "body", "") or "{}").get("message") or reason
    except ValueError:
        message = reason
    if status == 403:
        return CatalogError(
            f"kubernetes/{context}: listing nodes is forbidden: {message}",
            hint="ask for RBAC 'list' on nodes (a ClusterRole), or describe the context's "
                 "GPU pools in the config: kubernetes.contexts.<name>.pools")
    if status == 401:
        return CatalogError(f"kubernetes/{context}: the API server refused the credentials "
                            f"(401 {reason})",
                            hint="refresh them (e.g. log in again) for this kubeconfig context")
    return CatalogError(f"kubernetes/{context}: listing nodes failed: {status} {message}")


def check_kubeconfig(config_file: str | None) -> None:
    """Each kubeconfig file the client will read (``config_file``: a list joined by
    ``os.pathsep``; None: ``~/.kube/config``) is read first as skyc reads every file:
    a FIFO, a device, a huge or deeply nested file is a CatalogError naming it."""
    from skyc.task.documents import load_yaml
    from skyc.task.inputs import KUBECONFIG

    names = config_file.split(os.pathsep) if config_file else ["~/.kube/config"]
    for name in filter(None, (n.strip() for n in names)):
        path = Path(name).expanduser()
        if path.exists():
            load_yaml(path, str(path), KUBECONFIG, quote=False)


def read_nodes(context: str | None = None, *, kubeconfig: str | Path | None = None,
               timeout: float = DEFAULT_TIMEOUT) -> tuple[str, dict[str, Any]]:
    """(context name, node list as JSON) read from the cluster. Needs ``kubernetes``."""
    try:
        client: Any = importlib.import_module("kubernetes.client")
        config: Any = importlib.import_module("kubernetes.config")
    except ImportError:
        raise CatalogError("reading a Kubernetes cluster needs the 'kubernetes' package",
                           hint="pip install 'skyc[kubernetes]'") from None
    # KUBECONFIG as it is now: the client reads the variable once, when first imported.
    config_file = str(Path(kubeconfig).expanduser()) if kubeconfig else \
        os.environ.get("KUBECONFIG") or None
    check_kubeconfig(config_file)
    try:
        _, current = config.list_kube_config_contexts(config_file=config_file)
        name = context or (current or {}).get("name")
        if not name:
            raise CatalogError("kubeconfig: no current context; name one")
        api_client = config.new_client_from_config(config_file=config_file, context=name)
    except (config.ConfigException, OSError, ValueError) as exc:
        raise CatalogError(f"kubeconfig: {exc}",
                           hint="check KUBECONFIG / ~/.kube/config and the context name") from None
    try:
        with api_client:
            result = client.CoreV1Api(api_client).list_node(_request_timeout=timeout)
            data: dict[str, Any] = api_client.sanitize_for_serialization(result)
    except client.ApiException as exc:
        raise _api_error(name, exc) from None
    except Exception as exc:  # urllib3 connection and timeout errors, TLS failures
        raise CatalogError(f"kubernetes/{name}: cannot reach the API server: "
                           f"{type(exc).__name__}: {exc}",
                           hint="check the network path to the cluster; planning uses the "
                                "last read or the config's pools") from None
    return name, data


def refresh(context: str | None = None, *, kubeconfig: str | Path | None = None,
            home: Path | None = None, timeout: float = DEFAULT_TIMEOUT) -> tuple[str, Path]:
    """Read a context's nodes and cache them; (context, cache file)."""
    name, data = read_nodes(context, kubeconfig=kubeconfig, timeout=timeout)
    return name, write_cache(name, data, home=home)


def refresh_contexts(contexts: list[str], *, home: Path | None = None,
                     timeout: float = DEFAULT_TIMEOUT) -> list[tuple[str, str | None]]:
    """Read and cache each context; (context, None) or (context, why it failed)."""
    out: list[tuple[str, str | None]] = []
    for context in contexts:
        try:
            refresh(context, home=home, timeout=timeout)
            out.append((context, None))
        except CatalogError as exc:
            out.append((context, exc.message + (f" ({exc.hint})" if exc.hint else "")))
    return out
