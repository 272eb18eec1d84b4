"""Each kind of file skyc reads besides task files: its name, its cap, its error.

All of them are read by :mod:`skyc.task.reading` (a regular file only, at most the
cap, UTF-8) and, for YAML and JSON, measured by :mod:`skyc.task.documents`.

Caps: 8 MiB (as a task file) for the config, policy files, env files, kubeconfigs
and the state's node records. Catalog files may hold 32 MiB: the bundled catalog's
largest file, Azure's, is 1.6 MB of JSON once decompressed (56,671 priced rows, about
3.4 MB as SkyPilot's ``vms.csv``), and a raw catalog's CSV holds at most
:data:`MAX_CATALOG_ROWS` rows. A node cache may hold 32 MiB and 1,000,000 values
(a 5,000-node cluster, Kubernetes' limit, with 30 labels per node is about 450,000).
A saved plan may hold 32 MiB (its stacks' files and the engines' saved plans).
"""

from __future__ import annotations

from skyc.errors import CatalogError, ConfigError, SkycError, StateError
from skyc.task.reading import MIB, Bounds, plain

MAX_CATALOG_ROWS = 100_000  # 1.8 times the rows of the largest bundled catalog (Azure)

CONFIG = Bounds(
    "a config file", "give a YAML file, or remove it (every setting has a default)",
    plain(ConfigError, hint="see the config format in skyc/settings/config.py"))
POLICY = Bounds(
    "a policy file", "give a policy YAML file",
    plain(ConfigError, hint="a policy is a YAML file: --policy FILE, skyc-policy.yaml "
                            "beside the task, or the config's `policy: FILE`"))
ENV_FILE = Bounds(
    "an env file", "give a file of KEY=VALUE lines",
    plain(ConfigError, hint="--env-file takes a file of KEY=VALUE lines"))
CATALOG = Bounds(
    "a catalog file", "give a catalog directory (meta.json and <cloud>.json.gz, or "
    "<cloud>/vms.csv)",
    plain(CatalogError, hint="run 'skyc catalog update --from DIR' again, or give "
                             "--catalog a directory of regular files"),
    max_bytes=32 * MIB)


def _kubeconfig_error(shown: str, message: str, line: int | None) -> SkycError:
    where = f" (line {line})" if line is not None else ""
    return CatalogError(f"{shown}: {message}{where}", hint="check KUBECONFIG / ~/.kube/config")


KUBECONFIG = Bounds("a kubeconfig", "point KUBECONFIG at kubeconfig files", _kubeconfig_error)
PLAN = Bounds(
    "a plan file", "give a file written by `skyc plan TASK -o FILE`",
    plain(ConfigError, hint="write one with `skyc plan TASK -o FILE`"), max_bytes=32 * MIB)
STATE = Bounds(
    "a state file", "skyc writes this file itself",
    plain(StateError, hint="it was replaced after skyc wrote it; put back what skyc wrote"))


def node_cache(context: str) -> Bounds:
    """A context's node cache (``$SKYC_HOME/kubernetes/<context>.json``)."""
    hint = f"delete it, or read the cluster again (context {context}): skyc check --refresh"

    def error(shown: str, message: str, line: int | None) -> SkycError:
        where = shown if line is None else f"{shown}:{line}"
        return CatalogError(f"{where}: unreadable node cache: {message}", hint=hint)

    return Bounds("a node cache", "delete it and read the cluster again", error,
                  max_bytes=32 * MIB, max_values=1_000_000)
