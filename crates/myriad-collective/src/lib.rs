//! Collective algorithms timed on the cluster hierarchy.
