"""Secrets stay out: which variables are keys, how text is masked, and what the trainer command gets."""

from __future__ import annotations

import pytest

from spade_llm.redact import HOLD_CHARS, StreamRedactor, key_like, redact, secret_values
from spade_llm.trainer import trainer_env

KEY = "sk-proj-Abc123Def456Ghi789"
TOKEN = "hf_QwErTyUiOpAsDfGhJkL"


def test_redact_masks_each_secret_and_the_userinfo_of_urls() -> None:
    text = (
        f"OPENAI_API_KEY={KEY}\n"
        f'{{"api_base": "http://user:pass@host.example/v1", "token": "{TOKEN}"}}\n'
        "push to https://x-access-token:ghp_123456@github.com/o/r.git, proxy socks5h://bob@10.0.0.1:1080\n"
        "plain http://host.example/v1 and mail bob@example.com stay\n"
    )
    masked = redact(text, [KEY, TOKEN])
    assert masked == (
        "OPENAI_API_KEY=***\n"
        '{"api_base": "http://***@host.example/v1", "token": "***"}\n'
        "push to https://***@github.com/o/r.git, proxy socks5h://***@10.0.0.1:1080\n"
        "plain http://host.example/v1 and mail bob@example.com stay\n"
    )
    assert redact(masked, [KEY, TOKEN]) == masked  # idempotent


def test_redact_masks_a_secret_that_holds_another_whole_and_ignores_empty_ones() -> None:
    assert redact(f"a {KEY}-suffix b", ["", KEY, f"{KEY}-suffix"]) == "a *** b"
    assert redact("nothing here", []) == "nothing here"


def test_redact_finds_userinfo_after_a_word_character() -> None:
    # no word boundary needed before the scheme: x_http://... is still a URL with credentials
    assert redact("x_http://u:p@h/ and =ftp://a:b@c", []) == "x_http://***@h/ and =ftp://***@c"
    # a JSON line with two fields is not taken for one URL's user-info
    assert redact('{"a":"http://h/x","b":"c@d"}', []) == '{"a":"http://h/x","b":"c@d"}'


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "GH_TOKEN",
        "WANDB_API_KEY",
        "SERPAPI_APIKEY",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_ACCESS_KEY_ID",
        "AWS_SESSION_TOKEN",
        "PGPASSWORD",
        "DB_PASSWD",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "MY_SECRET",
        "SESSION_COOKIE",
        "SSH_AUTH_SOCK",
        "SPADE_SANDBOX_TOKEN",
        "openai_api_key",
    ],
)
def test_key_like_names(name: str) -> None:
    assert key_like(name, "x")


@pytest.mark.parametrize(
    "name",
    [
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "PWD",
        "HF_HOME",
        "HF_HUB_CACHE",
        "TOKENIZERS_PARALLELISM",
        "CUDA_VISIBLE_DEVICES",
        "AWS_REGION",
        "AWS_PROFILE",
        "AWS_CA_BUNDLE",
    ],
)
def test_not_key_like_names(name: str) -> None:
    assert not key_like(name, "/some/value")


def test_a_url_with_credentials_makes_any_variable_key_like() -> None:
    assert key_like("HTTPS_PROXY", "http://bob:hunter2@proxy:3128")
    assert not key_like("HTTPS_PROXY", "http://proxy:3128")


def test_secret_values_are_the_long_values_of_key_like_variables_line_by_line() -> None:
    pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"
    env = {"OPENAI_API_KEY": KEY, "HF_TOKEN": TOKEN, "DB_PASSWORD": "pw", "SSH_KEY": pem, "PATH": "/usr/bin:/bin"}
    found = secret_values(env)
    assert KEY in found and TOKEN in found and pem in found and "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" in found
    assert "pw" not in found  # too short to mask without masking ordinary words
    assert "/usr/bin:/bin" not in found
    assert found == sorted(found, key=len, reverse=True)


def test_stream_redactor_masks_a_secret_split_at_any_point() -> None:
    line = f"step 1 key {KEY} via http://user:pa55@host/v1 done\n"
    for cut in range(1, len(line)):
        redactor = StreamRedactor([KEY])
        written = redactor.feed(line[:cut]) + redactor.feed(line[cut:]) + redactor.close()
        assert written == redact(line, [KEY]), cut


def test_stream_redactor_writes_whole_lines_at_once_and_holds_only_the_unfinished_one() -> None:
    redactor = StreamRedactor([KEY])
    assert redactor.feed(f"one {KEY}\ntwo\rthr") == "one ***\ntwo\r"  # tail -f sees the finished lines
    assert redactor.close() == "thr"


def test_stream_redactor_lets_a_line_without_end_through_but_keeps_the_secret_masked() -> None:
    redactor = StreamRedactor([KEY])
    filler = "x" * (HOLD_CHARS + 10)
    out = redactor.feed(filler)
    assert out and len(out) < len(filler)  # most of a long line goes out before its end
    out += redactor.feed(KEY[:5])
    out += redactor.feed(KEY[5:] + " end")
    out += redactor.close()
    assert out == filler + "*** end"


def test_trainer_env_drops_keys_unless_passed_and_keeps_the_rest() -> None:
    ours = {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "HF_HOME": "/cache/hf",
        "OPENAI_API_KEY": KEY,
        "HF_TOKEN": TOKEN,
        "AWS_ACCESS_KEY_ID": "AKIA0000000000",
        "AWS_REGION": "eu-west-1",
        "HTTPS_PROXY": "http://bob:hunter2@proxy:3128",
    }
    env = trainer_env(ours)
    assert env == {
        "PATH": "/usr/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "HF_HOME": "/cache/hf",
        "AWS_REGION": "eu-west-1",
    }
    passed = trainer_env(ours, ["HF_TOKEN", "AWS_*"])
    assert passed["HF_TOKEN"] == TOKEN and passed["AWS_ACCESS_KEY_ID"] == "AKIA0000000000"
    assert "OPENAI_API_KEY" not in passed and "HTTPS_PROXY" not in passed
    assert "OPENAI_API_KEY" not in trainer_env(ours, ["openai_api_key"])  # names are case-sensitive
