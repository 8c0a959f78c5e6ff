"""Every relative link of the guide resolves: README.md and docs/**/*.md link to files that exist and to headings
those files have, under GitHub's anchor rules; so do the README and docs anchors that code and tests name. The lab's
pages and records: lab/tests/test_docs_links.py."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import pytest

from tools.project import PROJECT_DIR

PAGES = sorted([PROJECT_DIR / "README.md", *(PROJECT_DIR / "docs").rglob("*.md")])
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+).+?\1")
# [text](target) and ![alt](target), the target up to its first space (a title may follow) or closing parenthesis.
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
# A page of the guide named with an anchor in code, tests or config: `README.md#<heading>`, `docs/<page>.md#<heading>`.
CODE_REFERENCE = re.compile(r"((?:README|docs/[\w./-]+)\.md)#([\w-]+)")


def prose_lines(text: str) -> list[tuple[int, str]]:
    """The lines outside fenced code blocks, numbered from 1."""
    lines, fence = [], ""
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if fence:
            if opened and opened[1][0] == fence[0] and len(opened[1]) >= len(fence) and not line.strip()[len(fence) :]:
                fence = ""
        elif opened:
            fence = opened[1]
        else:
            lines.append((number, line))
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text (a link's label, a code span's content) lowercased, every character
    but letters, digits, '_', '-' and spaces dropped, each space a '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).lower()
    return "".join("-" if char == " " else char for char in text if char.isalnum() or char in "_- ")


@cache
def anchors(page: Path) -> frozenset[str]:
    """The anchors a page has: its headings' slugs, a repeated one suffixed -1, -2, ... as GitHub does, and any
    explicit <a id=...>."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(page.read_text()):
        found.update(HTML_ANCHOR.findall(line))
        heading = HEADING.match(line)
        if heading:
            base = slug(heading[1])
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def links(page: Path) -> list[tuple[int, str]]:
    return [
        (number, target)
        for number, line in prose_lines(page.read_text())
        for target in LINK.findall(INLINE_CODE.sub("", line))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # https:, mailto:, ...: not the repository's
    ]


def broken(page: Path, target: str) -> str | None:
    """Why a relative link of `page` does not resolve, or None."""
    path, _, anchor = target.partition("#")
    resolved = (page.parent / path).resolve() if path else page
    if not resolved.exists():
        return f"{path} does not exist"
    if anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
        return f"{resolved.name} has no heading #{anchor}"
    return None


def test_the_slug_follows_githubs_rules():
    assert slug("Operator tools: render and verify") == "operator-tools-render-and-verify"
    assert slug("An exposed endpoint: HTTPS and API keys") == "an-exposed-endpoint-https-and-api-keys"
    assert slug("The proof on the GPU host (`tools/s3_load.py`)") == "the-proof-on-the-gpu-host-toolss3_loadpy"
    assert slug("Evidence of the prefill→decode KV transfer") == "evidence-of-the-prefilldecode-kv-transfer"
    assert (
        slug("FP8 on an L4's share, behind the API-key ingress (issues 25 and 24), 2026-12-01")
        == "fp8-on-an-l4s-share-behind-the-api-key-ingress-issues-25-and-24-2026-12-01"
    )


def test_a_repeated_heading_gets_a_numbered_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Guide\n## Not run\n```\n# a comment in code, no heading\n```\n### Not run\n")
    assert anchors(page) == {"guide", "not-run", "not-run-1"}


def test_a_missing_page_and_a_missing_anchor_are_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Guide\nSee [it](#guide), [gone](#gone), [other](other.md) and `[code](nowhere.md)`.\n")
    assert [(target, broken(page, target)) for _, target in links(page)] == [
        ("#guide", None),
        ("#gone", "page.md has no heading #gone"),
        ("other.md", "other.md does not exist"),
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(PROJECT_DIR)))
def test_every_relative_link_resolves(page):
    problems = [f"line {number}: ({target}) {why}" for number, target in links(page) if (why := broken(page, target))]
    assert problems == []


def test_the_code_scan_sees_a_guide_anchor():
    text = 'raise ValueError("see README.md#architecture and docs/policy.md#deploying-from-ci")'
    assert CODE_REFERENCE.findall(text) == [
        ("README.md", "architecture"),
        ("docs/policy.md", "deploying-from-ci"),
    ]


def _tracked_sources() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py", "*.yaml", "*.yml", ".ci/*"],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [PROJECT_DIR / name for name in listed.splitlines() if not name.startswith("vendor/")]


def test_every_guide_anchor_named_in_code_resolves():
    """An error message or comment that sends a reader to `README.md#<heading>` or `docs/<page>.md#<heading>` names
    a heading the page has."""
    problems = [
        f"{path.relative_to(PROJECT_DIR)}: {page}#{anchor}"
        for path in _tracked_sources()
        if path.is_file()
        for page, anchor in CODE_REFERENCE.findall(path.read_text())
        if not (PROJECT_DIR / page).exists() or anchor not in anchors(PROJECT_DIR / page)
    ]
    assert problems == []
