"""The pull-request comment keeps its shape whatever a user names things.

Hostile strings go in as task names (table cells, the run-cost line), policy values
quoted in a violation, the quota user (a rule in a code span), the policy file's
and the saved plan's paths (code spans), through the real ``skyc plan --format
markdown``; engine notes, resource addresses and generated stacks go through
``render`` itself. The comment is parsed with a CommonMark parser (GitHub's table
extension on) and compared with the comment for a benign name: the same headings
(none), tables, fences and HTML, and the hostile text shown as written, each line
break made one space.
"""

from __future__ import annotations

import html
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from skyc.review.markdown import render
from skyc.review.md_escape import cell_code
from skyc.review.report import cost_section
from tests.plan_diff.test_plan_diff import skyc
from tests.review.test_markdown import DOC, STACKS

pytestmark = pytest.mark.timeout(120)

MD = MarkdownIt("commonmark").enable("table")
BENIGN = "benign"
HOSTILE = {
    "heading": "\n# HEADING",
    "html": "<script>alert(1)</script>",
    "html comment": "<!-- hidden -->",
    "fence": "\n```\nfenced",
    "tilde fence": "\n~~~\nfenced",
    "long fence": "\n`````\nfenced\n````",
    "pipes": "| a | b |",
    "backslashes": "back\\slash\\",
    "escaped pipe": "a\\|b",
    "dollar and percent": "\\${x} \\%{y}",
    "line separators": "ls\u2028# LS\u2029# PS",
    "carriage returns": "cr\r# CR\r\n# CRLF",
    "vertical tab and next line": "vt\x0b# VT\x85# NEL",
    "emphasis and links": "*em* _em_ ~~s~~ [link](http://x) ![img](http://x)",
    "entities": "&lt;b&gt; &amp; &#96;",
    "backticks": "`tick` ``two`` ```three",
    "autolink": "<http://auto.link>",
    "blocks": "\n> quote\n- item\n1. one\n---\n===\n    indented",
}
_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def flat(value: str) -> str:
    """``value`` as the comment shows it: each line break one space."""
    return _BREAK.sub(" ", value)


def shape(comment: str) -> list[tuple[str, ...]]:
    """The comment's structure: each block token, and in each inline run every
    token that is not plain text (code, emphasis, links, HTML, line breaks)."""
    out: list[tuple[str, ...]] = []
    for tok in MD.parse(comment):
        if tok.type == "inline":
            out.append(("inline", *(c.type for c in tok.children or [] if c.type != "text")))
        else:
            out.append((tok.type, tok.tag, tok.info))
    return out


def _plain(tok: Token) -> str:
    return "".join(c.content if c.type in ("text", "code_inline") else
                   "\n" if c.type in ("softbreak", "hardbreak") else ""
                   for c in tok.children or [])


def texts(comment: str) -> list[str]:
    """Each inline run's rendered text, code spans included, stripped."""
    return [_plain(tok).strip() for tok in MD.parse(comment) if tok.type == "inline"]


def codes(comment: str) -> list[str]:
    """The content of every code span."""
    return [c.content for tok in MD.parse(comment) if tok.type == "inline"
            for c in tok.children or [] if c.type == "code_inline"]


def assert_template_shape(comment: str, benign: str) -> None:
    assert shape(comment) == shape(benign)
    tokens = MD.parse(comment)
    assert not [t for t in tokens if t.type == "heading_open"]
    assert [t.type for t in tokens].count("table_open") == 1
    for tok in tokens:
        if tok.type == "html_block":
            assert re.fullmatch(r"(<!-- skyc-plan:[0-9a-f]{16} -->|</details>|"
                                r"<details><summary>[^<>]*</summary>)\n", tok.content)


def _path_name(value: str) -> str:
    return value.replace("/", "\u2215")  # a file name cannot hold a slash


