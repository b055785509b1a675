//! The engine's event queue: a monotone priority queue (a radix heap) of events keyed by
//! `(time, sequence)`.
//!
//! # Invariants
//!
//! - Events come out in increasing `(time, sequence)` order, the order a `BinaryHeap` of
//!   the same keys gives: times by `f64::total_cmp`, ties by the sequence number, which
//!   [`EventQueue::push`] hands out in push order. Runs are deterministic.
//! - Radix part, monotone: events at or after the last one popped. The simulator almost
//!   always schedules at or after its clock; one that is not (a batch's clock is its first
//!   event, and a flow nearly done can be rescheduled just before the batch's last one)
//!   goes to `early`, a small binary heap that is served first (all its keys are below
//!   every radix key). [`EventQueue::peek_time`] does not move the bound.
//! - Bucket `0` holds the events whose time key equals `last` (the last popped key), in
//!   sequence order; bucket `i > 0` holds those whose key first differs from `last` at bit
//!   `i - 1` (from the top), with `mins[i]` their smallest key. Popping from an empty
//!   bucket 0 moves the lowest non-empty bucket's events into lower buckets (each event
//!   moves down at most 64 times in all), so a pop is amortised `O(1)` plus a short sort of
//!   ties, against `O(log n)` cache-missing sift-downs for a binary heap of a few 100,000
//!   drain events.

/// Maps a time to a `u64` whose unsigned order is `f64::total_cmp`'s.
use std::cmp::Reverse;
use std::collections::BinaryHeap;

fn key(t: f64) -> u64 {
    let b = t.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

fn time(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Bucket of key `k` relative to `last`.
fn bucket(k: u64, last: u64) -> usize {
    64 - (k ^ last).leading_zeros() as usize
}

#[derive(Clone, Copy)]
struct Entry<E> {
    key: u64,
    seq: u64,
    ev: E,
}

pub(crate) struct EventQueue<E> {
    buckets: Vec<Vec<Entry<E>>>,
    /// Events before `last`, as `(key, sequence, index into early_ev)`.
    early: BinaryHeap<Reverse<(u64, u64, usize)>>,
    early_ev: Vec<E>,
    mins: [u64; 65],
    /// Index of the next event of bucket 0.
    head: usize,
    last: u64,
    seq: u64,
    len: usize,
}

impl<E: Copy> EventQueue<E> {
    pub(crate) fn new() -> Self {
        EventQueue {
            buckets: (0..65).map(|_| Vec::new()).collect(),
            early: BinaryHeap::new(),
            early_ev: Vec::new(),
            mins: [u64::MAX; 65],
            head: 0,
            last: 0,
            seq: 0,
            len: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Schedules `ev` at `t` (not before the last event popped).
    pub(crate) fn push(&mut self, t: f64, ev: E) {
        let k = key(t);
        self.seq += 1;
        self.len += 1;
        if k < self.last {
            self.early.push(Reverse((k, self.seq, self.early_ev.len())));
            self.early_ev.push(ev);
            return;
        }
        let b = bucket(k, self.last);
        self.mins[b] = self.mins[b].min(k);
        self.buckets[b].push(Entry {
            key: k,
            seq: self.seq,
            ev,
        });
    }

    /// The time of the next event, without removing it.
    pub(crate) fn peek_time(&self) -> Option<f64> {
        if let Some(Reverse((k, ..))) = self.early.peek() {
            return Some(time(*k));
        }
        if self.head < self.buckets[0].len() {
            return Some(time(self.last));
        }
        (1..65)
            .find(|&i| !self.buckets[i].is_empty())
            .map(|i| time(self.mins[i]))
    }

    /// Removes and returns the next event and its time.
    pub(crate) fn pop(&mut self) -> Option<(f64, E)> {
        if let Some(Reverse((k, _, i))) = self.early.pop() {
            let ev = self.early_ev[i];
            if self.early.is_empty() {
                self.early_ev.clear();
            }
            self.len -= 1;
            return Some((time(k), ev));
        }
        if self.head >= self.buckets[0].len() {
            self.buckets[0].clear();
            self.head = 0;
            let i = (1..65).find(|&i| !self.buckets[i].is_empty())?;
            self.last = self.mins[i];
            self.mins[i] = u64::MAX;
            let moved = std::mem::take(&mut self.buckets[i]);
            for e in &moved {
                let b = bucket(e.key, self.last);
                debug_assert!(b < i);
                self.mins[b] = self.mins[b].min(e.key);
                self.buckets[b].push(*e);
            }
            let mut moved = moved;
            moved.clear();
            self.buckets[i] = moved;
            // Ties in push order.
            self.buckets[0].sort_unstable_by_key(|e| e.seq);
        }
        let e = self.buckets[0][self.head];
        self.head += 1;
        self.len -= 1;
        Some((time(e.key), e.ev))
    }

    /// Keeps only the events for which `keep` holds (order is kept).
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&E) -> bool) {
        let head = self.head;
        self.buckets[0].drain(..head);
        self.head = 0;
        let ev = &self.early_ev;
        self.early.retain(|Reverse((_, _, i))| keep(&ev[*i]));
        self.len = self.early.len();
        for (b, v) in self.buckets.iter_mut().enumerate() {
            v.retain(|e| keep(&e.ev));
            self.len += v.len();
            if b > 0 {
                self.mins[b] = v.iter().map(|e| e.key).min().unwrap_or(u64::MAX);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_like_total_cmp() {
        let ts = [
            -1.0,
            -0.0,
            0.0,
            1e-300,
            1e-12,
            0.5,
            1.0,
            1.0 + f64::EPSILON,
            3e8,
            f64::INFINITY,
        ];
        for w in ts.windows(2) {
            assert!(key(w[0]) < key(w[1]), "{} {}", w[0], w[1]);
        }
        for t in ts {
            assert_eq!(time(key(t)).to_bits(), t.to_bits());
        }
    }

    /// Same order as a binary heap of `(time, sequence)`, under monotone pushes, peeks and
    /// retains, with many ties.
    #[test]
    fn pops_in_binary_heap_order() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut q = EventQueue::new();
        let mut h: BinaryHeap<Reverse<(u64, u64, u32)>> = BinaryHeap::new();
        let mut seq = 0u64;
        let mut now = 0.0f64;
        for step in 0..20_000u32 {
            let r = rnd();
            if r % 3 != 0 || h.is_empty() {
                // Ties: a coarse grid of times after `now`, sometimes `now` itself.
                let dt = match r % 7 {
                    0 if r % 11 == 0 => -1e-12,
                    0 => 0.0,
                    1 => ((r >> 8) % 1000) as f64 * 1e-9,
                    _ => ((r >> 8) % 50) as f64 * 0.25,
                };
                let t = now + dt;
                q.push(t, step);
                seq += 1;
                h.push(Reverse((key(t), seq, step)));
            } else {
                let Reverse((k, _, ev)) = h.pop().unwrap();
                assert_eq!(q.peek_time(), Some(time(k)));
                let (t, e) = q.pop().unwrap();
                assert_eq!((t.to_bits(), e), (time(k).to_bits(), ev));
                now = t;
            }
            if step % 5000 == 4999 {
                q.retain(|e| e % 2 == 0);
                h.retain(|Reverse((_, _, e))| e % 2 == 0);
            }
            assert_eq!(q.len(), h.len());
        }
        while let Some(Reverse((k, _, ev))) = h.pop() {
            let (t, e) = q.pop().unwrap();
            assert_eq!((t.to_bits(), e), (time(k).to_bits(), ev));
        }
        assert!(q.pop().is_none());
    }
}
