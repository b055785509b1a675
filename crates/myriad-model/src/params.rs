//! params
