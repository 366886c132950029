"""`firmsift keys`: create, list and revoke API keys. A key is printed once, when it is created."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

from firmsift.domain.errors import InvalidRequest
from firmsift.domain.keys import ApiKey
from firmsift.services.keys import create_key, revoke_key

if TYPE_CHECKING:  # cli.py imports this module for its parser: keep `firmsift --help` instant
    from firmsift.entrypoints.container import Container

EXIT_OK, EXIT_USAGE = 0, 2


def add_keys_parser(commands: Any) -> None:
    """Add `keys create|list|revoke` to the `firmsift` sub-command parsers."""
    keys = commands.add_parser("keys", help="create, list or revoke API keys",
                               description="Manage the API keys callers send as 'Authorization: Bearer <key>'.")
    actions = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = actions.add_parser(
        "create", help="create a key and print it (once: only its SHA-256 digest is stored)",
        description="Create an API key and print it on stdout; its id and a reminder go to stderr. "
                    "The key cannot be shown again: store it now.")
    create.add_argument("--name", required=True, help="who or what the key is for")
    create.add_argument("--reply-queue", action="append", default=[], dest="reply_queues", metavar="QUEUE",
                        help="a reply queue the key may name in X-Reply-Queue (repeat for more; default none)")
    actions.add_parser("list", help="list keys (never the keys themselves), one JSON line each",
                       description="Print id, name, reply queues, created and revoked times of every key.")
    revoke = actions.add_parser("revoke", help="revoke a key; requests with it fail from then on",
                                description="Revoke a key by its id (see `firmsift keys list`). Idempotent.")
    revoke.add_argument("key_id", help="the key's id (key_…)")


def run_keys(container: Container, args: argparse.Namespace) -> int:
    store = container.api_keys()
    if args.keys_command == "create":
        try:
            issued = asyncio.run(create_key(args.name, args.reply_queues, store))
        except InvalidRequest as error:
            reasons = "; ".join(f"{r.value!r} {r.reason}" for r in error.rejections)
            print(f"firmsift: {error.message}: {reasons}", file=sys.stderr)
            return EXIT_USAGE
        print(issued.secret)
        print(f"created API key {issued.record.id} ({issued.record.name}); it is shown only now, store it safely",
              file=sys.stderr)
        return EXIT_OK
    if args.keys_command == "list":
        keys = asyncio.run(store.list_keys())
        for key in keys:
            print(json.dumps(_listed(key)))
        print(f"{len(keys)} key(s)", file=sys.stderr)
        return EXIT_OK
    revoked = asyncio.run(revoke_key(args.key_id, store))
    print(f"revoked API key {revoked.id} ({revoked.name}) at {revoked.revoked_at.isoformat() if revoked.revoked_at else ''}")
    return EXIT_OK


def _listed(key: ApiKey) -> dict[str, Any]:
    return {"id": key.id, "name": key.name, "reply_queues": list(key.reply_queues),
            "created_at": key.created_at.isoformat(),
            "revoked_at": key.revoked_at.isoformat() if key.revoked_at else None}
