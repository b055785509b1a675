//! The decode iteration against a measured one: SGLang serving DeepSeek-R1 on 48 GB200
//! (tp 1, attention DP 48, EP 48, fp8 KV, NVFP4 experts), 1,024 sequences per rank, from
//! the PyTorch-profiler traces in `validation/serving-iteration-gb200-sglang.json` (see its
//! description and source). The run without single-batch overlap is compared, since the
//! model has no single-batch overlap: every part then runs in turn.
use serde_json::Value;

fn measured() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../validation/serving-iteration-gb200-sglang.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn decode_model() -> myriad_serve::InstanceModel {
    let cat = myriad_catalog::catalog();
    let text = "format: myriad/1
cluster: {accelerator: gb200, count: 72, scale_up: gb200-nvl72}
model: {preset: deepseek-v3}
serving:
  framework: sglang
  weights: fp8
  experts: fp4
  kv_cache: fp8
  overlap_comm: false
  mode: disaggregated
  prefill: {instances: 1, tp: 1, attention_dp: 8, ep: 8}
  decode: {instances: 1, tp: 1, attention_dp: 48, ep: 48, max_batch: 49152}
  input: {mean: 2000}
  output: {mean: 100}
";
    let s = myriad_scenario::parse_scenario("gb200-ep48.yaml", text, cat).unwrap();
    let c = myriad_cluster::build(&s, cat).unwrap();
    let st = myriad_serve::setup(&s, &c, cat, None).unwrap();
    match st.deployment {
        myriad_serve::Deployment::Disaggregated { decode, .. } => decode.model.clone(),
        _ => panic!("disaggregated"),
    }
}

#[test]
fn gb200_large_ep_decode_iteration_against_its_trace() {
    let m = measured();
    let it = &m["iterations"]["no_sbo_eplb"];
    let ms = |k: &str| it[k].as_f64().unwrap();
    let (seqs, ctx) = (1024.0, ms("mean_context"));
    let model = decode_model();
    let dp = model.par.attention_dp as f64;
    let t = model.iteration(&myriad_serve::Batch {
        decode_seqs: seqs * dp,
        decode_ctx: seqs * dp * ctx,
        ..Default::default()
    });
    let err = |pred_s: f64, meas_ms: f64| pred_s * 1e3 / meas_ms - 1.0;
    let (attn, gemm, total) = (
        err(t.attention_s, ms("attention")),
        err(t.gemm_s, ms("gemm")),
        err(t.total_s, ms("span")),
    );
    eprintln!(
        "attention {:+.1}%, GEMMs {:+.1}%, memory-bound {:.1} vs {:.1} ms, all-to-all {:.1} vs {:.1} ms, iteration {:+.1}%",
        100.0 * attn,
        100.0 * gemm,
        t.memory_s * 1e3,
        ms("memory"),
        t.comm_s * 1e3,
        ms("comm"),
        100.0 * total
    );
    // The fp8 MLA decode kernel streams the fp8 latent cache (1.2 GB per layer) at 0.78 of
    // HBM: within 10% only with its math at the fp8 peak (at the bf16 peak it is +93%).
    assert!(attn.abs() < 0.10, "attention {attn:+.3}");
    // Dense projections (cuBLAS, DeepGEMM) and the NVFP4 grouped expert GEMMs together.
    assert!(gemm.abs() < 0.10, "GEMMs {gemm:+.3}");
    // The memory-bound kernels (norms, rotary + quantise, casts, router gate): 920 per
    // iteration in the trace, 11.3 ms; the model prices their bytes at the bandwidth the
    // trace's largest ones reach (`efficiency.hbm_small_kernels`) and counts the MLA
    // layer's extra norms and cache write and the NVFP4 experts' two activation-quantisation
    // kernels (`cvt_fp16_to_fp4_expert`, `cvt_fp16_to_fp4`): 11.1 ms (7.7 ms without the
    // quantisation kernels).
    let mem = t.memory_s * 1e3 / ms("memory") - 1.0;
    assert!(mem.abs() < 0.10, "memory-bound {mem:+.3}");
    // Not yet within the bar: DeepEP's dispatch/combine with its waits (30.4 ms) costs more
    // than modelled (docs/serving.md). A ratchet: the iteration must not get further from
    // the measurement than it is now (-12.5%; -16.5% before the quantisation kernels).
    assert!(total > -0.14 && total < 0.10, "iteration {total:+.3}");
}
