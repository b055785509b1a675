//! Expert-load imbalance under expert parallelism: how much more work than the mean the
//! busiest expert-parallel (EP) rank gets.
//!
//! Under EP every rank holds `E / ep` of a layer's `E` routed experts and receives the
//! tokens routed to them. Routers are not uniform: a few experts are hot, so the rank that
//! holds them receives more tokens than the mean, and every synchronous step (grouped
//! expert GEMM, dispatch/combine all-to-all) waits for that rank. The model:
//!
//! 1. **Per-expert load** has a coefficient of variation `c_e` (std / mean over the
//!    experts of a layer in one iteration), a property of the trained router, measured.
//! 2. **Per-rank load, static placement**: a rank sums `n = E / ep` experts; with
//!    independent expert loads its CV is `c_e / √n`.
//! 3. **Per-rank load, EPLB** (redundant experts placed from measured statistics, as
//!    DeepSeek's EPLB, SGLang `--enable-eplb`, TensorRT-LLM's load balancer): a residual
//!    CV measured after balancing ([`eplb_residual_cv`]), never more than static placement.
//! 4. **Sampling noise**: a finite batch routes `m` token-expert assignments to a rank on
//!    average; even a perfectly balanced router gives Poisson counts, CV `1/√m`, added in
//!    quadrature ([`sampling_cv`]).
//! 5. **Busiest rank**: the expected maximum of `ep` rank loads, normal approximation:
//!    `mean · (1 + cv · E[max of ep standard normals])` ([`busiest_rank_factor`]). Pass
//!    `E[max]` in (e.g. `myriad_train::step::expected_max_std_normal(ep)`), so this module
//!    stays free of a statistics dependency.
//!
//! Published figures (TensorRT-LLM tech blog 4, "Scaling Expert Parallelism in TensorRT-LLM
//! (Part 1)", `docs/source/blogs/tech_blog/blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md`,
//! Table 1: DeepSeek-R1 decode on 32 GB200, machine-translation dataset, averages of the
//! per-layer per-iteration metrics):
//!
//! | placement | by rank: mean, std, (max−mean)/mean | by expert slot: mean, std, (max−mean)/mean |
//! |---|---|---|
//! | no EPLB (8 slots/rank, EP32) | 1024, 491.6, 1.564 | 128, 164.1, 10.948 |
//! | EPLB (9 slots/rank, EP32) | 1024, 52.0, 0.109 | 114, 77.8, 1.792 |
//! | EPLB (8 slots/rank, EP36) | 1024, 53.9, 0.115 | 128, 87.5, 1.791 |
//!
//! Checks of the model against the same table: static placement predicts a rank CV of
//! `1.282 / √8 = 0.453` (measured 0.480); EPLB's rank imbalance ratio is predicted as
//! `0.0508 · E[max of 32] = 0.0508 · 2.07 = 0.105` (measured 0.109) and, EP36,
//! `0.0526 · 2.10 = 0.110` (0.115). Without EPLB the normal approximation under-states the
//! maximum (predicted 0.453 · 2.07 = 0.94, measured 1.56): a single hot expert makes the
//! rank-load distribution right-skewed, so the static-placement factor is a lower bound.
//!
//! The per-expert CV is DeepSeek-R1's (DeepSeek-V3 architecture and router). No published
//! per-expert load statistic was found for other MoE models (Qwen3, Llama 4, Mixtral,
//! gpt-oss); for them callers should pass `expert_cv = 0` (sampling noise only).

/// Per-expert token-load coefficient of variation of DeepSeek-R1 in decode: 164.1 / 128
/// (std / mean of routed tokens per expert slot without EPLB, TensorRT-LLM tech blog 4,
/// Table 1; 32 GB200, machine-translation dataset).
pub const DEEPSEEK_R1_EXPERT_LOAD_CV: f64 = 164.1 / 128.0;

/// Per-rank token-load CV measured after EPLB: 52.0 / 1024 (TensorRT-LLM tech blog 4,
/// Table 1, DeepSeek-R1, EPLB with 9 slots per rank at EP32). It includes the sampling
/// noise of its own batch ([`EPLB_MEASURED_ASSIGNMENTS_PER_RANK`]).
pub const EPLB_MEASURED_RANK_CV: f64 = 52.0 / 1024.0;

/// Mean routed tokens per rank per iteration behind [`EPLB_MEASURED_RANK_CV`] (Table 1).
pub const EPLB_MEASURED_ASSIGNMENTS_PER_RANK: f64 = 1024.0;

/// How experts are placed on the EP ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// `E / ep` consecutive experts per rank, no replication (every framework's default).
    Static,
    /// Redundant experts replicated and placed from measured load statistics (EPLB).
    Eplb,
}

