"""The servers, named as the commands: ``spade serve-fake`` (``fake.py``), ``serve-sandbox``
(``sandbox.py``), ``serve-env`` (``env/``), on one HTTP base (``httpbase.py``) under one set of rules
against floods (``netguard.py``)."""
