"""``--env-file FILE``: ``KEY=VALUE`` lines, read through the bounded reader.

``#`` comments, blank lines and an ``export`` prefix are allowed, and values may be
quoted. The file is a regular file of at most 8 MiB of UTF-8 text; anything else (a
FIFO, ``/dev/zero``, a binary file) is a ConfigError naming it.
"""

from __future__ import annotations

from pathlib import Path

from skyc.errors import ConfigError
from skyc.task.inputs import ENV_FILE
from skyc.task.reading import read_text


def parse_env_text(text: str, shown: str) -> dict[str, str]:
    """The ``KEY=VALUE`` lines of a dotenv file's text."""
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ConfigError(f"{shown}:{number}: expected KEY=VALUE, got {raw.strip()[:60]!r}",
                              hint="one KEY=VALUE per line; # starts a comment")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key] = value
    return out


def read_env_file(path: Path) -> dict[str, str]:
    """The ``KEY=VALUE`` lines of the dotenv file at ``path``."""
    shown = f"--env-file {path}"
    return parse_env_text(read_text(path, shown, ENV_FILE), shown)
