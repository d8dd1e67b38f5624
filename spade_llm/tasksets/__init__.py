"""Tasks from outside a run: benchmark import (``importers.py``, ``asserts.py``: a benchmark's asserts
as tests) and the expected values a task file leaves out (``expected.py``)."""
