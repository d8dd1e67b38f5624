"""The task bank behind the fake model: families of Python exercises with trusted references.

Why a bank: ``fake/<profile>`` must propose tasks that read like what a real generator model
writes (a real statement, a correct reference, tests with edge cases), offline and
deterministically, so that ``spade run`` works on a fresh machine and tests can be exact.

Structure: a *family* (strings, dynamic programming, graphs, ...) holds *variants*. A variant is
one kind of exercise with an intrinsic difficulty, a few entry-point synonyms, several statement
templates, a small finite list of parameter choices, a random input generator, fixed edge-case
inputs, and a catalogue of realistic mistakes expressed as edits of the reference source.

Classic variants are few (about four per family), and a long run's duplicate gate rejects a task
whose reference has the shape of an earlier one. So most proposals are *composed* exercises
(:func:`compose`, :func:`random_pipeline`): a chain of 1 to 4 building blocks (:data:`STEPS`:
filters, maps, reorderings, aggregations, parsers, grid and graph walks, each a different code
shape) whose reference code is assembled from the blocks, whose difficulty is computed from them
(:func:`chain_difficulty`: their costs plus a little per extra step, 0.05 to 0.97), whose
statement lists the steps in order, and whose mistakes are the blocks' own realistic edits. A
composed exercise is a :class:`PipelineVariant`, so everything below works on it unchanged.

Everything about a task is a pure function of (variant, params, rng): the same seed gives
byte-identical tasks. Because parameter choices are finite and statements are rendered from
templates, the solver side recognises a task from its statement alone (:func:`identify`): it
renders every (variant, params, entry point, template) combination once and looks the statements
up in the prompt, and reads a composed exercise's numbered steps back to compose it again. There
is no in-process registry, so a task written by another process, read from a file or sent over
HTTP is recognised just the same.

The references are our own code, so running them in-process (:func:`run_in_process`) is fine;
it is how expected values, examples and the test suite's checks are computed.

This module is the bank's public face; the parts live in the modules below it, lowest first:
``variant`` (:class:`Variant`, :func:`stable_hash`), ``running`` (in-process runs,
:func:`strict_equal`), ``mistakes``, ``tasks`` (:func:`build_task`), ``inputs`` and ``steps``
(what the families are written with), ``families`` (one module per family), ``catalogue``
(:data:`VARIANTS`, :data:`FAMILIES`, :data:`STEPS`), ``pipelines`` (:func:`compose`) and
``identify``.
"""

from __future__ import annotations

from .catalogue import FAMILIES, STEPS, VARIANTS
from .identify import Identification, entry_point_index, find_variant, identify
from .mistakes import break_syntax, mistake_code, mistake_kinds, rename_function, split_top_level
from .pipelines import PipelineVariant, Spec, chain_difficulty, compose, random_chain, random_pipeline
from .running import Outcome, json_roundtrips, load_function, run_in_process, stand_ins, strict_equal
from .steps import Step
from .tasks import MAX_KILLER_TESTS, BankTask, build_task
from .variant import MISTAKE_KINDS, Variant, stable_hash

__all__ = [
    "FAMILIES",
    "MAX_KILLER_TESTS",
    "MISTAKE_KINDS",
    "STEPS",
    "VARIANTS",
    "BankTask",
    "Identification",
    "Outcome",
    "PipelineVariant",
    "Spec",
    "Step",
    "Variant",
    "break_syntax",
    "build_task",
    "chain_difficulty",
    "compose",
    "entry_point_index",
    "find_variant",
    "identify",
    "json_roundtrips",
    "load_function",
    "mistake_code",
    "mistake_kinds",
    "random_chain",
    "random_pipeline",
    "rename_function",
    "run_in_process",
    "split_top_level",
    "stable_hash",
    "stand_ins",
    "strict_equal",
]
