//! The request-level discrete-event simulation.
//!
//! Events are iteration ends of instances, request arrivals and KV-cache arrivals at decode
//! instances. Each iteration's time comes from `InstanceModel::iteration` over aggregates
//! the instance keeps incrementally (decode sequences, the sum of their contexts), so one
//! iteration costs O(1) plus O(log n) per request that finishes and O(chunks) for prefill:
//! no per-token or per-sequence loop.
//!
//! Policy (Orca continuous batching, Sarathi-Serve chunked prefill, DistServe/Splitwise
//! disaggregation): FCFS admission while the KV cache can hold the request's prompt and
//! output (reserved at admission, so no preemption; requests wait while it is full; under
//! attention data parallelism each rank has its own share of the cache and admits its own
//! line: a request is placed on a rank by the framework's rule, `DpPlacement`, and one that
//! rank cannot hold yet waits at the head of that rank's line, holding up no other rank) and
//! the running sequences stay under `max_batch`; every iteration decodes all running
//! sequences and fills the rest of the token budget with prompt chunks (whole prompts when
//! chunking is off). Disaggregated: prefill instances only prefill (a prompt goes to the
//! least-loaded one, the caches it holds for transfer counted); the request then queues
//! at the least-loaded decode instance, whose admission reserves its cache there and starts
//! the transfer over the scale-out network; the cache stays reserved on the prefill
//! instance until the transfer lands, and its first token is the landing.
//!
//! Invariants: deterministic for a seed; time never goes backwards; every admitted request
//! completes (a request larger than one attention rank's KV cache is rejected and counted).
//!
//! A request whose prompt + output exceed the deployment's maximum context
//! (`InstanceModel::max_context`: `serving.max_context`, or the model preset's) is turned
//! away on arrival and counted (`SimReport::rejected_too_long`), as the engines reject it.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::framework::DpPlacement;
use crate::model::{Batch, BusiestRank, InstanceModel, IterMemo};

/// A length distribution (tokens), clipped to `[min, max]` where given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum LengthDist {
    Fixed(u32),
    Uniform {
        min: u32,
        max: u32,
    },
    Normal {
        mean: f64,
        std: f64,
        min: u32,
        max: u32,
    },
    LogNormal {
        mean: f64,
        std: f64,
        min: u32,
        max: u32,
    },
}

impl LengthDist {
    pub fn mean(&self) -> f64 {
        match *self {
            LengthDist::Fixed(n) => n as f64,
            LengthDist::Uniform { min, max } => (min as f64 + max as f64) / 2.0,
            LengthDist::Normal { mean, .. } | LengthDist::LogNormal { mean, .. } => mean,
        }
    }

    /// The shortest length `sample` can draw.
    pub fn min_len(&self) -> u32 {
        match *self {
            LengthDist::Fixed(n) => n.max(1),
            LengthDist::Uniform { min, .. }
            | LengthDist::Normal { min, .. }
            | LengthDist::LogNormal { min, .. } => min.max(1),
        }
    }

    /// The longest length `sample` can draw.
    pub fn max_len(&self) -> u32 {
        match *self {
            LengthDist::Fixed(n) => n.max(1),
            LengthDist::Uniform { min, max }
            | LengthDist::Normal { min, max, .. }
            | LengthDist::LogNormal { min, max, .. } => max.max(min.max(1)),
        }
    }

    fn sample(&self, rng: &mut ChaCha8Rng) -> u32 {
        // Every length is at least one token; a `max` below that floor (or below `min`)
        // is raised to it, so the range is never empty.
        let clip = |x: f64, lo: u32, hi: u32| {
            let lo = lo.max(1);
            x.round().clamp(lo as f64, hi.max(lo) as f64) as u32
        };
        match *self {
            LengthDist::Fixed(n) => n.max(1),
            LengthDist::Uniform { min, max } => {
                let lo = min.max(1);
                let span = max.max(lo) as u64 - lo as u64 + 1;
                lo + (rng.next_u64() % span) as u32
            }
            LengthDist::Normal {
                mean,
                std,
                min,
                max,
            } => clip(mean + std * normal(rng), min, max),
            LengthDist::LogNormal {
                mean,
                std,
                min,
                max,
            } => {
                // Parameters of the underlying normal from the lognormal's mean and std.
                let s2 = (1.0 + (std / mean).powi(2)).ln();
                let mu = mean.ln() - s2 / 2.0;
                clip((mu + s2.sqrt() * normal(rng)).exp(), min, max)
            }
        }
    }
}

fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let (u1, u2) = (uniform(rng), uniform(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// How requests arrive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Arrivals {
    /// Poisson process, requests per second.
    Poisson(f64),
    /// All at time 0 (offline throughput).
    Offline,
    /// Given arrival times (s) with input and output lengths.
    Trace(Vec<(f64, u32, u32)>),
    /// A closed loop of this many clients: each keeps one request in flight and sends
    /// the next the moment its last one completes (benchmark clients' fixed concurrency:
    /// `trtllm-bench --concurrency`, `vllm bench serve --max-concurrency`,
    /// `sglang.bench_serving --max-concurrency`).
    Closed {
        clients: u32,
        /// Each request's (input, output) tokens in the order sent (a dataset's samples);
        /// empty: drawn from the workload's length distributions.
        lengths: Vec<(u32, u32)>,
    },
}

/// The request mix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    pub arrivals: Arrivals,
    pub input: LengthDist,
    pub output: LengthDist,
    pub requests: u64,
    /// Fraction of prompt tokens served from the prefix cache (not computed).
    pub prefix_hit: f64,
    pub seed: u64,
}

impl Workload {
    /// `n` requests of this workload under other arrivals: Poisson at `rate`, or all at
    /// t = 0 (`None`), seeded as the workload is. Their lengths are those the workload
    /// carries (a trace's, a dataset's, a closed loop's, in order and cycled), else drawn
    /// from its length distributions.
    pub fn requests_at(&self, rate: Option<f64>, n: u64) -> Vec<(f64, u32, u32)> {
        let mut v = generate(&Workload {
            arrivals: rate.map_or(Arrivals::Offline, Arrivals::Poisson),
            input: self.input.clone(),
            output: self.output.clone(),
            requests: n,
            prefix_hit: self.prefix_hit,
            seed: self.seed,
        });
        // Only the first `n` carried lengths are ever used (a trace can hold millions).
        let n = n as usize;
        let carried: Vec<(u32, u32)> = match &self.arrivals {
            Arrivals::Trace(t) => t.iter().take(n).map(|&(_, i, o)| (i, o)).collect(),
            Arrivals::Closed { lengths, .. } => lengths.iter().take(n).copied().collect(),
            _ => Vec::new(),
        };
        for (r, &(i, o)) in v.iter_mut().zip(carried.iter().cycle()) {
            (r.1, r.2) = (i, o);
        }
        v
    }
}

/// One role's configuration (an aggregated instance is one role that does both).
#[derive(Debug, Clone)]
pub struct RoleSpec {
    pub model: InstanceModel,
    pub instances: u32,
    pub max_batch: u32,
    pub max_tokens: u32,
    pub chunked_prefill: bool,
    /// KV-cache capacity per instance, tokens.
    pub kv_tokens: f64,
    /// How the scheduler forms iterations (default: prompts share iterations with decodes).
    pub policy: SchedulePolicy,
}

