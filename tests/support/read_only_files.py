"""Making files and folders read-only to the test's own process, for real: by their modes for an
ordinary user, and by the immutable attribute for root, whom modes do not stop (root writes a
file of mode 444 as any other). The immutable attribute (`chattr +i`) binds root too and access()
reports it; setting it needs CAP_LINUX_IMMUTABLE and a file system that has it (ext4, XFS,
Btrfs, recent tmpfs), so where neither is at hand the test is skipped, saying why. A
read-only bind mount would need a mount namespace, which a container seldom allows."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

FS_IOC_GETFLAGS = 0x80086601  # linux/fs.h, as on 64-bit Linux; the kernel reads and writes an int
FS_IOC_SETFLAGS = 0x40086602
FS_IMMUTABLE_FL = 0x00000010
UNSUPPORTED = {errno.EPERM, errno.EACCES, errno.ENOTTY, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS}


@contextlib.contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """Within the block, none of `paths` (files or folders) may be written by this process;
    they are as they were after it. Skips the test when that cannot be done for root."""
    with contextlib.ExitStack() as stack:
        for path in paths:
            stack.enter_context(_immutable(path) if os.geteuid() == 0 else _mode_read_only(path))
        assert all(not os.access(path, os.W_OK) for path in paths)
        yield


@contextlib.contextmanager
def _mode_read_only(path: Path) -> Iterator[None]:
    mode = stat.S_IMODE(path.stat().st_mode)
    path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        yield
    finally:
        path.chmod(mode)


@contextlib.contextmanager
def _immutable(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        flags = _flags(fd)
        try:
            fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", flags | FS_IMMUTABLE_FL))
        except OSError as error:
            if error.errno in UNSUPPORTED:
                pytest.skip(f"running as root, and the immutable attribute cannot be set on {path} "
                            f"({os.strerror(error.errno)}): nothing else makes a file read-only to root")
            raise
        try:
            yield
        finally:
            fcntl.ioctl(fd, FS_IOC_SETFLAGS, struct.pack("i", flags))
    finally:
        os.close(fd)


def _flags(fd: int) -> int:
    try:
        return int(struct.unpack("i", fcntl.ioctl(fd, FS_IOC_GETFLAGS, struct.pack("i", 0)))[0])
    except OSError as error:
        if error.errno in UNSUPPORTED:
            pytest.skip(f"running as root, and this file system has no immutable attribute "
                        f"({os.strerror(error.errno)}): nothing else makes a file read-only to root")
        raise