/// Poisson sampling CV of a rank that receives `assignments` token-expert assignments on
/// average: `1/√m` (0 for an empty batch).
pub fn sampling_cv(assignments: f64) -> f64 {
    if assignments > 0.0 && assignments.is_finite() {
        1.0 / assignments.sqrt()
    } else {
        0.0
    }
}

/// Sampling CV of the routed load one of `ep` expert-parallel ranks receives when every
/// rank routes `tokens_per_rank` tokens, each to `top_k` distinct experts drawn evenly from
/// `experts` (`experts / ep` on each rank): a token sends a rank a hypergeometric count of
/// mean `k/ep` and variance `k·(1/ep)·(1 − 1/ep)·(E − k)/(E − 1)`, so over the
/// `tokens_per_rank · ep` tokens the rank's load has mean `m = tokens_per_rank · k` and
/// CV `√((1 − 1/ep)·(E − k)/(E − 1) / m)`: a little below the Poisson [`sampling_cv`] of
/// `m`, since the draws are without replacement and every token's copies go somewhere. The
/// imbalance of a perfectly uniform router, a lower bound for a trained one; 0 for one
/// rank or no tokens.
pub fn routing_sampling_cv(experts: f64, top_k: f64, ep: f64, tokens_per_rank: f64) -> f64 {
    let m = tokens_per_rank * top_k;
    if !(ep > 1.0 && experts > 1.0 && m > 0.0 && m.is_finite()) {
        return 0.0;
    }
    let k = top_k.min(experts);
    ((1.0 - 1.0 / ep) * (experts - k) / (experts - 1.0) / m)
        .max(0.0)
        .sqrt()
}

/// Residual static per-rank CV after EPLB: [`EPLB_MEASURED_RANK_CV`] with the sampling
/// noise of its measurement removed, `√(0.0508² − 1/1024) ≈ 0.0400`.
pub fn eplb_residual_cv() -> f64 {
    let s = sampling_cv(EPLB_MEASURED_ASSIGNMENTS_PER_RANK);
    (EPLB_MEASURED_RANK_CV * EPLB_MEASURED_RANK_CV - s * s)
        .max(0.0)
        .sqrt()
}

/// Static (batch-independent) per-rank load CV of `placement` for per-expert CV
/// `expert_cv` with `experts_per_rank` experts on each rank: `c_e / √n` for static
/// placement; for EPLB the smaller of that and [`eplb_residual_cv`] (balancing cannot make
/// a rank worse). Zero for a uniform router (`expert_cv = 0`).
pub fn placement_cv(placement: Placement, expert_cv: f64, experts_per_rank: f64) -> f64 {
    // Only a positive, finite CV spreads the load (NaN and infinity read as none).
    if !expert_cv.is_finite() || expert_cv <= 0.0 {
        return 0.0;
    }
    let fixed = expert_cv / experts_per_rank.max(1.0).sqrt();
    match placement {
        Placement::Static => fixed,
        Placement::Eplb => fixed.min(eplb_residual_cv()),
    }
}

/// Per-rank load CV of one iteration: [`placement_cv`] and the [`sampling_cv`] of
/// `assignments_per_rank` mean assignments, in quadrature.
pub fn rank_load_cv(
    placement: Placement,
    expert_cv: f64,
    experts_per_rank: f64,
    assignments_per_rank: f64,
) -> f64 {
    let p = placement_cv(placement, expert_cv, experts_per_rank);
    let s = sampling_cv(assignments_per_rank);
    (p * p + s * s).sqrt()
}

