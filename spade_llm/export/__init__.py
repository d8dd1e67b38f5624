"""Reading a run back as training data (``spade export``): the solver's rows (``solver_rows.py``), the
generator's (``generator_rows.py``), and the formats, statuses and tiers they take (``names.py``)."""
