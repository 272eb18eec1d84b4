"""Escaping for the markdown pull-request comment, one function per context.

Every string a user controls (task and cluster names, paths, policy values quoted in
a violation, engine notes, generated stacks) reaches the comment through one of
these, chosen by where it lands: :func:`text` (inside a paragraph, a list item or
a table cell), :func:`code_span` (inline code), :func:`cell_code` (inline code in a
table cell), :func:`html_text` (inside the template's own HTML, e.g. ``<summary>``)
and :func:`fence` (the fence of a code block around a body). The rules follow
CommonMark with GitHub's table extension; none of them lets the value open or close
a block, a table row, a link, HTML or a code span that the template did not write.
"""

from __future__ import annotations

import html
import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Every character Python's str.splitlines() ends a line at (CommonMark's \n and \r
# among them): a user string never starts a new line of the comment.
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# ASCII punctuation that can start an inline construct (escape, code span, emphasis,
# strikethrough, link, image, autolink, HTML, entity) or end a table cell.
_INLINE_SPECIAL = re.compile(r"[\\`*_\[\]<>&|~!]")
# What opens a block when it starts a line: heading, quote, list item, thematic
# break or setext underline, ordered list item.
_BLOCK_START = re.compile(r"^([ \t]*)([#>+=-]|\d{1,9}(?=[.)](?:[ \t]|$)))")
_BACKTICKS = re.compile(r"`+")


def one_line(value: str) -> str:
    """``value`` without ANSI codes, each line break (CR, LF, CRLF, U+2028, U+2029,
    NEL, VT, FF and the other separators Python splits lines at) made one space."""
    return _LINE_BREAK.sub(" ", _ANSI.sub("", value))


def text(value: str) -> str:
    """Plain text in a paragraph, a list item or a table cell.

    Line breaks become spaces, so the value cannot start a block; each ASCII
    punctuation character that could begin an inline construct or end a table cell
    (backslash, backtick, ``* _ [ ] < > & | ~ !``) gets a backslash, which CommonMark
    drops on rendering, so the value shows as written; a leading ``#``, ``>``, ``+``,
    ``=``, ``-`` or ordered-list number is escaped too, in case the value starts a
    line. Other characters (``$``, ``%``, ``{``) have no markdown meaning and stay.
    """
    escaped = _INLINE_SPECIAL.sub(lambda m: "\\" + m.group(0), one_line(value))
    return _BLOCK_START.sub(_escape_block_start, escaped, count=1)


def _escape_block_start(m: re.Match[str]) -> str:
    lead, mark = m.group(1), m.group(2)
    return f"{lead}{mark}\\" if mark[0].isdigit() else f"{lead}\\{mark}"


def code_span(value: str) -> str:
    """Inline code outside a table.

    Backslashes, entities and HTML are literal inside a code span, so only its
    delimiters matter: the fence is a run of backticks whose length no run inside
    the value has, and a space pads each side when the value starts or ends with a
    backtick, or starts and ends with a space (CommonMark strips one such pair).
    Line breaks become spaces, as CommonMark would render them, but before block
    parsing sees them.
    """
    body = one_line(value)
    if not body:
        return "` `"
    runs = {len(m.group(0)) for m in _BACKTICKS.finditer(body)}
    ticks = "`" * next(n for n in range(1, len(runs) + 2) if n not in runs)
    pad = (body[0] == "`" or body[-1] == "`"
           or (body[0] == " " and body[-1] == " " and body.strip(" ") != ""))
    space = " " if pad else ""
    return f"{ticks}{space}{body}{space}{ticks}"


def cell_code(value: str) -> str:
    """Inline code in a table cell.

    A table row is split at its pipes before code spans are found, and renderers
    disagree on a pipe escaped after a backslash; so a value holding a pipe or a
    backslash is written as :func:`text` (shown as written, not as code), and any
    other as :func:`code_span`.
    """
    return text(value) if "|" in value or "\\" in value else code_span(value)


def html_text(value: str) -> str:
    """Text inside the template's HTML (``<summary>``): on one line, since a blank
    line ends an HTML block, with ``& < > " '`` as character references."""
    return html.escape(one_line(value), quote=True)


def fence(body: str) -> str:
    """The backtick fence of a code block around ``body``: longer than any run of
    backticks in it (at least three), so no line of the body closes the block.
    Tildes cannot close a backtick fence, and the body's text is literal."""
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(body)), default=0)
    return "`" * max(3, longest + 1)
