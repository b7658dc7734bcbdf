"""Benchmarks for Telha clarify (`make bench`; not part of `make test`)."""
