"""AWS's rules for tags, applied to the task's labels before anything is written.

A tag key is 1-128 characters and a value at most 256, of Unicode letters, digits,
spaces and ``+ - = . _ : / @``; keys beginning with ``aws:`` are AWS's own. A
resource holds at most 50 tags (skyc adds ``Name``). A label that breaks a rule is
refused naming it, so nothing outside these characters (``${...}``, quotes, new
lines) reaches a stack on AWS.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from skyc.errors import ConfigError

MAX_KEY, MAX_VALUE, MAX_TAGS = 128, 256, 50
_ALLOWED = re.compile(r"[\w +\-=.:/@]*")
_HINT = ("AWS tags are letters, digits, spaces and + - = . _ : / @ (keys 1-128 "
         "characters, values at most 256): rename or remove the label")


def check(labels: Mapping[str, str]) -> None:
    """Refuse labels that AWS would not take as tags, naming the first one."""
    for key, value in sorted(labels.items()):
        field = f"labels.{key!r}" if not _ALLOWED.fullmatch(key) else f"labels.{key}"
        if not key or len(key) > MAX_KEY or not _ALLOWED.fullmatch(key):
            raise ConfigError(f"{field}: not an AWS tag key", hint=_HINT)
        if key.lower().startswith("aws:"):
            raise ConfigError(f"{field}: tag keys beginning with 'aws:' are reserved by AWS",
                              hint="rename the label")
        if len(str(value)) > MAX_VALUE or not _ALLOWED.fullmatch(str(value)):
            raise ConfigError(f"{field}: {str(value)[:40]!r} is not an AWS tag value",
                              hint=_HINT)
    if len(labels) + 1 > MAX_TAGS:
        raise ConfigError(f"labels: {len(labels)} labels; an AWS resource holds at most "
                          f"{MAX_TAGS} tags, one of them skyc's Name",
                          hint=f"keep at most {MAX_TAGS - 1} labels")
