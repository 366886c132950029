"""The error a `firmsift` command raises when it cannot do its work (main.py reports it: exit 1),
and the exit codes of every command."""

from __future__ import annotations

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2
EXIT_UNANSWERED = 3  # `classify`: it finished, but some rows were rejected or failed
EXIT_INTERRUPTED = 130  # Ctrl-C (SIGINT), as shells report it


class CommandError(RuntimeError):
    """A command could not do its work; the message says why (exit code 1)."""
