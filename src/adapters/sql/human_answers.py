"""SQLAlchemy human answers (SQLite and PostgreSQL): the current correction per (classifier,
domain) in `human_answers`, and what each change replaced in `human_answer_history`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, delete, insert, select, tuple_
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.store_rows import epoch_time
from firmsift.adapters.sql.tables import human_answer_history, human_answers
from firmsift.domain.human_answers import HumanAnswer

T = TypeVar("T")
_LOOKUP_CHUNK = 500  # domains per IN (...) list: well under SQLite's bound-parameter limit


class SqlHumanAnswers:
    """Implements HumanAnswerStore. A change and its history row are written in one transaction;
    changes to one (classifier, domain) take turns on its row lock (SQLite: on the write lock)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def _run(self, work: Callable[[Connection], T]) -> T:
        return await in_transaction(self.engine, work)

    async def set_human_answer(self, answer: HumanAnswer) -> HumanAnswer | None:
        def work(conn: Connection) -> HumanAnswer | None:
            previous = _claim(conn, answer)
            conn.execute(insert(human_answer_history).values(
                classifier=answer.classifier, domain=answer.domain, replaced_at=time.time(),
                **(_values(previous) if previous is not None else {})))
            if previous is not None:
                conn.execute(human_answers.update().where(*_is(answer.classifier, answer.domain))
                             .values(**_values(answer)))
            return previous

        return await self._run(work)

    async def remove_human_answer(self, domain: str, classifier: str) -> HumanAnswer | None:
        def work(conn: Connection) -> HumanAnswer | None:
            row = conn.execute(select(human_answers).where(*_is(classifier, domain)).with_for_update()).mappings().first()
            if row is None:
                return None
            conn.execute(delete(human_answers).where(*_is(classifier, domain)))
            latest = conn.execute(
                select(human_answer_history).where(human_answer_history.c.classifier == classifier,
                                                   human_answer_history.c.domain == domain)
                .order_by(human_answer_history.c.id.desc()).limit(1)).mappings().first()
            if latest is not None:
                conn.execute(delete(human_answer_history).where(human_answer_history.c.id == latest["id"]))
                if latest["answer"] is not None:  # it replaced an earlier human answer: that one is back
                    conn.execute(insert(human_answers).values(
                        classifier=classifier, domain=domain,
                        **{name: latest[name] for name in ("answer", "note", "corrected_by", "corrected_at")}))
            return _answer(row)

        return await self._run(work)

    async def human_answers(self, domains: Iterable[str], classifier: str) -> dict[str, HumanAnswer]:
        wanted = list(dict.fromkeys(domains))

        def work(conn: Connection) -> dict[str, HumanAnswer]:
            found: dict[str, HumanAnswer] = {}
            for start in range(0, len(wanted), _LOOKUP_CHUNK):
                rows = conn.execute(select(human_answers).where(
                    human_answers.c.classifier == classifier,
                    human_answers.c.domain.in_(wanted[start:start + _LOOKUP_CHUNK]))).mappings()
                found.update((row["domain"], _answer(row)) for row in rows)
            return found

        return await self._run(work) if wanted else {}

    async def list_human_answers(self, classifier: str | None, *, after: tuple[str, str] | None,
                                 limit: int) -> list[HumanAnswer]:
        query = select(human_answers)
        if classifier is not None:
            query = query.where(human_answers.c.classifier == classifier)
        if after is not None:  # keyset paging on the primary key (classifier, domain)
            query = query.where(tuple_(human_answers.c.classifier, human_answers.c.domain) > tuple_(*after))
        query = query.order_by(human_answers.c.classifier, human_answers.c.domain).limit(limit)
        return await self._run(lambda conn: [_answer(row) for row in conn.execute(query).mappings()])


def _claim(conn: Connection, answer: HumanAnswer) -> HumanAnswer | None:
    """Insert `answer` if its key has no human answer (None), else lock that row and return it.
    Targets the primary key human_answers (classifier, domain): of two first corrections racing,
    the second waits on the key, finds the first's row and replaces it as a second change."""
    dialect_insert: Any = postgres_insert if conn.dialect.name == "postgresql" else sqlite_insert
    inserted = conn.execute(dialect_insert(human_answers).values(
        classifier=answer.classifier, domain=answer.domain, **_values(answer))
        .on_conflict_do_nothing(index_elements=["classifier", "domain"]).returning(human_answers.c.domain))
    if inserted.first() is not None:
        return None
    row = conn.execute(select(human_answers).where(*_is(answer.classifier, answer.domain))
                       .with_for_update()).mappings().one()
    return _answer(row)


def _is(classifier: str, domain: str) -> tuple[Any, Any]:
    return human_answers.c.classifier == classifier, human_answers.c.domain == domain


def _values(answer: HumanAnswer) -> dict[str, Any]:
    return {"answer": answer.answer, "note": answer.note, "corrected_by": answer.corrected_by,
            "corrected_at": answer.corrected_at.timestamp()}


def _answer(row: Any) -> HumanAnswer:
    return HumanAnswer(domain=row["domain"], classifier=row["classifier"], answer=bool(row["answer"]),
                       note=row["note"], corrected_by=row["corrected_by"], corrected_at=epoch_time(row["corrected_at"]))
