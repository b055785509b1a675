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

Usage (needs the mirrored repository; no network):
    python3 validation/tools/mbridge_recipes.py /work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo

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


class Config:
    """Stand-in for `WorkloadBaseConfig`: keyword fields, defaults as the real one's."""

    def __init__(self, **kw):
        self.f = {"num_gpus": 1, "moe_flex_dispatcher_backend": None, "moe_a2a_overlap": False,
                  "cuda_graph_impl": None, "cuda_graph_scope": None,
                  "expert_model_parallel_size": 1, "recompute_modules": None,
                  "recompute_num_layers": None, "cpu_offloading_num_layers": None}
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


def main(repo):
    result = {
        "format": "myriad-mbridge-recipes/1",
        "source": "NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/*/*workload_base_configs.py "
                  "at each release tag, read by validation/tools/mbridge_recipes.py",
        "releases": {},
    }
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
                    configs[name] = {k: v.f.get(k) for k in FIELDS}
        result["releases"][release] = {"tag": tag, "configs": dict(sorted(configs.items())),
                                       "errors": errors}
        print(release, tag, len(files), "files,", len(configs), "configs,", len(errors), "errors",
              file=sys.stderr)
    json.dump(result, sys.stdout, indent=1, sort_keys=False)
    print()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/.mirror/NVIDIA-NeMo+Megatron-Bridge/repo")
