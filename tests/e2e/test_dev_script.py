"""`./dev` on a first run: it says what it installs instead of minutes of silence (pip is a stand-in here:
tests never reach a package index)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import REPO

pytestmark = pytest.mark.e2e

# Stands in for the virtual environment's python (pip) and firmsift: records its calls, and as
# `pip install` prints what pip prints, then exits with $FAKE_PIP_STATUS.
FAKE_PYTHON = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/../calls"
if [ "$3" = "install" ]; then
    echo "Collecting litellm==1.0 (from -r requirements.lock (line 9))"
    echo "  Downloading litellm-1.0-py3-none-any.whl (9.0 MB)"
    echo "Installing collected packages: litellm"
    echo "Successfully installed litellm-1.0"
    exit "${FAKE_PIP_STATUS:-0}"
fi
"""
FAKE_FIRMSIFT = '#!/bin/sh\necho "firmsift $*"\n'


def fake_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, script in (("python", FAKE_PYTHON), ("firmsift", FAKE_FIRMSIFT)):
        (venv / "bin" / name).write_text(script)
        (venv / "bin" / name).chmod(0o755)
    return venv


def dev(venv: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / "dev"), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "FIRMSIFT_VENV": str(venv), **env})


def test_the_first_run_says_each_step_and_each_package_then_stays_quiet(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path)
    first = dev(venv, "serve", "--port", "0")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "firmsift serve --port 0\n"
    lines = first.stderr.splitlines()
    packages = sum(1 for line in (REPO / "requirements.lock").read_text().splitlines() if line[:1].isalnum())
    assert lines[0].startswith(f"dev: installing {packages} pinned packages from requirements.lock into {venv}")
    assert "dev:   Collecting litellm==1.0" in lines  # each package as pip fetches it, without pip's noise
    assert "dev:   installing 1 package(s); pip says nothing more until it is done" in lines
    assert "dev:   installed 1 package(s)" in lines
    assert not [line for line in lines if "Downloading" in line or "(from -r" in line]
    assert any(line.startswith("dev: installing firmsift itself") for line in lines)
    assert lines[-1].startswith("dev: ready in ")
    again = dev(venv, "serve")
    assert again.returncode == 0 and again.stderr == ""  # installed: nothing to say


def test_a_failed_install_stops_with_pip_s_own_words(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path)
    failed = dev(venv, "serve", FAKE_PIP_STATUS="1")
    assert failed.returncode != 0 and failed.stdout == ""
    assert f"dev: pip failed (exit 1); its output is in {venv}/pip.log:" in failed.stderr
    assert "  Downloading litellm-1.0" in failed.stderr  # the log's tail, unfiltered
    assert not (venv / ".firmsift-installed").exists()
