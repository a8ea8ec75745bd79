//! The shared conformance suite, run against the shortest-job-first scheduler
//! from outside the workspace.

cuzk_pipeline::scheduler_conformance_tests!(cuzk_sched_sjf::ShortestJobFirst);
cuzk_pipeline::priority_conformance_tests!(cuzk_sched_sjf::ShortestJobFirst);
