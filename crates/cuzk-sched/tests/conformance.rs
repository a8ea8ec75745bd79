//! The shared conformance suite, run against the pipelined engine.

cuzk_pipeline::scheduler_conformance_tests!(cuzk_sched::Engine);
cuzk_pipeline::priority_conformance_tests!(cuzk_sched::Engine);
