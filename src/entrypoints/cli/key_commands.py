"""`firmsift keys`: create, list and revoke API keys and set their daily spend limits. A key is
printed once, when it is created."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from firmsift.domain.budgets import parse_limit
from firmsift.domain.errors import InvalidRequest
from firmsift.services.budgets import KeySpend, set_daily_limit
from firmsift.services.keys import create_key, revoke_key
from firmsift.entrypoints.command_errors import EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:  # cli.py imports this module for its parser: keep `firmsift --help` instant
    from firmsift.services.admin import Admin

LIMIT_HELP = "USD the key's jobs may spend on the LLM a UTC day (e.g. 5 or 2.50), or 'none'"


def _limit(text: str) -> float | None:
    try:
        return parse_limit(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def add_keys_parser(commands: Any) -> None:
    """Add `keys create|list|revoke|set-limit` to the `firmsift` sub-command parsers."""
    keys = commands.add_parser("keys", help="create, list or revoke API keys; set their daily spend limits",
                               description="Manage the API keys callers send as 'Authorization: Bearer <key>'.")
    actions = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = actions.add_parser(
        "create", help="create a key and print it (once: only its SHA-256 digest is stored)",
        description="Create an API key and print it on stdout; its id and a reminder go to stderr. "
                    "The key cannot be shown again: store it now.")
    create.add_argument("--name", required=True, help="who or what the key is for")
    create.add_argument("--reply-queue", action="append", default=[], dest="reply_queues", metavar="QUEUE",
                        help="a reply queue the key may name in X-Reply-Queue (repeat for more; default none)")
    create.add_argument("--daily-limit", type=_limit, default=None, metavar="USD",
                        help=LIMIT_HELP + " (default none)")
    actions.add_parser("list", help="list keys (never the keys themselves) with limits and today's spend",
                       description="Print, one JSON line per key: id, name, reply queues, created and revoked "
                                   "times, daily limit and what its jobs spent today (UTC day; results of unknown "
                                   "cost count 0 USD and are counted apart). Then, on stderr, the global limit "
                                   "(FIRMSIFT_DAILY_SPEND_LIMIT_USD) and every key's spend together.")
    set_limit = actions.add_parser(
        "set-limit", help="set or remove a key's daily spend limit",
        description="Set a key's daily spend limit, or remove it with 'none'. It applies from the key's next "
                    "request, and to its paused jobs at their next check (FIRMSIFT_BUDGET_RECHECK_SECONDS).")
    set_limit.add_argument("key_id", help="the key's id (key_…)")
    set_limit.add_argument("limit", type=_limit, metavar="USD|none", help=LIMIT_HELP)
    revoke = actions.add_parser("revoke", help="revoke a key; requests with it fail from then on",
                                description="Revoke a key by its id (see `firmsift keys list`). Idempotent.")
    revoke.add_argument("key_id", help="the key's id (key_…)")


def run_keys(admin: Admin, args: argparse.Namespace) -> int:
    store = admin.api_keys
    if args.keys_command == "create":
        try:
            issued = asyncio.run(create_key(args.name, args.reply_queues, store, daily_limit_usd=args.daily_limit))
        except InvalidRequest as error:
            reasons = "; ".join(f"{r.value!r} {r.reason}" for r in error.rejections)
            print(f"firmsift: {error.message}: {reasons}", file=sys.stderr)
            return EXIT_USAGE
        print(issued.secret)
        print(f"created API key {issued.record.id} ({issued.record.name}); it is shown only now, store it safely",
              file=sys.stderr)
        return EXIT_OK
    if args.keys_command == "list":
        return _list(admin)
    if args.keys_command == "set-limit":
        key = asyncio.run(set_daily_limit(args.key_id, args.limit, store))  # unknown id: exit 1, as revoke
        shown = "no daily limit" if key.daily_limit_usd is None else f"a daily limit of {key.daily_limit_usd:g} USD"
        print(f"API key {key.id} ({key.name}) now has {shown}")
        return EXIT_OK
    revoked = asyncio.run(revoke_key(args.key_id, store))
    print(f"revoked API key {revoked.id} ({revoked.name}) at {revoked.revoked_at.isoformat() if revoked.revoked_at else ''}")
    return EXIT_OK


def _list(admin: Admin) -> int:
    budgets = admin.budgets

    async def read() -> tuple[list[KeySpend], Any]:
        return await budgets.key_spends(), await budgets.total_today()

    spends, (window, total) = asyncio.run(read())
    for spend in spends:
        print(json.dumps(_listed(spend)))
    limit = budgets.global_limit_usd
    print(f"{len(spends)} key(s); today (UTC, resets {window.resets_at.isoformat()}) all keys spent "
          f"{total.cost_usd:.6g} USD of a global limit of {'none' if limit is None else f'{limit:g} USD'}"
          f"{f', plus {total.cost_unknown_domains} result(s) of unknown cost' if total.cost_unknown_domains else ''}",
          file=sys.stderr)
    return EXIT_OK


def _listed(spend: KeySpend) -> dict[str, Any]:
    key = spend.key
    return {"id": key.id, "name": key.name, "reply_queues": list(key.reply_queues),
            "created_at": key.created_at.isoformat(),
            "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None,
            "daily_limit_usd": key.daily_limit_usd, "spent_today_usd": spend.spend.cost_usd,
            "cost_unknown_today": spend.spend.cost_unknown_domains}
