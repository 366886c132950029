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


def installed_venv(tmp_path: Path, lint_status: int = 0) -> Path:
    """A fake venv already installed (stamped), whose python and lint-imports record their calls,
    and an `npm` first on PATH that records its own (no test reaches a package registry)."""
    venv = fake_venv(tmp_path)
    (venv / "bin" / "lint-imports").write_text(
        f'#!/bin/sh\necho "lint-imports" >> "$(dirname "$0")/../calls"\nexit {lint_status}\n')
    (venv / "bin" / "lint-imports").chmod(0o755)
    (venv / "bin" / "npm").write_text('#!/bin/sh\necho "npm $*" >> "$(dirname "$0")/../calls"\n')
    (venv / "bin" / "npm").chmod(0o755)
    (venv / ".firmsift-installed").touch()
    (venv / "oldest-pip").mkdir()
    (venv / "oldest-pip" / "pip-22.3-py3-none-any.whl").touch()  # downloaded: nothing to fetch
    return venv


def dev_test(venv: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`./dev test ARGS`, and the calls it made (npm's aside) in order."""
    done = dev(venv, "test", *args, PATH=f"{venv / 'bin'}:{os.environ['PATH']}", **env)
    calls = venv / "calls"
    lines = calls.read_text().splitlines() if calls.exists() else []
    return done, [line for line in lines if not line.startswith("npm ")]


def test_the_suite_runs_on_four_xdist_processes_after_the_layer_contracts(tmp_path: Path) -> None:
    done, calls = dev_test(installed_venv(tmp_path), "-q", "tests/e2e")
    assert done.returncode == 0, done.stderr
    assert calls == ["lint-imports", "-m pytest -n 4 --dist worksteal --durations=30 -q tests/e2e"]


@pytest.mark.parametrize(("workers", "expected"), [("2", "-n 2"), ("0", "-n 0"), ("12", "-n 12")])
def test_firmsift_test_workers_sets_the_process_count(tmp_path: Path, workers: str, expected: str) -> None:
    done, calls = dev_test(installed_venv(tmp_path), FIRMSIFT_TEST_WORKERS=workers)
    assert done.returncode == 0, done.stderr
    assert calls == ["lint-imports", f"-m pytest {expected} --dist worksteal --durations=30"]


@pytest.mark.parametrize("args", [(), ("--fast",)])
def test_the_tests_write_bytecode_caches_even_where_the_machine_turns_them_off(tmp_path: Path,
                                                                            args: tuple[str, ...]) -> None:
    venv = installed_venv(tmp_path)
    (venv / "bin" / "python").write_text(
        '#!/bin/sh\necho "${PYTHONDONTWRITEBYTECODE-unset}" >> "$(dirname "$0")/../calls"\n')
    done, calls = dev_test(venv, *args, PYTHONDONTWRITEBYTECODE="1")
    assert done.returncode == 0, done.stderr
    assert calls == ["lint-imports", "unset"]  # each firmsift process the tests start reuses the compiled modules


@pytest.mark.parametrize("workers", ["four", "-1", "2 -x", "3.5"])
def test_a_worker_count_that_is_not_a_whole_number_is_refused(tmp_path: Path, workers: str) -> None:
    done, calls = dev_test(installed_venv(tmp_path), FIRMSIFT_TEST_WORKERS=workers)
    assert done.returncode == 2
    assert f"FIRMSIFT_TEST_WORKERS must be a whole number (0: no worker processes), not '{workers}'" in done.stderr
    assert not [call for call in calls if "pytest" in call]


def test_fast_runs_the_layer_contracts_and_the_unit_tests_only(tmp_path: Path) -> None:
    done, calls = dev_test(installed_venv(tmp_path), "--fast", "-x", FIRMSIFT_TEST_WORKERS="3")
    assert done.returncode == 0, done.stderr
    assert calls == ["lint-imports", "-m pytest tests/unit -x"]


@pytest.mark.parametrize("args", [(), ("--fast",)])
def test_broken_layer_contracts_stop_before_any_test(tmp_path: Path, args: tuple[str, ...]) -> None:
    done, calls = dev_test(installed_venv(tmp_path, lint_status=1), *args)
    assert done.returncode == 1
    assert calls == ["lint-imports"]


def test_docs_writes_the_reference_pages_then_builds_or_serves_the_site(tmp_path: Path) -> None:
    venv = fake_venv(tmp_path)
    mkdocs = venv / "bin" / "mkdocs"
    mkdocs.write_text('#!/bin/sh\necho "mkdocs $*" >> "$(dirname "$0")/../calls"\n')
    mkdocs.chmod(0o755)
    built = dev(venv, "docs")
    assert built.returncode == 0, built.stderr
    served = dev(venv, "docs", "--serve", "--dev-addr", "127.0.0.1:0")
    assert served.returncode == 0, served.stderr
    calls = (venv / "calls").read_text().splitlines()
    assert calls[-4:] == ["-m docs.generate", "mkdocs build", "-m docs.generate", "mkdocs serve --dev-addr 127.0.0.1:0"]
