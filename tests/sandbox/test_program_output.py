"""What a program printed before it was stopped is kept, on every backend; the harness reaches warm workers whole.

Before, ``print("hi")`` then a loop gave ``"stdout": ""``: the line sat in the interpreter's buffer
when the deadline killed the process, and the solver's feedback missed the very line that showed
where the code hung. Programs here are benign (they print, then loop).
"""

from __future__ import annotations

import marshal

import pytest
from sandbox_backends import needs

from spade_llm.sandbox.base import Limits, Program
from spade_llm.sandbox.registry import get_sandbox
from spade_llm.sandbox.runner import run_program

LOOP = "import sys\nprint('hi')\nprint('there', end='')\nsys.stderr.write('err')\nwhile True:\n    pass\n"


@pytest.fixture(
    scope="module",
    params=[
        "subprocess",
        pytest.param("bwrap", marks=[needs("bwrap"), pytest.mark.bwrap]),
        pytest.param("docker", marks=[needs("docker"), pytest.mark.docker]),
    ],
)
def sandbox(request):
    box = get_sandbox(request.param)
    yield box
    box.close()


def test_a_harnessed_program_keeps_its_output_up_to_the_deadline(sandbox):
    result = run_program(sandbox, LOOP, Limits(timeout_s=1))
    assert result.status == "timeout"
    assert result.stdout == "hi\nthere"
    assert result.stderr.startswith("err")


def test_a_plain_program_keeps_its_output_up_to_the_deadline(sandbox):
    raw = sandbox.run(Program(source=LOOP), Limits(timeout_s=1))
    assert raw.status == "timeout"
    assert raw.stdout == "hi\nthere" and raw.stderr.startswith("err")


def test_the_harness_fits_in_one_message_to_a_warm_worker():
    from spade_llm.sandbox.forkserver import MESSAGE_BYTES
    from spade_llm.sandbox.pool import preload_message

    # bigger, and a worker gets a cut message, skips the preload, and every execution fails
    assert len(marshal.dumps(preload_message())) <= MESSAGE_BYTES
