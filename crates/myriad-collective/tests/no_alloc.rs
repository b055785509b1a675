//! `time()` does not allocate (it runs ~100 times per step estimate).

mod common;

use common::*;
use myriad_collective::{time, Algorithm, GroupSpan, Op};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn time_does_not_allocate() {
    let levels = dgx_h100_cluster(128);
    let groups: Vec<GroupSpan> = [
        vec![8, 1],
        vec![1, 128],
        vec![8, 16],
        vec![16, 1],
        vec![8, 0],
    ]
    .into_iter()
    .map(GroupSpan::new)
    .collect();
    let ops = [
        Op::AllReduce,
        Op::AllGather,
        Op::ReduceScatter,
        Op::AllToAll,
        Op::Broadcast,
        Op::SendRecv,
    ];
    let algs = [
        Algorithm::Auto,
        Algorithm::Ring,
        Algorithm::Tree,
        Algorithm::Nvls,
        Algorithm::Hierarchical,
        Algorithm::Direct,
    ];
    let before = ALLOCS.with(|c| c.get());
    let mut sink = 0.0;
    for g in &groups {
        for op in ops {
            for alg in algs {
                for bytes in [8.0, 1e6, 1e9, -1.0] {
                    // Errors included: they carry only static strings and numbers.
                    if let Ok(r) = time(op, alg, bytes, g, &levels) {
                        sink += r.time_s;
                    }
                }
            }
        }
    }
    let after = ALLOCS.with(|c| c.get());
    assert!(sink > 0.0);
    assert_eq!(after - before, 0, "time() allocated");
}
