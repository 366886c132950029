"""The SQS client's cut of botocore's endpoint data: it is the installed botocore's data cut to SQS,
it resolves every region of every partition as the whole data does, the requests a client sends
(address and signature scope) are the same as from a plain botocore client, the whole file is
never read, and a user's own endpoint data is still honoured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.exceptions import BotoCoreError
from botocore.loaders import JSONFileLoader
from botocore.regions import EndpointResolver

from firmsift.adapters.sqs.client import make_sqs_client
from firmsift.adapters.sqs import endpoint_data
from firmsift.adapters.sqs.endpoint_data import SQS_ENDPOINTS, bundled_endpoints, cut_to_sqs

WHOLE = bundled_endpoints()
CUT = json.loads(SQS_ENDPOINTS.read_text(encoding="utf-8"))
VARIANTS = [(False, False), (True, False), (False, True), (True, True)]  # (dualstack, fips)


def regions_to_try() -> list[str]:
    """Every region botocore names for any partition or for SQS, and five it does not know: four
    matched only by a partition's region pattern, one by none."""
    named = set()
    for partition in WHOLE["partitions"]:
        named |= set(partition["regions"]) | set(partition["services"]["sqs"].get("endpoints", {}))
    return sorted(named) + ["us-east-99", "cn-north-99", "us-gov-west-99", "eu-central-99", "xx-nowhere-1"]


@pytest.fixture
def aws_account(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Made-up credentials, no profile or data path of the machine's: requests are signed, never sent."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DATA_PATH", "AWS_USE_FIPS_ENDPOINT",
                 "AWS_USE_DUALSTACK_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SQS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def sent_request(client: Any) -> tuple[str, str]:
    """The URL and the signature's credential scope of a ListQueues call, answered here, not sent."""
    seen: list[tuple[str, str]] = []

    def answer(request: Any, **_: Any) -> AWSResponse:
        scope = request.headers["Authorization"].decode().split("Credential=")[1].split(",")[0].split("/", 2)[2]
        seen.append((request.url, scope))
        return AWSResponse(request.url, 200, {"Content-Type": "application/x-amz-json-1.0"}, _Body(b"{}"))

    client.meta.events.register("before-send.sqs.ListQueues", answer)
    client.list_queues()
    return seen[0]


class _Body:
    """The raw body botocore reads from an answer."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Any:
        yield self._data


def test_the_shipped_cut_is_the_installed_botocores_data_cut_to_sqs() -> None:
    assert CUT == cut_to_sqs(WHOLE), ("src/adapters/sqs/sqs_endpoints.json differs from the installed botocore's "
                                      "endpoint data: run `python -m firmsift.adapters.sqs.endpoint_data`")
    assert [set(partition["services"]) for partition in CUT["partitions"]] == [{"sqs"}] * len(WHOLE["partitions"])


def outcome(resolve: Any, *args: Any, **kwargs: Any) -> Any:
    """What a resolver answers, or the error it raises (as its type and message)."""
    try:
        return resolve(*args, **kwargs)
    except BotoCoreError as error:
        return type(error).__name__, str(error)


@pytest.mark.parametrize(("dualstack", "fips"), VARIANTS)
def test_every_region_resolves_as_with_the_whole_data(dualstack: bool, fips: bool) -> None:
    whole, cut = EndpointResolver(WHOLE, uses_builtin_data=True), EndpointResolver(CUT, uses_builtin_data=True)
    for region in regions_to_try():
        assert outcome(cut.construct_endpoint, "sqs", region, use_dualstack_endpoint=dualstack,
                       use_fips_endpoint=fips) == \
            outcome(whole.construct_endpoint, "sqs", region, use_dualstack_endpoint=dualstack,
                    use_fips_endpoint=fips), region
        assert outcome(cut.get_partition_for_region, region) == outcome(whole.get_partition_for_region, region)


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-3", "ap-southeast-5", "cn-north-1", "us-gov-west-1",
                                    "us-iso-east-1", "eusc-de-east-1", "us-east-99"])
@pytest.mark.parametrize(("dualstack", "fips"), VARIANTS)
def test_a_client_sends_what_a_plain_botocore_client_sends(aws_account: None, region: str, dualstack: bool,
                                                           fips: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_USE_DUALSTACK_ENDPOINT", str(dualstack).lower())
    monkeypatch.setenv("AWS_USE_FIPS_ENDPOINT", str(fips).lower())
    plain = botocore.session.Session().create_client("sqs", region_name=region, config=Config(retries={"mode": "standard"}))
    ours = make_sqs_client(region=region)
    assert (ours.meta.endpoint_url, ours.meta.region_name, ours.meta.partition) == \
        (plain.meta.endpoint_url, plain.meta.region_name, plain.meta.partition)
    assert sent_request(ours) == sent_request(plain)


def test_making_a_client_never_reads_the_whole_endpoint_data(aws_account: None,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    load_file = JSONFileLoader.load_file

    def recording(self: JSONFileLoader, file_path: str) -> Any:
        read.append(file_path)
        return load_file(self, file_path)

    monkeypatch.setattr(JSONFileLoader, "load_file", recording)
    make_sqs_client(region="eu-west-1")
    assert any(path.endswith("sqs_endpoints") for path in read), read
    assert not any(path.endswith("/data/endpoints") for path in read), read


def test_endpoint_data_of_the_users_own_is_read_as_it_is(aws_account: None, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    own = cut_to_sqs(WHOLE)
    own["partitions"][0]["services"]["sqs"]["endpoints"]["eu-west-1"] = {"hostname": "queues.example.internal"}
    (tmp_path / "endpoints.json").write_text(json.dumps(own), encoding="utf-8")
    monkeypatch.setenv("AWS_DATA_PATH", str(tmp_path))
    # Data that is not botocore's own is given to the endpoint rule set as the endpoint: botocore's rule.
    assert make_sqs_client(region="eu-west-1").meta.endpoint_url == "https://queues.example.internal"


def test_without_the_cut_a_client_reads_botocores_whole_data(aws_account: None, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # An install that lost the data file costs memory, not the client.
    monkeypatch.setattr(endpoint_data, "SQS_ENDPOINTS", tmp_path / "missing.json")
    plain = botocore.session.Session().create_client("sqs", region_name="eu-west-1")
    assert make_sqs_client(region="eu-west-1").meta.endpoint_url == plain.meta.endpoint_url
