//! The shared conformance suite, run against the serial scheduler.

cuzk_pipeline::scheduler_conformance_tests!(cuzk_sched_serial::SerialScheduler);
cuzk_pipeline::priority_conformance_tests!(cuzk_sched_serial::SerialScheduler);
