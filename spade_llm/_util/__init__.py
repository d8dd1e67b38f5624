"""Helpers every area uses and no area owns: lazy names, stable randomness, text that encodes, redaction,
input files read with one clear error."""
