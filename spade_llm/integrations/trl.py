"""A multi-turn coding environment for TRL's ``GRPOTrainer(environment_factory=SpadeCodingEnv)``.

TRL's protocol (``trl/trainer/grpo_trainer.py``, docs "Agent Training" -> "Environments"): the
trainer builds one instance per rollout with no arguments (pass ``functools.partial(SpadeCodingEnv,
...)`` for settings) and reuses instances across steps; at the start of each rollout it calls
``reset(**row)`` with every column of the dataset row (``prompt`` included), and when ``reset``
returns a string it *appends* it to the prompt's last message; every public method but ``reset``
and ``get_reward`` becomes a tool (its type hints and Google-style docstring are the schema);
``get_reward()`` (no argument) is called once per finished rollout and is summed into the reward,
logged under the class name.

So, with the GRPO export's rows (``prompt`` messages plus ``ground_truth``):

* ``reset(**row)`` reads the task from the row's ``ground_truth`` (or ``tests``/``entry_point``/
  ``kind``) and returns what TRL appends to the prompt's last message: how to use the tool
  (``solver/tools.j2``). The row's ``prompt`` is already the task as the solver sees it, but its
  system prompt asks for a code block, and here only code given to ``run_tests`` is graded: a model
  that followed it alone would earn nothing. A row without a ``prompt`` gets the task rendered with
  the solver's first template (its description from a ``description`` column when there is one: a
  ground truth does not carry it) followed by that text, which TRL then shows as the prompt.
  ``env.prompt`` holds the messages the model sees either way (for loops of one's own).
* ``run_tests(code)`` is the one tool: it judges the code on the task's **public** tests alone and
  returns what the loop's repair prompts may show: how many passed, each public test's verdict,
  the failing ones' inputs, expected values (not for ``deduction``, whose expected values are the
  answer) and outputs, and the end of stderr. That execution never holds a hidden test, so
  nothing it prints can hand one to the model.
* ``get_reward()`` judges the **last code given to run_tests** on *all* the tests, hidden ones
  included (the loop's final verdict): 1.0 when it passes them all (with ``partial_credit``, the
  fraction of the hidden ones passed: ``rewards.verdict_of``), 0.0 when the model never called the
  tool. TRL does not give the environment the final completion; to score code the model only wrote
  in its last message, add
  ``spade_llm.rewards.code_reward`` to ``reward_funcs`` (it reads the last assistant message).

Judging goes through ``spade_llm.rewards`` (the same judge, kinds and verdicts as the loop; one
warm sandbox shared by every instance). ``AsyncSpadeCodingEnv`` is the same with coroutine methods,
for ``AsyncGRPOTrainer`` (its rollouts share an event loop). Importing this module does not import TRL.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .._util.lazy import import_without
from ..errors import UserError, pip_install
from ..evaluator import credited_fraction, outcome_reward, shown_tests
from ..kinds import DEFAULT_KIND, get_kind
from ..languages import DEFAULT_ANSWER_LANGUAGE
from ..rewards.code import Rewarder, Verdict, default_rewarder, no_code, row_language, row_task
from ..serve.env import OPENENV_WEB_INTERFACE, TOKEN_ENV
from ..solver import examples_task, first_messages, language_variables, stderr_tail
from ..types import ExecutionResult, Message, Task

__all__ = ["AsyncSpadeCodingEnv", "SpadeCodingEnv", "SpadeLiveEnv", "live_dataset", "live_rows"]

_T = TypeVar("_T")

MAX_FEEDBACK_CHARS = 6000
"""Longest text ``run_tests`` returns (a tool result goes back into the model's context)."""


class SpadeCodingEnv:
    """One rollout's coding task: ``reset(**row)``, the ``run_tests`` tool, ``get_reward()``.

    ``rewarder``: the sandbox to judge in (default: ``spade_llm.rewards``'s shared one);
    ``partial_credit``: ``get_reward`` pays the fraction of tests passed instead of all-or-nothing;
    ``stderr_lines``: how much of stderr ``run_tests`` shows (the loop's default).

    After a rollout: ``task``, ``public`` (public test count), ``last_code`` (what ``get_reward``
    judges), ``calls`` (run_tests calls) and ``verdict`` (``get_reward``'s ``Verdict``).
    """

    def __init__(
        self, rewarder: Rewarder | None = None, *, partial_credit: bool = False, stderr_lines: int = 15
    ) -> None:
        self._rewarder = rewarder
        self.partial_credit = partial_credit
        self.stderr_lines = stderr_lines
        self.task: Task | None = None
        self.public = 0
        self.language = DEFAULT_ANSWER_LANGUAGE
        """The row's answer language (its ground truth's, else its ``language`` column): asked, read and judged in."""
        self.prompt: list[dict[str, str]] = []
        self.last_code: str | None = None
        self.calls = 0
        self.verdict: Verdict | None = None

    # -- TRL's reserved methods --

    def reset(self, **row: Any) -> str:
        """Start a rollout on the row's task; returns the text TRL appends to the prompt's last message
        (the tool's instructions, after the task itself when the row has no prompt: see the module docstring).

        Raises:
            UserError: the row has no ground truth (nor ``tests``/``entry_point``), or a malformed one.
        """
        found = row_task(row)
        if found is None:
            raise UserError("SpadeCodingEnv.reset needs the row's `ground_truth` (or `tests` and `entry_point`)")
        task, public = found
        if row.get("description"):
            task = task.model_copy(update={"description": str(row["description"])})
        self.task, self.public = task, public
        self.language = row_language(row, task)
        self.last_code, self.calls, self.verdict = None, 0, None
        shown = len(task.examples) if task.shows_examples else public
        tools = _render("solver/tools.j2", kind=task.kind, public=shown)
        given = row.get("prompt")
        if given:
            self.prompt = _messages(given)
            before = ""
        else:
            self.prompt = [m.model_dump() for m in _first_messages(task, public, self.language)]
            before, self.prompt[-1]["content"] = self.prompt[-1]["content"], ""
        last = self.prompt[-1]["content"] + before
        added = before + ("\n" if last.endswith("\n") or not last else "\n\n") + tools  # a blank line before it
        self.prompt[-1]["content"] += added
        return added

    def get_reward(self) -> float:
        """The last code given to run_tests, judged on every test (hidden ones included); 0.0 without one."""
        task = self._task()
        if self.verdict is None:
            if self.last_code is None:
                self.verdict = no_code(task)
            else:
                self.verdict = self._judge_all(task, self.last_code)
        return self.verdict.score

    # -- the tool --

    def run_tests(self, code: str) -> str:
        """Run your solution on the task's public tests and report how it did.

        Call it with your complete solution whenever you want to check it; the last solution you
        test is the one that gets graded, on these tests and on hidden ones.

        Args:
            code: The complete solution: for a function-writing task, the full Python source of the function
                (a ```python fenced block is accepted); for a task asking for values or inputs, the lines
                `f(args) == value`, as the task asks.

        Returns:
            How many public tests passed, each public test's verdict, and for the failing ones the input, the
            expected result and what your solution gave, with the end of stderr.
        """
        task = self._task()
        self.calls += 1
        answer = self._answer(task, code if isinstance(code, str) else "")
        self.last_code = answer
        self.verdict = None
        if not answer.strip():
            return "No code given: call run_tests with your complete solution as `code`."
        if task.shows_examples:
            if not task.examples:
                return "This task has no public tests; your solution was recorded and will be graded on hidden tests."
            shown = examples_task(task)
            result = self._rewarder_().run(shown, answer, language=self.language)
            return self._feedback(shown, result, list(range(len(shown.tests))))
        public = list(range(self.public))
        if not public:
            return "This task has no public tests; your solution was recorded and will be graded on hidden tests."
        result = self._rewarder_().run(task, answer, public, language=self.language)
        return self._feedback(task, result, public)

    # -- the rest is private: TRL exposes every public method as a tool --

    def _task(self) -> Task:
        if self.task is None:
            raise UserError("call reset(**row) before using the environment")
        return self.task

    def _rewarder_(self) -> Rewarder:
        return self._rewarder or default_rewarder()

    def _answer(self, task: Task, code: str) -> str:
        """The answer in a tool argument: lenient, unlike a completion (the argument *is* the code):
        a fenced block is unwrapped, bare source taken whole."""
        return get_kind(task.kind).read_tool_argument(code, self.language)

    def _judge_all(self, task: Task, answer: str) -> Verdict:
        # the last answer was written after feedback on the public tests when it was not the first call
        return self._rewarder_().judge_answer(
            task, answer, partial_credit=self.partial_credit, after_feedback=self.calls > 1, language=self.language
        )

    def _feedback(self, task: Task, result: ExecutionResult, shown: Sequence[int]) -> str:
        """What the public execution may tell the model (the loop's repair prompt's content, per kind)."""
        results = {r.index: r for r in result.test_results or []}
        passed = sum(1 for i in shown if i in results and results[i].passed)
        lines = [f"{passed}/{len(shown)} public tests passed."]
        if result.load_error:
            lines.append(f"Your answer could not be used: {result.load_error}")
        elif result.status != "ok" and passed < len(shown):
            lines.append(f"The run ended with status `{result.status}`.")
        kind = get_kind(task.kind)
        lines += [kind.feedback_line(task, task.tests[i], results.get(i)) for i in shown]
        tail = stderr_tail(result.stderr, self.stderr_lines) if passed < len(shown) else ""
        if tail and kind.feedback_stderr:
            lines += ["The end of stderr:", "```", tail, "```"]
        text = "\n".join(lines) + "\n"
        if len(text) > MAX_FEEDBACK_CHARS:
            text = text[: MAX_FEEDBACK_CHARS - 20] + "\n... (cut)\n"
        return text


class AsyncSpadeCodingEnv(SpadeCodingEnv):
    """``SpadeCodingEnv`` with ``run_tests`` and ``get_reward`` as coroutines (TRL awaits async tools
    and rewards): judging runs on the rewarder's thread pool, so TRL's ``AsyncGRPOTrainer``, whose
    rollouts share one event loop, keeps generating meanwhile. Same results as the sync class."""

    async def run_tests(self, code: str) -> str:  # type: ignore[override]
        return await self._off_loop(super().run_tests, code)

    run_tests.__doc__ = SpadeCodingEnv.run_tests.__doc__  # TRL builds the tool's schema from it

    async def get_reward(self) -> float:  # type: ignore[override]
        """The last code given to run_tests, judged on every test (hidden ones included); 0.0 without one."""
        return await self._off_loop(super().get_reward)

    async def _off_loop(self, fn: Callable[..., _T], *args: Any) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._rewarder_()._executor(), fn, *args)