/// How an instance's scheduler forms iterations beyond the token budget and batch limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SchedulePolicy {
    /// Every iteration is all prefill or all decode, admitted prompts first: vLLM's V0
    /// engine without chunked prefill ("by default, vLLM scheduler prioritizes prefills and
    /// doesn't batch prefill and decode to the same batch"; chunked prefill switched it to
    /// decode-first mixed batches, vllm-project/vllm#7874). Running sequences wait out
    /// every prefill iteration. Off (default): prompts share iterations with the decodes
    /// (Orca continuous batching, TensorRT-LLM in-flight batching, vLLM V1, SGLang).
    pub prefill_first: bool,
    /// Decode steps per scheduling round (vLLM V0 multi-step scheduling,
    /// `num_scheduler_steps`): once a round starts, waiting prompts are scheduled only after
    /// its last step. 0 or 1: every iteration is scheduled.
    pub decode_steps_per_round: u32,
    /// TensorRT-LLM's ADP balance, context wait (`attention_dp_config: enable_balance`,
    /// `timeout_iters`; TensorRT-LLM tech blog 10): with attention data parallelism and
    /// every rank decoding, new prompts are held until every attention rank has one of its
    /// own (and a free batch slot), or until a count of iterations reaches this many (it
    /// runs in every iteration in which every rank decodes and not every rank has a prompt,
    /// prompts waiting or not, and restarts at the timeout), so that the ranks run their
    /// prompts in the same iteration instead of one rank stalling the others at every MoE
    /// layer. 0 (TensorRT-LLM's default, `enable_balance: false`): no holding.
    pub adp_balance_timeout_iters: u32,
    /// TensorRT-LLM's ADP balance, batching wait (`batching_wait_iters`): once every
    /// attention rank has a new prompt and decodes are running, the prompts wait this many
    /// iterations more to gather a larger context batch (`should_wait_for_context_batching`
    /// in its scheduler: the count resets when they run). Only with the context wait on.
    pub adp_balance_batching_wait_iters: u32,
    /// How a new request gets its attention-DP rank: the framework's rule (`DpPlacement`;
    /// default: the rank with the most free KV cache, no framework's).
    pub dp_placement: DpPlacement,
}

/// Aggregated or prefill/decode disaggregated.
#[derive(Debug, Clone)]
pub enum Deployment {
    Aggregated(RoleSpec),
    Disaggregated {
        prefill: RoleSpec,
        decode: Box<RoleSpec>,
        /// Per-accelerator bandwidth of the KV transfer, bytes/s, and its latency, s.
        kv_bps: f64,
        kv_latency_s: f64,
    },
}

impl Deployment {
    pub fn accelerators(&self) -> u64 {
        let n = |r: &RoleSpec| r.instances as u64 * r.model.par.gpus() as u64;
        match self {
            Deployment::Aggregated(r) => n(r),
            Deployment::Disaggregated {
                prefill, decode, ..
            } => n(prefill) + n(decode),
        }
    }
}

/// Latency targets.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Slo {
    pub ttft_s: Option<f64>,
    pub tpot_s: Option<f64>,
}

/// Percentiles of one latency, seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Percentiles {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
}

/// Mean and percentiles of `v` (sorted in place), each percentile interpolated linearly
/// between the two nearest ranks: numpy's default `percentile`, which vLLM's, SGLang's and
/// trtllm-bench's benchmarks report (the median of an even count is the mean of the middle
/// two).
fn percentiles(v: &mut [f64]) -> Percentiles {
    if v.is_empty() {
        return Percentiles::default();
    }
    v.sort_unstable_by(f64::total_cmp);
    let at = |q: f64| {
        let x = (v.len() - 1) as f64 * q;
        let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
        v[lo] + (v[hi] - v[lo]) * (x - lo as f64)
    };
    Percentiles {
        mean: v.iter().sum::<f64>() / v.len() as f64,
        p50: at(0.5),
        p90: at(0.9),
        p99: at(0.99),
    }
}

/// What a simulation measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SimReport {
    pub requests: u64,
    pub completed: u64,
    pub rejected: u64,
    /// Of `rejected`, the requests whose prompt + output exceed the deployment's maximum
    /// context (`InstanceModel::max_context`), turned away on arrival; the others were
    /// larger than one attention rank's KV cache.
    pub rejected_too_long: u64,
    pub accelerators: u64,
    /// First arrival to last completion, s.
    pub duration_s: f64,
    pub input_tokens_per_s: f64,
    pub output_tokens_per_s: f64,
    pub input_tokens_per_s_per_accelerator: f64,
    pub output_tokens_per_s_per_accelerator: f64,
    /// Output tokens/s per accelerator between the 10% and 90% completion marks (the
    /// steady state of an offline run, without ramp-up and tail).
    pub steady_output_tokens_per_s_per_accelerator: f64,
    /// Prompt tokens/s per prefill accelerator and output tokens/s per decode accelerator
    /// (disaggregated; the aggregated figures otherwise).
    pub prefill_tokens_per_s_per_prefill_accelerator: f64,
    pub decode_tokens_per_s_per_decode_accelerator: f64,
    pub ttft: Percentiles,
    /// Over the completed requests of more than one output token (a single-token request
    /// has no time per output token).
    pub tpot: Percentiles,
    pub latency: Percentiles,
    /// Mean over completed requests of each one's decode speed, (output − 1) / (last −
    /// first token time): trtllm-bench's "Per User Output Speed", 1/TPOT per request.
    pub per_user_output_tokens_per_s: f64,
    /// Mean over completed requests of output tokens / request latency (prefill and queue
    /// included): trtllm-bench's "Per User Output Throughput [w/ ctx]".
    pub per_user_output_tokens_per_s_with_ctx: f64,
    /// Requests/s that met both SLOs, and their output tokens/s.
    pub goodput_requests_per_s: f64,
    pub goodput_output_tokens_per_s: f64,
    /// Share of the requests (completed or rejected) that met both SLOs.
    pub slo_attainment: f64,
    /// KV-cache use, time-averaged and peak, as a fraction of capacity (all instances).
    pub kv_use_mean: f64,
    pub kv_use_peak: f64,
    /// Time-averaged requests in the system (queued or running).
    pub mean_in_system: f64,
    /// Measured arrival rate, requests/s: the requests after the first over the time from
    /// the first arrival to the last. `None` (JSON `null`) where every request arrived at
    /// the same instant (an offline run, a single request): no rate can be measured.
    pub arrival_rate: Option<f64>,
    pub mean_latency_s: f64,
    pub iterations: u64,
    pub mean_decode_batch: f64,
    /// Where the iterations' time went, decode-only against those carrying prompts.
    pub iteration_mix: IterationMix,
}

/// Where the time of one class of iterations went, summed over the run (all instances):
/// `time` is the sum of the iterations' splits (instance-seconds, `time.total_s` in all);
/// divide by `iterations` for the mean iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IterationClass {
    pub iterations: u64,
    pub time: crate::model::IterTime,
    /// Sum over these iterations of the decode sequences per attention rank.
    pub decode_seqs_per_rank: f64,
    /// Sum over these iterations of the decode sequences' mean context (tokens).
    pub decode_context: f64,
    /// Sum over these iterations of the prompt tokens per attention rank that carries one.
    pub prompt_tokens_per_rank: f64,
}

impl IterationClass {
    fn add(&mut self, t: &crate::model::IterTime, b: &Batch, ranks: f64) {
        self.iterations += 1;
        self.time.add(t);
        self.decode_seqs_per_rank += b.decode_seqs / ranks;
        if b.decode_seqs > 0.0 {
            self.decode_context += b.decode_ctx / b.decode_seqs;
        }
        if b.prefill_seqs > 0.0 {
            self.prompt_tokens_per_rank += b.prefill_tokens / b.prefill_seqs.min(ranks);
        }
    }

    /// The mean of a summed field over these iterations (0 when there were none).
    pub fn mean(&self, sum: f64) -> f64 {
        if self.iterations == 0 {
            0.0
        } else {
            sum / self.iterations as f64
        }
    }
}

/// How a run's iterations divide: decode-only ones (CUDA-graph replays where the framework
/// captures them) and those that carry prompt tokens (prefill or mixed, run eagerly).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IterationMix {
    pub decode_only: IterationClass,
    pub with_prompts: IterationClass,
}

#[derive(Clone, Copy)]
struct Req {
    arrival: f64,
    input: u32,
    output: u32,
    first: f64,
    done: f64,
    /// The prefill instance holding its KV cache until the transfer to a decode instance
    /// lands (disaggregated).
    src: u32,
    /// The attention-DP rank holding its cache on the prefill instance (`src`), and on
    /// the instance that decodes it.
    src_rank: u32,
    rank: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    IterEnd,
    KvArrive,
    Arrival,
}

