//! Benchmark harness shared code.
