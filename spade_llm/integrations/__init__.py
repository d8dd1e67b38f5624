"""Code that runs inside someone else's trainer, one module per client: ``trl.py`` (TRL's environments),
``trl_train.py`` (``spade train``), ``verifiers.py`` (the verifiers environment), ``verl.py`` and
``verl_loop.py`` (verl's live rows and its ``spade_env`` agent loop; on static exports verl calls
``spade_llm.rewards``)."""