#[derive(Clone, Copy)]
struct Ev {
    t: f64,
    seq: u64,
    kind: Kind,
    a: u32,
    b: u32,
}
impl PartialEq for Ev {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Ev {}
impl PartialOrd for Ev {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ev {
    fn cmp(&self, o: &Self) -> Ordering {
        self.t.total_cmp(&o.t).then(self.seq.cmp(&o.seq))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Both,
    Prefill,
    Decode,
}

struct Inst {
    role: Role,
    spec: usize,
    waiting: VecDeque<u32>,
    /// Admitted, prompt tokens done so far.
    prefill: VecDeque<(u32, u32)>,
    running: u32,
    ctx: f64,
    /// Sum of the squared contexts of the running sequences (their spread sets how far the
    /// busiest attention-DP rank's context exceeds the mean, `Batch::decode_ctx_sq`).
    ctx_sq: f64,
    steps: u64,
    finish: BinaryHeap<Reverse<(u64, u32)>>,
    kv_used: f64,
    /// KV tokens reserved on each attention-DP rank (each rank has its own cache, of
    /// `kv_tokens / attention_dp`: vLLM's and SGLang's DP attention, TensorRT-LLM's ADP).
    rank_kv: Vec<f64>,
    /// Running (decoding) sequences on each attention-DP rank, and the sum of their
    /// contexts: the busiest rank paces the iteration (`BusiestRank`).
    rank_running: Vec<u32>,
    rank_ctx: Vec<f64>,
    /// Prompts with a chunk in the iteration being formed, per rank, and their tokens
    /// (scratch).
    rank_prompts: Vec<u32>,
    rank_prompt_tokens: Vec<f64>,
    /// Each rank's token budget left for prompts in the iteration being formed (scratch).
    rank_room: Vec<f64>,
    /// Ranks whose line is held by a waiting request their cache cannot yet hold (scratch
    /// of an admission pass).
    blocked: Vec<bool>,
    /// Requests placed on a rank and not yet admitted there, one line per rank (placements
    /// other than `DpPlacement::MostFreeKv`, which places at admission).
    rank_wait: Vec<VecDeque<u32>>,
    /// Requests in all of `rank_wait`.
    rank_waiting: usize,
    /// Requests on each rank (in its line, prefilling, decoding or in transfer to it) and
    /// the sum of their prompt lengths: TensorRT-LLM's active requests and tokens per rank.
    rank_active: Vec<u32>,
    rank_prompt_sum: Vec<f64>,
    /// Requests placed so far (round robin's counter).
    placed: u64,
    busy: bool,
    /// Prompts completed by the iteration in flight (anywhere in the queue: with attention
    /// DP a prompt gets one rank's share, and a short one behind it can finish first).
    done_front: usize,
    decoding: f64,
    /// Decode steps left in the current multi-step round (`SchedulePolicy`).
    round_left: u32,
    /// Iterations the waiting prompts have been held by ADP balance (`SchedulePolicy`).
    held: u32,
    /// Iterations they have been held for batching, every rank having one.
    batch_held: u32,
    /// KV caches on their way to this (decode) instance: admitted (its cache reserved),
    /// not yet decoding: in transfer, or in `landed`.
    incoming: usize,
    /// KV caches this (prefill) instance holds for prompts it has finished, until they
    /// land at a decode instance: waiting there for room, or in transfer.
    outgoing: usize,
    /// Admitted requests whose KV cache has landed: they start decoding at the next
    /// iteration's start.
    landed: Vec<u32>,
    /// When each attention-DP rank's NICs finish sending the KV caches queued on them
    /// (prefill instances): caches leaving one rank share its links, one after another.
    links: Vec<f64>,
}

impl Inst {
    /// The requests that hold or wait for this instance's cache: queued, prefilling,
    /// decoding, on their way in (decode) or held for their transfer out (prefill: a
    /// prefill instance whose cache is full of prompts waiting for decode room is not idle).
    fn load(&self) -> usize {
        self.waiting.len()
            + self.rank_waiting
            + self.prefill.len()
            + self.running as usize
            + self.incoming
            + self.outgoing
    }

    /// Request `r` (`q`) starts decoding with its prompt and first token as context; it
    /// finishes after the decode steps its remaining output needs at `tps` tokens a step.
    fn start_decoding(&mut self, r: u32, q: &Req, tps: f64) {
        let ctx = (q.input + 1) as f64;
        self.running += 1;
        self.ctx += ctx;
        self.ctx_sq += ctx * ctx;
        self.rank_running[q.rank as usize] += 1;
        self.rank_ctx[q.rank as usize] += ctx;
        let steps = ((q.output - 1) as f64 / tps).ceil() as u64;
        self.finish.push(Reverse((self.steps + steps.max(1), r)));
    }
}

struct Sim<'a> {
    specs: Vec<&'a RoleSpec>,
    /// One iteration memo per spec (`InstanceModel::iteration_memo`).
    memos: Vec<IterMemo>,
    insts: Vec<Inst>,
    reqs: Vec<Req>,
    ev: BinaryHeap<Reverse<Ev>>,
    seq: u64,
    prefix_hit: f64,
    kv_bps: f64,
    kv_latency: f64,
    // statistics
    in_system: f64,
    area: f64,
    last_t: f64,
    kv_area: f64,
    kv_peak: f64,
    kv_total_cap: f64,
    kv_total_used: f64,
    completed: u64,
    rejected: u64,
    rejected_too_long: u64,
    out_tokens: f64,
    in_tokens: f64,
    prefill_tokens: f64,
    marks: [(u64, f64, f64); 2],
    mark_at: [u64; 2],
    iterations: u64,
    decode_batch_sum: f64,
    decode_iters: u64,
    mix: IterationMix,
}

impl Sim<'_> {
    fn push(&mut self, t: f64, kind: Kind, a: u32, b: u32) {
        self.seq += 1;
        self.ev.push(Reverse(Ev {
            t,
            seq: self.seq,
            kind,
            a,
            b,
        }));
    }

    fn advance(&mut self, t: f64) {
        let dt = t - self.last_t;
        if dt > 0.0 {
            self.area += self.in_system * dt;
            if self.kv_total_cap > 0.0 {
                self.kv_area += self.kv_total_used / self.kv_total_cap * dt;
            }
            self.last_t = t;
        }
    }

    fn kv_change(&mut self, i: usize, rank: u32, d: f64) {
        self.insts[i].kv_used += d;
        self.insts[i].rank_kv[rank as usize] += d;
        self.kv_total_used += d;
        if self.kv_total_cap > 0.0 {
            self.kv_peak = self.kv_peak.max(self.kv_total_used / self.kv_total_cap);
        }
    }

    /// Request `r` joins attention-DP rank `k` of instance `i`: its rank's count and
    /// prompt tokens grow (it holds its place there until it leaves the instance).
    fn join_rank(&mut self, i: usize, r: u32, k: usize) {
        let input = self.reqs[r as usize].input as f64;
        let inst = &mut self.insts[i];
        if inst.role == Role::Prefill {
            self.reqs[r as usize].src_rank = k as u32;
        } else {
            self.reqs[r as usize].rank = k as u32;
        }
        inst.rank_active[k] += 1;
        inst.rank_prompt_sum[k] += input;
    }

    /// Request `r` leaves instance `i` (finished there, or passed on to a decode instance).
    fn leave_rank(&mut self, i: usize, r: u32) {
        let q = self.reqs[r as usize];
        let inst = &mut self.insts[i];
        let k = if inst.role == Role::Prefill {
            q.src_rank
        } else {
            q.rank
        } as usize;
        inst.rank_active[k] -= 1;
        inst.rank_prompt_sum[k] -= q.input as f64;
    }

