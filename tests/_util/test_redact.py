"""Secrets stay out: which variables are keys, how text is masked (by name and by value, in every form a
secret takes), and what the trainer command gets."""

from __future__ import annotations

import base64
import html
import json
import re
import socket
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spade_llm._util.redact import HOLD_CHARS, MASK, StreamRedactor, key_like, redact, secret_values
from spade_llm.train_step import trainer_env

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


# -- issue 35, finding 8: by value as well as by name; every form a secret takes -----------------------------

SECRET = "Zq8mK2pX7vR4tY9wB3nL6cF1"  # a key of no provider's shape: found only because it is known
SPECIAL = 'pa"ss\\w/0rd &<9+Zq' + "\u00e9"  # a password that each escaping changes
FINDING_8_NAMES = ["MYSQL_PWD", "GH_PAT", "API_KEYS", "SLACK_WEBHOOK_URL"]


@pytest.mark.parametrize("name", [*FINDING_8_NAMES, "DB_PASS", "REDIS_PW", "AUTH_JWT", "SENTRY_DSN", "AZURE_SAS"])
def test_the_names_issue_35_found_unmasked_are_key_like(name: str) -> None:
    assert key_like(name, "x")
    assert name not in trainer_env({name: "value-1234567890", "PATH": "/bin"})


def test_values_are_key_like_whatever_their_name() -> None:
    assert key_like("MY_SETTING", "ghp_0123456789abcdefghijABCDEFGHIJ012345")
    assert key_like("NOTIFY", "https://hooks.example/x?token=ab12cd34ef56")
    assert not key_like("MY_SETTING", "https://hooks.example/x?page=2")
    assert not key_like("PWD", "/home/me") and not key_like("OLDPWD", "/tmp")  # the shell's, not a password


