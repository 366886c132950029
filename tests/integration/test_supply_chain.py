"""Supply chain: every locked dependency is pinned with hashes, and the compromised litellm
releases can never be installed."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPROMISED_LITELLM = ("1.82.7", "1.82.8")


def locked() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) from requirements.lock."""
    text = (ROOT / "requirements.lock").read_text()
    entries: dict[str, tuple[str, list[str]]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        match = re.match(r"([A-Za-z0-9_.\-\[\]]+)==([^\s;\\]+)", block)
        if match:
            entries[match.group(1).lower()] = (match.group(2), re.findall(r"--hash=sha256:([0-9a-f]{64})", block))
    return entries


def test_every_locked_package_is_pinned_with_a_hash() -> None:
    entries = locked()
    assert len(entries) > 50
    assert [name for name, (_version, hashes) in entries.items() if not hashes] == []


def test_the_compromised_litellm_releases_are_excluded_everywhere() -> None:
    version, _hashes = locked()["litellm"]
    assert version not in COMPROMISED_LITELLM
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    [litellm] = [d for d in dependencies if d.startswith("litellm")]
    assert all(f"!={bad}" in litellm for bad in COMPROMISED_LITELLM)
    assert all(f"!={bad}" in (ROOT / "requirements.in").read_text() for bad in COMPROMISED_LITELLM)


def test_the_sqs_emulator_is_locked_with_integrity_hashes() -> None:
    import json

    lock = json.loads((ROOT / "package-lock.json").read_text())
    packages = {k: v for k, v in lock["packages"].items() if k}
    assert packages["node_modules/fauxqs"]["version"] == "1.9.2"
    assert all(p.get("integrity", "").startswith("sha512-") for p in packages.values() if not p.get("link"))
