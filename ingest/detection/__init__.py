"""Ambiguity detection for documents, tables and email (spec §14 v0.8 PR-061).

Each rule is a small named function; `detect_file` turns one file into a Submission dict
(CONTRACT §3.1) that the core validates and applies like any other."""
