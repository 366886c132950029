"""`firmsift forget`: forget cached answers (or only the pre-check's outcomes) for some domains, a
batch's domains or a whole classifier, so the next job asks again."""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from firmsift.domain.errors import FirmsiftError, InvalidRequest
from firmsift.entrypoints.cli.batch_lookup import operator_batch
from firmsift.entrypoints.command_errors import EXIT_OK, CommandError
from firmsift.services.forget import ForgetAnswers, forget_answers

if TYPE_CHECKING:  # the use-cases only when the command runs
    from firmsift.services.admin import Admin


def add_forget_parser(commands: Any) -> None:
    text = ("forget cached answers so the next job about those domains asks again: for some domains "
            "(--domain), for the domains of a batch (--batch) or for all of a classifier's (--all); every "
            "cached answer, or with --precheck-only only the pre-check's outcomes (no_dns, unreachable, "
            "parked). People's corrections (`firmsift answers`) are kept. The API does the same: "
            "POST /answers/forget")
    forget = commands.add_parser("forget", help="forget cached answers so the next job asks again",
                                 description=text)
    scope = forget.add_mutually_exclusive_group(required=True)
    scope.add_argument("--domain", action="append", metavar="DOMAIN", help="a domain (repeat for more)")
    scope.add_argument("--batch", metavar="BATCH_ID", help="every domain of this batch (its classifier's answers)")
    scope.add_argument("--all", action="store_true", help="every cached answer of the classifier")
    forget.add_argument("--classifier", default="cpg", help="whose answers (default cpg; a batch has its own)")
    forget.add_argument("--precheck-only", action="store_true",
                        help="only the pre-check's outcomes (no_dns, unreachable, parked), not the LLM's answers")


def run_forget(admin: Admin, args: argparse.Namespace) -> int:
    async def forget() -> int:
        batch = await operator_batch(admin, args.batch) if args.batch else None
        command = ForgetAnswers(args.classifier, domains=tuple(args.domain) if args.domain else None, batch=batch,
                                everything=args.all, only_precheck=args.precheck_only)
        return await forget_answers(command, catalog=admin.catalog, answers=admin.answers,
                                    batches=admin.batches)

    try:
        forgotten = asyncio.run(forget())
    except InvalidRequest as error:  # each bad domain named, with why
        raise CommandError("; ".join([str(error), *(f"{r.value!r}: {r.reason}" for r in error.rejections)])) from None
    except FirmsiftError as error:
        raise CommandError(str(error)) from None
    what = "pre-check outcome(s)" if args.precheck_only else "cached answer(s)"
    print(f"forgot {forgotten} {what}; the next job about those domains asks again")
    return EXIT_OK

