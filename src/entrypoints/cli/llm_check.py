"""`firmsift llm check`: one real call through the configured LLM settings, and what came of it."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import secrets
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, TextIO, cast

from firmsift.domain.model import ResultStatus
from firmsift.entrypoints.logs import configure_logging
from firmsift.entrypoints.settings import ConfigurationError, Settings
from firmsift.ports.providers import LLM
from firmsift.services.asking import ask_llm
from firmsift.entrypoints.command_errors import EXIT_FAILURE, EXIT_OK

if TYPE_CHECKING:
    from firmsift.domain.model import Answer, Classifier, Completion
    from firmsift.ports.providers import Pricing

DEFAULT_DOMAIN = "unilever.com"


class _Mode(Protocol):
    @property
    def label(self) -> str: ...


class NegotiatingLLM(LLM, Protocol):
    """The LLM adapter as the check reports it: the response format it asks in, which changes
    when the server refuses one (adapters/llm: format negotiation)."""

    mode: _Mode


def add_llm_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    llm = commands.add_parser("llm", help="check the configured LLM")
    actions = llm.add_subparsers(dest="llm_command", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check", help="make one real call through the LLM settings and report what happened",
        description="Ask the configured model one classification question (no web search: the model is told "
                    "no evidence could be gathered, so its answer has no quote to verify and keeps "
                    "confidence 2 at most), the way a worker does, with no retry. Prints the model, "
                    "the API base host, the response format that worked, latency, tokens and the parsed "
                    "answer; or the cause of the failure. Exits 0 when a readable answer came back, 1 if not.")
    check.add_argument("--domain", default=DEFAULT_DOMAIN, help=f"domain to ask about (default {DEFAULT_DOMAIN})")
    check.add_argument("--classifier", default="cpg", help="classifier to ask with (default: cpg)")


def run_llm_check(args: argparse.Namespace, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    from firmsift.entrypoints.wiring.roles import without_database  # the wiring: only when the check runs

    settings = Settings()
    configure_logging(settings.log_level)
    probe = without_database(settings).llm_probe()
    catalog = probe.catalog
    if args.classifier not in catalog:
        raise ConfigurationError(f"no classifier named {args.classifier!r} (configured: {', '.join(sorted(catalog))})")
    llm = cast("NegotiatingLLM", probe.llm)  # the adapter itself: one call, no retry, so a failure shows its own cause
    print(f"model:           {settings.llm_model}", file=out)
    print(f"API base:        {probe.endpoint}", file=out)
    asked_first = llm.mode
    started = time.monotonic()
    answer, completion = asyncio.run(_ask(llm, probe.pricing, catalog[args.classifier], args.domain, probe.clients))
    elapsed = time.monotonic() - started
    if completion is not None:
        fell_back = f" (after {asked_first.label} was refused)" if llm.mode != asked_first else ""
        print(f"response format: {llm.mode.label}{fell_back}", file=out)
    print(f"latency:         {elapsed:.2f} s", file=out)
    if completion is not None:
        print(f"tokens:          {_tokens(completion)}", file=out)
        print(f"cost:            {_cost(answer)}", file=out)
    if answer.status is not ResultStatus.DONE:
        print(f"firmsift llm check: FAILED: {answer.error}", file=err)
        return EXIT_FAILURE
    verdict = "yes" if answer.answer else "no"
    print(f"answer:          {args.domain}: {verdict}, confidence {answer.confidence}: {answer.reason}", file=out)
    assert answer.quote_status is not None  # every readable answer's quote is checked
    print(f"quote:           {answer.quote_status.value} (no evidence is sent, so no quote can verify)", file=out)
    return EXIT_OK


async def _ask(llm: LLM, pricing: Pricing, classifier: Classifier, domain: str,
               clients: contextlib.AsyncExitStack) -> tuple[Answer, Completion | None]:
    async with clients:  # the LLM's HTTP client, closed on the loop that used it
        return await ask_llm(domain, classifier, [], llm, pricing=pricing, slots=asyncio.Semaphore(1),
                             marker=secrets.token_hex(8), now=lambda: datetime.now(UTC))


def _tokens(completion: Completion) -> str:
    if completion.prompt_tokens is None and completion.completion_tokens is None:
        return "not reported by the provider"
    return f"{completion.prompt_tokens if completion.prompt_tokens is not None else '?'} in, " \
           f"{completion.completion_tokens if completion.completion_tokens is not None else '?'} out"


def _cost(answer: Answer) -> str:
    if answer.cost_usd is not None:
        return f"{format(answer.cost_usd, '.12f').rstrip('0').rstrip('.')} USD"
    if answer.tokens_in is None or answer.tokens_out is None:
        return "unknown (the provider reported no tokens)"
    return "unknown (no price for this model: set FIRMSIFT_LLM_INPUT_COST_PER_MILLION and _OUTPUT_)"
