"""Evidence from real pages' markup (tests/fixtures/page_corpus.toml): each page's evidence says
what the company sells in the words checked by hand. The pages are not in this repository; copy
them with `python -m bench.page_corpus collect --mirrors DIR` (see that module) to run these."""

from __future__ import annotations

import hashlib

import pytest

from tests.support.page_corpus import PAGES, CorpusPage, evidence_text, load_manifest, read_page

CORPUS = load_manifest()


def test_the_manifest_lists_30_or_more_distinct_pages_with_their_source_and_licence() -> None:
    assert len(CORPUS) >= 30
    assert len({page.name for page in CORPUS}) == len({page.sha256 for page in CORPUS}) == len(CORPUS)
    for page in CORPUS:
        assert page.repo.count("/") == 1 and page.path and len(page.commit) == 40, page
        assert page.licence in ("MIT", "Apache-2.0") and page.sells.strip(), page


@pytest.mark.parametrize("page", CORPUS, ids=lambda page: page.name)
def test_the_evidence_says_what_the_company_sells(page: CorpusPage) -> None:
    file = page.file(PAGES)
    if not file.is_file():
        pytest.skip(f"{file} not collected (python -m bench.page_corpus collect --mirrors DIR)")
    assert hashlib.sha256(file.read_bytes()).hexdigest() == page.sha256
    assert page.sells.casefold() in evidence_text(read_page(file)).casefold()