    /// Whether request `r` can never run on instance `i`: its cache is larger than one
    /// attention-DP rank's share, or (a prefill instance) no decode rank could hold its
    /// whole context (it would be prefilled, its tokens counted, and then rejected at the
    /// decode instance).
    fn unfit(&self, i: usize, r: u32) -> bool {
        let spec = self.specs[self.insts[i].spec];
        let role = self.insts[i].role;
        let q = self.reqs[r as usize];
        let ranks = spec.model.par.attention_dp.max(1);
        let need = match role {
            Role::Prefill => spec.model.kv_need(q.input as f64),
            _ => spec.model.kv_need(q.input as f64 + q.output as f64),
        };
        let never_decodes = role == Role::Prefill && q.output > 1 && {
            let d = self.specs[1];
            d.model.kv_need(q.input as f64 + q.output as f64)
                > d.kv_tokens / d.model.par.attention_dp.max(1) as f64
        };
        need > spec.kv_tokens / ranks as f64 || never_decodes
    }

    /// Turns away request `r` (`unfit`) at instance `i`, already out of its queues.
    fn reject(&mut self, i: usize, r: u32) {
        self.rejected += 1;
        self.in_system -= 1.0;
        if self.insts[i].role == Role::Decode {
            // Its cache, held on the prefill instance, is dropped there.
            let q = self.reqs[r as usize];
            let src = q.src as usize;
            let held = self.specs[self.insts[src].spec]
                .model
                .kv_need(q.input as f64);
            self.kv_change(src, q.src_rank, -held);
            self.insts[src].outgoing -= 1;
        }
    }

    /// Places instance `i`'s waiting requests on its attention-DP ranks by the framework's
    /// rule (`DpPlacement`, other than `MostFreeKv`), each into its rank's line. Requests
    /// that can never run are turned away here.
    fn place(&mut self, i: usize, placement: DpPlacement) {
        let spec = self.specs[self.insts[i].spec];
        let ranks = spec.model.par.attention_dp.max(1) as usize;
        // TensorRT-LLM fetches up to its active-request capacity, every rank's
        // `max_num_active_requests` (here `max_batch`, over all ranks) less the requests
        // active on them; the routers that place on arrival take every request.
        let active: u32 = self.insts[i].rank_active.iter().sum();
        let take = match placement {
            DpPlacement::FewestTokens => (spec.max_batch as usize).saturating_sub(active as usize),
            _ => usize::MAX,
        };
        let mut new: Vec<u32> = Vec::new();
        while new.len() < take {
            let Some(r) = self.insts[i].waiting.pop_front() else {
                break;
            };
            if self.unfit(i, r) {
                self.reject(i, r);
            } else {
                new.push(r);
            }
        }
        if new.is_empty() {
            return;
        }
        match placement {
            DpPlacement::FewestTokens => {
                // `_balance_requests_across_ranks`: a min-heap of (tokens, requests, rank)
                // over the ranks below the cap, the new requests longest prompt first
                // (a stable sort, as Python's), each to the top rank, which goes back on
                // the heap while below the cap.
                let inst = &self.insts[i];
                let total = active as usize + new.len();
                let cap = (total.div_ceil(ranks) as u32)
                    .max(inst.rank_active.iter().copied().max().unwrap_or(0));
                let mut heap: BinaryHeap<Reverse<(u64, u32, usize)>> = (0..ranks)
                    .filter(|&k| inst.rank_active[k] < cap)
                    .map(|k| Reverse((inst.rank_prompt_sum[k] as u64, inst.rank_active[k], k)))
                    .collect();
                new.sort_by_key(|&r| Reverse(self.reqs[r as usize].input));
                for r in new {
                    let Reverse((tokens, n, k)) = heap.pop().expect("the cap leaves room");
                    self.join_rank(i, r, k);
                    self.insts[i].rank_wait[k].push_back(r);
                    self.insts[i].rank_waiting += 1;
                    let (tokens, n) = (tokens + self.reqs[r as usize].input as u64, n + 1);
                    if n < cap {
                        heap.push(Reverse((tokens, n, k)));
                    }
                }
            }
            _ => {
                for r in new {
                    let inst = &self.insts[i];
                    let k = match placement {
                        DpPlacement::RoundRobin => (inst.placed % ranks as u64) as usize,
                        DpPlacement::BootstrapRoom => {
                            (splitmix64(r as u64) % ranks as u64) as usize
                        }
                        _ => {
                            // vLLM: the lowest 4 × waiting + running, the first from rank 0.
                            let score = |k: usize| {
                                let waiting = inst.rank_wait[k].len() as u64;
                                4 * waiting + (inst.rank_active[k] as u64 - waiting)
                            };
                            (0..ranks).min_by_key(|&k| (score(k), k)).expect("a rank")
                        }
                    };
                    self.insts[i].placed += 1;
                    self.join_rank(i, r, k);
                    self.insts[i].rank_wait[k].push_back(r);
                    self.insts[i].rank_waiting += 1;
                }
            }
        }
    }

    fn pick(&self, role: Role) -> usize {
        let mut best = usize::MAX;
        let mut load = usize::MAX;
        for (i, x) in self.insts.iter().enumerate() {
            if x.role == role && x.load() < load {
                load = x.load();
                best = i;
            }
        }
        best
    }

    /// Sends requests `range` at `t`: each joins the least loaded instance of the entry
    /// role, and then every instance that got one and is idle starts an iteration (all
    /// requests of an instant are queued before any starts).
    fn send(
        &mut self,
        range: std::ops::Range<usize>,
        t: f64,
        entry: Role,
        touched: &mut Vec<usize>,
    ) {
        touched.clear();
        for r in range {
            let i = self.pick(entry);
            // Longer than the engine's context limit: rejected on arrival (vLLM's "This
            // model's maximum context length is … tokens", TensorRT-LLM's and SGLang's
            // request checks), holding no queue place or cache.
            let q = &self.reqs[r];
            let limit = self.specs[self.insts[i].spec].model.max_context;
            if limit.is_some_and(|m| q.input as u64 + q.output as u64 > m as u64) {
                self.rejected += 1;
                self.rejected_too_long += 1;
                continue;
            }
            self.insts[i].waiting.push_back(r as u32);
            self.in_system += 1.0;
            if !touched.contains(&i) {
                touched.push(i);
            }
        }
        for &i in touched.iter() {
            if !self.insts[i].busy {
                self.start(i, t);
            }
        }
    }

    fn complete(&mut self, r: u32, t: f64) {
        self.reqs[r as usize].done = t;
        self.in_system -= 1.0;
        self.completed += 1;
        for k in 0..2 {
            if self.completed == self.mark_at[k] {
                self.marks[k] = (self.completed, t, self.out_tokens);
            }
        }
    }

    fn cached(&self, input: u32) -> u32 {
        ((input as f64 * self.prefix_hit).floor() as u32).min(input.saturating_sub(1))
    }

