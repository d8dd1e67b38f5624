"""Running untrusted Python and judging it.

* ``base`` — the ``Sandbox`` contract a backend implements (run one program under ``Limits``).
* ``registry`` — backends by name (``get_sandbox``), imported lazily; ``auto`` picks one.
* ``subprocess`` — the always-available, non-isolating backend.
* ``harness`` — the program that runs inside the sandbox and calls the code under test.
* ``verdict`` — outside: reads the harness's report, decodes outputs, compares them.
* ``runner`` — the API the pipeline calls: ``run_program``, ``execute_calls``, ``judge``,
  ``run_tests``, ``run_check``.
"""
