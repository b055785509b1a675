"""Reads Megatron-Bridge's performance workload configs at each release tag and writes
the MoE settings that decide a training step's MoE cost, per config, to
validation/mbridge-recipes.json, which Myriad's validator reads for Megatron-Bridge rows
that leave those settings unstated.

What a config decides (scripts/performance/utils/overrides.py `set_workload_base_configs`
at v0.4.x-v0.5.x; at v0.2.x-v0.3.x the recipe constructor takes the backend):
- `moe_flex_dispatcher_backend`: set -> Megatron's flex dispatcher with that backend
  (`deepep` or `hybridep`); unset -> the all-to-all dispatcher;
- `moe_a2a_overlap`: the EP all-to-all overlap (`overlap_moe_expert_parallel_comm`);
- `cuda_graph_impl` / `cuda_graph_scope`: `local` with `full_iteration` captures the whole
  iteration in one CUDA graph.
Each config's plan (global and micro batch, TP, PP, CP, VPP, EP) is written too: a system
often has two variants (V1, V2) that differ in global batch and EP and with them in the
settings above, and the validator takes the one whose plan the row states.

Usage (needs the mirrored repository; no network):
    python3 validation/tools/mbridge_recipes.py /work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo

The current release (26.08, the performance summary at the public file's snapshot
067f987df) has no such config files: its recipes are functions in
src/megatron/bridge/perf_recipes/<model>/<gpu>/*.py (`<model>_pretrain_<n>gpu_<gpu>_<precision>
_config`). Each is run in a recording sandbox (every import is a stand-in that records the
attributes set on it; the perf_recipes modules themselves are run the same way, so their
helpers, e.g. `_enable_hybridep_full_iteration_mxfp8`, apply), and the settings it leaves
on the config are read: `moe_token_dispatcher_type` / `moe_flex_dispatcher_backend`,
`comm_overlap.overlap_moe_expert_parallel_comm`, `cuda_graph_impl` / `cuda_graph_scope`,
selective `recompute_modules`. The base recipe a perf function starts from is a stand-in
too, so what only the base sets is not recorded: e.g. the H100 DeepSeek-V3 and Qwen3
30B-A3B bf16 functions keep their base recipes' HybridEP (`recipes/deepseek/h100/
deepseek_v3.py`, `recipes/qwen/h100/qwen3_moe.py`), which the table shows as unset. No
26.08 summary row is an H100 run; the verification-card rows that are
(`validation/training-heldout-mbridge-cards.json`) state their settings themselves.

Each release container is the Megatron-Bridge tag published with it (tag dates: v0.2.0
2025-11-26, v0.3.0 2026-02-26, v0.3.1 2026-03-20, v0.4.0 2026-04-16, v0.4.1 2026-05-06,
v0.5.0 2026-06-16, v0.5.1 2026-07-20). The config files are executed with a stand-in for
`WorkloadBaseConfig` and `dataclasses.replace`; nothing else of the repository runs."""
import json
import re
import subprocess
import sys

RELEASES = {
    "25.11": "v0.2.0",
    "26.02": "v0.3.0",
    "26.02.01": "v0.3.1",
    "26.04": "v0.4.0",
    "26.04.01": "v0.4.1",
    "26.06": "v0.5.0",
    "26.06.01": "v0.5.1",
}
# The MoE models' configs (the dense ones' MoE settings decide nothing).
MOE_MODELS = ("QWEN3_30B_A3B", "QWEN3_235B_A22B", "QWEN3_NEXT", "DEEPSEEK_V3", "GPT_OSS",
              "KIMI_K2")
FIELDS = ("num_gpus", "moe_flex_dispatcher_backend", "moe_a2a_overlap", "cuda_graph_impl",
          "cuda_graph_scope", "expert_model_parallel_size", "recompute_modules",
          "recompute_num_layers", "cpu_offloading_num_layers")
# The plan of each config, so that a row is matched to the variant it ran (V1 and V2 of a
# system often differ in global batch and EP, e.g. gpt-oss-120b on B200: GBS 512 / EP 64
# against GBS 1280 / EP 8 with HybridEP).
PLAN = ("global_batch_size", "micro_batch_size", "tensor_model_parallel_size",
        "pipeline_model_parallel_size", "context_parallel_size",
        "virtual_pipeline_model_parallel_size")