    /// Starts an iteration on instance `i` at `t` if it has work.
    fn start(&mut self, i: usize, t: f64) {
        let spec = self.specs[self.insts[i].spec];
        let tps = spec.model.tokens_per_step();
        let draft = spec.model.spec.map(|s| s.draft_tokens).unwrap_or(0) as f64;
        let cap = spec.kv_tokens;
        let role = self.insts[i].role;
        let ranks = spec.model.par.attention_dp.max(1);
        // KV caches that have landed start decoding.
        for k in 0..self.insts[i].landed.len() {
            let r = self.insts[i].landed[k];
            let q = self.reqs[r as usize];
            let inst = &mut self.insts[i];
            inst.incoming -= 1;
            inst.start_decoding(r, &q, tps);
        }
        self.insts[i].landed.clear();
        // Admission: FCFS on each attention-DP rank. A request goes to the unblocked rank
        // with the most free cache; where even that one cannot hold it, it waits at the head
        // of that rank's line, which admits nothing past it, while later requests may still
        // go to the other ranks (the frameworks queue a request at one rank, whose own
        // scheduler admits it; one rank's cache is its own, whatever room the others have).
        // With one rank: plain FCFS. At most `ranks` waiting requests are passed over.
        let placement = spec.policy.dp_placement;
        let placed = ranks > 1 && placement != DpPlacement::MostFreeKv;
        if placed {
            // The framework places each request on a rank first (`DpPlacement`); each
            // rank then admits its own line, FCFS, while its cache can hold the head and
            // it runs fewer than its share of `max_batch`.
            self.place(i, placement);
            let share = cap / ranks as f64;
            let per_rank = spec.max_batch.div_ceil(ranks);
            for k in 0..ranks as usize {
                loop {
                    let inst = &self.insts[i];
                    let Some(&r) = inst.rank_wait[k].front() else {
                        break;
                    };
                    let admitted = inst.rank_active[k] - inst.rank_wait[k].len() as u32;
                    let q = self.reqs[r as usize];
                    let need = match role {
                        Role::Prefill => spec.model.kv_need(q.input as f64),
                        _ => spec.model.kv_need(q.input as f64 + q.output as f64),
                    };
                    if admitted >= per_rank || inst.rank_kv[k] + need > share {
                        break;
                    }
                    self.insts[i].rank_wait[k].pop_front();
                    self.insts[i].rank_waiting -= 1;
                    self.kv_change(i, k as u32, need);
                    if role == Role::Decode {
                        self.send_kv(r, i, t);
                    } else {
                        let c = self.cached(q.input);
                        self.insts[i].prefill.push_back((r, c));
                    }
                }
            }
        }
        let mut pos = 0usize;
        let mut blocked = 0u32;
        self.insts[i].blocked.iter_mut().for_each(|b| *b = false);
        while blocked < ranks && !placed {
            let inst = &self.insts[i];
            let Some(&r) = inst.waiting.get(pos) else {
                break;
            };
            let q = self.reqs[r as usize];
            let need = match role {
                Role::Prefill => spec.model.kv_need(q.input as f64),
                _ => spec.model.kv_need(q.input as f64 + q.output as f64),
            };
            // Caches in transfer hold their batch slots as well as their room.
            let active = inst.running as usize + inst.prefill.len() + inst.incoming;
            // A sequence's KV cache lives on one attention-DP rank: a request larger than
            // one rank's share can never run. A prefill instance also turns away a request
            // whose whole context no decode rank can hold (it was prefilled, its tokens
            // counted, and then rejected at the decode instance).
            let never_decodes = role == Role::Prefill && q.output > 1 && {
                let d = self.specs[1];
                d.model.kv_need(q.input as f64 + q.output as f64)
                    > d.kv_tokens / d.model.par.attention_dp.max(1) as f64
            };
            if need > cap / ranks as f64 || never_decodes {
                self.insts[i].waiting.remove(pos);
                self.reject(i, r);
                continue;
            }
            if active >= spec.max_batch as usize {
                break;
            }
            let share = cap / ranks as f64;
            let (k, used) = inst
                .rank_kv
                .iter()
                .copied()
                .enumerate()
                .filter(|&(k, _)| !inst.blocked[k])
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("an unblocked rank");
            if used + need > share {
                self.insts[i].blocked[k] = true;
                blocked += 1;
                pos += 1;
                continue;
            }
            self.insts[i].waiting.remove(pos);
            self.kv_change(i, k as u32, need);
            self.join_rank(i, r, k);
            if role == Role::Decode {
                self.send_kv(r, i, t);
            } else {
                let c = self.cached(q.input);
                self.insts[i].prefill.push_back((r, c));
            }
        }
        let inst = &mut self.insts[i];
        let policy = spec.policy;
        if inst.running == 0 {
            inst.round_left = 0;
        }
        // Prefill-first (unmixed) scheduling: admitted prompts run alone, between rounds.
        let prefill_only = role == Role::Prefill
            || (policy.prefill_first && !inst.prefill.is_empty() && inst.round_left == 0);
        let dec = if prefill_only {
            0.0
        } else {
            inst.running as f64
        };
        // Prompts join an iteration of decodes only under mixed scheduling, and under
        // multi-step scheduling only at the first step of a round.
        let mut allow_prefill = !(policy.prefill_first && dec > 0.0);
        if dec > 0.0 && policy.decode_steps_per_round > 1 {
            if inst.round_left == 0 {
                inst.round_left = policy.decode_steps_per_round;
            } else {
                allow_prefill = false;
            }
            inst.round_left -= 1;
        }
        // ADP balance (TensorRT-LLM's `_balance_adp_requests` in pyexecutor/py_executor.py,
        // with `attention_dp_config.enable_balance`): the ranks exchange how many prompts
        // and decodes each schedules. While not every rank has a prompt (or some rank has
        // no free batch slot), the prompts are held; the iteration whose count reaches the
        // timeout runs them, and so does any iteration in which some rank has no decodes
        // (the count restarting). Once every rank has a prompt and a free slot the count
        // restarts and, every rank also decoding, the prompts wait the batching wait more
        // iterations, then run. The count is of iterations, not of a prompt's wait: it
        // grows in every iteration in which every rank decodes and not every rank has a
        // prompt, none waiting included, so a new prompt waits out what is left of it.
        // Every prompt is held, a chunked one already started included (TensorRT-LLM
        // drops all the context requests its scheduler chose).
        if allow_prefill && policy.adp_balance_timeout_iters > 0 && ranks > 1 {
            // Every rank's own prompts, not the count of waiting prompts: eight prompts
            // on seven ranks leave one rank without.
            let per_rank = spec.max_batch.div_ceil(ranks);
            inst.blocked.iter_mut().for_each(|b| *b = false);
            for &(r, _) in inst.prefill.iter() {
                inst.blocked[self.reqs[r as usize].rank as usize] = true;
            }
            let every_prompt = inst.blocked.iter().all(|&b| b);
            let every_decode = dec > 0.0 && inst.rank_running.iter().all(|&n| n > 0);
            let every_free = inst.rank_running.iter().all(|&n| n < per_rank);
            if every_prompt && every_free {
                inst.held = 0;
                if every_decode {
                    if inst.batch_held < policy.adp_balance_batching_wait_iters {
                        inst.batch_held += 1;
                        allow_prefill = false;
                    } else {
                        inst.batch_held = 0;
                    }
                }
            } else if !every_decode {
                inst.held = 0;
            } else {
                inst.held += 1;
                if inst.held < policy.adp_balance_timeout_iters {
                    allow_prefill = false;
                } else {
                    inst.held = 0;
                }
            }
        }
        let mut budget = (spec.max_tokens as f64 - dec * (1.0 + draft)).max(0.0);
        let per_rank_budget =
            (spec.max_tokens as f64 / spec.model.par.attention_dp as f64).max(1.0);
        let mut b = Batch {
            decode_seqs: dec,
            decode_ctx: if dec > 0.0 { inst.ctx } else { 0.0 },
            decode_ctx_sq: if dec > 0.0 { inst.ctx_sq } else { 0.0 },
            ..Batch::default()
        };
        let mut done_front = 0usize;
        // Each attention-DP rank has its own share of the token budget, less its own decode
        // tokens: vLLM's, SGLang's and TensorRT-LLM's per-rank schedulers count a step's
        // decode tokens and prompt chunks against one budget. With one rank, whole prompts
        // (no chunking) are packed into it, and a chunk is at most its room, in whole tokens.
        // With several, each rank schedules the prompts it holds, in order, into its own
        // room: a chunk is at most that room, and a whole prompt that does not fit holds
        // back the rank's later ones (the iteration's first prompt always runs).
        let rank_full = (per_rank_budget - dec * (1.0 + draft) / ranks as f64).max(0.0);
        let mut room = rank_full;
        if ranks > 1 {
            for k in 0..ranks as usize {
                let own = if dec > 0.0 { inst.rank_running[k] } else { 0 } as f64;
                inst.rank_room[k] = (per_rank_budget - own * (1.0 + draft)).max(0.0);
            }
        }
        for k in 0..inst.prefill.len() {
            if budget <= 0.0 || !allow_prefill {
                break;
            }
            let (r, done) = inst.prefill[k];
            let total = self.reqs[r as usize].input;
            let rem = (total - done) as f64;
            let take = if ranks > 1 {
                let q = &self.reqs[r as usize];
                let at = if role == Role::Prefill {
                    q.src_rank
                } else {
                    q.rank
                } as usize;
                let room = &mut inst.rank_room[at];
                let take = if spec.chunked_prefill {
                    rem.min(budget).min(*room).floor()
                } else if rem <= *room || b.prefill_tokens == 0.0 {
                    rem
                } else {
                    // Held back, and the rank's later prompts with it.
                    *room = f64::NEG_INFINITY;
                    0.0
                };
                if take < 1.0 {
                    continue;
                }
                *room -= take;
                take
            } else if spec.chunked_prefill {
                let take = rem.min(budget).min(rank_full).floor();
                if take < 1.0 {
                    break;
                }
                take
            } else if b.prefill_tokens == 0.0 || rem <= room {
                room -= rem;
                rem
            } else {
                break;
            };
            b.prefill_tokens += take;
            b.prefill_seqs += 1.0;
            if ranks > 1 {
                let q = &self.reqs[r as usize];
                let k = if role == Role::Prefill {
                    q.src_rank
                } else {
                    q.rank
                };
                inst.rank_prompts[k as usize] += 1;
                inst.rank_prompt_tokens[k as usize] += take;
            }
            b.prefill_pairs += take * done as f64 + take * (take + 1.0) / 2.0;
            budget -= take;
            inst.prefill[k].1 = done + take as u32;
            if take >= rem {
                done_front += 1;
                b.prefill_done += 1.0;
            }
        }
        if b.decode_seqs == 0.0 && b.prefill_tokens == 0.0 {
            inst.busy = false;
            return;
        }
        inst.busy = true;
        inst.done_front = done_front;
        inst.decoding = dec;
        self.prefill_tokens += b.prefill_tokens;
        self.iterations += 1;
        if dec > 0.0 {
            self.decode_batch_sum += dec;
            self.decode_iters += 1;
        }
        // The busiest attention-DP rank, from where each sequence runs.
        let busiest = (ranks > 1).then(|| {
            let inst = &mut self.insts[i];
            let mut r = BusiestRank::default();
            for k in 0..ranks as usize {
                let running = if dec > 0.0 { inst.rank_running[k] } else { 0 };
                r.seqs = r.seqs.max((running + inst.rank_prompts[k]) as f64);
                if dec > 0.0 {
                    r.decode_ctx = r.decode_ctx.max(inst.rank_ctx[k]);
                }
                r.decode_seqs = r.decode_seqs.max(running as f64);
                r.tokens = r
                    .tokens
                    .max(running as f64 * (1.0 + draft) + inst.rank_prompt_tokens[k]);
                inst.rank_prompts[k] = 0;
                inst.rank_prompt_tokens[k] = 0.0;
            }
            r
        });
        let it =
            spec.model
                .iteration_memo(&b, busiest.as_ref(), &mut self.memos[self.insts[i].spec]);
        let class = if b.prefill_tokens > 0.0 {
            &mut self.mix.with_prompts
        } else {
            &mut self.mix.decode_only
        };
        class.add(&it, &b, ranks as f64);
        self.push(t + it.total_s.max(1e-9), Kind::IterEnd, i as u32, 0);
    }

