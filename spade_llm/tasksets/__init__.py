"""Tasks from outside a run: benchmark import (``importers.py``; the reading of a Python benchmark's
asserts and doctests is the language's, ``languages/python_asserts.py``; the contest datasets' files,
``contests.py``) and the expected values a task file leaves out (``expected.py``)."""