class Config:
    """Stand-in for `WorkloadBaseConfig`: keyword fields, defaults as the real one's."""

    def __init__(self, **kw):
        self.f = {"num_gpus": 1, "moe_flex_dispatcher_backend": None, "moe_a2a_overlap": False,
                  "cuda_graph_impl": None, "cuda_graph_scope": None,
                  "expert_model_parallel_size": 1, "recompute_modules": None,
                  "recompute_num_layers": None, "cpu_offloading_num_layers": None,
                  "global_batch_size": 1, "micro_batch_size": 1,
                  "tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1,
                  "context_parallel_size": 1, "virtual_pipeline_model_parallel_size": None}
        self.f.update(kw)


def replace(base, **kw):
    out = Config(**base.f)
    out.f.update(kw)
    return out


def git(repo, *args):
    """`git` in `repo`, a work tree or a bare repository."""
    import os

    git_dir = f"{repo}/.git" if os.path.isdir(f"{repo}/.git") else repo
    return subprocess.run(["git", "--git-dir", git_dir, *args], capture_output=True, text=True,
                          check=True).stdout


def strip_imports(src):
    """The file without its import statements (multi-line ones too)."""
    out, skipping = [], False
    for line in src.splitlines():
        if skipping:
            skipping = not line.rstrip().endswith(")")
            continue
        if re.match(r"^(from\s+\S+\s+import|import\s)", line):
            skipping = "(" in line and not line.rstrip().endswith(")")
            continue
        out.append(line)
    return "\n".join(out)


class Rec:
    """Records what a recipe sets: any attribute read that was not set is a new `Rec`, any
    call returns a `Rec` holding its keyword arguments."""

    def __init__(self, **kw):
        object.__setattr__(self, "_d", dict(kw))

    def __getattr__(self, k):
        d = object.__getattribute__(self, "_d")
        if k.startswith("__"):
            raise AttributeError(k)
        return d.setdefault(k, Rec())

    def __setattr__(self, k, v):
        object.__getattribute__(self, "_d")[k] = v

    def __call__(self, *a, **kw):
        return Rec(**kw)

    def __getitem__(self, k):
        return Rec()

    def keys(self):
        return []

    def __iter__(self):  # or Python iterates through __getitem__ without end
        return iter(())

    def set(self, k):
        """The value set for `k`, or None when nothing plain was set."""
        v = object.__getattribute__(self, "_d").get(k)
        return v if isinstance(v, (str, bool, int, list)) else None


SNAPSHOT = "067f987df03b8355b03192d88d70f1709fedf51a"
PERF = "src/megatron/bridge/perf_recipes"
PRECISIONS = {"bf16": "BF16", "fp8cs": "FP8_CS", "fp8mx": "FP8_MX", "fp8sc": "FP8_SC", "nvfp4": "NVFP4"}


