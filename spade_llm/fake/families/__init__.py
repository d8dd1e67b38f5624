"""The fake's task bank, one module per family: its classic exercises (``VARIANTS``) and its
building blocks of composed exercises (``STEPS``).

A family module only defines data (:class:`~spade_llm.fake.variant.Variant` and
:func:`~spade_llm.fake.steps._step` rows, their input generators and edge cases); the catalogue
(:mod:`spade_llm.fake.catalogue`) puts every family's together, and the bank's engine
(:mod:`spade_llm.fake.bank`) builds tasks from them.
"""
