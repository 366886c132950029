"""The page corpus: real pages' markup listed in tests/fixtures/page_corpus.toml, each with the
phrase (read by hand) that says what the company sells. The pages are copied out of their source
repositories by `python -m bench.page_corpus collect`; this repository keeps only the list."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from firmsift.adapters.search.html_evidence import extract_page

ROOT = Path(__file__).resolve().parent.parent.parent
MANIFEST = ROOT / "tests" / "fixtures" / "page_corpus.toml"
PAGES = ROOT / "tests" / "fixtures" / "pages"
SNIPPET_CHARS = 500  # HomepageSearch's default snippet_chars


@dataclass(frozen=True)
class CorpusPage:
    name: str
    repo: str
    path: str
    commit: str
    licence: str
    sha256: str
    sells: str  # a phrase of the evidence, checked by hand, that says what the company sells

    def file(self, corpus: Path = PAGES) -> Path:
        return corpus / f"{self.name}.html"


def load_manifest(path: Path = MANIFEST) -> list[CorpusPage]:
    return [CorpusPage(**entry) for entry in tomllib.loads(path.read_text())["page"]]


def read_page(file: Path) -> str:
    # Decoded leniently, as the homepage reader decodes a body whose charset it cannot trust.
    return file.read_bytes().decode("utf-8", "replace")


def evidence_text(html: str) -> str:
    """What the homepage reader's evidence carries of a page: title, then meta description,
    og:description and visible text (HomepageSearch._evidence joins the same parts)."""
    page = extract_page(html, text_chars=SNIPPET_CHARS)
    og_about = page.og_description if page.og_description != page.description else ""
    parts = [part for part in (page.description, og_about, page.text) if part]
    return f"{page.title or page.og_title} || " + " | ".join(parts)