ENV_URL = "SPADE_ENV_URL"
"""Where ``SpadeLiveEnv`` finds the serve-env url when it is given none."""


def serve_env_client(url: str, token: str | None, *, message_timeout_s: float) -> Any:
    """openenv-core's ``GenericEnvClient`` (async; ``.sync()`` for the blocking one) for the serve-env
    server at ``url``, whose WebSocket handshake sends ``Authorization: Bearer <token>``.

    The token never enters a URL: openenv-core's errors name the URL they failed to reach ("Failed to
    connect to ws://..."), and a URL's user-info would carry the token into every exception text and
    log line. websockets' own debug log, which prints the handshake's headers, stays off for this client.

    Raises:
        UserError: openenv-core is not installed.
    """
    try:  # without openenv-core's server-side web interface, whose Gradio import takes seconds
        generic_client: type[Any] = import_without("openenv.core", OPENENV_WEB_INTERFACE).GenericEnvClient
        from websockets.asyncio.client import connect as ws_connect
    except ImportError:
        raise UserError(f"talking to spade serve-env needs openenv-core: {pip_install('env')}") from None
    import logging

    quiet = logging.getLogger("spade_llm.serve_env_client.websockets")
    quiet.setLevel(logging.INFO)  # never DEBUG: that level prints the Authorization header

    class TokenEnvClient(generic_client):  # type: ignore[misc]  # openenv-core ships no type information
        async def connect(self) -> Any:
            """openenv-core's connect, with the token as a header (its own sends no header of ours)."""
            if getattr(self, "_ws", None) is not None:
                return self
            host = urllib.parse.urlsplit(self._ws_url).hostname or ""
            headers = {"Authorization": f"Bearer {token}"} if token else None
            try:
                self._ws = await ws_connect(
                    self._ws_url,
                    open_timeout=self._connect_timeout,
                    max_size=self._max_message_size,
                    additional_headers=headers,
                    proxy=None if host in ("localhost", "127.0.0.1", "::1") else True,  # as openenv-core does
                    logger=quiet,
                )
            except Exception as e:
                raise ConnectionError(f"Failed to connect to {self._ws_url}: {e}") from e
            return self

    return TokenEnvClient(base_url=url, message_timeout_s=message_timeout_s)


