"""What `firmsift classify --csv -o FILE` keeps next to `FILE.part` so a stopped run resumes: which
input it read, the batches it submitted (rows they cover), and how much of the output is written."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from firmsift.entrypoints.cli.classify_client import Tally

STATE_SUFFIX = ".batch.json"


@dataclass
class BatchChunk:
    """A batch covering `rows` input rows from row `start` (0-based over the data rows); `batch_id`
    is None when none of them held a domain (nothing to ask)."""

    start: int
    rows: int
    batch_id: str | None


@dataclass
class RunState:
    """The run: `identity` names the input and the request (file hash, column, classifier, API, output
    format); `key_base` only what the batches hold (file hash, column, classifier), so another output
    of the same file meets the same batches. `rows_per_batch` is how many rows the next batch is sent with
    (0: not chosen yet), saved before a batch of a new size is sent: a batch's Idempotency-Key names
    the rows it covers, so a run stopped after the API accepted a batch and before it heard so sends
    the same rows again and gets that batch back, not a second one. `written` rows and `written_bytes`
    bytes of the output are complete, with `tally` their counts."""

    identity: str
    key_base: str
    chunks: list[BatchChunk] = field(default_factory=list)
    written: int = 0
    written_bytes: int = 0
    tally: Tally = field(default_factory=Tally)
    rows_per_batch: int = 0

    @property
    def covered(self) -> int:
        """Input rows already submitted in a batch."""
        return self.chunks[-1].start + self.chunks[-1].rows if self.chunks else 0


def state_path(part: Path) -> Path:
    return part.with_name(part.name + STATE_SUFFIX)


def load_state(path: Path, identity: str) -> RunState | None:
    """The saved run, if there is one for this same input and request; None otherwise (a missing,
    unreadable or other run's file starts a new run)."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved.get("identity") != identity:
            return None
        return RunState(identity, str(saved["key_base"]), [BatchChunk(**c) for c in saved["chunks"]], int(saved["written"]),
                        int(saved["written_bytes"]), Tally(**saved["tally"]), int(saved.get("rows_per_batch", 0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def saved_for_another_run(path: Path, identity: str) -> bool:
    """Whether `path` holds a saved run of another input or request (the file was edited, or
    --column, --classifier, --api or --format changed): what a new run should say it replaces."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(saved, dict) and saved.get("identity") != identity


def save_state(path: Path, state: RunState) -> None:
    """Written to a temporary file and renamed, so a stop while saving leaves the previous state whole."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(asdict(state)), encoding="utf-8")
    os.replace(temporary, path)