def snapshot_configs(repo):
    """The MoE recipes of the perf_recipes functions at the snapshot, as config entries."""
    modules = {}

    def load(path):
        """A perf_recipes module's namespace, run with every other import stood in for."""
        if path in modules:
            return modules[path]
        ns = {"__name__": path.replace("/", "."), "__file__": path}
        modules[path] = ns

        def imp(name, globals=None, locals=None, fromlist=(), level=0):
            if name.startswith("megatron.bridge.perf_recipes") and fromlist:
                sub = name.replace(".", "/").replace("megatron/bridge/perf_recipes", PERF)
                src_path = sub + ".py" if not sub.endswith(".py") else sub
                try:
                    mod = load(src_path)
                except subprocess.CalledProcessError:
                    mod = {}
                class M:  # noqa: E306 - a module-like view of the namespace
                    def __getattr__(self, k):
                        return mod.get(k, Rec())
                return M()
            return Rec()

        import builtins
        b = dict(vars(builtins))
        b["__import__"] = imp
        ns["__builtins__"] = b
        exec(git(repo, "show", f"{SNAPSHOT}:{path}"), ns)
        return ns

    out = {}
    files = [f for f in git(repo, "ls-tree", "-r", "--name-only", SNAPSHOT).splitlines()
             if re.match(rf"{PERF}/[a-z_]+/[a-z0-9]+/\w+\.py$", f)]
    for f in files:
        try:
            ns = load(f)
        except Exception as e:
            print(f"{f}: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        for name, fn in list(ns.items()):
            m = re.match(r"^(\w+?)_pretrain_(\d+)gpu_([a-z0-9]+)_(bf16|fp8cs|fp8mx|fp8sc|nvfp4)(_\w+)?_config$", name)
            if not m or not callable(fn) or "dev" in (m.group(5) or ""):
                continue
            model, gpus, gpu, prec, variant = m.groups()
            if not model.upper().startswith(MOE_MODELS):
                continue
            try:
                cfg = fn()
            except Exception as e:
                print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
                continue
            mdl, co = cfg.model, cfg.comm_overlap
            flex = mdl.set("moe_token_dispatcher_type") == "flex"
            mods = mdl.set("recompute_modules")
            selective = mdl.set("recompute_granularity") == "selective"
            key = f"{model.upper()}_PRETRAIN_CONFIG_{gpu.upper()}_{PRECISIONS[prec]}_{gpus}GPU"
            key += (variant or "").upper()
            out[key] = {
                "num_gpus": int(gpus),
                "moe_flex_dispatcher_backend": mdl.set("moe_flex_dispatcher_backend") if flex else None,
                "moe_a2a_overlap": co.set("overlap_moe_expert_parallel_comm") is True,
                "cuda_graph_impl": mdl.set("cuda_graph_impl"),
                "cuda_graph_scope": mdl.set("cuda_graph_scope"),
                "expert_model_parallel_size": mdl.set("expert_model_parallel_size"),
                "recompute_modules": mods if (selective and mods) else None,
                "recompute_num_layers": None,
                "cpu_offloading_num_layers": None,
                "global_batch_size": cfg.train.set("global_batch_size"),
                "micro_batch_size": cfg.train.set("micro_batch_size"),
                "tensor_model_parallel_size": mdl.set("tensor_model_parallel_size"),
                "pipeline_model_parallel_size": mdl.set("pipeline_model_parallel_size"),
                "context_parallel_size": mdl.set("context_parallel_size"),
                "virtual_pipeline_model_parallel_size": mdl.set("virtual_pipeline_model_parallel_size"),
                "function": f"{f}:{name}",
            }
    return dict(sorted(out.items()))


# The 25.09 container ran Megatron-Bridge 0.1.0, whose performance scripts were a YAML plan
# matrix per model (scripts/performance/configs/<model>/<model>_llm_pretrain.yaml,
# `perf_matrix`) and model-specific code in scripts/performance/run_script.py. Read at
# v0.1.0rc4 (2025-10-23): its DeepSeek-V3 pipeline map ({h100: (8, 4), b200: (16, 1),
# gb200: (4, 4)}) is the plan the 25.09 performance summary lists (rc3 had (4, 8) for
# Blackwell). The MoE settings run_script.py applies (lines 55-102 at rc4):
# - DeepSeek-V3: DeepEP on H100 (`enable_deepep = gpu in ["h100"]`), token drop on B200
#   and GB200 (`use_tokendrop`, which turns DeepEP off); the EP all-to-all overlap
#   (`A2A_1F1B`: `overlap_moe_expert_parallel_comm`, `delay_wgrad_compute`) on H100;
#   `recompute_modules` ["mla_up_proj", "mlp"] on H100, ["mla_up_proj"] on B200 and on
#   token-dropping GB200;
# - Qwen3 30B-A3B and 235B-A22B: the recipe with `apply_moe_token_drop` (the all-to-all
#   dispatcher, no overlap), and the YAML's `recompute_granularity: null` (no recompute).
# `cuda_graphs` in the matrix is Transformer Engine's per-layer graphs, not a whole-iteration
# graph.
V010_TAG = "v0.1.0rc4"
V010_MODELS = {"deepseek/deepseek_v3_llm_pretrain.yaml": "DEEPSEEK_V3",
               "qwen3/qwen3_30b_a3b_llm_pretrain.yaml": "QWEN3_30B_A3B",
               "qwen3/qwen3_235b_a22b_llm_pretrain.yaml": "QWEN3_235B_A22B"}
V010_KINDS = {"bf16": "BF16", "fp8_cs": "FP8_CS", "fp8_ss": "FP8_SC", "fp8_mx": "FP8_MX"}


def v010_configs(repo):
    """The 25.09 configs: each (model, GPU, GPU count, precision) of the YAML plan matrices
    with the MoE settings run_script.py gives it."""
    import yaml

    configs = {}
    for path, model in V010_MODELS.items():
        doc = yaml.safe_load(git(repo, "show", f"{V010_TAG}:scripts/performance/configs/{path}"))
        for gpu, by_count in doc["perf_matrix"].items():
            for count_key, entry in by_count.items():
                common = entry.get("common") or {}
                for kind, over in entry.items():
                    if kind not in V010_KINDS:
                        continue
                    plan = dict(common, **(over or {}))
                    deepseek = model == "DEEPSEEK_V3"
                    h100 = gpu == "h100"
                    if deepseek and h100:
                        recompute = ["mla_up_proj", "mlp"]
                    elif deepseek:
                        recompute = ["mla_up_proj"]
                    else:
                        recompute = None
                    configs[f"{model}_PRETRAIN_CONFIG_{gpu.upper()}_{V010_KINDS[kind]}"] = {
                        "num_gpus": int(count_key.split("_")[-1]),
                        "moe_flex_dispatcher_backend": "deepep" if deepseek and h100 else None,
                        "moe_a2a_overlap": deepseek and h100,
                        "cuda_graph_impl": None,
                        "cuda_graph_scope": None,
                        "expert_model_parallel_size": plan.get("ep"),
                        "recompute_modules": recompute,
                        "recompute_num_layers": None,
                        "cpu_offloading_num_layers": None,
                        "global_batch_size": plan.get("gbs"),
                        "micro_batch_size": plan.get("mbs"),
                        "tensor_model_parallel_size": plan.get("tp"),
                        "pipeline_model_parallel_size": plan.get("pp"),
                        "context_parallel_size": plan.get("cp"),
                        "virtual_pipeline_model_parallel_size": plan.get("vp"),
                    }
    return dict(sorted(configs.items()))


def main(repo):
    result = {
        "format": "myriad-mbridge-recipes/1",
        "source": "NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/*/*workload_base_configs.py "
                  "at each release tag (25.09: the v0.1.0rc4 YAML plan matrices with "
                  "run_script.py's MoE settings), read by validation/tools/mbridge_recipes.py",
        "releases": {},
    }
    configs = v010_configs(repo)
    result["releases"]["25.09"] = {"tag": V010_TAG, "configs": configs, "errors": []}
    print("25.09", V010_TAG, len(configs), "configs", file=sys.stderr)
    for release, tag in RELEASES.items():
        files = [f for f in git(repo, "ls-tree", "-r", "--name-only", tag).splitlines()
                 if re.match(r"scripts/performance/configs/[^/]+/(\w+_)?workload_base_configs\.py$", f)]
        configs, errors = {}, []
        for f in files:
            scope = {"WorkloadBaseConfig": Config, "replace": replace, "__name__": "configs"}
            try:
                exec(strip_imports(git(repo, "show", f"{tag}:{f}")), scope)
            except Exception as e:  # a file that needs more than the stand-ins: reported
                errors.append(f"{f}: {type(e).__name__}: {e}")
                continue
            for name, v in scope.items():
                if isinstance(v, Config) and name.startswith(MOE_MODELS):
                    configs[name] = {k: v.f.get(k) for k in FIELDS + PLAN}
        result["releases"][release] = {"tag": tag, "configs": dict(sorted(configs.items())),
                                       "errors": errors}
        print(release, tag, len(files), "files,", len(configs), "configs,", len(errors), "errors",
              file=sys.stderr)
    configs = snapshot_configs(repo)
    result["releases"]["26.08"] = {"tag": SNAPSHOT[:9], "configs": configs, "errors": []}
    print("26.08", SNAPSHOT[:9], len(configs), "configs", file=sys.stderr)
    json.dump(result, sys.stdout, indent=1, sort_keys=False)
    print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo")
