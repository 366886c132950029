"""`firmsift eval --human-labels`: the labelled set taken from the human answers stored in the
database (people's corrections) instead of a labels file."""

from __future__ import annotations

import argparse
import asyncio

from firmsift.domain.evaluation import LabelledDomain
from firmsift.entrypoints.eval.backends import EvaluationBackends
from firmsift.entrypoints.eval.inputs import EvalInputError
from firmsift.entrypoints.settings import ConfigurationError
from firmsift.ports.infrastructure_errors import DatabaseFailure, InvalidDatabaseUrl
from firmsift.services.human_answers import all_human_answers


def labels_name(args: argparse.Namespace) -> tuple[str, str]:
    """What the labels are, for the reports, and the name the default report folder ends with: the
    labels file and its stem, or the human answers of the classifier. ConfigurationError unless
    exactly one of the two is asked for."""
    if (args.labels is None) == (not args.human_labels):
        raise ConfigurationError("give a LABELS.csv file or --human-labels, not both" if args.human_labels
                                 else "give a LABELS.csv file, or --human-labels to score against the human answers")
    if args.human_labels:
        return f"the human answers of {args.classifier} (database)", f"human-{args.classifier}"
    return str(args.labels), args.labels.stem


def human_labels(backends: EvaluationBackends, classifier: str) -> list[LabelledDomain]:
    """Every human answer of `classifier` as a label (its note as the label's notes), by domain.
    The schema is never migrated here, nor an empty database created: an evaluation does not
    change a database."""
    try:
        labels = asyncio.run(_read(backends, classifier))
    except (DatabaseFailure, InvalidDatabaseUrl) as error:
        kind = type(error.__cause__).__name__  # SQLAlchemy's class for it: OperationalError, ProgrammingError...
        raise ConfigurationError(f"--human-labels: cannot read the human answers from the database ({kind}); "
                                 f"is FIRMSIFT_DATABASE_URL right and migrated (`firmsift db upgrade`)?") from None
    finally:
        backends.close()
    if not labels:
        raise EvalInputError(f"--human-labels: no human answers for classifier {classifier!r} "
                             "(set some with `firmsift answers import` or PUT /answers/{classifier}/{domain})")
    return labels


async def _read(backends: EvaluationBackends, classifier: str) -> list[LabelledDomain]:
    store = backends.human_answers("eval --human-labels")  # refuses to create an empty database
    return [LabelledDomain(human.domain, human.answer, human.note)
            async for human in all_human_answers(store, classifier)]
