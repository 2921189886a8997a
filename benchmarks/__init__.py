"""Benchmarks (not tests): every figure is printed against a baseline measured in the same run."""