    fn iter_end(&mut self, i: usize, t: f64) {
        let spec = self.specs[self.insts[i].spec];
        let tps = spec.model.tokens_per_step();
        let role = self.insts[i].role;
        let dec = self.insts[i].decoding;
        if dec > 0.0 {
            let inst = &mut self.insts[i];
            inst.steps += 1;
            // Every decoding sequence's context grows by `tps`: Σ(c + t)² = Σc² + 2tΣc + nt².
            inst.ctx_sq += 2.0 * tps * inst.ctx + dec * tps * tps;
            inst.ctx += dec * tps;
            for (c, &n) in inst.rank_ctx.iter_mut().zip(&inst.rank_running) {
                *c += n as f64 * tps;
            }
            self.out_tokens += dec * tps;
            loop {
                let inst = &mut self.insts[i];
                match inst.finish.peek() {
                    Some(Reverse((s, r))) if *s <= inst.steps => {
                        let r = *r;
                        inst.finish.pop();
                        inst.running -= 1;
                        let q = self.reqs[r as usize];
                        let ctx = q.input as f64 + q.output as f64;
                        // The context it reached (with speculative decoding a whole number
                        // of steps of `tps` tokens, which can pass `input + output`).
                        let reached = final_context(q.input, q.output, tps);
                        inst.ctx -= reached;
                        inst.ctx_sq -= reached * reached;
                        let k = q.rank as usize;
                        inst.rank_running[k] -= 1;
                        inst.rank_ctx[k] -= reached;
                        if inst.rank_running[k] == 0 {
                            inst.rank_ctx[k] = 0.0;
                        }
                        // Tokens emitted beyond the request's output (speculative rounding)
                        // were never its output: they count as none.
                        self.out_tokens -= (reached - ctx).max(0.0);
                        self.kv_change(i, q.rank, -spec.model.kv_need(ctx));
                        self.leave_rank(i, r);
                        self.complete(r, t);
                    }
                    _ => break,
                }
            }
            if self.insts[i].running == 0 {
                self.insts[i].ctx = 0.0;
                self.insts[i].ctx_sq = 0.0;
                self.insts[i].rank_ctx.iter_mut().for_each(|c| *c = 0.0);
            }
        }
        let n = self.insts[i].done_front;
        self.insts[i].done_front = 0;
        // The prompts whose last token this iteration computed, in queue order.
        let mut finished = Vec::with_capacity(n);
        let mut k = 0;
        while finished.len() < n {
            let (r, done) = self.insts[i].prefill[k];
            if done >= self.reqs[r as usize].input {
                self.insts[i].prefill.remove(k);
                finished.push(r);
            } else {
                k += 1;
            }
        }
        // Decode instances that prompts finished here queue at: they start once all of
        // this iteration's prompts are queued.
        let mut routed: Vec<usize> = Vec::new();
        for r in finished {
            let q = self.reqs[r as usize];
            if role == Role::Prefill || q.output <= 1 {
                self.leave_rank(i, r);
            }
            self.in_tokens += q.input as f64;
            self.out_tokens += 1.0;
            match role {
                Role::Prefill => {
                    if q.output <= 1 {
                        self.kv_change(i, q.src_rank, -spec.model.kv_need(q.input as f64));
                        self.reqs[r as usize].first = t;
                        self.complete(r, t);
                    } else {
                        // The prefill instance holds the cache until the transfer lands
                        // (Dynamo/NIXL, SGLang's and Mooncake's senders free it on the
                        // transfer's completion): it is freed at `KvArrive`. The request
                        // queues at the least-loaded decode instance, whose admission
                        // reserves its cache there and starts the transfer (SGLang's
                        // decode pre-allocation queue; Dynamo's decode worker allocates
                        // before it pulls the cache).
                        self.reqs[r as usize].src = i as u32;
                        self.insts[i].outgoing += 1;
                        let d = self.pick(Role::Decode);
                        self.insts[d].waiting.push_back(r);
                        if !routed.contains(&d) {
                            routed.push(d);
                        }
                    }
                }
                _ => {
                    self.reqs[r as usize].first = t;
                    if q.output <= 1 {
                        let need = spec.model.kv_need(q.input as f64 + q.output as f64);
                        self.kv_change(i, q.rank, -need);
                        self.complete(r, t);
                    } else {
                        let inst = &mut self.insts[i];
                        inst.start_decoding(r, &q, tps);
                    }
                }
            }
        }
        for d in routed {
            if !self.insts[d].busy {
                self.start(d, t);
            }
        }
        self.start(i, t);
    }

