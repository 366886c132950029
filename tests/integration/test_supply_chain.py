"""Supply chain: every locked dependency is pinned with hashes, and the compromised litellm
releases can never be installed."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPROMISED_LITELLM = ("1.82.7", "1.82.8")


def locked(lock: str = "requirements.lock") -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes) from a lock file."""
    text = (ROOT / lock).read_text()
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
    for inputs in ("requirements.in", "requirements-runtime.in"):
        assert all(f"!={bad}" in (ROOT / inputs).read_text() for bad in COMPROMISED_LITELLM)


def test_the_runtime_lock_is_the_full_lock_without_the_development_tools() -> None:
    """The Docker image installs requirements-runtime.lock: every package there is in the full lock
    (what CI tested) at the same version with the same hashes, and no test or lint tool is."""
    full, runtime = locked(), locked("requirements-runtime.lock")
    assert {name: entry for name, entry in runtime.items() if full.get(name) != entry} == {}
    for tool in ("pytest", "hypothesis", "schemathesis", "werkzeug", "import-linter", "cfn-lint", "pytest-xdist"):
        assert tool in full and tool not in runtime, tool
    for needed in ("litellm", "sqlalchemy", "psycopg", "boto3", "alembic", "selectolax", "jinja2", "uvicorn"):
        assert needed in runtime, needed
    assert "requirements-runtime.lock" in (ROOT / "Dockerfile").read_text()


def test_the_sqs_emulator_is_locked_with_integrity_hashes() -> None:
    import json

    lock = json.loads((ROOT / "package-lock.json").read_text())
    packages = {k: v for k, v in lock["packages"].items() if k}
    assert packages["node_modules/fauxqs"]["version"] == "1.9.2"
    assert all(p.get("integrity", "").startswith("sha512-") for p in packages.values() if not p.get("link"))
