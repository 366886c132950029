"""Taking the host name out of a messy cell: the cells of real exports, and hypothesis properties."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from firmsift.domain.cell_host import NoHostInCell, TakenHost, domain_from_cell, take_host
from firmsift.domain.normalize import DomainRejected, normalize_domain


@pytest.mark.parametrize(
    ("cell", "host", "domain"),
    [
        # Cells from a real export of listed companies (issue 10).
        ("www.kimberly-clark.com /en-us /", "www.kimberly-clark.com", "kimberly-clark.com"),
        ("thekrogerco.com kroger.com", "thekrogerco.com", "thekrogerco.com"),
        ("investors.axosfinancial.com /corporate-profile /default.aspx", "investors.axosfinancial.com",
         "investors.axosfinancial.com"),
        ("https://www.unilever.com/", "www.unilever.com", "unilever.com"),
        ("HTTPS://WWW.Unilever.COM/brands?x=1#top", "WWW.Unilever.COM", "unilever.com"),
        ("  mars.com/  ", "mars.com", "mars.com"),
        ("mars.com//", "mars.com", "mars.com"),
        ("http://user:pw@shop.acme.co.uk:8443/x", "shop.acme.co.uk", "shop.acme.co.uk"),
        ("https:// acme.com", "acme.com", "acme.com"),
        ("http//acme.com", "acme.com", "acme.com"),
        ("//acme.com/about", "acme.com", "acme.com"),
        ("acme.com; acme.de", "acme.com", "acme.com"),
        ("acme.com,acme.de|acme.fr", "acme.com", "acme.com"),
        ("<https://acme.com>", "acme.com", "acme.com"),
        ("(acme.com)", "acme.com", "acme.com"),
        ("Website: acme.com.", "acme.com", "acme.com"),
        ("J.P. Morgan jpmorganchase.com", "jpmorganchase.com", "jpmorganchase.com"),
        ("v2.0 release at acme.io", "acme.io", "acme.io"),
        ("info@acme.com acme.com", "acme.com", "acme.com"),
        ("mailto:info@acme.com https://acme.com", "acme.com", "acme.com"),
        ("acme.com\u200b", "acme.com", "acme.com"),
        ("\ufeffacme.com", "acme.com", "acme.com"),
        ("acme.com\u00a0", "acme.com", "acme.com"),
        ("münchen.de", "münchen.de", "xn--mnchen-3ya.de"),
        ("bücher。de", "bücher。de", "xn--bcher-kva.de"),
        ("/en-us/ acme.com", "acme.com", "acme.com"),
        ("annual report.pdf acme.com", "acme.com", "acme.com"),
    ],
)
def test_cells_of_real_exports(cell: str, host: str, domain: str) -> None:
    assert take_host(cell).host == host
    assert domain_from_cell(cell).domain == domain


def test_further_host_names_are_reported_as_not_used() -> None:
    assert take_host("thekrogerco.com kroger.com, www.kroger.com/x") == TakenHost(
        "thekrogerco.com", ("kroger.com", "www.kroger.com"))


@pytest.mark.parametrize(
    ("cell", "others"),
    [
        # The same site written twice is not a site left unused (the 20,000-row e2e test's cells).
        ("firm14.com, firm14.com", ()),
        ("https://www.acme.com/ acme.com. ACME.COM", ()),
        ("thekrogerco.com kroger.com, www.kroger.com/x", ("kroger.com",)),
        ("acme.com localhost.local foo_bar.com foo_bar.com", ("localhost.local", "foo_bar.com")),
    ],
)
def test_host_names_that_are_the_taken_domain_again_are_not_reported_as_not_used(cell: str,
                                                                                  others: tuple[str, ...]) -> None:
    assert domain_from_cell(cell).taken.others == others


@pytest.mark.parametrize(
    ("cell", "reason"),
    [
        ("", "blank cell"),
        ("   \t ", "blank cell"),
        ("\u200b", "blank cell"),
        ("Official website", "no host name in the cell"),
        ("n/a", "no host name in the cell"),
        ("-", "no host name in the cell"),
        ("3.14", "no host name in the cell"),
        ("J.P. Morgan", "no host name in the cell"),
        ("/en-us/about", "no host name in the cell"),
        ("default.aspx", "no host name in the cell"),
        ("https://", "no host name in the cell"),
        ("info@acme.com", "holds an email address"),
        ("mailto:sales@acme.com", "holds an email address"),
        ("Contact: jane.doe@gmail.com", "holds an email address"),
    ],
)
def test_cells_without_a_host_name_say_why(cell: str, reason: str) -> None:
    with pytest.raises(NoHostInCell, match=reason):
        take_host(cell)


@pytest.mark.parametrize(
    ("cell", "reason"),
    [("http://10.0.0.1/", "IP address"), ("10.0.0.1", "IP address"), ("https://shop.acme.test/", "reserved"),
     ("https://my_site.com", "characters other than")],
)
def test_a_taken_host_normalization_refuses_keeps_its_reason(cell: str, reason: str) -> None:
    with pytest.raises(DomainRejected, match=reason):
        domain_from_cell(cell)


# --- properties -------------------------------------------------------------------------------------

_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
_TLD = st.from_regex(r"[a-z]{2,6}", fullmatch=True).filter(
    lambda tld: tld not in {"test", "local", "lan", "example", "invalid", "onion", "arpa", "internal", "localhost",
                            "html", "htm", "php", "pdf", "aspx", "asp", "jsp", "cfm", "jpg", "jpeg", "png", "gif",
                            "txt", "doc", "docx", "xls", "xlsx", "csv", "pptx"})
HOSTS = st.builds(lambda labels, tld: ".".join([*labels, tld]), st.lists(_LABEL, min_size=1, max_size=3), _TLD)
PREFIXES = st.sampled_from(["", "http://", "https://", "HTTPS://", "//", "https://user@", "ftp://", "http//"])
SUFFIXES = st.sampled_from(["", "/", "//", "/en-us/", " /en-us /", ":8080", ":8080/x?y=1#z", "?q=a b", "#top",
                            " /corporate-profile /default.aspx", "."])
WORDS = st.lists(st.from_regex(r"[A-Za-z][A-Za-z&-]{0,12}", fullmatch=True), max_size=4).map(" ".join)
SEPARATORS = st.sampled_from([" ", ", ", ";", " | ", "\n", " / ", "\t"])


@given(HOSTS, PREFIXES, SUFFIXES)
def test_a_url_or_host_with_any_dressing_gives_its_host(host: str, prefix: str, suffix: str) -> None:
    assert take_host(f"{prefix}{host}{suffix}").host == host


@given(HOSTS, WORDS, WORDS)
def test_words_around_a_host_name_are_ignored(host: str, before: str, after: str) -> None:
    assert take_host(f"{before} {host} {after}").host == host


@given(st.lists(HOSTS, min_size=1, max_size=4), SEPARATORS)
def test_of_several_host_names_the_first_is_taken_and_the_rest_listed(hosts: list[str], separator: str) -> None:
    assert take_host(separator.join(hosts)) == TakenHost(hosts[0], tuple(hosts[1:]))


@given(HOSTS, st.from_regex(r"[a-z0-9._-]{1,10}", fullmatch=True))
def test_an_email_address_never_gives_its_domain(host: str, local: str) -> None:
    with pytest.raises(NoHostInCell, match="email"):
        take_host(f"{local}@{host}")


@given(st.text(max_size=60))
def test_any_cell_gives_a_host_it_holds_or_a_reason(cell: str) -> None:
    try:
        taken = take_host(cell)
    except NoHostInCell as rejected:
        assert str(rejected)
        return
    assert taken.host and taken.host in cell
    assert take_host(taken.host).host == taken.host  # what was taken is taken again, unchanged


@given(HOSTS, PREFIXES, SUFFIXES)
def test_the_cell_domain_is_the_normalization_of_the_taken_host(host: str, prefix: str, suffix: str) -> None:
    cell = f"{prefix}{host}{suffix}"
    try:
        expected = normalize_domain(host)
    except DomainRejected:
        with pytest.raises(DomainRejected):
            domain_from_cell(cell)
        return
    assert domain_from_cell(cell).domain == expected
