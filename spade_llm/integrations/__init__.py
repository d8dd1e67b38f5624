"""Code that runs inside someone else's trainer, one module per client: ``trl.py`` (TRL's environments),
``verifiers.py`` (the verifiers environment). verl needs no module: it calls ``spade_llm.rewards``."""
