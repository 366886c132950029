"""The evaluation's LLM response cache: a JSON Lines file of completions already paid for."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from firmsift.adapters.files.jsonl import JsonlFileError, append_record, read_records
from firmsift.domain.evaluation import CachedCompletion


class CompletionCacheFile:
    """Loaded whole at start; each new completion is appended at once, so a run killed halfway
    keeps every answer it paid for and the next run asks only for the rest."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if path.is_dir():
            raise JsonlFileError(f"{path}: is a folder; the cache is a file")
        self._entries: dict[str, CachedCompletion] = {}
        for record in read_records(path):
            key, text, model, seconds = record.get("key"), record.get("text"), record.get("model"), record.get("seconds")
            if not (isinstance(key, str) and isinstance(text, str) and isinstance(model, str)
                    and isinstance(seconds, (int, float)) and not isinstance(seconds, bool)):
                raise JsonlFileError(f"{path}: a cache record lacks key, text, model or seconds: is this the right file?")
            self._entries[key] = CachedCompletion(text, model, float(seconds), _tokens(record.get("prompt_tokens")),
                                                  _tokens(record.get("completion_tokens")))
        # Fail now, before anything is paid for, if answers could not be kept.
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600, exist_ok=True)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> CachedCompletion | None:
        return self._entries.get(key)

    def put(self, key: str, completion: CachedCompletion) -> None:
        append_record(self.path, {
            "key": key, "cached_at": datetime.now(UTC).isoformat(timespec="seconds"), "text": completion.text,
            "model": completion.model, "seconds": round(completion.seconds, 6),
            "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
        })
        self._entries[key] = completion


def _tokens(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
