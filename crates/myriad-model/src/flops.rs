//! flops
