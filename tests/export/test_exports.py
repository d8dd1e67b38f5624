import subprocess
import sys


def test_light_commands_do_not_import_litellm_or_openai():
    code = (
        "import sys; from spade_llm.cli.app import build_parser; build_parser(); "
        "import spade_llm.sandbox.runner, spade_llm.validation, spade_llm.checking; "
        "print(any(m.split('.')[0] in ('litellm', 'openai') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
