"""Every relative link of the lab's pages and records (lab/**/*.md) resolves, as the guide's do
(tests/test_docs_links.py)."""

from __future__ import annotations

import pytest

from tests.test_docs_links import broken, links
from tools.project import PROJECT_DIR

PAGES = sorted((PROJECT_DIR / "lab").rglob("*.md"))


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(PROJECT_DIR)))
def test_every_relative_link_resolves(page):
    problems = [f"line {number}: ({target}) {why}" for number, target in links(page) if (why := broken(page, target))]
    assert problems == []
