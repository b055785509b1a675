//! Training step time and memory.
