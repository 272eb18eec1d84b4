"""Where skyc keeps its files: ``$SKYC_HOME``, ``~/.skyc`` by default.

Apart from the config module, whose models the state, locks, logs and workspaces
that only need the directory do not load.

The directory holds node addresses, resource ids and keys: it is kept private
(0700, its files 0600). The CLI sets the process umask to :data:`PRIVATE_UMASK`, so
what skyc and the engines it runs create there is private from the start;
:func:`ensure_home` and :func:`tighten` fix what an older skyc left looser.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
PRIVATE_UMASK = 0o077
# The umask the user's shell gave skyc, for the jobs it starts on this machine: what a
# job writes is the user's business, not skyc's private state.
USER_UMASK_ENV = "SKYC_USER_UMASK"


def use_private_umask() -> None:
    """Make what this process and its children create private (``PRIVATE_UMASK``),
    remembering the user's own umask for :func:`user_umask` (in the environment, so
    skyc processes this one starts, such as the jobs controller, know it too)."""
    previous = os.umask(PRIVATE_UMASK)
    os.environ.setdefault(USER_UMASK_ENV, f"{previous:03o}")


def user_umask() -> int:
    """The umask for processes that run the user's commands (local nodes' jobs)."""
    text = os.environ.get(USER_UMASK_ENV, "")
    try:
        value = int(text, 8)
    except ValueError:
        return 0o022
    return value if 0 <= value <= 0o777 else 0o022


def skyc_home() -> Path:
    """The directory that holds skyc's config, state, clusters and logs."""
    return Path(os.environ.get("SKYC_HOME") or Path.home() / ".skyc").expanduser()


def config_path() -> Path:
    return skyc_home() / "config.yaml"


def ensure_home() -> Path:
    """``$SKYC_HOME``, created 0700 when missing and made 0700 when looser. A home
    that cannot be created (a read-only filesystem) is returned as it is: the caller
    that writes there says so."""
    home = skyc_home()
    try:
        home.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    except OSError:
        return home
    tighten(home, PRIVATE_DIR)
    return home


def tighten(path: Path, mode: int) -> None:
    """Clear the permission bits of ``path`` that ``mode`` lacks (group and other
    access). Left as it is when it is not this user's, is a link, or cannot be
    changed (a read-only filesystem)."""
    try:
        st = path.lstat()
        if stat.S_ISLNK(st.st_mode) or st.st_uid != os.getuid():
            return
        current = stat.S_IMODE(st.st_mode)
        if current & ~mode:
            path.chmod(current & mode)
    except OSError:
        return
