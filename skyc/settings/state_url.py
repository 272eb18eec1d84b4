"""Where the state lives: ``sqlite`` (the default: ``$SKYC_HOME/state.db``) or a
PostgreSQL database shared by a team (``postgresql://USER[:PASSWORD]@HOST[:PORT]/DB``),
from ``SKYC_STATE_URL`` or else the config's ``state:``.

A URL is shown only through :func:`redacted_url` (its password, and a ``password=``
query parameter, replaced by ``***``), and text from the database driver only through
:func:`scrub`: the password never reaches output, logs or the state. libpq's own
``PGPASSWORD`` and ``~/.pgpass`` keep it out of the URL altogether.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from skyc.errors import ConfigError

ENV = "SKYC_STATE_URL"
SQLITE = "sqlite"
SCHEMES = ("postgresql", "postgres")
MASK = "***"
_SECRET_PARAMS = frozenset({"password", "sslpassword"})


def is_postgres(url: str) -> bool:
    return url.split(":", 1)[0].lower() in SCHEMES and "://" in url


def redacted_url(url: str) -> str:
    """``url`` with its password (and any ``password=`` parameter) shown as ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<an unparsable URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + MASK
        netloc = f"{userinfo}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = "&".join(f"{k}={MASK if k.lower() in _SECRET_PARAMS else v}" for k, v in pairs)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def secrets_of(url: str) -> list[str]:
    """The password in ``url`` as written and decoded (empty when it has none)."""
    try:
        parts = urlsplit(url)
        found = [parts.password or ""]
        found += [v for k, v in parse_qsl(parts.query) if k.lower() in _SECRET_PARAMS]
    except ValueError:
        return []
    out: list[str] = []
    for secret in found:
        out += [s for s in (secret, unquote(secret)) if s and s not in out]
    return sorted(out, key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's message) with the password of ``url`` masked."""
    for secret in secrets_of(url):
        text = text.replace(secret, MASK)
    return text


def check_setting(value: str, where: str) -> str | None:
    """The PostgreSQL URL ``value`` names, or None for ``sqlite``; a
    :class:`ConfigError` naming ``where`` for anything else."""
    text = value.strip()
    if text.lower() == SQLITE:
        return None
    if is_postgres(text):
        try:
            parts = urlsplit(text)
            port_ok = parts.port is None or 0 < parts.port < 65536
        except ValueError:
            port_ok = False
        if port_ok:
            return text
    raise ConfigError(
        f"{where}: expected 'sqlite' or a postgresql://USER@HOST:PORT/DATABASE URL, got "
        f"{redacted_url(text)!r}",
        hint="e.g. postgresql://skyc@db.example.com:5432/skyc (the password from "
        "PGPASSWORD or ~/.pgpass)")


_cache: dict[tuple[str, int, int, int], str | None] = {}


def state_url() -> str | None:
    """The PostgreSQL URL of the state (``SKYC_STATE_URL``, which wins, else the
    config's ``state:``); None for the embedded sqlite state."""
    env = os.environ.get(ENV, "").strip()
    if env:
        return check_setting(env, ENV)
    from skyc.settings.home import config_path

    path = config_path()
    try:
        seen = path.stat()
    except OSError:
        return None
    key = (str(path), seen.st_mtime_ns, seen.st_size, seen.st_ino)
    if key not in _cache:
        _cache[key] = _from_config(path)
    return _cache[key]


_SNIFF = 8 << 20   # as much of the config as load_config reads


def _from_config(path: Path) -> str | None:
    # A config that never says "state" cannot set it: such a file is not parsed here
    # (commands that read no config, such as status, stay as quick as without one).
    try:
        with path.open("rb") as fh:
            data = fh.read(_SNIFF + 1)
        if b"state" not in data and len(data) <= _SNIFF:
            return None
    except OSError:
        pass  # load_config says what is wrong with the file
    from skyc.settings.config import load_config

    setting = load_config(path).state
    return None if setting is None else check_setting(setting, f"{path}: state")