def plan_comment(root: Path, hostile: str) -> tuple[str, Path, Path]:
    """``skyc plan --format markdown`` for a pipeline whose steps are named after
    ``hostile``, under a policy that quotes it and a user named after it; the
    comment, the policy file and the saved plan's path."""
    root.mkdir()
    (root / "home").mkdir()
    task = root / "pipeline.yaml"
    step = {"resources": {"infra": "local"}, "run": "true"}
    task.write_text(yaml.safe_dump_all([{"name": "pipe"}, {"name": f"one{hostile}", **step},
                                        {"name": f"two{hostile}", **step}]))
    policy = root / f"policy{_path_name(hostile)}.yaml"
    policy.write_text(yaml.safe_dump({"allowed_clouds": [hostile],
                                      "users": {hostile: {"allowed_clouds": [hostile]}}}))
    out = root / f"plan{_path_name(hostile)}.skyc"
    r = skyc(root / "home", "plan", str(task), "--format", "markdown", "--no-diff",
             "--policy", str(policy), "-o", str(out), SKYC_USER=hostile)
    assert r.returncode == 1, r.stderr      # the policy's violations
    assert "Traceback" not in r.stderr and r.stdout.startswith("<!-- skyc-plan:")
    return r.stdout, policy, out


@pytest.fixture(scope="module")
def benign_comment(tmp_path_factory: pytest.TempPathFactory) -> str:
    return plan_comment(tmp_path_factory.mktemp("benign") / "case", BENIGN)[0]


@pytest.mark.parametrize("hostile", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_hostile_name_keeps_the_comments_shape(tmp_path: Path, hostile: str,
                                                 benign_comment: str) -> None:
    comment, policy, out = plan_comment(tmp_path / "case", hostile)
    assert_template_shape(comment, benign_comment)
    shown, spans = texts(comment), codes(comment)
    name = flat(hostile)
    assert f"one{name}".strip() in shown and f"two{name}".strip() in shown  # table cells
    assert any(f"no duration for one{name}, two{name}" in t for t in shown)
    assert any(f"local is not an allowed cloud ({name})" in t for t in shown)
    assert f"users.{name}" in spans and flat(str(policy)) in spans
    assert flat(f"skyc apply {shlex.quote(str(out))}") in spans  # a command to copy


def _render(stack_body: str, note: str, address: str, file_name: str) -> str:
    stacks: list[dict[str, Any]] = json.loads(json.dumps(STACKS))
    stacks[0]["resource_changes"][0]["address"] = address
    stacks[1].update(status="error", note=note)
    cost = cost_section(DOC, ["train", "serve"])
    return render(DOC, stacks, cost, None, {"train": {file_name: stack_body}},
                  ["skyc apply plan.skyc"])


def _summary(html_block: str) -> str:
    return html.unescape(re.sub(r"<[^>]*>", "", html_block)).strip()


@pytest.mark.parametrize("hostile", list(HOSTILE.values()), ids=list(HOSTILE))
def test_engine_text_and_generated_stacks_stay_in_their_places(
        hostile: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKYC_HOME", str(tmp_path / "skyc-home"))  # no state
    benign = _render("{}\n", "terraform failed", "aws_instance.node_0", "main.tf.json")
    body = f"stack\n{hostile}\n"
    comment = _render(body, f"failed: {hostile}", f"aws_instance.{hostile}",
                      f"main{hostile}.tf.json")
    assert_template_shape(comment, benign)
    tokens = MD.parse(comment)
    verbatim = re.sub(r"\r\n?", "\n", body) + "\n"   # CommonMark reads CR and CRLF as LF
    assert verbatim in [t.content for t in tokens if t.type == "fence"]
    assert f"aws_instance.{flat(hostile)}" in codes(comment)
    assert any(f"no diff (failed: {flat(hostile)})" in t for t in texts(comment))
    summaries = [_summary(t.content) for t in tokens if t.type == "html_block"]
    assert f"Generated stack: train (main{flat(hostile)}.tf.json)" in summaries


@pytest.mark.parametrize("hostile", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_table_cell_holds_any_value_as_code_or_text(hostile: str) -> None:
    tokens = MD.parse(f"| a | b |\n|---|---|\n| {cell_code(hostile)} | x |\n")
    cells = [_plain(t).strip() for t in tokens if t.type == "inline"]
    assert cells == ["a", "b", flat(hostile).strip(), "x"]
    assert {t.type for t in tokens} <= {"table_open", "thead_open", "tr_open", "th_open",
                                        "inline", "th_close", "tr_close", "thead_close",
                                        "tbody_open", "td_open", "td_close", "tbody_close",
                                        "table_close"}
