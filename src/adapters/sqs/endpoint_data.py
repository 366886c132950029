"""botocore's endpoint data cut to SQS, so that making an SQS client does not hold every AWS service's.

To make any client, botocore's endpoint resolver reads `endpoints.json`: 1.25 MB of JSON on every
service in every partition, 7.2 MiB once parsed, kept by the client's loader for the process's
life (dropping it gives back under 2 MiB: the rest stays fragmented). An SQS client reads only each
partition's own fields and its `sqs` entry. `sqs_endpoints.json`, beside this module, holds exactly
that, cut from the botocore that requirements.lock pins; a test fails when they differ, and
`python -m firmsift.adapters.sqs.endpoint_data` writes the file again (after `./dev lock` moves
botocore). A user's own `endpoints.json` (AWS_DATA_PATH, ~/.aws/models) is still read as it is."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import botocore.session
from botocore.loaders import Loader, create_loader

ENDPOINTS = "endpoints"  # botocore's name for the endpoint data, searched on the loader's paths
SQS_ENDPOINTS = Path(__file__).with_name("sqs_endpoints.json")
SERVICE = "sqs"


def cut_to_sqs(endpoints: dict[str, Any]) -> dict[str, Any]:
    """The endpoint document with each partition's services cut to SQS; every other field kept."""
    return {**endpoints, "partitions": [
        {**partition, "services": {name: entry for name, entry in partition["services"].items() if name == SERVICE}}
        for partition in endpoints["partitions"]]}


class SqsEndpointsLoader(Loader):
    """botocore's loader, on the same search paths, that answers the bundled endpoint data with its
    SQS cut. It names the bundled file as the source, so botocore resolves endpoints as it does from
    its own data (the endpoint rule set decides the URL)."""

    def load_data_with_path(self, name: str) -> tuple[Any, str]:
        if name == ENDPOINTS:
            found = self._first_file(name)
            if found is not None and self.is_builtin_path(found):
                cut = self.file_loader.load_file(str(SQS_ENDPOINTS.with_suffix("")))
                if cut is not None:  # else (the file missing from an install) botocore's whole data
                    return cut, found
        return super().load_data_with_path(name)

    def _first_file(self, name: str) -> str | None:
        """Where botocore would read `name` from: the first search path that has it."""
        for folder in self.search_paths:
            path = os.path.join(folder, name)
            if self.file_loader.exists(path):
                return path
        return None


def sqs_session() -> botocore.session.Session:
    """A botocore session whose clients read the SQS cut of the bundled endpoint data."""
    session = botocore.session.Session()
    default = create_loader(session.get_config_variable("data_path"))  # AWS_DATA_PATH, as botocore reads it
    session.register_component("data_loader", SqsEndpointsLoader(extra_search_paths=list(default.search_paths),
                                                                 include_default_search_paths=False))
    return session


def bundled_endpoints() -> dict[str, Any]:
    """The installed botocore's own endpoint data, whole."""
    data, _path = Loader(include_default_search_paths=False,
                         extra_search_paths=[Loader.BUILTIN_DATA_PATH]).load_data_with_path(ENDPOINTS)
    return data


def main() -> None:
    """Write sqs_endpoints.json from the installed botocore."""
    SQS_ENDPOINTS.write_text(json.dumps(cut_to_sqs(bundled_endpoints()), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {SQS_ENDPOINTS}")


if __name__ == "__main__":
    main()
