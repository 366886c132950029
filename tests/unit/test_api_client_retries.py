"""`firmsift classify`'s API client: how long it waits between attempts at an API that does not answer."""

import httpx
import pytest

from firmsift.adapters import firmsift_api_client
from firmsift.adapters.firmsift_api_client import HttpJobsApi
from firmsift.ports.jobs_api import ClientError


def unreachable(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


@pytest.mark.parametrize(("retry_delay", "waits"), [
    (1.0, [1, 2, 4, 8, 16]),  # the default
    (0.01, [0.01, 0.02, 0.04, 0.08, 0.16]),
    (10.0, [10, 20, 30, 30, 30]),  # doubling stops at 30 s
])
def test_retries_wait_the_delay_doubling_up_to_30_seconds(monkeypatch: pytest.MonkeyPatch, retry_delay: float,
                                                          waits: list[float]) -> None:
    slept: list[float] = []
    monkeypatch.setattr(firmsift_api_client.time, "sleep", slept.append)
    with httpx.Client(base_url="http://api.test", transport=httpx.MockTransport(unreachable)) as http:
        with pytest.raises(ClientError, match="cannot reach the API at http://api.test"):
            HttpJobsApi(http, "cpg", retry_delay=retry_delay).job("job-1")
    assert slept == pytest.approx(waits)


def test_a_busy_api_s_longer_retry_after_is_waited_out(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(firmsift_api_client.time, "sleep", slept.append)
    answers = iter([httpx.Response(503, headers={"Retry-After": "7"}), httpx.Response(200, json={"status": "DONE"})])
    with httpx.Client(base_url="http://api.test", transport=httpx.MockTransport(lambda _request: next(answers))) as http:
        assert HttpJobsApi(http, "cpg", retry_delay=0.01).job("job-1") == {"status": "DONE"}
    assert slept == [7]
