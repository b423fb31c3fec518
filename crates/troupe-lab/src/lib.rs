//! The reliability lab: workloads, fault schedules, events, statistics and reports (in construction).
