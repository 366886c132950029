"""Benchmarks of firmsift: real processes against fake providers with fixed latencies (see BENCHMARKS.md)."""
