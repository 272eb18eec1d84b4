"""GCP's naming rules, applied to skyc's cluster names and the task's labels.

- Resource names (networks, firewalls, VMs, TPU VMs) are 1-63 characters of
  lower-case letters, digits and ``-``, starting with a letter and not ending
  with ``-``. A cluster name that is not one already (``My_Cluster``) is
  lower-cased with ``_`` made ``-``, and a short hash of the original is added
  so two clusters never share a name. The owner's hash follows the cluster part
  (``skyc-train-1a2b-head``) and is never cut: networks and firewalls are global
  to a project, so two people's clusters of one name must differ there.
- Labels: keys and values of at most 63 lower-case letters, digits, ``_`` and
  ``-``; keys start with a letter. Each label is lower-cased, any other
  character becomes ``_``, and it is cut to 63 characters (a key that does not
  start with a letter gets ``l_`` in front). Two labels that become the same key
  are refused, naming both.
"""

from __future__ import annotations

import hashlib
import re

from skyc.errors import ConfigError

MAX = 63
_NAME = re.compile(r"^[a-z](?:[-a-z0-9]*[a-z0-9])?$")
_NOT_NAME = re.compile(r"[^a-z0-9-]+")
_NOT_LABEL = re.compile(r"[^a-z0-9_-]")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def resource_name(cluster: str, suffix: str = "", owner_hash: str = "") -> str:
    """``skyc-<cluster>[-<owner hash>][-<suffix>]`` as a valid GCP name of at most 63
    characters (the cluster part is cut where it must be; the rest is kept)."""
    clean = _NOT_NAME.sub("-", cluster.lower()).strip("-")
    base = f"skyc-{clean}" if clean else "skyc"
    tail = (f"-{owner_hash}" if owner_hash else "") + (f"-{suffix}" if suffix else "")
    exact = clean == cluster and len(base) + len(tail) <= MAX
    if not exact:
        tail = f"-{_digest(cluster)}{tail}"
    name = base[: MAX - len(tail)].rstrip("-") + tail
    if not _NAME.match(name):  # cannot happen for a checked cluster name
        raise ConfigError(f"cluster name {cluster!r} gives no valid GCP name ({name!r})")
    return name


# Service account ids: 6-30 lower-case letters, digits and hyphens, starting with a
# letter and not ending with a hyphen; unique within the project.
ACCOUNT_MAX = 30


def account_id(cluster: str, owner_hash: str = "") -> str:
    """The cluster's service account id: ``skyc-<cluster>[-<owner hash>]`` fit to 30
    characters (a cut or changed cluster part gets a hash of the original, so two
    clusters never share one)."""
    clean = _NOT_NAME.sub("-", cluster.lower()).strip("-")
    base = f"skyc-{clean}" if clean else "skyc"
    tail = f"-{owner_hash}" if owner_hash else ""
    if clean != cluster or len(base) + len(tail) > ACCOUNT_MAX:
        tail = f"-{_digest(cluster)}{tail}"
    name = base[: ACCOUNT_MAX - len(tail)].rstrip("-") + tail
    if not _NAME.match(name) or len(name) < 6:  # cannot happen for a checked name
        raise ConfigError(f"cluster name {cluster!r} gives no valid service account id")
    return name


def _label(text: str, *, key: bool) -> str:
    value = _NOT_LABEL.sub("_", text.lower())
    if key and not value[:1].isalpha():
        value = "l_" + value
    return value[:MAX]


def labels(given: dict[str, str]) -> dict[str, str]:
    """The labels as GCP takes them (see the module docstring); sorted by key."""
    out: dict[str, str] = {}
    origin: dict[str, str] = {}
    for key, value in sorted(given.items()):
        clean = _label(key, key=True)
        if clean in out:
            raise ConfigError(
                f"labels: {origin[clean]!r} and {key!r} both become the GCP label {clean!r}",
                hint="GCP labels are lower case (letters, digits, '_' and '-'), at most 63 "
                "characters: rename one of them")
        out[clean] = _label(str(value), key=False)
        origin[clean] = key
    return dict(sorted(out.items()))
