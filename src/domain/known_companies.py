"""Known companies: a domain is a listed company's when its name or a parent name is listed."""

from __future__ import annotations

from collections.abc import Mapping

from firmsift.domain.model import KnownCompany


def with_parents(domains: list[str]) -> list[str]:
    """Each domain and its parent names down to two labels: shop.brand.com belongs to brand.com."""
    names: dict[str, None] = {}
    for domain in domains:
        labels = domain.split(".")
        for start in range(len(labels) - 1):
            names.setdefault(".".join(labels[start:]), None)
    return list(names)


def known_company_reason(company: KnownCompany) -> str:
    label = f" ({company.name})" if company.name else ""
    return f"Listed as a known CPG company{label}: {company.domain}"


def known_company(domain: str, known: Mapping[str, KnownCompany]) -> KnownCompany | None:
    labels = domain.split(".")
    for start in range(len(labels) - 1):
        company = known.get(".".join(labels[start:]))
        if company is not None:
            return company
    return None
