"""Running untrusted Python and judging it.

* ``base`` — the ``Sandbox`` contract a backend implements (run one program under ``Limits``).
* ``registry`` — backends by name (``get_sandbox``), imported lazily; ``auto`` picks one.
* ``bwrap`` — the default, isolating backend: warm bubblewrap sandboxes (``forkserver`` inside,
  ``launcher`` to start them as root, ``cgroups`` for limits, ``seccomp`` for a deny-list).
* ``docker`` — a locked-down container per run, when asked for.
* ``subprocess`` — the always-available, non-isolating backend.
* ``common`` — what the backends share (environment, results, the unprivileged uid).
* ``result`` — what a run returns: ``ExecutionResult`` and ``TestResult`` (dataclasses: no pydantic).
* ``harness`` — the program that runs inside the sandbox and calls the code under test.
* ``verdict`` — outside: reads the harness's report, decodes outputs, compares them.
* ``runner`` — programs and calls in the sandbox: ``run_program``, ``execute_calls``,
  ``compare_outputs``, ``run_tests``, ``run_check``. The pipeline judges through
  ``spade_llm.judge``, which is built on these.

See ``docs/sandbox.md``.
"""
