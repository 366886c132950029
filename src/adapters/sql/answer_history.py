"""What a classifier's stored LLM answers used, for the dry run's estimate (AnswerHistory on
SQLAlchemy): their tokens and how long they took."""

from __future__ import annotations

from sqlalchemy import Engine, func, select

from firmsift.adapters.sql.engine import in_transaction
from firmsift.adapters.sql.tables import answers
from firmsift.domain.estimates import LATENCY_SAMPLES, LatencyHistory, TokenHistory
from firmsift.domain.model import Source


class SqlAnswerHistory:
    """Implements AnswerHistory on one SQLAlchemy engine (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def token_history(self, classifier: str) -> TokenHistory:
        query = select(func.count(), func.avg(answers.c.tokens_in), func.avg(answers.c.tokens_out)).where(
            answers.c.classifier == classifier, answers.c.source == Source.LLM.value,
            answers.c.tokens_in.is_not(None), answers.c.tokens_out.is_not(None))
        count, tokens_in, tokens_out = await in_transaction(self.engine, lambda conn: conn.execute(query).one())
        return TokenHistory(count, float(tokens_in or 0), float(tokens_out or 0))

    async def latency_history(self, classifier: str) -> LatencyHistory:
        # The latest answers on ix_answers_classifier_answered_at (migration 11), not a scan.
        # An answer that measured no evidence gathering (none was needed) counts it as 0 s.
        latest = (select(answers.c.llm_seconds, func.coalesce(answers.c.evidence_seconds, 0.0).label("evidence"))
                  .where(answers.c.classifier == classifier, answers.c.source == Source.LLM.value,
                         answers.c.llm_seconds.is_not(None))
                  .order_by(answers.c.answered_at.desc()).limit(LATENCY_SAMPLES).subquery())
        query = select(func.count(), func.avg(latest.c.llm_seconds), func.avg(latest.c.evidence))
        count, llm_seconds, evidence = await in_transaction(self.engine, lambda conn: conn.execute(query).one())
        return LatencyHistory(count, float(llm_seconds or 0), float(evidence or 0))
