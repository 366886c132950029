"""A batch named on the command line: the operator's, so whoever owns it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from firmsift.domain.batches import BatchNotFound
from firmsift.domain.errors import FirmsiftError
from firmsift.services.submit import parse_job_id

if TYPE_CHECKING:
    from firmsift.domain.batches import Batch
    from firmsift.services.admin import Admin


async def operator_batch(admin: Admin, batch_id: str) -> Batch:
    """The batch with this id, or BatchNotFound (a malformed id too)."""
    try:
        batch = await admin.batches.get_batch(parse_job_id(batch_id))
    except FirmsiftError:
        batch = None
    if batch is None:
        raise BatchNotFound(batch_id)
    return batch
