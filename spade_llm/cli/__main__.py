"""``python -m spade_llm.cli``: the ``spade`` command without its console script."""

import sys

from .app import main

sys.exit(main())