    /// Starts the transfer of request `r`'s KV cache from the prefill instance holding it
    /// to decode instance `d`, which has just reserved room for it (at `t`). The cache
    /// lives on the one attention-DP rank that prefilled it (tp × pp accelerators) and
    /// leaves over that rank's NICs; the caches of one rank leave one after another, each
    /// transfer starting when its rank's links are free, then crossing the latency.
    fn send_kv(&mut self, r: u32, d: usize, t: f64) {
        let q = self.reqs[r as usize];
        let src = q.src as usize;
        let spec = self.specs[self.insts[src].spec];
        let bytes = q.input as f64 * spec.model.kv_bytes_per_token();
        let p = spec.model.par;
        let gpus = (p.tp * p.pp.max(1)) as f64;
        let link = &mut self.insts[src].links[q.src_rank as usize];
        let sent = t.max(*link) + bytes / (self.kv_bps * gpus);
        *link = sent;
        let arrive = sent + self.kv_latency;
        self.reqs[r as usize].first = arrive;
        self.insts[d].incoming += 1;
        self.push(arrive, Kind::KvArrive, r, d as u32);
    }
}

/// The context a sequence holds when it finishes: its prompt and first token, and `tps`
/// tokens for each of its decode steps.
fn final_context(input: u32, output: u32, tps: f64) -> f64 {
    let steps = ((output.saturating_sub(1)) as f64 / tps).ceil().max(1.0);
    (input + 1) as f64 + steps * tps
}

/// Generates the requests of a workload (arrival time, input, output), seeded.
pub fn generate(w: &Workload) -> Vec<(f64, u32, u32)> {
    match &w.arrivals {
        Arrivals::Trace(v) => return v.clone(),
        Arrivals::Closed { lengths, .. } if !lengths.is_empty() => {
            return lengths.iter().map(|&(i, o)| (0.0, i, o)).collect();
        }
        _ => {}
    }
    let mut rng = ChaCha8Rng::seed_from_u64(w.seed);
    let mut t = 0.0;
    (0..w.requests)
        .map(|_| {
            if let Arrivals::Poisson(rate) = w.arrivals {
                t += -uniform(&mut rng).ln() / rate;
            }
            let i = w.input.sample(&mut rng);
            let o = w.output.sample(&mut rng);
            (t, i, o)
        })
        .collect()
}

/// Simulates the workload on the deployment.
pub fn simulate(d: &Deployment, w: &Workload, slo: &Slo) -> SimReport {
    let reqs_in = generate(w);
    match w.arrivals {
        Arrivals::Closed { clients, .. } => {
            simulate_closed(d, &reqs_in, clients, w.prefix_hit, slo)
        }
        _ => simulate_requests(d, &reqs_in, w.prefix_hit, slo),
    }
}

/// Simulates given requests `(arrival s, input, output)`, sorted by arrival.
pub fn simulate_requests(
    d: &Deployment,
    reqs_in: &[(f64, u32, u32)],
    prefix_hit: f64,
    slo: &Slo,
) -> SimReport {
    run(d, reqs_in, prefix_hit, slo, None)
}

/// Simulates given requests `(_, input, output)` sent by `clients` clients in a closed
/// loop: the first `clients` requests at time 0, then each of the others the moment a
/// request in flight completes (or is rejected), in order. Their stated arrival times
/// are ignored; a request's latency runs from the moment it is sent.
pub fn simulate_closed(
    d: &Deployment,
    reqs_in: &[(f64, u32, u32)],
    clients: u32,
    prefix_hit: f64,
    slo: &Slo,
) -> SimReport {
    run(d, reqs_in, prefix_hit, slo, Some(clients.max(1) as u64))
}

fn run(
    d: &Deployment,
    reqs_in: &[(f64, u32, u32)],
    prefix_hit: f64,
    slo: &Slo,
    closed: Option<u64>,
) -> SimReport {
    let (specs, roles, kv_bps, kv_latency): (Vec<&RoleSpec>, Vec<Role>, f64, f64) = match d {
        Deployment::Aggregated(r) => (vec![r], vec![Role::Both], 1.0, 0.0),
        Deployment::Disaggregated {
            prefill,
            decode,
            kv_bps,
            kv_latency_s,
        } => (
            vec![prefill, decode],
            vec![Role::Prefill, Role::Decode],
            *kv_bps,
            *kv_latency_s,
        ),
    };
    let mut insts = Vec::new();
    let mut kv_cap = 0.0;
    for (k, s) in specs.iter().enumerate() {
        for _ in 0..s.instances {
            kv_cap += s.kv_tokens;
            insts.push(Inst {
                role: roles[k],
                spec: k,
                waiting: VecDeque::new(),
                prefill: VecDeque::new(),
                running: 0,
                round_left: 0,
                held: 0,
                batch_held: 0,
                incoming: 0,
                outgoing: 0,
                landed: Vec::new(),
                links: vec![
                    f64::NEG_INFINITY;
                    if roles[k] == Role::Prefill {
                        s.model.par.attention_dp.max(1) as usize
                    } else {
                        0
                    }
                ],
                ctx: 0.0,
                ctx_sq: 0.0,
                steps: 0,
                finish: BinaryHeap::new(),
                kv_used: 0.0,
                rank_kv: vec![0.0; s.model.par.attention_dp.max(1) as usize],
                rank_running: vec![0; s.model.par.attention_dp.max(1) as usize],
                rank_ctx: vec![0.0; s.model.par.attention_dp.max(1) as usize],
                rank_prompts: vec![0; s.model.par.attention_dp.max(1) as usize],
                rank_prompt_tokens: vec![0.0; s.model.par.attention_dp.max(1) as usize],
                rank_room: vec![0.0; s.model.par.attention_dp.max(1) as usize],
                blocked: vec![false; s.model.par.attention_dp.max(1) as usize],
                rank_wait: vec![VecDeque::new(); s.model.par.attention_dp.max(1) as usize],
                rank_waiting: 0,
                rank_active: vec![0; s.model.par.attention_dp.max(1) as usize],
                rank_prompt_sum: vec![0.0; s.model.par.attention_dp.max(1) as usize],
                placed: 0,
                busy: false,
                done_front: 0,
                decoding: 0.0,
            });
        }
    }
    let n = reqs_in.len() as u64;
    let mut sim = Sim {
        memos: specs.iter().map(|_| IterMemo::new()).collect(),
        specs,
        insts,
        reqs: reqs_in
            .iter()
            .map(|&(a, i, o)| Req {
                arrival: a,
                input: i.max(1),
                output: o.max(1),
                first: f64::NAN,
                done: f64::NAN,
                src: 0,
                src_rank: 0,
                rank: 0,
            })
            .collect(),
        ev: BinaryHeap::new(),
        seq: 0,
        prefix_hit: prefix_hit.clamp(0.0, 1.0),
        kv_bps,
        kv_latency,
        in_system: 0.0,
        area: 0.0,
        last_t: match closed {
            Some(_) => 0.0,
            None => reqs_in.first().map(|r| r.0).unwrap_or(0.0),
        },
        kv_area: 0.0,
        kv_peak: 0.0,
        kv_total_cap: kv_cap,
        kv_total_used: 0.0,
        completed: 0,
        rejected: 0,
        rejected_too_long: 0,
        out_tokens: 0.0,
        in_tokens: 0.0,
        prefill_tokens: 0.0,
        marks: [(0, 0.0, 0.0); 2],
        mark_at: [(n / 10).max(1), (n * 9 / 10).max(1)],
        iterations: 0,
        decode_batch_sum: 0.0,
        decode_iters: 0,
        mix: IterationMix::default(),
    };
    let t0 = sim.last_t;
    // Arrivals are fed one at a time so the event heap stays small.
    let mut next = 0usize;
    if !reqs_in.is_empty() {
        sim.push(
            if closed.is_some() { t0 } else { reqs_in[0].0 },
            Kind::Arrival,
            0,
            0,
        );
    }
    let entry = match d {
        Deployment::Aggregated(_) => Role::Both,
        Deployment::Disaggregated { .. } => Role::Prefill,
    };
    let mut touched: Vec<usize> = Vec::new();
    while let Some(Reverse(e)) = sim.ev.pop() {
        sim.advance(e.t);
        match e.kind {
            // A closed loop sends its requests below, as slots free.
            Kind::Arrival if closed.is_some() => {}
            Kind::Arrival => {
                // All requests arriving at this same instant are queued before any starts.
                let t = e.t;
                let end = reqs_in[next..]
                    .iter()
                    .position(|r| r.0 > t)
                    .map_or(reqs_in.len(), |k| next + k);
                // The next arrival is queued first, as before requests were sent.
                if end < reqs_in.len() {
                    sim.push(reqs_in[end].0, Kind::Arrival, 0, 0);
                }
                sim.send(next..end, t, entry, &mut touched);
                next = end;
            }
            Kind::IterEnd => sim.iter_end(e.a as usize, e.t),
            Kind::KvArrive => {
                // All KV caches landing at this same instant (the prompts of one prefill
                // iteration) are queued before any decode instance starts, as arrivals are.
                // Each frees its cache on the prefill instance that sent it, which may then
                // admit prompts its full cache held back.
                touched.clear();
                let mut e = e;
                loop {
                    let i = e.b as usize;
                    sim.insts[i].landed.push(e.a);
                    if !touched.contains(&i) {
                        touched.push(i);
                    }
                    let q = sim.reqs[e.a as usize];
                    let src = q.src as usize;
                    let spec = sim.specs[sim.insts[src].spec];
                    sim.kv_change(src, q.src_rank, -spec.model.kv_need(q.input as f64));
                    sim.insts[src].outgoing -= 1;
                    if !touched.contains(&src) {
                        touched.push(src);
                    }
                    match sim.ev.peek() {
                        Some(Reverse(n)) if n.kind == Kind::KvArrive && n.t == e.t => {
                            e = sim.ev.pop().expect("peeked").0;
                        }
                        _ => break,
                    }
                }
                for k in 0..touched.len() {
                    let i = touched[k];
                    if !sim.insts[i].busy {
                        sim.start(i, e.t);
                    }
                }
            }
        }
        // A closed loop keeps `clients` requests in flight: each completion or rejection
        // sends the next request (a rejection at admission frees its slot at once).
        if let Some(clients) = closed {
            loop {
                let open = sim.completed + sim.rejected + clients;
                if next >= reqs_in.len() || next as u64 >= open {
                    break;
                }
                let end = reqs_in.len().min(open as usize);
                for r in &mut sim.reqs[next..end] {
                    r.arrival = e.t;
                }
                sim.send(next..end, e.t, entry, &mut touched);
                next = end;
            }
        }
    }
    // Report.
    let end = sim.last_t;
    let duration = (end - t0).max(1e-12);
    let accs = d.accelerators();
    let mut ttft = Vec::with_capacity(sim.completed as usize);
    let mut tpot = Vec::with_capacity(sim.completed as usize);
    let mut lat = Vec::with_capacity(sim.completed as usize);
    let mut good = 0u64;
    let mut good_tokens = 0.0;
    let (mut speed, mut speeds, mut with_ctx) = (0.0, 0u64, 0.0);
    for r in sim.reqs.iter().filter(|r| r.done.is_finite()) {
        if r.output > 1 && r.done > r.first {
            speed += (r.output - 1) as f64 / (r.done - r.first);
            speeds += 1;
        }
        if r.done > r.arrival {
            with_ctx += r.output as f64 / (r.done - r.arrival);
        }
        let a = r.first - r.arrival;
        let p = if r.output > 1 {
            (r.done - r.first).max(0.0) / (r.output - 1) as f64
        } else {
            0.0
        };
        ttft.push(a);
        // A one-token request has no time per output token: it is left out of the TPOT
        // percentiles (as vLLM's and SGLang's benchmarks do) and meets a TPOT SLO.
        if r.output > 1 {
            tpot.push(p);
        }
        lat.push(r.done - r.arrival);
        if slo.ttft_s.is_none_or(|x| a <= x) && slo.tpot_s.is_none_or(|x| p <= x) {
            good += 1;
            good_tokens += r.output as f64;
        }
    }
    let (prefill_accs, decode_accs) = match d {
        Deployment::Aggregated(_) => (accs as f64, accs as f64),
        Deployment::Disaggregated {
            prefill, decode, ..
        } => (
            (prefill.instances * prefill.model.par.gpus()) as f64,
            (decode.instances * decode.model.par.gpus()) as f64,
        ),
    };
    let [(_, t1, o1), (_, t2, o2)] = sim.marks;
    let steady = if t2 > t1 {
        (o2 - o1) / (t2 - t1) / accs as f64
    } else {
        sim.out_tokens / duration / accs as f64
    };
    let mean_latency = if lat.is_empty() {
        0.0
    } else {
        lat.iter().sum::<f64>() / lat.len() as f64
    };
    let last_arrival = sim.reqs.last().map(|r| r.arrival).unwrap_or(0.0);
    let completed = sim.completed.max(1) as f64;
    SimReport {
        requests: n,
        completed: sim.completed,
        rejected: sim.rejected,
        rejected_too_long: sim.rejected_too_long,
        accelerators: accs,
        duration_s: duration,
        input_tokens_per_s: sim.in_tokens / duration,
        output_tokens_per_s: sim.out_tokens / duration,
        input_tokens_per_s_per_accelerator: sim.in_tokens / duration / accs as f64,
        output_tokens_per_s_per_accelerator: sim.out_tokens / duration / accs as f64,
        steady_output_tokens_per_s_per_accelerator: steady,
        prefill_tokens_per_s_per_prefill_accelerator: sim.prefill_tokens / duration / prefill_accs,
        decode_tokens_per_s_per_decode_accelerator: sim.out_tokens / duration / decode_accs,
        ttft: percentiles(&mut ttft),
        tpot: percentiles(&mut tpot),
        latency: percentiles(&mut lat),
        per_user_output_tokens_per_s: speed / speeds.max(1) as f64,
        per_user_output_tokens_per_s_with_ctx: with_ctx / completed,
        goodput_requests_per_s: good as f64 / duration,
        goodput_output_tokens_per_s: good_tokens / duration,
        // Over every request: a rejected one met no SLO.
        slo_attainment: good as f64 / (sim.completed + sim.rejected).max(1) as f64,
        kv_use_mean: sim.kv_area / duration,
        kv_use_peak: sim.kv_peak,
        mean_in_system: sim.area / duration,
        arrival_rate: (last_arrival > t0)
            .then(|| (n.saturating_sub(1)) as f64 / (last_arrival - t0)),
        mean_latency_s: mean_latency,
        iterations: sim.iterations,
        mean_decode_batch: if sim.decode_iters > 0 {
            sim.decode_batch_sum / sim.decode_iters as f64
        } else {
            0.0
        },
        iteration_mix: sim.mix,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Linear interpolation between ranks, as numpy's `percentile` (hand-checked: for
    /// 1, 2, 3, 4 the ranks are 1.5, 2.7 and 2.97 past the first). Rounding the rank to
    /// the nearest index gave a median of 3 and a p90 of 4.
    #[test]
    fn percentiles_interpolate_between_ranks() {
        let p = percentiles(&mut [4.0, 1.0, 3.0, 2.0]);
        assert_eq!(p.mean, 2.5);
        assert!((p.p50 - 2.5).abs() < 1e-12, "p50 {}", p.p50);
        assert!((p.p90 - 3.7).abs() < 1e-12, "p90 {}", p.p90);
        assert!((p.p99 - 3.97).abs() < 1e-12, "p99 {}", p.p99);
        let one = percentiles(&mut [7.0]);
        assert_eq!((one.p50, one.p99), (7.0, 7.0));
        assert_eq!(percentiles(&mut []), Percentiles::default());
    }
}

/// A fixed 64-bit mix of `x` (splitmix64's finaliser): a pseudo-random but reproducible
/// stand-in for an id a router draws at random.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
