"""The bank's catalogue: every family's classic exercises and pipeline steps, in the order drawn from.

Each family lives in its own module of :mod:`spade_llm.fake.families` (``VARIANTS`` and ``STEPS``);
this module puts them together. The order is part of the fake's output: a generator request draws
variants and steps by weighted choice over these tuples, so a reordering changes every later task.
Variants come family by family (:data:`FAMILY_MODULES`); steps in :data:`STEP_ORDER`, the order
they were written in (family by family, then two later batches that mix families).
"""

from __future__ import annotations

from types import ModuleType

from .families import (
    arithmetic,
    bits,
    dicts,
    dynamic_programming,
    graphs,
    intervals,
    lists,
    matrices,
    parsing,
    recursion,
    simulation,
    sorting_searching,
    stacks,
    strings,
)
from .steps import Step
from .variant import Variant

FAMILY_MODULES: tuple[ModuleType, ...] = (
    strings, lists, arithmetic, recursion, dynamic_programming, parsing, dicts,
    sorting_searching, bits, matrices, intervals, simulation, stacks, graphs,
)  # fmt: skip
"""Every family's module, in the order their variants are listed."""

VARIANTS: tuple[Variant, ...] = tuple(v for family in FAMILY_MODULES for v in family.VARIANTS)
"""Every exercise the bank can write, grouped by family in rising difficulty."""

FAMILIES: dict[str, tuple[Variant, ...]] = {}
for _variant in VARIANTS:
    FAMILIES[_variant.family] = (*FAMILIES.get(_variant.family, ()), _variant)
del _variant

STEP_ORDER: tuple[str, ...] = (
    # the first blocks, family by family
    "keep_multiples", "keep_greater", "square_each", "affine", "reverse", "every_other", "clamp", "dedupe",
    "prefix_sums", "differences", "pair_sums", "window_sums", "running_max", "rotate", "total", "largest", "spread",
    "count_distinct", "alt_sum", "digit_sums", "gcd_all", "keep_primes", "digits_of", "divisors", "reverse_digits",
    "lower", "letters_only", "remove_vowels", "squeeze", "caesar", "split_words", "count_vowels", "char_codes",
    "reverse_each", "join_words", "word_lengths", "long_words", "capitalize", "palindromes", "common_prefix",
    "count_words", "count_letters", "frequent_keys", "by_count", "top_count", "count_pairs", "singles",
    "occurrences", "first_index", "sort_asc", "sort_desc", "sort_by_abs", "sort_words", "top_k", "count_below",
    "lower_median", "inversions", "popcounts", "xor_all", "xor_k", "powers_of_two", "lowest_bit", "bits_of",
    "one_bit_pairs", "row_sums", "col_sums", "flatten_grid", "transpose", "rotate_grid", "diagonal",
    "neighbour_sums", "spiral", "local_peaks", "max_subarray", "lis", "no_adjacent", "coin_ways", "stairs",
    "grid_path", "flatten_nested", "nested_depth", "weighted_sum", "digital_roots", "parse_csv", "parse_kv",
    "extract_numbers", "durations", "evaluate_sum", "format_csv", "sort_spans", "span_lengths", "long_spans",
    "merge_spans", "covered_length", "max_overlap", "runs_to_spans", "balances", "robot_walk", "cells_visited",
    "elimination", "collatz", "parity_automaton", "cancel_pairs", "next_greater", "paren_depth", "unmatched",
    "backspaces", "collisions", "degrees", "reachable", "components", "bfs_distances", "component_sizes", "leaves",
    # more building blocks, for harder chains
    "equilibrium", "longest_run", "pair_count", "evens_first", "rle", "longest_palindrome", "distinct_window",
    "two_sum_positions", "anagram_pairs", "min_gap", "h_index", "sort_by_frequency", "max_xor_pair", "gray_code",
    "best_prefix", "nested_flip", "level_sums", "roman_values", "evaluate_parens", "prime_factors",
    "count_primes_upto", "to_base", "zigzag", "ranks", "longest_consecutive", "fibonacci", "best_ending_here",
    # small steps, so that easy exercises come in many shapes too
    "nested_sum", "nested_count", "paren_pairs", "cancel_chars", "returns_to_start", "max_degree", "node_count",
    "distinct_words", "unique_words", "abs_each", "mod_each", "halve_each",
)  # fmt: skip
"""Every step's name, in the order :data:`STEPS` lists them (and random chains draw from them)."""


def _steps_in_order() -> tuple[Step, ...]:
    by_name: dict[str, Step] = {}
    for family in FAMILY_MODULES:
        for step in family.STEPS:
            if step.name in by_name:
                raise ValueError(f"two steps are named {step.name!r}")
            by_name[step.name] = step
    if sorted(by_name) != sorted(STEP_ORDER):
        raise ValueError(f"STEP_ORDER must name every step once: {sorted(set(by_name) ^ set(STEP_ORDER))}")
    return tuple(by_name[name] for name in STEP_ORDER)


STEPS: tuple[Step, ...] = _steps_in_order()
"""Every building block of pipeline exercises."""
