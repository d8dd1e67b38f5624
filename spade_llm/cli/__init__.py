"""The ``spade`` command: ``app.py`` dispatches, ``flags.py`` declares every flag once."""

from .app import main

__all__ = ["main"]
