"""`./dev` installs a hash lock as written, whatever the package index holds today and whichever pip
the user's Python bundles.

The index here is a local folder that, like PyPI the day the install first broke, offers a release
newer than the lock's pin of a package another pin asks for *with an extra* (litellm asks for
`httpx[http2]`; httpx 0.29.0 came out after the lock). pip resolving that extra afresh takes the
newer release and, in --require-hashes mode, refuses it for want of a pin. Nothing here reaches a
network: the wheels are built in the test and pip is told to ignore every configured index."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.processes import REPO

pytestmark = pytest.mark.e2e

OLDEST_PIP = "22.3"  # bundled with CPython 3.11.0, the oldest Python firmsift supports

# name, version, the metadata lines after Name and Version
PACKAGES = [
    ("lockprobe-app", "1.0", ["Requires-Dist: lockprobe-http[http2]<2,>=1.0", "Requires-Dist: lockprobe-util"]),
    ("lockprobe-http", "1.0", ["Provides-Extra: http2", 'Requires-Dist: lockprobe-h2; extra == "http2"']),
    ("lockprobe-http", "1.1", ["Provides-Extra: http2", 'Requires-Dist: lockprobe-h2; extra == "http2"']),
    ("lockprobe-h2", "1.0", []),
    ("lockprobe-util", "1.0", []),
]
LOCKED = {"lockprobe-app": "1.0", "lockprobe-http": "1.0", "lockprobe-h2": "1.0", "lockprobe-util": "1.0"}


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(folder: Path, name: str, version: str, metadata: list[str]) -> Path:
    """A minimal pure-Python wheel, as the wheel spec (PEP 427) lays it out."""
    module = name.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": f"VERSION = {version!r}\n".encode(),
        f"{dist_info}/METADATA": "\n".join(
            ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *metadata, ""]).encode(),
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: firmsift-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in files.items())
    files[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """A package folder holding every locked release and a newer lockprobe-http."""
    folder = tmp_path / "index"
    folder.mkdir()
    for name, version, metadata in PACKAGES:
        build_wheel(folder, name, version, metadata)
    return folder


def write_lock(folder: Path, path: Path, pins: dict[str, str]) -> Path:
    lines = []
    for name, version in pins.items():
        wheel = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
        lines.append(f"{name}=={version} \\\n    --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}")
    path.write_text("\n".join(lines) + "\n")
    return path


def pip_env(index: Path, venv: Path) -> dict[str, str]:
    """This machine's pip settings dropped (its config files and PIP_* variables): only the folder."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(index),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "FIRMSIFT_VENV": str(venv), "PYTHON": sys.executable}


def venv_with_bundled_pip(venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)


def venv_with_oldest_pip(venv: Path) -> None:
    wheels = sorted((Path(sys.prefix) / "oldest-pip").glob(f"pip-{OLDEST_PIP}-*.whl"))
    if not wheels:
        reason = f"pip {OLDEST_PIP}'s wheel is not in {sys.prefix}/oldest-pip: `./dev test` downloads it"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    # A wheel of pip runs as pip (pip's documented bootstrap): it installs itself into the venv.
    subprocess.run([str(venv / "bin" / "python"), f"{wheels[0]}/pip", "install", "--quiet", "--no-index",
                    "--disable-pip-version-check", str(wheels[0])], check=True, timeout=300)


def pip_version(venv: Path) -> str:
    shown = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--version"], capture_output=True,
                           text=True, check=True, timeout=60)
    return shown.stdout.split()[1]


def installed(venv: Path) -> dict[str, str]:
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
                            capture_output=True, text=True, check=True, timeout=60)
    pins = dict(line.split("==") for line in listed.stdout.splitlines())
    return {name: version for name, version in pins.items() if name.startswith("lockprobe")}


def install_lock(lock: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / "dev"), "install-lock", str(lock)], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.parametrize("make_venv", [venv_with_bundled_pip, venv_with_oldest_pip], ids=["bundled", "oldest"])
def test_the_lock_installs_as_written_though_the_index_offers_a_newer_release(tmp_path: Path, index: Path,
                                                                              make_venv) -> None:
    venv = tmp_path / "venv"
    make_venv(venv)
    if make_venv is venv_with_oldest_pip:
        assert pip_version(venv) == OLDEST_PIP
    lock = write_lock(index, tmp_path / "requirements.lock", LOCKED)
    done = install_lock(lock, pip_env(index, venv))
    assert done.returncode == 0, done.stderr
    assert installed(venv) == LOCKED  # lockprobe-http 1.0 as pinned, not the index's 1.1


def test_without_no_deps_the_same_install_fails_as_it_did_for_users(tmp_path: Path, index: Path) -> None:
    """The case above is the one that broke: pip asked to resolve refuses the newer release."""
    venv = tmp_path / "venv"
    venv_with_bundled_pip(venv)
    lock = write_lock(index, tmp_path / "requirements.lock", LOCKED)
    resolved = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--require-hashes",
                               "-r", str(lock)], capture_output=True, text=True, env=pip_env(index, venv),
                              timeout=600)
    assert resolved.returncode != 0
    assert "lockprobe-http" in resolved.stderr and "pinned" in resolved.stderr


def test_a_lock_missing_a_requirement_is_refused_with_what_is_missing(tmp_path: Path, index: Path) -> None:
    venv = tmp_path / "venv"
    venv_with_bundled_pip(venv)
    incomplete = {name: version for name, version in LOCKED.items() if name != "lockprobe-util"}
    lock = write_lock(index, tmp_path / "requirements.lock", incomplete)
    done = install_lock(lock, pip_env(index, venv))
    assert done.returncode == 1
    assert f"dev: {lock} is incomplete or inconsistent; pip check says:" in done.stderr
    assert "lockprobe-util" in done.stderr  # pip check names the requirement no pin meets
    assert "dev: regenerate the lock with ./dev lock" in done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("dev: the install failed:") and f"remove {venv}" in last


def test_a_package_the_index_lacks_ends_in_one_line_that_says_what_to_do(tmp_path: Path, index: Path) -> None:
    venv = tmp_path / "venv"
    venv_with_bundled_pip(venv)
    lock = write_lock(index, tmp_path / "requirements.lock", LOCKED)
    (index / "lockprobe_h2-1.0-py3-none-any.whl").unlink()
    done = install_lock(lock, pip_env(index, venv))
    assert done.returncode == 1
    assert "dev: pip failed (exit 1)" in done.stderr
    last = done.stderr.splitlines()[-1]
    assert "set HTTPS_PROXY or PIP_INDEX_URL" in last and f"remove {venv}" in last
