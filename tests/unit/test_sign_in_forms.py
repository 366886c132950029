"""The sign-in form's stateless token: good until its expiry, only with the secret that signed it,
only as issued (any change to it is refused), and only when the form echoes the browser's copy."""

from __future__ import annotations

from firmsift.domain.sign_in_forms import FORM_SECONDS, form_presented, issue_form_token, seconds_left

SECRET = bytes(range(32))
NOW = 1_800_000_000.0


def test_a_token_is_good_for_its_time_and_not_a_second_more() -> None:
    token = issue_form_token(SECRET, NOW)
    assert seconds_left(SECRET, token, NOW) == FORM_SECONDS
    assert seconds_left(SECRET, token, NOW + FORM_SECONDS - 1) == 1
    assert seconds_left(SECRET, token, NOW + FORM_SECONDS) == 0


def test_each_token_is_new() -> None:
    assert issue_form_token(SECRET, NOW) != issue_form_token(SECRET, NOW)


def test_a_token_signed_with_another_secret_or_changed_in_any_way_is_refused() -> None:
    token = issue_form_token(SECRET, NOW)
    expires, nonce, mac = token.split(".")
    later = str(int(expires) + 10 * FORM_SECONDS)
    forged = [
        issue_form_token(b"another secret", NOW),
        f"{later}.{nonce}.{mac}",  # a longer life
        f"{expires}.{nonce}x.{mac}",
        f"{expires}.{nonce}.{mac[:-1]}",
        f"{expires}.{nonce}",
        f"{expires}..{mac}",
        f"-{expires}.{nonce}.{mac}",
        token + "." + "x" * 200,
        "", "...", "not a token",
    ]
    assert [seconds_left(SECRET, wrong, NOW) for wrong in [*forged, None]] == [0] * (len(forged) + 1)


def test_the_form_must_echo_the_live_token_its_browser_holds() -> None:
    held, other = issue_form_token(SECRET, NOW), issue_form_token(SECRET, NOW)
    assert form_presented(SECRET, held, held, NOW)
    assert not form_presented(SECRET, held, other, NOW)  # a token fetched by another browser (a forged form)
    assert not form_presented(SECRET, None, held, NOW) and not form_presented(SECRET, held, None, NOW)
    assert not form_presented(SECRET, "", "", NOW)
    assert not form_presented(SECRET, held, held, NOW + FORM_SECONDS)  # expired
    made_up = issue_form_token(b"guessed", NOW)
    assert not form_presented(SECRET, made_up, made_up, NOW)  # a pair the client made up itself