def split_token(url: str) -> tuple[str, str | None]:
    """``url`` without user-info, and the password it held (the older ``http://spade:TOKEN@host`` form)."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    info, host = parts.netloc.rsplit("@", 1)
    password = urllib.parse.unquote(info.split(":", 1)[1]) if ":" in info else None
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), password or None


@contextlib.contextmanager
def token_masked(token: str | None) -> Any:
    """Exceptions raised inside leave without ``token`` in their text (or their causes'). The token is
    registered with the one rule (``redact.register_secret``): masked in every form it takes (URL-quoted,
    base64 in a ``Basic`` header, split...) in whatever this process writes, as the environment's keys
    are. An exception whose text, or a chained one's, holds it (or another secret of ours) is raised
    again as the same type (else ``ConnectionError``) with the text masked, its chain cut. A token
    shorter than ``redact.MIN_SECRET_CHARS`` is not masked (serve-env's own are far longer)."""
    from .._util.redact import env_redactor, register_secret

    register_secret(token)
    try:
        yield
    except Exception as e:
        redactor = env_redactor()
        if not _holds_secret(e, redactor):
            raise
        text = redactor.text(f"{e}")
        try:
            clean = type(e)(text)
        except Exception:  # an exception type that takes other arguments
            clean = ConnectionError(f"{type(e).__name__}: {text}")
        if _holds_secret(clean, redactor):
            clean = ConnectionError(f"{type(e).__name__} (its text held the token)")
        raise clean from None


def _holds_secret(exc: BaseException, redactor: Any) -> bool:
    """Whether a known secret of ``redactor`` (``redact.Redactor``) is in the text of ``exc`` or of an
    exception it chains."""
    seen: set[int] = set()
    found: BaseException | None = exc
    while found is not None and id(found) not in seen:
        seen.add(id(found))
        if redactor.spans(f"{found!r} {found}", patterns=False):
            return True
        found = found.__cause__ or found.__context__
    return False


class SpadeLiveEnv:
    """``SpadeCodingEnv``'s tool protocol on live episodes of a ``spade serve-env`` server at ``url``.

    ``reset(**row)`` ignores the row (use ``live_rows``: placeholders) and takes the next episode the server's
    run hands out: it returns the task (the observation's last user message: the solver's first prompt,
    public tests only) and the tool's instructions (``solver/tools.j2``), which TRL appends to the row's empty
    user message. ``run_tests(code)`` is one solver turn: the server judges the code as the loop judges a
    model's answer and returns its feedback (public tests only), or the end. ``get_reward()`` is the server's
    verdict: 1.0 when the episode ended passed (``partial_credit``: the share of the hidden tests passed, as the
    loop pays it: ``evaluator.credited_fraction``), else 0.0. A rollout that ends before the episode does (the
    model stopped calling the tool, or ``solver.max_turns`` was not reached) earns 0.0, and its session is
    closed: the server records the episode as an ``error`` trajectory flagged ``abandoned`` ("closed its
    session before the episode ended"); the next ``reset`` reconnects. Otherwise one WebSocket session
    (openenv-core's ``GenericEnvClient``, sync) is kept open across rollouts.

    ``url``: the server's ``http://HOST:PORT`` (default ``$SPADE_ENV_URL``); ``token``: its token (default
    ``$SPADE_ENV_TOKEN``; sent as the WebSocket handshake's ``Authorization: Bearer`` header, never in a URL,
    so no error that names the url can print it; the older ``http://spade:TOKEN@HOST:PORT`` form still works:
    the token is taken out of the url);
    ``model``: the name recorded as the trajectories' ``solver_model``; ``timeout_s``: how long a ``reset`` or
    ``step`` may wait for the server (a reset waits for the run to have an episode ready).

    After a rollout: ``observation`` (the last one, a dict), ``task_id``, ``kind``, ``calls``, ``done``,
    ``final_status``, ``trajectory_id``.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        partial_credit: bool = False,
        model: str | None = None,
        token: str | None = None,
        timeout_s: float = 3600.0,
    ) -> None:
        url = url or os.environ.get(ENV_URL, "").strip()
        if not url:
            raise UserError(f"SpadeLiveEnv needs the url of a spade serve-env server (or ${ENV_URL})")
        self.url, in_url = split_token(url)
        self.partial_credit = partial_credit
        self.model = model
        self._token = token if token is not None else os.environ.get(TOKEN_ENV, "").strip() or in_url or None
        self.timeout_s = timeout_s
        self._client: Any = None
        self.observation: dict[str, Any] = {}
        self.task_id: str | None = None
        self.kind: str | None = None
        self.calls = 0
        self.done = False
        self.final_status: str | None = None
        self.trajectory_id: str | None = None
        self.server_reward: float | None = None
        """The reward the server sent at the end (``env.reward``; None before it)."""
        self._started = False

    # -- TRL's reserved methods --

    def reset(self, **row: Any) -> str:
        """Take the server's next episode; returns its task and the tool's instructions. A row of
        ``live_dataset`` names its group (``group_id``, ``group_size``): TRL repeats each row for the
        ``num_generations`` rollouts of its prompt, and those rollouts get episodes of one task.

        Raises:
            UserError: openenv-core is not installed.
        """
        if self._started and not self.done:
            self._release()  # the last rollout never reached get_reward: let the server record it
        group = row.get("group_id")
        grouped = {"group_id": group, "group_size": int(row.get("group_size") or 1)} if group is not None else {}
        with token_masked(self._token):
            try:
                result = self._connected().reset(**grouped)
            except Exception:  # a session the server or the network closed: one fresh one
                self._drop()
                result = self._connected().reset(**grouped)
        self._take(result)
        self.task_id, self.kind = self.observation.get("task_id"), self.observation.get("kind")
        self.calls, self.done, self.final_status, self.trajectory_id = 0, False, None, None
        self._started = True
        task = _last_user(self.observation.get("messages") or [])
        public = int(self.observation.get("public_total") or 0) or _public_lines(task)
        tools = _render("solver/tools.j2", kind=self.kind or DEFAULT_KIND, public=public)
        return task + ("\n" if task.endswith("\n") or not task else "\n\n") + tools

    def get_reward(self) -> float:
        """The server's verdict on the episode: 1.0 when it passed (partial credit: the fraction of the hidden
        tests passed, ``evaluator.credited_fraction``)."""
        if not self._started:
            return 0.0
        if not self.done:
            self._release()
            return 0.0
        return served_reward(self.observation, self.final_status, partial_credit=self.partial_credit)

    # -- the tool --

    def run_tests(self, code: str) -> str:
        """Run your solution on the task's public tests and report how it did.

        Call it with your complete solution whenever you want to check it; the last solution you
        test is the one that gets graded, on these tests and on hidden ones.

        Args:
            code: The complete solution: for a function-writing task, the full Python source of the function
                (a ```python fenced block is accepted); for a task asking for values or inputs, the lines
                `f(args) == value`, as the task asks.

        Returns:
            How the public tests went, or, once the task is over, whether your solution passed.
        """
        if not self._started:
            raise UserError("call reset() before using the environment")
        if self.done:
            return self._over()
        code = code if isinstance(code, str) else ""
        if not code.strip():
            return "No code given: call run_tests with your complete solution as `code`."
        action: dict[str, str] = {"code": code}
        if self.model:
            action["model"] = self.model
        self.calls += 1
        with token_masked(self._token):
            result = self._connected().step(action)
        self._take(result)
        if self.done:
            return self._over()
        feedback = self.observation.get("feedback") or _last_user(self.observation.get("messages") or [])
        text = str(feedback)
        if len(text) > MAX_FEEDBACK_CHARS:
            text = text[: MAX_FEEDBACK_CHARS - 20] + "\n... (cut)\n"
        return text

    # -- private: TRL exposes every public method as a tool --

    def _take(self, result: Any) -> None:
        self.observation = dict(result.observation or {})
        self.server_reward = getattr(result, "reward", None)
        self.done = bool(result.done)
        if self.done:
            self.final_status = self.observation.get("final_status")
            self.trajectory_id = self.observation.get("trajectory_id")

    def _over(self) -> str:
        if self.final_status == "passed":
            return "Your solution passed all the tests, hidden ones included. The task is over: no more tests are run."
        why = f" ({self.final_status})" if self.final_status else ""
        return f"Your solution did not pass the tests{why}, and no attempts are left. The task is over."

    def _connected(self) -> Any:
        if self._client is None:
            client = serve_env_client(self.url, self._token, message_timeout_s=self.timeout_s).sync()
            client.connect()
            self._client = client
        return self._client

    def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):  # already gone
                client.close()

    def _release(self) -> None:
        """Close the session mid-episode: the server records the episode as abandoned (an error), not lost."""
        self._drop()
        self.done, self.final_status = True, self.final_status or "abandoned"


def served_reward(observation: Mapping[str, Any], final_status: str | None, *, partial_credit: bool) -> float:
    """``evaluator.outcome_reward`` of a serve-env episode's last observation: 1.0 when it passed, else 0.0 or
    (``partial_credit``) the share of the hidden tests its last answer passed, from the observation's counts."""
    passed, total, public_passed, public_total = (
        int(observation.get(key) or 0) for key in ("tests_passed", "tests_total", "public_passed", "public_total")
    )
    kind = str(observation.get("kind") or DEFAULT_KIND)
    # at the end ``turn`` is the turns taken: a last answer past the first was written after feedback
    shown = shown_tests(kind, public_passed, public_total, after_feedback=int(observation.get("turn") or 1) > 1)
    return outcome_reward(final_status or "", credited_fraction(passed, total, *shown), partial_credit)


def live_rows(
    n: int, system_prompt: str | None = None, *, group_size: int | None = None, key: str = "slot"
) -> list[dict[str, Any]]:
    """``n`` placeholder rows for ``GRPOTrainer(environment_factory=SpadeLiveEnv)``: the solver's system prompt
    (``solver/system.j2``, the served episodes' own, unless ``system_prompt``) and an empty user message, to
    which TRL appends what ``SpadeLiveEnv.reset`` returns (the live task). ``datasets.Dataset.from_list`` reads them.

    ``group_size``: the trainer's ``num_generations``; each row then names a group (``group_id``
    ``{key}-{i}``, ``group_size``), so the rollouts TRL makes of one row play one task (GRPO's group).
    ``key``: tells the groups of two trainers sharing one server apart (every process of one trainer
    must use the same)."""
    system = system_prompt if system_prompt is not None else _render("solver/system.j2", **language_variables()).strip()
    rows: list[dict[str, Any]] = []
    for i in range(n):
        row: dict[str, Any] = {"prompt": [{"role": "system", "content": system}, {"role": "user", "content": ""}]}
        if group_size is not None:
            row |= {"group_id": f"{key}-{i}", "group_size": group_size}
        rows.append(row)
    return rows


def live_dataset(n: int, num_generations: int, *, system_prompt: str | None = None, key: str = "slot") -> Any:
    """A ``datasets.Dataset`` of ``live_rows(n, group_size=num_generations)``: the ``train_dataset`` of a
    GRPO run on live episodes whose groups share a task.

    Raises:
        UserError: ``datasets`` is not installed.
    """
    try:
        from datasets import Dataset
    except ImportError:
        raise UserError(f"live_dataset needs datasets: {pip_install('trl')}") from None
    return Dataset.from_list(live_rows(n, system_prompt, group_size=num_generations, key=key))


def _last_user(messages: Sequence[Any]) -> str:
    for m in reversed(messages):
        if isinstance(m, Mapping) and m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def _public_lines(task: str) -> int:
    """How many public tests the task text shows (its ``- f(args) -> expected`` lines), when the observation
    does not say."""
    return sum(1 for line in task.splitlines() if line.startswith("- "))


def _messages(prompt: Any) -> list[dict[str, str]]:
    """A row's prompt as messages (a plain string is one user message)."""
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    out = []
    for m in prompt:
        if isinstance(m, Mapping):
            out.append({"role": str(m.get("role", "user")), "content": str(m.get("content") or "")})
    return out


def _render(name: str, **variables: Any) -> str:
    from ..templates import Prompts

    return Prompts().render(name, **variables)


def _first_messages(task: Task, public: int, language: str = DEFAULT_ANSWER_LANGUAGE) -> list[Message]:
    """The solver's opening for ``task``, its first ``public`` tests shown (exports took the count from
    the same split, ``split_tests``, so it comes back unchanged), its answer asked in ``language``."""
    from ..templates import Prompts

    return first_messages(Prompts(), task, public, language)