def _b64(data: bytes, urlsafe: bool = False) -> str:
    return (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode()


def _forms_of_a_known_secret() -> list[tuple[str, str, str]]:
    """(form, text holding the secret in it, what of it must not be left in the text)."""
    s = SECRET
    b64_core = _b64(s.encode())[4:-4]  # the part that encodes the secret wherever it sits in a blob
    wrapped = base64.encodebytes(b"x" * 50 + s.encode() + b"y" * 50).decode()
    split = [(f"split at {k}", f"key: {s[:k]}\n{s[k:]} end", s) for k in (1, 5, 12, 23)]
    return [
        ("as is", f"export MY_VAR={s}", s),
        ("base64", f"echo {_b64(s.encode())} | base64 -d", b64_core),
        ("base64 url-safe", _b64(b"\xfb\xff" + s.encode(), urlsafe=True), _b64(b"\xfb\xff" + s.encode(), True)[4:-4]),
        ("base64 inside a blob, offset 1", _b64(b"{" + s.encode() + b"}"), _b64(b"{" + s.encode())[4:-4]),
        ("base64 inside a blob, offset 2", _b64(b'k"' + s.encode() + b'"'), _b64(b'k"' + s.encode())[4:-4]),
        ("Basic auth", f"Authorization: Basic {_b64(('user:' + s).encode())}", _b64(("user:" + s).encode())[8:-4]),
        ("base64 wrapped at 76 columns", wrapped, "".join(wrapped.split())[70:100]),
        ("URL-encoded", "https://h/x?q=" + urllib.parse.quote(SPECIAL, safe=""), urllib.parse.quote(SPECIAL, safe="")),
        ("URL-encoded, + for spaces", "q=" + urllib.parse.quote_plus(SPECIAL), urllib.parse.quote_plus(SPECIAL)),
        ("JSON-escaped", json.dumps({"out": f"he said {SPECIAL}"}), json.dumps(SPECIAL)[1:-1]),
        ("JSON-escaped, ASCII only", json.dumps([SPECIAL + "é"]), json.dumps(SPECIAL)[1:-1]),
        ("HTML-escaped", f"<td>{html.escape(SPECIAL)}</td>", html.escape(SPECIAL)),
        ("hex", s.encode().hex(), s.encode().hex()[2:-2]),
        ("quoted and concatenated", f"k = '{s[:9]}' + '{s[9:17]}' + '{s[17:]}'", s),
        ("JSON list of pieces", json.dumps([s[:8], s[8:16], s[16:]]), s),
        ("escaped newline in a JSON log", json.dumps(f"{s[:10]}\n{s[10:]}"), s),
        ("truncated", f"key prefix {s[:-3]}...", s[:-3]),
        ("half of it", f"tail {s[12:]}", s[12:]),
        *split,
    ]


@pytest.mark.parametrize(
    ("form", "text", "gone"), _forms_of_a_known_secret(), ids=[f for f, _, _ in _forms_of_a_known_secret()]
)
def test_a_known_secret_is_masked_in_every_form(form: str, text: str, gone: str) -> None:
    out = redact(text, [SECRET, SPECIAL])

    def together(text: str) -> str:  # the text as a split secret reads, its pieces together
        return re.sub(r"\s|\\n|[\\\"'+,]", "", text)

    joined = together(out)
    assert gone not in out and together(gone) not in joined, (form, out)
    for piece in (SECRET, SECRET[:12], SECRET[12:]):
        assert piece not in out and piece not in joined, (form, out)
    assert redact(out, [SECRET, SPECIAL]) == out


UNKNOWN_SECRETS = [  # (what, text, the secret in it)
    ("OpenAI", "key sk-proj-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW", "sk-proj-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW"),
    ("OpenAI, old", "sk-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7", "sk-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7"),
    (
        "Anthropic",
        "x=sk-ant-api03-aB3dE5fG7hI9jK1lM3nO5pQ7rS9t_U1vW-x",
        "sk-ant-api03-aB3dE5fG7hI9jK1lM3nO5pQ7rS9t_U1vW-x",
    ),
    ("GitHub", "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
    ("GitHub app", "token gho_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "gho_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
    ("GitHub server", "ghs_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "ghs_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
    (
        "GitHub fine-grained",
        "github_pat_11AB3dE5fG7hI9jK1lM3nO_5pQ7rS9tU1vW3xY5zA7bC9",
        "github_pat_11AB3dE5fG7hI9jK1lM3nO",
    ),
    ("GitLab", "glpat-aB3dE5fG7hI9jK1lM3nO5p", "glpat-aB3dE5fG7hI9jK1lM3nO5p"),
    ("Slack bot", "xoxb-123456789012-1234567890123-aB3dE5fG7hI9jK1lM3nO5pQ7", "xoxb-123456789012-1234567890123"),
    (
        "Slack webhook",
        "https://hooks.slack.com/services/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",
        "aB3dE5fG7hI9jK1lM3nO5pQ7",
    ),
    (
        "Discord webhook",
        "https://discord.com/api/webhooks/123456789/aB3dE5fG7hI9jK1lM3nO5pQ7rS9t",
        "aB3dE5fG7hI9jK1lM3nO5pQ7rS9t",
    ),
    ("AWS key id", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("AWS session key id", "id ASIAY34FZKBOKMUTVV7A,", "ASIAY34FZKBOKMUTVV7A"),
    ("AWS secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG"),
    ("Google", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    ("Google OAuth", "ya29.a0AfH6SMBx3dE5fG7hI9jK1lM3nO5pQ7rS9t", "ya29.a0AfH6SMBx3dE5fG7hI9jK1lM3nO5pQ7rS9t"),
    ("Hugging Face", "HUGGING=hf_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3x", "hf_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3x"),
    ("Stripe", "sk_live_aB3dE5fG7hI9jK1lM3nO5pQ7", "sk_live_aB3dE5fG7hI9jK1lM3nO5pQ7"),
    ("Stripe webhook", "whsec_aB3dE5fG7hI9jK1lM3nO5pQ7rS9t", "whsec_aB3dE5fG7hI9jK1lM3nO5pQ7rS9t"),
    ("npm", "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
    ("Groq", "gsk_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9dE1", "gsk_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5zA7bC9dE1"),
    (
        "JWT",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    (
        "private key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
        "AAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ),
    (
        "private key, cut",
        "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAo\\nIBAQC7",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAo",
    ),
    ("URL user-info", "pip install -i https://alice:pA55w0rd-basic@pypi.example/simple", "pA55w0rd-basic"),
    ("URL query key", "GET http://api.example/v1/m?api_key=QSKEY-123456789abc&x=1", "QSKEY-123456789abc"),
    ("URL query token", "wss://h.example/ws?token=tok9F3k2M8q1Z7x", "tok9F3k2M8q1Z7x"),
    (
        "URL signature",
        "https://b.s3.amazonaws.com/o?X-Amz-Signature=4f3c2b1a0e9d8c7b6a5f&X-Amz-Date=2024",
        "4f3c2b1a0e9d8c7b6a5f",
    ),
    ("URL sig", "https://acct.blob.core.windows.net/c/b?sv=2021-08-06&sig=Zm9vYmFy0YmF6cXV4%3D", "Zm9vYmFy0YmF6cXV4"),
    ("MYSQL_PWD", "MYSQL_PWD=s3cretPassw0rd mysql -u root", "s3cretPassw0rd"),
    ("GH_PAT", "export GH_PAT='1a2b3c4d5e6f7a8b9c0d'", "1a2b3c4d5e6f7a8b9c0d"),
    ("API_KEYS", 'API_KEYS="k1-8a7sd6f5g4h3,k2-1q2w3e4r5t6y"', "k2-1q2w3e4r5t6y"),
    ("SLACK_WEBHOOK_URL", "SLACK_WEBHOOK_URL=https://hooks.example.com/T0/abc123def456", "abc123def456"),
    ("a JSON field", '{"api_key": "c0ffee1234deadbeef5678"}', "c0ffee1234deadbeef5678"),
    ("a YAML field", "  client_secret: 9fK2mX7pQ4vR8tY3", "9fK2mX7pQ4vR8tY3"),
    ("a camelCase field", "accessToken = 'Ab12Cd34Ef56Gh78'", "Ab12Cd34Ef56Gh78"),
    ("a high-entropy password", "DB_PASSWORD=Kx!vQ@zR#tY$uP%wE^s", "Kx!vQ@zR#tY$uP%wE^s"),
    ("a command-line flag", "vllm serve m --api-key local-1234abcd --port 8000", "local-1234abcd"),
    ("a Bearer header", "curl -H 'Authorization: Bearer abc123def456ghi789jkl'", "abc123def456ghi789jkl"),
    ("a bare bearer", "sent bearer Q2x3Y4z5A6b7C8d9E0f1", "Q2x3Y4z5A6b7C8d9E0f1"),
]


@pytest.mark.parametrize(("what", "text", "secret"), UNKNOWN_SECRETS, ids=[w for w, _, _ in UNKNOWN_SECRETS])
def test_a_secret_nobody_named_is_masked_by_its_shape_or_its_place(what: str, text: str, secret: str) -> None:
    out = redact(text, [])
    assert secret not in out, (what, out)
    assert MASK in out
    assert redact(out, []) == out  # idempotent


ORDINARY = [  # text a task, a test or a log holds, that no rule may touch
    'digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"',
    'assert sha256(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"',
    "def f(key, token):\n    return key + token\n",
    'key = "name"; token = tokens[0]; api_key = os.environ["OPENAI_API_KEY"]',
    'password_hash = "5f4dcc3b5aa765d61d8327deb882cf99"; KEY_HASH = "a1b2c3d4e5f6a7b8"',
    'primary_key_column = "user_id_2024"; cache_key = f"user:{uid}"',
    "api_key = self.api_key or get_key()  # password = None",
    "secret_number = 42; max_tokens = 2048; eos_token_id: 151645",
    "pad_token: <|endoftext|>  tokenizer: Qwen2TokenizerFast  tokenizer_config.json",
    "{'loss': 0.3123, 'grad_norm': 1.234, 'learning_rate': 2e-05, 'epoch': 0.5}",
    "https://example.com/search?q=hello&page=2&sort_key=name&token=abc",
    "model_api_base: http://127.0.0.1:8100/v1 and mail bob@example.com",
    "disk-usage-report-for-service-12345678901234567890 task-sk-learn",
    "f(('sk-short',)) == True; f(('AKIA',)) == False",
    "Use a bearer token: the Authorization header carries it.",
    "--token-file /run/secrets/token --api-key $OPENAI_API_KEY --password ${DB_PASSWORD}",
    'headers = {"Authorization": f"Bearer {token}"}',
    "uuid 123e4567-e89b-12d3-a456-426614174000 and base64 aGVsbG8gd29ybGQ=",
    "spade_llm/store/rundir.py: RUN_DIR/exports/epoch-000/grpo.jsonl",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_and_logs_are_left_alone(text: str) -> None:
    assert redact(text, [SECRET]) == text


def test_a_fake_runs_records_come_through_unchanged(tmp_path: Path) -> None:
    """Tasks, hidden tests, answers and prompts of the three kinds: nothing in them is a secret."""
    from spade_llm._util.redact import Redactor
    from spade_llm.cli.app import main

    config = tmp_path / "kinds.yaml"
    config.write_text("curriculum:\n  kinds: {induction: 0.5, deduction: 0.25, abduction: 0.25}\n")
    out = tmp_path / "run"
    argv = ["run", "--config", str(config), "--epochs", "2", "--tasks-per-epoch", "6", "--samples-per-task", "2"]
    assert main([*argv, "--sandbox", "auto", "--seed", "3", "--out", str(out), "--quiet"]) == 0
    redactor = Redactor([SECRET, "hf_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3x"])
    records = [json.loads(line) for path in out.glob("*.jsonl") for line in path.read_text().splitlines()]
    assert len(records) > 50
    for record in records:
        assert redactor.data(record) == record


def test_records_manifests_and_summaries_are_written_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Our own secret, in any form, is masked everywhere; secrets nobody named only where the text is no
    data (summary.json, config.yaml), never in a journal (issue 35 review, F4 finding 1)."""
    from spade_llm.store import RunDir

    monkeypatch.setenv("MYSQL_PWD", SECRET)
    run = RunDir(tmp_path)
    record = {
        "text": f"pwd {SECRET} b64 {_b64(SECRET.encode())} split {SECRET[:10]}\n{SECRET[10:]}",
        "nested": [{"url": "http://bob:pA55w0rd-basic@h/v1?key=QSKEY-123456789abc"}],
        f"key-{SECRET}": "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
        "n": 3,
        "ok": 'f("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"',
    }
    run.append("tasks.jsonl", [record])
    run.write_json("summary.json", record)
    run.write_yaml("config.yaml", record)
    for name in ("tasks.jsonl", "summary.json", "config.yaml"):
        text = (tmp_path / name).read_text()
        for leaked in (SECRET, SECRET[:12], _b64(SECRET.encode())[4:-4]):
            assert leaked not in text, (name, leaked)
        assert "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" in text
    for name in ("summary.json", "config.yaml"):
        text = (tmp_path / name).read_text()
        for leaked in ("pA55w0rd-basic", "QSKEY-123456789abc", "ghp_aB3dE5fG7"):
            assert leaked not in text, (name, leaked)
    written = json.loads((tmp_path / "tasks.jsonl").read_text())  # still one JSON record, its data as it was
    assert written["n"] == 3 and written["ok"] == record["ok"] and written["nested"] == record["nested"]
    assert written["key-***"] == record[f"key-{SECRET}"]


# -- issue 35 review (F4): a journal is data; the patterns are for text that is not ---------------------------

TASK_DATA = [  # (a test's input, its expected value): text of every pattern's shape, which a task may well hold
    ("('user=bob&api_key=abc12345',)", "'abc12345'"),
    ("('https://alice:s3cret99@example.com',)", "'alice'"),
    ("('Authorization: Bearer abc123def456ghi789',)", "'abc123def456ghi789'"),
    ("('OPENAI_API_KEY=correcthorsebatterystaple',)", "'correcthorsebatterystaple'"),
    ("('sk-proj-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW',)", "True"),
    ("('-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n',)", "'pem'"),
    ("('GET /x?token=0123456789012345',)", "'0123456789012345'"),
]


def _task(tests: list[tuple[str, str]]) -> dict[str, object]:
    return {
        "task_id": "t1",
        "prompt": "Parse the credential out of a string.",
        "tests": [{"input": i, "expected": e} for i, e in tests],
        "reference": "def f(s):\n    return s.split('api_key=')[1]\n",
    }


def test_a_journal_keeps_task_data_of_every_pattern_shape(tmp_path: Path) -> None:
    """A task whose tests read like credentials reads back as it was written: the stored test still holds,
    exports train on it, a resume judges against it (a685e31 + round 1: ``api_key=***``, ``https://***@``)."""
    from spade_llm.store import REJECTED, TASKS, TRAJECTORIES, RunDir, read_jsonl

    run = RunDir(tmp_path)
    task = _task(TASK_DATA)
    for journal in (TASKS, REJECTED, TRAJECTORIES):
        run.append(journal, [task])
        assert list(read_jsonl(tmp_path / journal)) == [task], journal
    run.insert(TASKS, [(1, task)])  # resume's repairs write the same way
    assert list(read_jsonl(tmp_path / TASKS)) == [task, task]


def test_the_same_task_data_is_masked_in_text_that_is_not_data(tmp_path: Path) -> None:
    """The other side of the line: a log line, an error, summary.json, config.yaml still get every pattern."""
    from spade_llm._util.redact import redact_text
    from spade_llm.store import RunDir

    for tests in TASK_DATA[:5]:
        secret = tests[1].strip("'")
        if secret not in ("True", "alice"):
            assert secret not in redact_text(f"error: {tests[0]}"), tests
    assert "s3cret99" not in redact_text("fetching https://alice:s3cret99@example.com")
    RunDir(tmp_path).write_json("summary.json", {"stopped_because": f"bad input {TASK_DATA[0][0]}"})
    assert "abc12345" not in (tmp_path / "summary.json").read_text()


def test_our_own_secrets_are_masked_in_a_journal_in_every_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's own: an environment key, a registered token, an api_base's credentials (as get_llm
    registers them): masked in records too, whole, encoded or split."""
    import spade_llm._util.redact
    from spade_llm._util.redact import register_secret
    from spade_llm.config import LLMConfig, RoleConfig
    from spade_llm.llm.registry import get_llm
    from spade_llm.store import TRAJECTORIES, RunDir

    monkeypatch.setattr(spade_llm._util.redact, "_registered", set())  # this test's registrations end with it
    monkeypatch.setattr(spade_llm._util.redact, "_cache", None)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", SECRET)
    register_secret("tok-Registered-7f3a9c2e11")
    get_llm(
        RoleConfig(model="openai/m", api_base="http://bob:Pw-of-bob-4417@h.example/v1?api_key=QK-77a1b2c3d4"),
        LLMConfig(),
    )
    answer = (
        f"print({SECRET[:9]!r} + {SECRET[9:]!r}) {_b64(SECRET.encode())} tok-Registered-7f3a9c2e11 "
        f"{urllib.parse.quote('Pw-of-bob-4417')} {_b64(b'bob:Pw-of-bob-4417')} QK-77a1b2c3d4"
    )
    RunDir(tmp_path).append(TRAJECTORIES, [{"answer": answer, "n": 1}])
    text = (tmp_path / TRAJECTORIES).read_text()
    for leaked in (SECRET[:9], SECRET[9:], "Registered-7f3a9c2e11", "Pw-of-bob-4417", "QK-77a1b2c3d4"):
        assert leaked not in text, leaked
    assert _b64(b"bob:Pw-of-bob-4417")[4:-4] not in text and _b64(SECRET.encode())[4:-4] not in text


# -- issue 35 review (F4): no text costs more than linear time -------------------------------------------------


class CountingPattern:
    """A compiled pattern that counts its attempts and the characters its matches covered: the work a
    regex does past its start, which a bounded pattern tried once per start keeps linear."""

    def __init__(self, pattern: re.Pattern[str], tally: dict[str, int]) -> None:
        self.pattern, self.tally = pattern, tally

    def _count(self, m: re.Match[str] | None, pos: int) -> re.Match[str] | None:
        self.tally["attempts"] += 1
        if m is not None:
            self.tally["covered"] += m.end() - pos
        return m

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._count(self.pattern.match(text, pos, endpos), pos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._count(self.pattern.fullmatch(text, pos, endpos), pos)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        m = self.pattern.search(text, pos, endpos)
        return self._count(m, m.start() if m else pos)

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        for m in self.pattern.finditer(text, pos, endpos):
            self._count(m, m.start())
            yield m


WORST_UNITS = [  # what makes a rule that tries every start of a shape match the same key again and again
    "sk-",
    "sk-ant-",
    "xoxb-",
    "glpat-",
    "GOCSPX-",
    "eyJ",
    "eyJabcdefghij.",
    "key=",
    "?token=",
    "api_key: ",
    "MYSQL_PWD=x",
    "--api-key ",
    "Bearer ",
    "Basic ",
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE KEY-----\nAAAAAAAAAAAAAAAAAAAA\n",
    "https://hooks.slack.com/services/",
    "://u@",
]


def _counted_work(monkeypatch: pytest.MonkeyPatch, text: str) -> dict[str, int]:
    import spade_llm._util.redact as r

    tally = {"attempts": 0, "covered": 0}
    monkeypatch.setattr(r, "_SHAPE_AT", {k: CountingPattern(v, tally) for k, v in r._SHAPE_AT.items()})
    for name in ("_ASSIGN", "_FLAG", "_BEARER", "_BASIC", "_PEM_BEGIN", "_PEM_END", "_PEM_BODY", "_WEBHOOK_PATHS"):
        if hasattr(r, name):  # the names of this module's patterns (a685e31 had _PRIVATE_KEY for the PEM ones)
            monkeypatch.setattr(r, name, CountingPattern(getattr(r, name), tally))
    if hasattr(r, "_PRIVATE_KEY"):
        monkeypatch.setattr(r, "_PRIVATE_KEY", CountingPattern(r._PRIVATE_KEY, tally))
    r.Redactor([SECRET]).text(text)
    monkeypatch.undo()
    return tally


@pytest.mark.parametrize("unit", WORST_UNITS)
def test_repeated_starts_cost_linear_work(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The characters all matches cover, summed, stay within a few times the text's length (a685e31 + round
    1: ``"sk-" * n`` matched the rest of the text from each of its n/3 starts, 0.6 MB took 43 s). Counted,
    not timed: the figure does not follow the machine's load."""
    n = 60_000
    text = unit * (n // len(unit))
    work = _counted_work(monkeypatch, text)
    assert work["covered"] <= 4 * len(text) + 10_000, work
    assert work["attempts"] <= len(text), work


def _unbounded(pattern: str) -> list[str]:
    """The repeats of ``pattern`` with no upper bound (``*``, ``+``, ``{n,}``)."""
    import re._parser as sre

    found: list[str] = []

    def walk(items: object) -> None:
        for op, arg in items:  # type: ignore[attr-defined]
            if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
                low, high, sub = arg
                if high == sre.MAXREPEAT:
                    found.append(f"{{{low},}}")
                walk(sub)
            elif op is sre.SUBPATTERN:
                walk(arg[-1])
            elif op is sre.BRANCH:
                for branch in arg[1]:
                    walk(branch)
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                walk(arg[1])

    walk(sre.parse(pattern))
    return found


def test_every_pattern_tried_at_many_starts_is_bounded() -> None:
    import spade_llm._util.redact as r

    patterns = {f"shape {k}": v.pattern for k, v in r._SHAPE_AT.items()}
    for name in ("_ASSIGN", "_FLAG", "_BEARER", "_BASIC", "_PEM_BEGIN", "_PEM_END", "_PEM_BODY", "_WEBHOOK_PATHS"):
        patterns[name] = getattr(r, name).pattern
    assert {name: found for name, p in patterns.items() if (found := _unbounded(p))} == {}


def test_a_line_arriving_a_character_at_a_time_is_looked_at_once_per_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream holds an unfinished line back; it is not looked at again for every read (a progress bar
    printed a character at a time cost the square of its length)."""
    import spade_llm._util.redact as r

    calls = {"n": 0}
    spans = r.Redactor.spans

    def counted(self: r.Redactor, text: str, *more: Any) -> list[tuple[int, int]]:
        calls["n"] += 1
        return spans(self, text, *more)

    monkeypatch.setattr(r.Redactor, "spans", counted)
    stream = StreamRedactor([SECRET])
    out = "".join(stream.feed(c) for c in "x" * 5000 + f" {SECRET}\n") + stream.close()
    assert out == "x" * 5000 + " ***\n"
    assert calls["n"] <= 3, calls


# -- issue 35 review (F4): what the name says, the forms a known secret takes, what an environment value is ------

NAMED_SECRETS = [  # (text of a log or an error, the secret in it): the name says credential, whatever the value
    ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ("curl -H 'Authorization: basic YWxpY2U6czNjcmV0'", "YWxpY2U6czNjcmV0"),
    ("sent Basic Ym9iOmh1bnRlcjI= to the proxy", "Ym9iOmh1bnRlcjI="),  # decodes to user:password
    ("GET /v1/models?api_key=ABCDEFGHIJKLmnopq", "ABCDEFGHIJKLmnopq"),
    ("GET https://h.example/x?token=0123456789012345", "0123456789012345"),
    ("wss://h.example/ws?access_token=abcdefghijklmnop&x=1", "abcdefghijklmnop"),
    ("OPENAI_API_KEY=correcthorsebatterystaple", "correcthorsebatterystaple"),
    ("export MYSQL_PWD=secretpw", "secretpw"),
    ("HF_TOKEN: abcdefghijklmnopqrst", "abcdefghijklmnopqrst"),
    ('{"password": "opensesame"}', "opensesame"),
    ("client_secret=onlyletterssecret", "onlyletterssecret"),
    ("GH_PAT='0123456789012345'", "0123456789012345"),
    ("DB_PASS=tr0ub4dor", "tr0ub4dor"),
    ("--api-key onlyletterskey", "onlyletterskey"),
]


@pytest.mark.parametrize(("text", "secret"), NAMED_SECRETS, ids=[t for t, _ in NAMED_SECRETS])
def test_any_literal_of_a_name_that_says_credential_is_masked(text: str, secret: str) -> None:
    out = redact(text, [])
    assert secret not in out and MASK in out, out
    assert redact(out, []) == out


NOT_SECRETS = [  # the same shapes, where the name says something else: left as they are
    "SORT_KEY=category_name",
    "eos_token = '<|im_end|>'; pad_token = 'endoftext'",
    "Use the basic functionality first; Basic usage: spade run",
    "PWD=/home/me/project OLDPWD=/home/me",
    "password_hash = 'correcthorsebattery'; API_KEY_FILE=/run/secrets/openai",
    "https://example.com/search?q=hello&page=2&sort=updated&view=listing",
    "primary_key = 'user_identifier'; cache_key = 'profile_and_more'",
    "max_tokens: 2048  # tokenizer: Qwen2TokenizerFast",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_a_name_that_says_something_else_keeps_its_value(text: str) -> None:
    assert redact(text, []) == text


def test_a_known_secret_escaped_character_by_character_or_in_upper_case_hex_is_masked() -> None:
    s = SECRET
    forms = {
        "upper hex": s.encode().hex().upper(),
        "\\u escapes": "".join(f"\\u{ord(c):04x}" for c in s),
        "\\u escapes, upper": "".join(f"\\u{ord(c):04X}" for c in s),
        "\\x escapes": "".join(f"\\x{b:02x}" for b in s.encode()),
        "% every byte": "".join(f"%{b:02X}" for b in s.encode()),
        "&#N;": "".join(f"&#{ord(c)};" for c in s),
        "&#xH;": "".join(f"&#x{ord(c):x};" for c in s),
    }
    for what, form in forms.items():
        out = redact(f'log: "{form}" end', [s])
        assert form not in out and form[len(form) // 4 : len(form) // 2] not in out, (what, out)
        assert out.startswith('log: "') and out.endswith('" end'), (what, out)


@pytest.mark.parametrize(
    "value",
    ["/usr/bin:/opt/sk-learn-toolkit/bin", "/opt/ghp_tools/bin:/usr/bin", "en_US.UTF-8", "/srv/sk-data1/x:/bin"],
)
def test_an_environment_value_holding_a_key_shape_inside_a_word_is_no_key(value: str) -> None:
    assert not key_like("PATH", value) and not key_like("TOOLS", value)
    assert trainer_env({"PATH": value})["PATH"] == value


@pytest.mark.parametrize(
    "value",
    [
        "sk-proj-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW",
        "/usr/bin:sk-proj-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW",  # a whole part of a list is a key
        "a, ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5",
        "https://u:pA55w0rd-basic@h.example/v1",
        "https://hooks.slack.com/services/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",
    ],
)
def test_an_environment_value_that_is_a_key_is_key_like(value: str) -> None:
    assert key_like("SOMETHING", value)


def test_scrub_secrets_uses_the_rule_of_the_module() -> None:
    """One URL parser, one notion of a secret's name (round 1 kept a second pair of regexes in scrub_secrets):
    a query value holding ``@`` is no user-info, a camelCase or ``*_PAT`` field is a secret's, an int never."""
    from spade_llm._util.redact import scrub_secrets

    data = {
        "api_base": "http://host:8000/v1?email=a@b.example",
        "proxy": "socks5h://bob:pw-of-bob@10.0.0.1:1080",
        "clientSecret": "s3cr3t-value",
        "GH_PAT": "abc",
        "max_tokens": 2048,
    }
    assert scrub_secrets(data) == {
        "api_base": "http://host:8000/v1?email=a@b.example",  # round 1: "http://b.example" (the host lost)
        "proxy": "socks5h://10.0.0.1:1080",
        "clientSecret": MASK,
        "GH_PAT": MASK,
        "max_tokens": 2048,
    }


def test_a_client_token_is_masked_in_errors_in_every_form(monkeypatch: pytest.MonkeyPatch) -> None:
    """``trl.token_masked`` registers the token with the one rule (round 1 looked for it as is and URL-quoted
    only): base64 in a Basic header, split, JSON-escaped: none leaves in an error, nor in a log line after."""
    import traceback

    import spade_llm._util.redact
    from spade_llm._util.redact import redact_text
    from spade_llm.integrations.trl import token_masked

    monkeypatch.setattr(spade_llm._util.redact, "_registered", set())
    monkeypatch.setattr(spade_llm._util.redact, "_cache", None)
    token = "tok-SECRET-6d1f9a2b3c4d5e6f"
    texts = [
        f"handshake sent Authorization: Basic {_b64(f'spade:{token}'.encode())}",
        f"url ws://h/ws?t={token[:10]}' '{token[10:]}",
        f"state {json.dumps({'token': token})}",
    ]
    for text in texts:
        with pytest.raises(ConnectionError) as caught, token_masked(token):
            try:
                raise OSError(text)
            except OSError as inner:
                raise ConnectionError(f"failed: {text}") from inner
        shown = "".join(traceback.format_exception(caught.value))
        assert token not in shown and token[10:] not in shown and _b64(f"spade:{token}".encode())[8:-4] not in shown
    assert token not in redact_text(f"later, a log line: {token}")  # registered for the process


# -- properties ----------------------------------------------------------------------------------------------

KEY_CHARS = st.text("ABCDEFGHJKLMNPQRSTUVWXYZ0123456789", min_size=16, max_size=48)
CONTEXT = st.text("abcdefghijklmnopqrstuvwxyz .:=()[]{}#-_\n", max_size=80)
SEPARATORS = st.sampled_from(["\n", "\r\n", "\\n", " ", "\n    ", "' + '", '", "', "\\\n", "\t"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(KEY_CHARS, CONTEXT, CONTEXT, st.data())
def test_a_known_secret_split_anywhere_by_any_separator_never_survives(
    secret: str, before: str, after: str, data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, len(secret) - 1), max_size=3)))
    pieces = [secret[a:b] for a, b in zip([0, *cuts], [*cuts, len(secret)], strict=True)]
    text = before + "".join(p + (data.draw(SEPARATORS) if i < len(pieces) - 1 else "") for i, p in enumerate(pieces))
    text += after
    out = redact(text, [secret])
    assert secret not in re.sub(r"\s|\\n|['\",+\\]", "", out)
    half = len(secret) // 2
    assert secret[:half] not in out and secret[-half:] not in out


@settings(max_examples=200, deadline=None)
@given(KEY_CHARS, CONTEXT, st.integers(0, 2), st.booleans(), st.sampled_from(["b64", "url", "json", "hex"]))
def test_a_known_secret_encoded_never_survives(secret: str, before: str, offset: int, urlsafe: bool, how: str) -> None:
    value = f'{secret}/+"\\'  # characters each encoding changes
    if how == "b64":
        encoded = _b64(b"\x01" * offset + value.encode(), urlsafe)
        core = _b64(value.encode(), urlsafe)[4:-4]
    elif how == "url":
        encoded = core = urllib.parse.quote(value, safe="")
    elif how == "json":
        encoded = core = json.dumps(value)[1:-1]
    else:
        encoded = core = value.encode().hex()
    out = redact(before + encoded + before, [value])
    assert core not in out


@settings(max_examples=150, deadline=None)
@given(KEY_CHARS, CONTEXT, st.lists(st.integers(1, 40), min_size=1, max_size=12), st.integers(1, 47))
def test_a_stream_masks_a_secret_whatever_the_reads_and_line_breaks(
    secret: str, context: str, reads: list[int], cut: int
) -> None:
    cut = min(cut, len(secret) - 1)
    text = f"{context}\nstep 1 {secret}\n{context}\nkey {secret[:cut]}\n{secret[cut:]} done\n{context}"
    redactor = StreamRedactor([secret])
    out, at = "", 0
    for size in reads * 20:
        if at >= len(text):
            break
        out += redactor.feed(text[at : at + size])
        at += size
    out += redactor.feed(text[at:]) + redactor.close()
    assert secret not in out and secret[: len(secret) // 2] not in out and secret[-(len(secret) // 2) :] not in out
    assert out.count("\n") >= text.count("\n") - 1  # nothing is lost but the secrets (and the break in one)
    assert out.endswith(context)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_redaction_is_idempotent_and_maps_split_secrets_back_exactly(text: str) -> None:
    from spade_llm._util.redact import _KEPT, _SEPARATORS

    once = redact(text, [SECRET])
    assert redact(once, [SECRET]) == once
    assert "".join(_KEPT.findall(text)) == _SEPARATORS.sub("", text)


def test_a_private_key_printed_line_by_line_is_masked_to_its_end() -> None:
    body = [f"MIIEv{i:02d}QIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7{i:02d}" for i in range(40)]
    text = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\nepoch 1 loss 0.3\n"
    redactor = StreamRedactor([])
    out = "".join(redactor.feed(line + "\n") for line in text.splitlines()) + redactor.close()
    assert not any(line in out for line in body)
    assert out.endswith("epoch 1 loss 0.3\n")


# -- issue 35, finding 21: credentials of an api_base in summary.json and manifest.json ----------------------


def _leaks(folder: Path, secrets: list[str]) -> list[str]:
    """``file: secret`` for each secret found in a file of ``folder`` (every file, the logs included)."""
    return [
        f"{path.relative_to(folder)}: {s}"
        for path in sorted(folder.rglob("*"))
        if path.is_file()
        for s in secrets
        if s.encode() in path.read_bytes()
    ]


@pytest.mark.e2e
def test_a_query_string_key_of_an_api_base_stays_out_of_the_run_directory(
    tmp_path: Path, allow_model_requests: str
) -> None:
    from spade_llm.cli.app import main

    with socket.socket() as s:  # nothing listens there: the solver's endpoint is down, the run stops
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "c.yaml"
    config.write_text("llm: {breaker_s: 1, max_retries: 0, timeout_s: 2}\n")
    api_base = f"http://bob:pA55-argv-basic@127.0.0.1:{port}/v1?api_key=QSKEY-argv-987654321"
    out = tmp_path / "run"
    argv = ["run", "--config", str(config), "--solver-model", "openai/x", "--api-base", api_base, "--epochs", "1"]
    code = main([*argv, "--tasks-per-epoch", "1", "--sandbox", "auto", "--out", str(out), "--quiet"])
    assert code == 3  # stopped: the endpoint is down; summary.json says why, naming the endpoint
    assert "stopped_because" in json.loads((out / "summary.json").read_text())
    assert "argv" in json.loads((out / "manifest.json").read_text())
    assert _leaks(out, ["QSKEY-argv-987654321", "pA55-argv-basic"]) == []  # a685e31: manifest, config, summary


def test_an_api_base_recorded_masked_is_refused_with_one_line_naming_the_flag() -> None:
    """config.yaml records ``?key=***``: a resume must not send ``***`` as the key and fail at the endpoint
    (round 1: exit 3, "401 from the endpoint"); it says what to pass instead."""
    from spade_llm.config import LLMConfig, RoleConfig
    from spade_llm.errors import UserError
    from spade_llm.llm.registry import get_llm

    for base in ("http://h.example/v1?api_key=***", "http://***@h.example/v1", ["http://a/v1", "http://b/v1?sig=***"]):
        with pytest.raises(UserError, match=r"holds \*\*\* where its credential was.*--api-base") as caught:
            get_llm(RoleConfig(model="openai/m", api_base=base), LLMConfig())
        assert "\n" not in str(caught.value)
    get_llm(RoleConfig(model="openai/m", api_base="http://h.example/v1?page=2"), LLMConfig())  # nothing masked


@pytest.mark.e2e
def test_a_resume_of_a_run_whose_api_base_key_was_masked_asks_for_it_again(
    tmp_path: Path, allow_model_requests: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from spade_llm.cli.app import main

    with socket.socket() as s:  # nothing listens there: the endpoint is down, the run stops (exit 3)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = tmp_path / "c.yaml"
    config.write_text("llm: {breaker_s: 1, max_retries: 0, timeout_s: 2}\n")
    api_base = f"http://127.0.0.1:{port}/v1?api_key=QSKEY-resume-987654321"
    out = tmp_path / "run"
    argv = ["run", "--config", str(config), "--solver-model", "openai/x", "--api-base", api_base, "--epochs", "1"]
    assert main([*argv, "--tasks-per-epoch", "1", "--sandbox", "auto", "--out", str(out), "--quiet"]) == 3
    assert "api_key=***" in (out / "config.yaml").read_text()
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--quiet"]) == 2  # round 1: 3, the endpoint sent "***" as the key
    err = capsys.readouterr().err
    assert "--api-base" in err and len(err.strip().splitlines()) == 1, err
    assert main(["run", "--resume", str(out), "--api-base", api_base, "--quiet"]) == 3  # given again: it is used
    assert _leaks(out, ["QSKEY-resume-987654321"]) == []


@pytest.mark.e2e
def test_basic_credentials_of_a_switched_api_base_stay_out_of_summary_json(tmp_path: Path) -> None:
    """The training step names an endpoint the transport refuses: the error that stops the run names it,
    and summary.json records that error."""
    from spade_llm.cli.app import main

    switch = json.dumps({"solver_model": "openai/m", "api_base": "ftp://alice:pA55w0rd-basic@h.example/v1"})
    step = tmp_path / "step.py"
    step.write_text(  # printed (what older spade read) and written to the switch file (what it reads now)
        f"import os, pathlib\nprint({switch!r})\nfile = os.environ.get('SPADE_SWITCH_FILE')\n"
        f"if file: pathlib.Path(file).write_text({switch!r})\n"
    )
    config = tmp_path / "c.yaml"
    config.write_text(f"trainer: {{command: [{sys.executable!r}, {str(step)!r}], formats: [grpo]}}\n")
    out = tmp_path / "run"
    argv = ["run", "--config", str(config), "--epochs", "2", "--tasks-per-epoch", "2", "--sandbox", "auto"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 2
    summary = json.loads((out / "summary.json").read_text())
    assert "api_base must start with http" in summary["stopped_because"]
    assert _leaks(out, ["pA55w0rd-basic"]) == []  # a685e31: summary.json's stopped_because


HUMANEVAL = Path(__file__).resolve().parents[3] / "shared" / "data" / "HumanEval.jsonl.gz"


@pytest.mark.skipif(not HUMANEVAL.exists(), reason=f"needs {HUMANEVAL}")
def test_no_benchmark_task_is_touched() -> None:
    """164 HumanEval tasks (prompts, solutions, asserts): real code of every sort, nothing to mask."""
    import gzip

    from spade_llm._util.redact import Redactor

    redactor = Redactor([SECRET])
    with gzip.open(HUMANEVAL, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert len(rows) == 164
    assert [(row["task_id"], k) for row in rows for k, v in row.items() if redactor.text(str(v)) != str(v)] == []