/// Load of the busiest rank relative to the mean: `1 + cv · z`, with `z` the expected
/// maximum of `ep` standard normals (0 for one rank). At least 1.
pub fn busiest_rank_factor(rank_cv: f64, expected_max_z: f64) -> f64 {
    (1.0 + rank_cv.max(0.0) * expected_max_z.max(0.0)).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_constants() {
        assert!((DEEPSEEK_R1_EXPERT_LOAD_CV - 1.2820).abs() < 1e-3);
        assert!((EPLB_MEASURED_RANK_CV - 0.05078).abs() < 1e-4);
        // √(0.050781² − 0.000977) = √(0.0025787 − 0.0009766) = √0.0016022 = 0.04003.
        assert!((eplb_residual_cv() - 0.04003).abs() < 1e-4);
    }

    #[test]
    fn static_placement_matches_the_measured_rank_cv() {
        // EP32 of 256 experts: 8 per rank; 1.282/√8 = 0.4533 against 491.6/1024 = 0.480.
        let cv = placement_cv(Placement::Static, DEEPSEEK_R1_EXPERT_LOAD_CV, 8.0);
        assert!((cv - 0.4533).abs() < 1e-3);
        assert!((cv / (491.6 / 1024.0) - 1.0).abs() < 0.06);
    }

    #[test]
    fn eplb_reproduces_the_measured_imbalance_ratio() {
        // Including its own sampling noise at 1024 tokens per rank, the EPLB rank CV is the
        // measured one; with E[max of 32 normals] = 2.07 (Blom), the ratio 0.105 vs 0.109.
        let cv = rank_load_cv(Placement::Eplb, DEEPSEEK_R1_EXPERT_LOAD_CV, 9.0, 1024.0);
        assert!((cv - EPLB_MEASURED_RANK_CV).abs() < 1e-9);
        let f = busiest_rank_factor(cv, 2.0697);
        assert!((f - 1.0 - 0.109).abs() < 0.01, "{f}");
    }

    #[test]
    fn hand_checked_factors() {
        // DEP8 of 256 experts, 384 decode tokens × 8 per rank: static CV 1.282/√32 = 0.2266,
        // sampling 1/√3072 = 0.01804; √(0.05135 + 0.000326) = 0.2273; E[max of 8] = 1.4236:
        // factor 1.3236.
        let cv = rank_load_cv(Placement::Static, DEEPSEEK_R1_EXPERT_LOAD_CV, 32.0, 3072.0);
        assert!((cv - 0.2273).abs() < 1e-3, "{cv}");
        assert!((busiest_rank_factor(cv, 1.4236) - 1.3236).abs() < 2e-3);
        // A uniform router: sampling only; 100 assignments per rank, 4 ranks (E[max] 1.029).
        let u = rank_load_cv(Placement::Static, 0.0, 32.0, 100.0);
        assert!((u - 0.1).abs() < 1e-12);
        assert!((busiest_rank_factor(u, 1.0294) - 1.10294).abs() < 1e-9);
    }

    #[test]
    fn routing_sampling_cv_by_hand_and_by_enumeration() {
        // Qwen3 30B-A3B at EP 8, 4,096 tokens a rank: (7/8 · 120/127) / 32,768.
        let cv = routing_sampling_cv(128.0, 8.0, 8.0, 4096.0);
        assert!((cv - (0.875 * 120.0 / 127.0 / 32768.0_f64).sqrt()).abs() < 1e-12);
        assert!((cv - 0.005023).abs() < 1e-6, "{cv}");
        // Below the Poisson figure of the same mean load, and equal to the binomial one for
        // top-1 routing: (1 - 1/ep) / tokens.
        assert!(cv < sampling_cv(4096.0 * 8.0));
        let top1 = routing_sampling_cv(64.0, 1.0, 4.0, 100.0);
        assert!((top1 - (0.75_f64 / 100.0).sqrt()).abs() < 1e-12);
        // Enumerated: 6 experts on 2 ranks (3 each), top-2, one token a rank. Each token's
        // count on rank 0 over the C(6,2) = 15 equally likely pairs: 3 pairs give 2, 9 give
        // 1, 3 give 0, so mean 1 and variance 6/15; two tokens: mean 2, variance 12/15.
        let mut counts = [0.0f64; 3];
        for a in 0..6 {
            for b in (a + 1)..6 {
                counts[(a < 3) as usize + (b < 3) as usize] += 1.0 / 15.0;
            }
        }
        let mean: f64 = (0..3).map(|c| c as f64 * counts[c]).sum();
        let var: f64 = (0..3).map(|c| (c as f64 - mean).powi(2) * counts[c]).sum();
        let exact = (2.0 * var).sqrt() / (2.0 * mean);
        assert!((routing_sampling_cv(6.0, 2.0, 2.0, 1.0) - exact).abs() < 1e-12);
        // One rank, no tokens, bad input: none.
        assert_eq!(routing_sampling_cv(128.0, 8.0, 1.0, 4096.0), 0.0);
        assert_eq!(routing_sampling_cv(128.0, 8.0, 8.0, 0.0), 0.0);
        assert_eq!(routing_sampling_cv(128.0, 8.0, 8.0, f64::NAN), 0.0);
    }

    #[test]
    fn invariants() {
        // One rank, or an empty batch of a uniform router: no imbalance.
        assert_eq!(busiest_rank_factor(0.7, 0.0), 1.0);
        assert_eq!(rank_load_cv(Placement::Eplb, 0.0, 8.0, 0.0), 0.0);
        // EPLB never worse than static; more experts per rank and more tokens only help.
        for n in [1.0, 2.0, 4.0, 8.0, 64.0] {
            let s = placement_cv(Placement::Static, 1.28, n);
            let e = placement_cv(Placement::Eplb, 1.28, n);
            assert!(e <= s);
            assert!(placement_cv(Placement::Static, 1.28, 2.0 * n) < s);
        }
        assert!(
            rank_load_cv(Placement::Eplb, 1.28, 4.0, 2048.0)
                < rank_load_cv(Placement::Eplb, 1.28, 4.0, 512.0)
        );
        // Bad input stays finite.
        assert!(
            sampling_cv(f64::NAN) == 0.0 && placement_cv(Placement::Static, f64::NAN, 8.0) == 0.0
        );
    }
}
